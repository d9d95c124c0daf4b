// SPDX-License-Identifier: Apache-2.0
// onecopyd's worker pool: jobs run off the calling thread, completions only in drain().
#include <poll.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "daemon/workers.hpp"

using oc::daemon::Workers;

namespace {
// Waits until the pool's eventfd says completions are waiting.
bool wait_readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 10'000) == 1;
}
}  // namespace

TEST_CASE("jobs run on workers, completions on the draining thread", "[daemon][workers]") {
  Workers w(2);
  REQUIRE(w.size() == 2);
  const auto me = std::this_thread::get_id();
  std::vector<std::thread::id> completed_on;
  std::thread::id job_thread;
  w.submit([&] {
    job_thread = std::this_thread::get_id();
    return Workers::Completion([&] { completed_on.push_back(std::this_thread::get_id()); });
  });
  REQUIRE(wait_readable(w.event_fd()));
  REQUIRE(completed_on.empty());  // nothing runs on the loop's side before drain()
  w.drain();
  REQUIRE(completed_on == std::vector{me});
  REQUIRE(job_thread != me);
  REQUIRE(w.pending() == 0);
}

TEST_CASE("pending counts jobs queued and running", "[daemon][workers]") {
  Workers w(1);
  std::atomic<bool> go{false};
  int done = 0;
  for (int i = 0; i < 3; ++i) {
    w.submit([&] {
      while (!go) std::this_thread::yield();
      return Workers::Completion([&] { ++done; });
    });
  }
  REQUIRE(w.pending() == 3);
  go = true;
  while (done < 3) {
    REQUIRE(wait_readable(w.event_fd()));
    w.drain();
  }
  REQUIRE(w.pending() == 0);
}
