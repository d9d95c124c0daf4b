// SPDX-License-Identifier: Apache-2.0
// Buffer allocation: large heap buffers are recycled (format/buffer.cpp's RecyclePool).
#include <algorithm>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "config/defaults.hpp"
#include "format/buffer.hpp"

using oc::format::Buffer;

TEST_CASE("a freed large buffer is reused by the next one of its size class", "[format][buffer]") {
  const uint8_t* first = nullptr;
  {
    Buffer b = Buffer::allocate_for_overwrite(1 << 20);
    std::fill_n(b.mutable_data(), b.size(), uint8_t{0xab});
    first = b.data();
  }
  // A little smaller rounds to the same class; allocate() zero-fills what it reuses.
  Buffer again = Buffer::allocate((1 << 20) - 4096);
  CHECK(again.data() == first);
  CHECK(std::all_of(again.data(), again.data() + again.size(), [](uint8_t v) { return v == 0; }));
  // Held buffers are not handed out twice.
  Buffer other = Buffer::allocate_for_overwrite(1 << 20);
  CHECK(other.data() != again.data());
  CHECK(reinterpret_cast<uintptr_t>(other.data()) % 64 == 0);
}

TEST_CASE("buffers are recycled across threads", "[format][buffer]") {
  // Allocated on some threads, freed on others (as pyarrow's release callbacks do): every
  // buffer keeps its bytes while it is held.
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &bad] {
      std::vector<Buffer> held;
      for (int i = 0; i < 200; ++i) {
        Buffer b = Buffer::allocate_for_overwrite(size_t{64 << 10} * (1 + (i + t) % 5));
        std::fill_n(b.mutable_data(), b.size(), static_cast<uint8_t>(t + 1));
        held.push_back(b);
        if (held.size() > 3) held.erase(held.begin());
        for (const Buffer& h : held)
          bad[t] += std::any_of(h.data(), h.data() + h.size(),
                                [t](uint8_t v) { return v != static_cast<uint8_t>(t + 1); });
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(bad == std::vector<int>(4, 0));
}

TEST_CASE("the pool keeps what buffer_recycle_bytes allows", "[format][buffer]") {
  const oc::Defaults saved = oc::defaults();
  // A size class of its own here: 3 MiB and one line round up to 3.5 MiB.
  const size_t size = (size_t{3} << 20) + 64, kept = size_t{7} << 19;
  oc::Defaults knob = saved;
  knob.buffer_recycle_bytes = 0;
  oc::set_defaults(knob);
  size_t before = oc::format::recycled_bytes();
  { Buffer b = Buffer::allocate_for_overwrite(size); }
  CHECK(oc::format::recycled_bytes() == before);  // 0: freed at once
  knob.buffer_recycle_bytes = size_t{1} << 30;
  oc::set_defaults(knob);
  before = oc::format::recycled_bytes();
  { Buffer b = Buffer::allocate_for_overwrite(size); }
  CHECK(oc::format::recycled_bytes() == before + kept);
  { Buffer b = Buffer::allocate_for_overwrite(size); }  // taken from the pool, given back
  CHECK(oc::format::recycled_bytes() == before + kept);
  oc::set_defaults(saved);
}
