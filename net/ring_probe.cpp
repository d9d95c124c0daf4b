// SPDX-License-Identifier: Apache-2.0
// The once-per-process capability probe behind `ring_features()`. Each feature is tried for real
// on a throwaway ring or socket rather than inferred from headers, because containers, seccomp
// profiles and distribution kernels disable pieces independently of the version number.
#include <arpa/inet.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <cstdio>

#include "config/fd.hpp"
#include "config/log.hpp"
#include "net/ring.hpp"

namespace oc::net {
namespace {

// Registers a small buffer, then reads one byte from a socket with READ_FIXED: both the
// registration and the socket read through a fixed buffer must work for the pool path.
void probe_fixed_buffers(io_uring& ring, RingFeatures& f) {
  alignas(64) std::array<char, 64> buf{};
  iovec iov{buf.data(), buf.size()};
  if (io_uring_register_buffers(&ring, &iov, 1) != 0) return;
  f.registered_buffers = true;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
    UniqueFd a(sv[0]), b(sv[1]);
    io_uring_cqe* cqe = nullptr;
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    if (::write(b.get(), "x", 1) == 1 && sqe != nullptr) {
      io_uring_prep_read_fixed(sqe, a.get(), buf.data(), buf.size(), 0, 0);
      if (io_uring_submit_and_wait(&ring, 1) == 1 && io_uring_wait_cqe(&ring, &cqe) == 0) {
        f.recv_fixed = cqe->res == 1 && buf[0] == 'x';
        io_uring_cqe_seen(&ring, cqe);
      }
    }
  }
  io_uring_unregister_buffers(&ring);
}

bool probe_buf_ring(io_uring& ring) {
  const long page = sysconf(_SC_PAGESIZE);
  void* mem = mmap(nullptr, static_cast<size_t>(page), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return false;
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<uint64_t>(mem);
  reg.ring_entries = 1;
  reg.bgid = 0;
  const bool ok = io_uring_register_buf_ring(&ring, &reg, 0) == 0;
  if (ok) io_uring_unregister_buf_ring(&ring, 0);
  munmap(mem, static_cast<size_t>(page));
  return ok;
}

// IORING_RECV_MULTISHOT is a flag, not an opcode, so the opcode probe cannot see it; the kernel
// that added it (6.0) is the only signal short of running one.
bool probe_multishot(io_uring& ring) {
  io_uring_probe* probe = io_uring_get_probe_ring(&ring);
  if (probe == nullptr) return false;
  const bool recv = io_uring_opcode_supported(probe, IORING_OP_RECV) != 0;
  io_uring_free_probe(probe);
  utsname u{};
  int major = 0;
  if (!recv || uname(&u) != 0 || std::sscanf(u.release, "%d.", &major) != 1) return false;
  return major >= 6;
}

// The TLS ULP can only be attached to an established TCP socket, so this builds a loopback pair.
bool probe_ktls() {
  UniqueFd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  UniqueFd client(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener.valid() || !client.valid()) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  if (bind(listener.get(), sa, len) != 0 || listen(listener.get(), 1) != 0 ||
      getsockname(listener.get(), sa, &len) != 0 || connect(client.get(), sa, len) != 0) {
    return false;
  }
  return setsockopt(client.get(), SOL_TCP, TCP_ULP, "tls", 3) == 0;
}

RingFeatures probe() {
  RingFeatures f;
  // The probe issues one operation at a time; a tiny ring is enough.
  constexpr unsigned kProbeDepth = 4;
  io_uring ring{};
  if (io_uring_queue_init(kProbeDepth, &ring, 0) == 0) {
    f.io_uring = true;
    probe_fixed_buffers(ring, f);
    f.provided_buffer_rings = probe_buf_ring(ring);
    f.multishot_recv = probe_multishot(ring);
    io_uring_queue_exit(&ring);
  }
  f.ktls = probe_ktls();
  log::get().debug("net: ring features: {}", f.describe());
  return f;
}

}  // namespace

std::string RingFeatures::describe() const {
  std::string out;
  auto add = [&out](bool on, const char* name) {
    if (!out.empty()) out += ' ';
    if (!on) out += '!';
    out += name;
  };
  add(io_uring, "io_uring");
  add(registered_buffers, "registered_buffers");
  add(provided_buffer_rings, "provided_buffer_rings");
  add(multishot_recv, "multishot_recv");
  add(recv_fixed, "recv_fixed");
  add(ktls, "ktls");
  return out;
}

const RingFeatures& ring_features() {
  static const RingFeatures features = probe();
  return features;
}

}  // namespace oc::net
