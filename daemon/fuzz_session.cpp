// SPDX-License-Identifier: Apache-2.0
#include "daemon/fuzz_session.hpp"

#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "daemon/server.hpp"

namespace oc::daemon {
namespace {

// Small limits, so that sequences reach them: a few files, scans and leases, tiny slabs.
Defaults fuzz_config() {
  Defaults d = builtin_defaults();
  d.log_level = "off";
  d.daemon_max_message_bytes = 256 << 10;
  d.daemon_pool_bytes = 16 << 20;
  d.daemon_uid_max_pool_bytes = 8 << 20;
  d.daemon_slab_bytes = 2 << 20;
  d.daemon_client_max_open_files = 4;
  d.daemon_client_max_scans = 3;
  d.daemon_client_max_requests = 4;
  d.daemon_client_max_batches_in_flight = 3;
  d.daemon_max_batch_rows = 1 << 16;
  d.daemon_list_max_entries = 16;
  return d;
}

UniqueFd file_fd(std::span<const uint8_t> file) {
  UniqueFd fd(::memfd_create("fuzz-file", MFD_CLOEXEC));
  if (fd.valid() && !file.empty()) {
    (void)!::write(fd.get(), file.data(), file.size());
  }
  return fd;
}

Session* connect(Server& server) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return nullptr;
  ::close(sv[1]);  // nothing reads the replies: outboxes are emptied below
  UniqueFd sock(sv[0]);
  auto s = server.admit(sock, Peer{1, 1000, 1000, {}});
  return s.ok() ? *s : nullptr;
}

void settle(Server& server, Workers& io, Workers& decode) {
  // Completions may start more jobs, whose completions wait for the next drain.
  for (int round = 0; round < 64; ++round) {
    size_t ran = io.drain() + decode.drain();
    server.service();
    if (ran == 0) break;
  }
  for (Session* s : server.take_touched()) s->out = Outbox();
}

}  // namespace

void fuzz_session(std::span<const uint8_t> data, std::span<const uint8_t> file) {
  const Defaults cfg = fuzz_config();
  auto policy = AccessPolicy::create(cfg);
  if (!policy.ok()) return;
  auto io = Workers::inline_pool();
  auto decode = Workers::inline_pool();
  Server server(cfg, std::move(*policy), *io, *decode);
  Session* s = connect(server);
  std::vector<uint8_t> packet;
  size_t at = 0;
  while (s != nullptr && at + 3 <= data.size()) {
    const uint8_t flags = data[at];
    const size_t len =
        std::min<size_t>(data[at + 1] | size_t{data[at + 2]} << 8, data.size() - at - 3);
    packet.assign(data.begin() + static_cast<ptrdiff_t>(at + 3),
                  data.begin() + static_cast<ptrdiff_t>(at + 3 + len));
    at += 3 + len;
    Packet p;
    p.bytes = packet.size();
    if (flags & 1) p.fd = file_fd(file);
    server.on_packet(*s, packet, p);
    settle(server, *io, *decode);
    Session* now = s->closed ? nullptr : s;
    if (now && (flags & 2)) {
      std::vector<uint64_t> leases;
      for (const auto& [lease, unused] : now->leases) leases.push_back(lease);
      for (uint64_t lease : leases) {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(
            fbs::CreateMessage(fbb, fbs::Body::Release, fbs::CreateRelease(fbb, lease).Union()));
        const auto frame = make_frame(fbb);
        Packet release;
        release.bytes = frame.size();
        server.on_packet(*now, frame, release);
      }
      settle(server, *io, *decode);
    }
    if (now && (flags & 4)) server.close(*now, "");
    if (!now || now->closed) {
      server.reap();
      s = connect(server);
    }
  }
  server.close_all();
  settle(server, *io, *decode);
  server.reap();
}

}  // namespace oc::daemon
