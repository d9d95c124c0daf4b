// SPDX-License-Identifier: Apache-2.0
// The scheduler's promises: never more jobs in flight than the cap (on however few reactor
// threads), and lanes served round-robin so a small scan is not starved by a big one.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "net/scheduler.hpp"

using namespace oc;

TEST_CASE("requests in flight never exceed the cap", "[net][scheduler]") {
  net::Scheduler s(3, 2);
  std::atomic<int> running{0}, peak{0};
  {
    net::TaskGroup group(s);
    for (int i = 0; i < 40; ++i) {
      group.run([&]() -> Result<void> {
        const int now = ++running;
        int p = peak.load();
        while (now > p && !peak.compare_exchange_weak(p, now)) {
        }
        // A job waits on its reactor's timer, holding no thread: two reactors carry three.
        net::sleep_until(net::Clock::now() + std::chrono::milliseconds(2));
        --running;
        return {};
      });
    }
    REQUIRE(group.wait().ok());
  }
  CHECK(peak.load() == 3);
  CHECK(s.peak_in_flight() == 3);
  CHECK(s.threads() == 2);
}

TEST_CASE("lanes share the threads round-robin", "[net][scheduler]") {
  net::Scheduler s(1);  // one thread makes the order of service observable
  std::mutex mu;
  std::vector<char> order;
  auto record = [&](char c) {
    return [&, c] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::lock_guard lock(mu);
      order.push_back(c);
    };
  };
  auto big = s.lane(), small = s.lane();
  for (int i = 0; i < 50; ++i) s.submit(big, record('B'));
  for (int i = 0; i < 3; ++i) s.submit(small, record('s'));
  for (;;) {
    {
      std::lock_guard lock(mu);
      if (order.size() == 53) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // The small lane's three jobs all ran within the first handful, not after the fifty.
  size_t last_small = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] == 's') last_small = i;
  }
  CHECK(last_small < 10);
}

TEST_CASE("a task group reports the first error and waits for every job", "[net][scheduler]") {
  net::Scheduler s(2);
  std::atomic<int> finished{0};
  net::TaskGroup group(s);
  for (int i = 0; i < 10; ++i) {
    group.run([&, i]() -> Result<void> {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ++finished;
      if (i == 4) return OC_ERROR(Errc::io, "job {} failed", i);
      return {};
    });
  }
  auto r = group.wait();
  REQUIRE(!r.ok());
  CHECK(r.error().message() == "job 4 failed");
  CHECK(finished.load() == 10);
}
