// SPDX-License-Identifier: Apache-2.0
// Multi-range reads with a global bound on requests in flight, and hedging of stragglers.
#include <condition_variable>
#include <cstring>
#include <mutex>

#include "config/defaults.hpp"
#include "config/log.hpp"
#include "net/buffer_pool.hpp"
#include "net/s3_client.hpp"
#include "net/scheduler.hpp"
#include "net/url.hpp"

namespace oc::net {
namespace {

// One range and its (at most two) requests. The primary writes into the destination; a hedge
// writes into its own scratch lease, so the two never write the same memory at once. The hedge's
// bytes are copied over only after the primary has stopped.
struct Slot {
  RangeFetch range;
  CancelToken primary_cancel, hedge_cancel;
  Lease scratch;
  Clock::time_point started{};
  bool primary_started = false, primary_done = false, primary_ok = false;
  bool hedge_started = false, hedge_done = false, hedge_ok = false;
  std::optional<Error> error;

  bool settled() const {
    if (primary_ok) return true;
    if (!primary_done) return false;
    return !hedge_started || hedge_done || hedge_ok;
  }
};

struct Shared {
  std::mutex mu;
  std::condition_variable changed;
  std::unique_ptr<Slot[]> slots;  // fixed once made: jobs hold references into it
  size_t count = 0;
};

}  // namespace

std::string ObjectRef::describe() const {
  if (url.empty()) return fmt::format("s3://{}/{}", bucket, key);
  return redact_url(url);
}

Result<ObjectInfo> S3Client::stat(const ObjectRef& obj) {
  if (!obj.url.empty()) return stat_url(obj.url, obj.public_only);
  return head_object(obj.bucket, obj.key);
}

Result<RangeRead> S3Client::get(const ObjectRef& obj, uint64_t offset, std::span<std::byte> dest,
                                std::string_view etag, CancelToken* cancel) {
  if (!obj.url.empty()) return get_url_range(obj.url, offset, dest, etag, obj.public_only);
  return get_range(obj.bucket, obj.key, offset, dest, etag, cancel);
}

// Ranges of a URL object in groups, one GET each: consecutive ranges join a group while it has
// fewer than `http_multirange_max_parts` and at most `s3_get_part_bytes` in all, so the many
// small ranges of a take share GETs while large ranges keep a GET (and a connection) each. Until
// the endpoint has answered one, every group tries; a group that fails marks the endpoint and
// reads its ranges one by one, and later fetches go straight to single-range GETs.
Result<void> S3Client::fetch_url_multirange(const ObjectRef& obj, std::string_view etag,
                                            std::span<const RangeFetch> ranges) {
  const size_t max_parts = defaults().http_multirange_max_parts;
  const uint64_t max_bytes = defaults().s3_get_part_bytes;
  const std::string pin(etag);
  TaskGroup group(scheduler());
  for (size_t i = 0; i < ranges.size();) {
    size_t n = 1;
    uint64_t bytes = ranges[i].dest.size();
    while (i + n < ranges.size() && n < max_parts &&
           bytes + ranges[i + n].dest.size() <= max_bytes) {
      bytes += ranges[i + n].dest.size();
      ++n;
    }
    const auto batch = ranges.subspan(i, n);
    i += n;
    group.run([this, &obj, &pin, batch]() -> Result<void> {
      if (batch.size() > 1 && multirange_.known(obj.url).value_or(true)) {
        auto r = get_url_ranges(obj.url, batch, pin, obj.public_only);
        if (r.ok()) {
          multirange_.note(obj.url, true);
          counters_.multirange_gets.fetch_add(1, std::memory_order_relaxed);
          return {};
        }
        // A changed object fails the read; anything else (a 200 or single-range answer, a 416
        // or 400 from a server that refuses multi-range requests, a transient failure) costs
        // this endpoint its multi-range GETs, and the ranges go one a GET with the usual retries.
        if (r.error().code() == Errc::corrupt) return std::move(r).error();
        log::get().debug("{}: {}; reading its ranges one GET each", obj.describe(),
                         r.error().message());
        multirange_.note(obj.url, false);
      }
      for (const RangeFetch& part : batch) OC_TRY(get(obj, part.offset, part.dest, pin));
      return {};
    });
  }
  return group.wait();
}

Result<void> S3Client::fetch_ranges(const ObjectRef& obj, std::string_view etag,
                                    std::span<const RangeFetch> ranges) {
  // Multi-range GETs for http(s) origins, where the endpoint does them; hedging works on single
  // ranges and keeps that path.
  if (!obj.url.empty() && ranges.size() > 1 && defaults().http_multirange_max_parts > 1 &&
      defaults().s3_hedge_after_ms == 0 && multirange_.known(obj.url).value_or(true)) {
    return fetch_url_multirange(obj, etag, ranges);
  }
  auto shared = std::make_shared<Shared>();
  shared->count = ranges.size();
  shared->slots = std::make_unique<Slot[]>(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) shared->slots[i].range = ranges[i];
  const std::string pin(etag);
  Scheduler& scheduler = this->scheduler();
  auto lane = scheduler.lane();

  auto launch = [&, pin](size_t i, bool hedge) {
    scheduler.submit(lane, [self = shared_from_this(), shared, obj, pin, i, hedge] {
      Slot& s = shared->slots[i];
      std::span<std::byte> into;
      CancelToken* cancel = nullptr;
      {
        std::lock_guard lock(shared->mu);
        if (!hedge) {
          s.primary_started = true;
          s.started = Clock::now();
        }
        into = hedge ? s.scratch.bytes().first(s.range.dest.size()) : s.range.dest;
        cancel = hedge ? &s.hedge_cancel : &s.primary_cancel;
      }
      auto r = self->get(obj, s.range.offset, into, pin, cancel);
      std::lock_guard lock(shared->mu);
      if (hedge) {
        s.hedge_done = true;
        s.hedge_ok = r.ok();
        // The faster copy wins; the straggler is cut off so its thread is free again.
        if (r.ok() && !s.primary_done) s.primary_cancel.cancel();
      } else {
        s.primary_done = true;
        s.primary_ok = r.ok();
        if (r.ok() && s.hedge_started && !s.hedge_done) s.hedge_cancel.cancel();
      }
      if (!r.ok() && (!s.error || s.error->code() == Errc::cancelled)) {
        s.error = std::move(r).error();
      }
      shared->changed.notify_all();
    });
  };

  for (size_t i = 0; i < ranges.size(); ++i) launch(i, false);

  const auto hedge_after = std::chrono::milliseconds(defaults().s3_hedge_after_ms);
  std::unique_lock lock(shared->mu);
  for (;;) {
    bool all = true;
    for (size_t i = 0; i < shared->count; ++i) {
      Slot& s = shared->slots[i];
      all = all && s.settled();
      if (hedge_after.count() > 0 && s.primary_started && !s.primary_done && !s.hedge_started &&
          Clock::now() - s.started >= hedge_after) {
        auto lease = BufferPool::global().acquire(s.range.dest.size());
        if (!lease.ok()) continue;  // no memory for a hedge: just wait for the primary
        s.scratch = std::move(lease).value();
        s.hedge_started = true;
        counters_.hedges.fetch_add(1, std::memory_order_relaxed);
        launch(i, true);
      }
    }
    if (all) break;
    if (hedge_after.count() > 0) {
      shared->changed.wait_for(lock, hedge_after / 4);
    } else {
      shared->changed.wait(lock);
    }
  }

  for (size_t i = 0; i < shared->count; ++i) {
    Slot& s = shared->slots[i];
    if (s.primary_ok) continue;
    if (s.hedge_ok) {
      std::memcpy(s.range.dest.data(), s.scratch.data(), s.range.dest.size());
      counters_.copied_bytes.fetch_add(s.range.dest.size(), std::memory_order_relaxed);
      counters_.hedges_won.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    return *s.error;
  }
  return {};
}

}  // namespace oc::net
