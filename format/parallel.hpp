// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief `parallel_for`: the one way decoding spreads work over threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "config/defaults.hpp"

namespace oc::format {

/// Threads a decode may use: the `scan_decode_threads` knob, or one per core when it is 0.
[[nodiscard]] inline size_t decode_threads() {
  const unsigned knob = defaults().scan_decode_threads;
  return knob ? knob : std::max(1u, std::thread::hardware_concurrency());
}

/// Decodes of fewer rows than this run on the calling thread: starting threads costs more.
inline constexpr uint64_t kParallelFromRows = 8192;

/// Runs f(0), ..., f(n - 1) on up to `decode_threads()` threads, the caller's included, and
/// returns when all are done; with @p rows (the rows the work covers) below
/// `kParallelFromRows`, on the caller's thread alone. @p f must be safe to run concurrently.
/// An exception thrown by @p f (a failed allocation, say) stops the remaining work and is
/// rethrown on the caller's thread once every thread has stopped; it never ends the process.
template <class F>
void parallel_for(size_t n, uint64_t rows, F&& f) {
  const size_t threads = rows < kParallelFromRows ? 1 : std::min(n, decode_threads());
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::exception_ptr failed;
  auto work = [&] {
    try {
      for (size_t i; (i = next.fetch_add(1)) < n;) f(i);
    } catch (...) {
      next.store(n);  // the others stop at their next item
      std::lock_guard lock(mu);
      if (!failed) failed = std::current_exception();
    }
  };
  {
    std::vector<std::jthread> pool;
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
  }  // joined here
  if (failed) std::rethrow_exception(failed);
}

}  // namespace oc::format
