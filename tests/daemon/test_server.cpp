// SPDX-License-Identifier: Apache-2.0
// onecopyd's dispatch, driven without the event loop: packets into Server::on_packet, replies
// read back from the other end of a socketpair, jobs run by inline pools.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "daemon/fuzz_session.hpp"
#include "daemon/server.hpp"
#include "daemon/wire.hpp"

using namespace oc::daemon;
using oc::Errc;

namespace {

const std::string kFile = OC_SOURCE_DIR "/tests/fuzz/seeds/open_scan/tiny.vortex";

struct Reply {
  std::vector<uint8_t> frame;
  oc::UniqueFd fd;
  const fbs::Message* message() const { return fbs::GetMessage(frame.data() + kHeaderBytes); }
};

class Harness {
 public:
  explicit Harness(oc::Defaults cfg = oc::builtin_defaults())
      : io_(Workers::inline_pool()), decode_(Workers::inline_pool()) {
    cfg.log_level = "off";
    auto policy = AccessPolicy::create(cfg);
    REQUIRE(policy.ok());
    server_ = std::make_unique<Server>(cfg, std::move(*policy), *io_, *decode_);
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
    peer_.reset(sv[1]);
    oc::UniqueFd mine(sv[0]);
    auto s = server_->admit(mine, Peer{1, 1000, 1000, {}});
    REQUIRE(s.ok());
    session_ = *s;
  }

  Server& server() { return *server_; }
  Session& session() { return *session_; }

  /// Delivers @p fbb's message as one packet (with a dup of @p fd), then lets everything run.
  void send(flatbuffers::FlatBufferBuilder& fbb, int fd = -1, bool settle_after = true) {
    send_packet(make_frame(fbb), fd, settle_after);
  }
  void send_packet(const std::vector<uint8_t>& bytes, int fd = -1, bool settle_after = true) {
    Packet p;
    p.bytes = bytes.size();
    if (fd >= 0) p.fd.reset(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    server_->on_packet(*session_, bytes, p);
    if (settle_after) settle();
  }
  void hello() {
    flatbuffers::FlatBufferBuilder fbb;
    fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Hello,
                                  fbs::CreateHelloDirect(fbb, kProtocolVersion).Union()));
    send(fbb);
    REQUIRE(next().message()->body_type() == fbs::Body::HelloReply);
  }
  void open(uint64_t request, const std::string& uri, int fd = -1, bool settle_after = true) {
    flatbuffers::FlatBufferBuilder fbb;
    fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Open,
                                  fbs::CreateOpenDirect(fbb, request, uri.c_str()).Union()));
    send(fbb, fd, settle_after);
  }

  void settle() {
    for (int round = 0; round < 64; ++round) {
      const size_t ran = io_->drain() + decode_->drain();
      server_->service();
      for (Session* s : server_->take_touched()) (void)s->out.flush(s->fd.get());
      if (ran == 0) break;
    }
  }

  /// The next reply (Parts joined); fails the test when none is waiting.
  Reply next() {
    PartAssembler parts(64 << 20);
    while (true) {
      std::vector<uint8_t> buf(1 << 17);
      auto p = receive_packet(peer_.get(), buf);
      REQUIRE(p.ok());
      REQUIRE(p->has_value());
      REQUIRE_FALSE((*p)->eof);
      buf.resize((*p)->bytes);
      auto m = parse_frame(buf, 64 << 20);
      REQUIRE(m.ok());
      if (const auto* part = (*m)->body_as_Part()) {
        auto whole = parts.add(*part);
        REQUIRE(whole.ok());
        if (!whole->has_value()) continue;
        return Reply{std::move(**whole), std::move((*p)->fd)};
      }
      return Reply{std::move(buf), std::move((*p)->fd)};
    }
  }
  /// Whether the daemon closed the connection (after what it sent).
  bool hung_up() {
    std::vector<uint8_t> buf(1 << 17);
    while (true) {
      auto p = receive_packet(peer_.get(), buf);
      if (!p.ok()) return true;
      if (!p->has_value()) return false;
      if ((*p)->eof) return true;
    }
  }

 private:
  std::unique_ptr<Workers> io_, decode_;
  std::unique_ptr<Server> server_;
  oc::UniqueFd peer_;
  Session* session_ = nullptr;
};

std::string error_of(const Reply& r, uint64_t* request = nullptr) {
  const auto* e = r.message()->body_as_Error();
  REQUIRE(e);
  if (request) *request = e->request();
  return e->code()->str() + ": " + e->message()->str();
}

}  // namespace

TEST_CASE("a message before Hello ends the session, with an Error saying so", "[daemon][server]") {
  Harness h;
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(
      fbs::CreateMessage(fbb, fbs::Body::StatusRequest, fbs::CreateStatusRequest(fbb).Union()));
  h.send(fbb);
  CHECK(error_of(h.next()).find("StatusRequest before Hello") != std::string::npos);
  CHECK(h.hung_up());
  CHECK(h.session().closed);
}

