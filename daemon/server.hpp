// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief onecopyd's core: its sessions, the answer to every request, and the batch pipeline
/// that decodes scans into slabs.
///
/// The server owns no socket loop: daemon/event_loop.hpp receives packets and hands them to
/// `on_packet`, then sends what the sessions' outboxes hold. So a fuzzer drives the very same
/// dispatch with packets of its own (daemon/fuzz_session.cpp), with inline worker pools.
///
/// What a client can make the daemon do is bounded (daemon/PROTOCOL.md, "Limits"): its
/// requests on the workers (`daemon_client_max_requests`), files and scans, the sizes a Scan
/// asks for, the batches and bytes it holds, its user's connections and share of the slab
/// pool, and the descriptors all clients hold together. Past a limit, a request gets an Error
/// naming the knob and the connection stays open; only a protocol violation ends it. Nothing a
/// job or a handler throws leaves the server: it fails the one request or session concerned.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/defaults.hpp"
#include "config/error.hpp"
#include "daemon/access.hpp"
#include "daemon/counters.hpp"
#include "daemon/kept_files.hpp"
#include "daemon/rate.hpp"
#include "daemon/session.hpp"
#include "daemon/slab_pool.hpp"
#include "daemon/status.hpp"
#include "daemon/workers.hpp"
#include "format/scan_request.hpp"
#include "kernels/device.hpp"
#include "kernels/device_scan.hpp"

namespace oc::daemon {

class Server {
 public:
  /// @param io the pool for opens, listings and scan plans (work that may wait on the network)
  /// @param decode the pool for decoding batches and copying them into slabs
  Server(Defaults cfg, AccessPolicy policy, Workers& io, Workers& decode);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Takes @p socket, a connection accepted from @p peer, as a new session, unless the access
  /// policy, `daemon_max_clients`, `daemon_uid_max_clients` or the descriptor budget refuse it
  /// (the error says why).
  /// On success the session owns @p socket; on refusal @p socket is left to the caller, who may
  /// tell the client why before closing it.
  [[nodiscard]] Result<Session*> admit(UniqueFd& socket, Peer peer);
  /// Handles one packet received from @p s (its bytes, and what came with them).
  void on_packet(Session& s, std::span<const uint8_t> bytes, Packet& packet);
  /// Ends @p s (a disconnect, or one for cause when @p why is not empty); its leases, files,
  /// scans and slabs are dropped at once, and the session itself is freed by `reap`.
  void close(Session& s, std::string_view why);
  /// Lets every session marked since the last call go on: sends what its scans have ready and
  /// schedules their next decodes. O(sessions marked), not O(sessions).
  void service();
  /// @return the sessions given packets to send (or closed) since the last call.
  [[nodiscard]] std::vector<Session*> take_touched();
  /// Frees the sessions closed since the last call. Call once no pointer to them is in use.
  void reap();
  /// Closes every session (the daemon is stopping).
  void close_all();

  /// When `expire` next has something to do (a batch waiting for room in the pool).
  [[nodiscard]] std::optional<Clock::time_point> next_deadline() const;
  /// Fails the scans whose batch has waited `daemon_pool_wait_ms` for room in the pool.
  void expire(Clock::time_point now);

  /// Applies the knobs a SIGHUP may change (log level aside): client limits, allowed ids, the
  /// access policy.
  void reconfigure(const Defaults& fresh, AccessPolicy policy);
  /// The GPUs seen, probed once off the loop (daemon/event_loop.cpp).
  void set_gpu(const kernels::DeviceInfo& gpu) { gpu_ = gpu; }
  /// Descriptors clients may hold together; `admit` and fd-carrying Opens check it.
  void set_descriptor_budget(uint64_t budget) { fd_budget_ = budget; }
  /// Descriptors held on clients' behalf: sessions, their files (each with its io_uring ring)
  /// and unsent slabs, plus @p extra (the loop's metrics connections).
  [[nodiscard]] uint64_t descriptors() const;
  /// Whether @p extra more descriptors would reach the budget. When they would, the files kept
  /// open for later Opens (daemon/kept_files.hpp) are given back first, and the answer is the
  /// count without them: not a const query.
  [[nodiscard]] bool out_of_descriptors(uint64_t extra = 0);
  void note_refused_connection() {
    ++counters_.connections_refused;
    ++counters_.errors;
  }
  void set_extra_descriptors(uint64_t n) { extra_fds_ = n; }

  /// @return the daemon's status; with @p viewer, the scans that client may see (its user's,
  /// every user's for root), running and the latest Counters::kEndedScansKept to end.
  [[nodiscard]] Status status(const Peer* viewer = nullptr) const;

  [[nodiscard]] const Defaults& config() const noexcept { return cfg_; }
  [[nodiscard]] size_t session_count() const noexcept { return sessions_.size(); }

