// SPDX-License-Identifier: Apache-2.0
// onecopyd's worker pools: jobs run off the calling thread, completions only in drain(); owners
// take turns, a capped owner never holds every thread, and a job that throws still completes.
#include <poll.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <stdexcept>
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

void drain_until(Workers& w, const std::function<bool()>& done) {
  while (!done()) {
    REQUIRE(wait_readable(w.event_fd()));
    w.drain();
  }
}
}  // namespace

TEST_CASE("jobs run on workers, completions on the draining thread", "[daemon][workers]") {
  Workers w(2, 0, 0);
  REQUIRE(w.size() == 2);
  const auto me = std::this_thread::get_id();
  std::vector<std::thread::id> completed_on;
  std::thread::id job_thread;
  w.submit(
      1, 1,
      [&] {
        job_thread = std::this_thread::get_id();
        return Workers::Completion([&] { completed_on.push_back(std::this_thread::get_id()); });
      },
      {});
  REQUIRE(wait_readable(w.event_fd()));
  REQUIRE(completed_on.empty());  // nothing runs on the loop's side before drain()
  w.drain();
  REQUIRE(completed_on == std::vector{me});
  REQUIRE(job_thread != me);
  REQUIRE(w.pending() == 0);
}

TEST_CASE("pending counts jobs queued and running", "[daemon][workers]") {
  Workers w(1, 0, 0);
  std::atomic<bool> go{false};
  int done = 0;
  for (int i = 0; i < 3; ++i) {
    w.submit(7, 7,
             [&] {
               while (!go) std::this_thread::yield();
               return Workers::Completion([&] { ++done; });
             },
             {});
  }
  REQUIRE(w.pending() == 3);
  go = true;
  drain_until(w, [&] { return done == 3; });
  REQUIRE(w.pending() == 0);
}

TEST_CASE("owners take turns: a long queue does not stand in front of another owner's job",
          "[daemon][workers]") {
  Workers w(1, 0, 0);
  std::atomic<bool> go{false};
  std::vector<int> order;
  // Owner 1 queues ten jobs behind one that blocks; owner 2 then queues one.
  w.submit(1, 1,
           [&] {
             while (!go) std::this_thread::yield();
             return Workers::Completion([&] { order.push_back(1); });
           },
           {});
  while (w.pending() != 1) std::this_thread::yield();
  for (int i = 0; i < 10; ++i) {
    w.submit(1, 1, [&] { return Workers::Completion([&] { order.push_back(1); }); }, {});
  }
  w.submit(2, 2, [&] { return Workers::Completion([&] { order.push_back(2); }); }, {});
  go = true;
  drain_until(w, [&] { return order.size() == 12; });
  // Owner 2 ran second, not twelfth.
  CHECK(order[1] == 2);
}

TEST_CASE("a capped owner never holds every thread", "[daemon][workers]") {
  Workers w(2, 1, 0);  // one thread each at most
  std::atomic<bool> release{false};
  std::atomic<int> blocked{0};
  int done = 0;
  for (int i = 0; i < 4; ++i) {  // owner 1's jobs would block both threads without the cap
    w.submit(1, 1,
             [&] {
               ++blocked;
               while (!release) std::this_thread::yield();
               return Workers::Completion([&] { ++done; });
             },
             {});
  }
  bool other_ran = false;
  w.submit(2, 2, [&] { return Workers::Completion([&] { other_ran = true; }); }, {});
  drain_until(w, [&] { return other_ran; });  // served while owner 1 still holds its thread
  CHECK(blocked.load() == 1);
  release = true;
  drain_until(w, [&] { return done == 4; });
}

TEST_CASE("a capped group leaves a thread to other groups, however many owners it has",
          "[daemon][workers]") {
  Workers w(3, 2, 2);  // an owner holds two threads at most, and so does a group
  std::atomic<bool> release{false};
  std::atomic<int> blocked{0};
  int done = 0;
  for (uint64_t owner = 1; owner <= 3; ++owner) {  // three owners of group 100
    for (int i = 0; i < 2; ++i) {
      w.submit(owner, 100,
               [&] {
                 ++blocked;
                 while (!release) std::this_thread::yield();
                 return Workers::Completion([&] { ++done; });
               },
               {});
    }
  }
  bool other_ran = false;
  w.submit(9, 200, [&] { return Workers::Completion([&] { other_ran = true; }); }, {});
  drain_until(w, [&] { return other_ran; });
  CHECK(blocked.load() == 2);  // group 100 never held the third thread
  release = true;
  drain_until(w, [&] { return done == 6; });
}

TEST_CASE("a job that throws runs its if_thrown completion, and the pool goes on",
          "[daemon][workers]") {
  Workers w(1, 0, 0);
  int failed = 0, ok = 0;
  w.submit(
      1, 1, []() -> Workers::Completion { throw std::bad_alloc(); }, [&] { ++failed; });
  w.submit(1, 1, [&] { return Workers::Completion([&] { ++ok; }); }, {});
  drain_until(w, [&] { return failed == 1 && ok == 1; });
}

TEST_CASE("an inline pool runs the job at submit and its completion at drain",
          "[daemon][workers]") {
  auto w = Workers::inline_pool();
  CHECK(w->size() == 0);
  bool ran = false, completed = false;
  w->submit(1, 1,
            [&] {
              ran = true;
              return Workers::Completion([&] { completed = true; });
            },
            {});
  CHECK(ran);
  CHECK_FALSE(completed);
  w->drain();
  CHECK(completed);
}