TEST_CASE("an Open naming a local path is denied, and the session goes on", "[daemon][server]") {
  Harness h;
  h.hello();
  h.open(5, "/etc/shadow");
  uint64_t request = 0;
  const std::string e = error_of(h.next(), &request);
  CHECK(request == 5);
  CHECK(e.starts_with("denied: "));
  CHECK(e.find("passes its descriptor") != std::string::npos);
  CHECK(e.find("[at ") == std::string::npos);  // no position in the daemon's source
  CHECK_FALSE(h.session().closed);
  CHECK(h.server().status().requests_refused == 1);
}

TEST_CASE("a FIFO, a directory or a write-only descriptor is refused at once", "[daemon][server]") {
  Harness h;
  h.hello();
  char dir[] = "/tmp/oc-server-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string fifo = std::string(dir) + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // A FIFO with no writer: a blocking read would hold a worker forever.
  oc::UniqueFd f(::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  oc::UniqueFd d(::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  oc::UniqueFd w(::open(kFile.c_str(), O_WRONLY | O_CLOEXEC));
  oc::UniqueFd path_only(::open(kFile.c_str(), O_PATH | O_CLOEXEC));
  h.open(1, "fifo", f.get());
  CHECK(error_of(h.next()).find("is a FIFO") != std::string::npos);
  h.open(2, "dir", d.get());
  CHECK(error_of(h.next()).find("is a directory") != std::string::npos);
  if (w.valid()) {  // root may open the checked-in file for writing
    h.open(3, "w", w.get());
    CHECK(error_of(h.next()).find("not open for reading") != std::string::npos);
  }
  h.open(4, "p", path_only.get());
  CHECK(error_of(h.next()).find("not open for reading") != std::string::npos);
  CHECK_FALSE(h.session().closed);
  ::unlink(fifo.c_str());
  ::rmdir(dir);
}

TEST_CASE("a kept file reaches only a descriptor open for reading", "[daemon][server]") {
  Harness h;
  h.hello();
  oc::UniqueFd readable(::open(kFile.c_str(), O_RDONLY | O_CLOEXEC));
  oc::UniqueFd path_only(::open(kFile.c_str(), O_PATH | O_CLOEXEC));
  h.open(1, "kept", readable.get());
  REQUIRE(h.next().message()->body_as_Opened());
  // The checked-in file is older than the two seconds a file must be to be kept.
  REQUIRE(h.server().status().kept_files == 1);
  h.open(2, "kept", path_only.get());  // the same path to the same file, but no read access
  CHECK(error_of(h.next()).find("not open for reading") != std::string::npos);
  CHECK(h.server().status().kept_file_hits == 0);
  h.open(3, "kept", readable.get());
  REQUIRE(h.next().message()->body_as_Opened());
  CHECK(h.server().status().kept_file_hits == 1);
}

TEST_CASE("a file passed by descriptor opens, scans and ends", "[daemon][server]") {
  Harness h;
  h.hello();
  oc::UniqueFd fd(::open(kFile.c_str(), O_RDONLY | O_CLOEXEC));
  h.open(1, "tiny.vortex", fd.get());
  Reply opened = h.next();
  const auto* o = opened.message()->body_as_Opened();
  REQUIRE(o);
  CHECK(o->rows() > 0);
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Scan,
                                fbs::CreateScanDirect(fbb, 2, o->file(), nullptr, "").Union()));
  h.send(fbb);
  CHECK(h.next().message()->body_type() == fbs::Body::ScanBegin);
  uint64_t rows = 0;
  bool slab = false;
  while (true) {
    Reply r = h.next();
    if (r.message()->body_type() == fbs::Body::SlabAdded) {
      CHECK(r.fd.valid());  // the memfd, once
      slab = true;
      continue;
    }
    if (const auto* b = r.message()->body_as_Batch()) {
      rows += b->rows();
      flatbuffers::FlatBufferBuilder rel;
      rel.Finish(
          fbs::CreateMessage(rel, fbs::Body::Release, fbs::CreateRelease(rel, b->lease()).Union()));
      h.send(rel);
      continue;
    }
    REQUIRE(r.message()->body_type() == fbs::Body::ScanEnd);
    break;
  }
  CHECK(slab);
  CHECK(rows == o->rows());
  const Status st = h.server().status();
  CHECK(st.batches_in_flight == 0);
  CHECK(st.slabs == 1);
  CHECK(st.pool_bytes > 0);
}