 private:
  friend struct ServerTest;
  Session* find(uint64_t serial);
  void mark(Session& s);
  void touch(Session& s);
  void send(Session& s, flatbuffers::FlatBufferBuilder& fbb, int fd = -1,
            std::function<void()> on_sent = {});
  void send_error(Session& s, uint64_t request, const Error& e);
  void refuse(Session& s, uint64_t request, const Error& e);
  Result<void> handle(Session& s, const fbs::Message& m, Packet& packet);
  Result<void> handle_hello(Session& s, const fbs::Hello& h);
  Result<void> handle_open(Session& s, const fbs::Open& o, Packet& packet);
  Result<void> handle_list(Session& s, const fbs::List& l);
  /// Empties the node's caches for an operator (root or onecopyd's user); refuses anyone else.
  Result<void> handle_cache_clear(Session& s, uint64_t request);
  Result<void> handle_dataset(Session& s, const fbs::Dataset& d);
  Result<void> handle_scan(Session& s, const fbs::Scan& scan);
  Result<void> handle_release(Session& s, uint64_t lease);
  void handle_cancel(Session& s, const fbs::Cancel& c);
  /// `invalid`, naming the knob, when @p s may not start another job on the workers.
  Result<void> check_request_room(const Session& s) const;

  // daemon/jobs.cpp: work that runs on the io pool.
  template <class T, class Work, class Done>
  void run_job(Workers& pool, Session& s, Work work, Done done);
  void open_async(Session& s, uint64_t request, std::string uri, uint64_t unit_rows, UniqueFd fd,
                  bool public_only);
  void list_async(Session& s, uint64_t request, std::string pattern);
  void dataset_async(Session& s, uint64_t request, std::string pattern, uint64_t unit_rows,
                     bool footers);
  void plan_async(Session& s, uint64_t request, std::shared_ptr<format::VortexFile> file,
                  format::ScanRequest scan, std::shared_ptr<format::ChunkDecoder> decoder);
  Result<void> send_listed(Session& s, uint64_t request, uint64_t offset);
  void send_opened(Session& s, uint64_t request, uint64_t file, uint64_t rows,
                   const std::vector<uint64_t>& units);

  // daemon/pipeline.cpp: scans, decoded on the decode pool into the session's slabs.
  void serve(Session& s);
  void decode_ahead(Session& s, const ScanPtr& scan);
  void place(Session& s, const ScanPtr& scan);
  void drop_scan(Session& s, const ScanPtr& scan);
  void fail_scan(Session& s, const ScanPtr& scan, Error e);
  void send_batch(Session& s, ActiveScan& scan, Placed& b);
  void make_room_to_decode(Session& s, const ActiveScan& scan);
  /// Closes one idle connection that holds slabs, for @p scan's batch, which found no room:
  /// one of @p waiting's user first; another user's only when the whole pool (not that user's
  /// share) is full, or for a device batch (device pools have no share per user).
  /// @return whether one was closed.
  bool close_idle(const Session& waiting, const ActiveScan& scan);
  /// Lets the sessions whose batches wait for room in the pool try again.
  void pool_room();
  void count_copies(ActiveScan& scan, const Placed& p);
  /// Keeps @p scan, which just ended in @p state, for `status`.
  void remember_scan(const Session& s, const ActiveScan& scan, std::string state);

  Defaults cfg_;
  AccessPolicy policy_;
  Workers& io_;
  Workers& decode_;
  Clock::time_point started_;
  std::map<uint64_t, std::unique_ptr<Session>> sessions_;  // by serial
  std::vector<std::unique_ptr<Session>> closed_;           // freed by reap()
  std::vector<Session*> dirty_, touched_;
  std::map<uid_t, uint32_t> sessions_by_uid_;
  uint64_t next_id_ = 1, next_serial_ = 1;
  Counters counters_;
  uint64_t fd_budget_ = UINT64_MAX, extra_fds_ = 0;
  // Shared with the open jobs, which may outlive a session (daemon/kept_files.hpp).
  std::shared_ptr<KeptFiles> kept_ = std::make_shared<KeptFiles>(cfg_.daemon_kept_files);
  kernels::DeviceInfo gpu_{};
  // After cfg_ and next_id_, which it reads.
  SlabPool pool_{cfg_, [this] { return next_id_++; }, [this] { pool_room(); }};
};

// Runs @p work (returning Result<T>) on @p pool for @p s's user, then @p done(session or null,
// result) on the loop thread. Whatever the work throws becomes its error; whatever the
// completion throws ends the session it was for.
template <class T, class Work, class Done>
void Server::run_job(Workers& pool, Session& s, Work work, Done done) {
  auto finish = std::make_shared<std::function<void(Result<T>)>>(
      [this, serial = s.serial, done = std::move(done)](Result<T> r) mutable {
        try {
          done(find(serial), std::move(r));
        } catch (...) {
          if (Session* gone = find(serial)) {
            close(*gone, current_exception_error("completing a request").describe());
          }
        }
      });
  pool.submit(
      s.serial, s.peer.uid,
      [work = std::move(work), finish]() mutable -> Workers::Completion {
        auto r = std::make_shared<Result<T>>(catch_all("onecopyd", work));
        return [finish, r] { (*finish)(std::move(*r)); };
      },
      [finish] {
        (*finish)(Error(Errc::out_of_memory, "onecopyd ran out of memory on this request"));
      });
}

}  // namespace oc::daemon