TEST_CASE("requests past the per-connection limits get Errors naming the knob",
          "[daemon][server]") {
  oc::Defaults cfg = oc::builtin_defaults();
  cfg.daemon_client_max_requests = 2;
  cfg.daemon_max_batch_rows = 1000;
  cfg.daemon_max_scan_columns = 2;
  Harness h(cfg);
  h.hello();
  oc::UniqueFd fd(::open(kFile.c_str(), O_RDONLY | O_CLOEXEC));
  // Three Opens before any completes: the third finds two running.
  h.open(1, "a", fd.get(), false);
  h.open(2, "b", fd.get(), false);
  h.open(3, "c", fd.get(), false);
  h.settle();
  uint64_t refused = 0;
  std::vector<uint64_t> opened;
  for (int i = 0; i < 3; ++i) {
    Reply r = h.next();
    if (const auto* o = r.message()->body_as_Opened()) {
      opened.push_back(o->file());
    } else {
      CHECK(error_of(r, &refused).find("daemon_client_max_requests") != std::string::npos);
    }
  }
  CHECK(refused == 3);
  REQUIRE(opened.size() == 2);
  auto scan = [&](uint64_t request, uint64_t batch_rows, std::vector<std::string> columns) {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<flatbuffers::Offset<flatbuffers::String>> cols;
    for (const auto& c : columns) cols.push_back(fbb.CreateString(c));
    fbb.Finish(fbs::CreateMessage(
        fbb, fbs::Body::Scan,
        fbs::CreateScan(fbb, request, opened[0], fbb.CreateVector(cols), 0, batch_rows).Union()));
    h.send(fbb);
    return error_of(h.next());
  };
  CHECK(scan(4, 5000, {}).find("daemon_max_batch_rows") != std::string::npos);
  CHECK(scan(5, 10, {"a", "b", "c"}).find("daemon_max_scan_columns") != std::string::npos);
  CHECK_FALSE(h.session().closed);
}

TEST_CASE("a request in Parts is joined; Parts past the size limit end the session",
          "[daemon][server]") {
  oc::Defaults cfg = oc::builtin_defaults();
  cfg.daemon_max_message_bytes = 256 << 10;
  Harness h(cfg);
  h.hello();
  // An Open whose name alone is larger than a packet: it travels as Parts, and is answered.
  const std::string name = "s3://bucket/" + std::string(100'000, 'k');
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Open,
                                fbs::CreateOpenDirect(fbb, 9, name.c_str()).Union()));
  const auto packets = packets_of(make_frame(fbb));
  REQUIRE(packets.size() > 1);
  for (const auto& p : packets) h.send_packet(p);
  uint64_t request = 0;
  CHECK(error_of(h.next(), &request).starts_with("denied: "));  // the policy grants no bucket
  CHECK(request == 9);
  // Now more than the limit, in Parts.
  const auto big = packets_of(std::vector<uint8_t>(300'000, 1));
  for (const auto& p : big) h.send_packet(p);
  CHECK(error_of(h.next()).find("over the 262144-byte limit") != std::string::npos);
  CHECK(h.hung_up());
}

TEST_CASE("an Open with a descriptor at the descriptor budget is refused", "[daemon][server]") {
  Harness h;
  h.hello();
  h.server().set_descriptor_budget(h.server().descriptors() + 1);
  oc::UniqueFd fd(::open(kFile.c_str(), O_RDONLY | O_CLOEXEC));
  h.open(1, "tiny.vortex", fd.get());
  CHECK(error_of(h.next()).find("descriptor") != std::string::npos);
  CHECK_FALSE(h.session().closed);
}

TEST_CASE("connections past the per-user limit are refused", "[daemon][server]") {
  oc::Defaults cfg = oc::builtin_defaults();
  cfg.daemon_uid_max_clients = 1;
  Harness h(cfg);  // its own session is the user's one connection
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  oc::UniqueFd mine(sv[0]), theirs(sv[1]);
  auto second = h.server().admit(mine, Peer{2, 1000, 1000, {}});
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().message().find("daemon_uid_max_clients") != std::string::npos);
  CHECK(mine.valid());  // left to the caller, who tells the client why
  auto other_user = h.server().admit(mine, Peer{3, 2000, 2000, {}});
  CHECK(other_user.ok());
  CHECK(h.server().status().connections_refused == 1);
}

TEST_CASE("the session fuzzer's seeds replay through the real dispatch", "[daemon][server]") {
  std::ifstream file(kFile, std::ios::binary);
  const std::vector<uint8_t> bytes(std::istreambuf_iterator<char>(file), {});
  REQUIRE_FALSE(bytes.empty());
  int seeds = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(OC_SOURCE_DIR "/tests/fuzz/seeds/daemon_session")) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<uint8_t> seed(std::istreambuf_iterator<char>(in), {});
    INFO(entry.path());
    fuzz_session(seed, bytes);  // must return: no crash, no leak (the ASan build runs this too)
    ++seeds;
  }
  CHECK(seeds >= 6);
}

TEST_CASE("inputs the session fuzzer crashed on replay cleanly", "[daemon][server]") {
  std::ifstream file(kFile, std::ios::binary);
  const std::vector<uint8_t> bytes(std::istreambuf_iterator<char>(file), {});
  int replayed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(OC_SOURCE_DIR "/tests/data/bad")) {
    if (entry.path().extension() != ".session") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<uint8_t> input(std::istreambuf_iterator<char>(in), {});
    INFO(entry.path());
    fuzz_session(input, bytes);
    ++replayed;
  }
  CHECK(replayed >= 1);
}
