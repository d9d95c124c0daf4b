// SPDX-License-Identifier: Apache-2.0
// onecopy-netbench: the onecopy row of scripts/bench_net.sh.
//
//   onecopy-netbench --url URL [--connections N] [--ranges K --range-bytes SIZE] [--ca-file F]
//
// Downloads the object at URL (unsigned, as a public or presigned URL) into one pinned
// destination buffer: whole, split evenly over N connections, or as K random ranges of SIZE.
// Prints `bytes=… wall_s=… user_s=… sys_s=… requests=… copied=… connections=…` on one line;
// user and sys are this process's own CPU (getrusage), the figure the benchmark compares.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "config/defaults.hpp"
#include "net/buffer_pool.hpp"
#include "net/ring.hpp"
#include "net/s3_client.hpp"
#include "net/scheduler.hpp"

namespace {

double seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; }

int fail(const oc::Error& e) {
  std::fprintf(stderr, "onecopy-netbench: %s\n", e.to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string url, ca_file, connections = "1", range_bytes = "16MiB";
  uint64_t ranges = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--url")
      url = v;
    else if (a == "--connections")
      connections = v;
    else if (a == "--ranges")
      ranges = std::strtoull(v.c_str(), nullptr, 10);
    else if (a == "--range-bytes")
      range_bytes = v;
    else if (a == "--ca-file")
      ca_file = v;
    else {
      std::fprintf(stderr, "onecopy-netbench: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (url.empty()) {
    std::fprintf(stderr,
                 "usage: onecopy-netbench --url URL [--connections N] [--ranges K "
                 "--range-bytes SIZE] [--ca-file F]\n");
    return 2;
  }
  // The connection count is the scheduler's cap on requests in flight. The pinned pool must hold
  // the whole destination, or it would fall back to unregistered memory (1 GiB + slack unless
  // the caller says otherwise).
  setenv("ONECOPY_S3_MAX_REQUESTS_IN_FLIGHT", connections.c_str(), 1);
  setenv("ONECOPY_NET_POOL_BYTES", "1280MiB", /*overwrite=*/0);
  if (auto r = oc::load_defaults_from_env(); !r.ok()) return fail(r.error());
  const uint64_t n = oc::defaults().s3_max_requests_in_flight;
  auto piece = oc::parse_size(range_bytes);
  if (!piece.ok()) return fail(piece.error());

  oc::net::S3ClientConfig config;
  if (!ca_file.empty()) config.tls.ca_file = ca_file;
  auto client = oc::net::S3Client::create(std::move(config));
  if (!client.ok()) return fail(client.error());
  oc::net::ObjectRef obj;
  obj.url = url;
  auto info = (*client)->stat(obj);
  if (!info.ok()) return fail(info.error());

  std::vector<oc::net::RangeFetch> fetches;
  const uint64_t total = ranges ? ranges * *piece : info->size;
  auto dest = oc::net::BufferPool::global().acquire(total);
  if (!dest.ok()) return fail(dest.error());
  if (ranges) {
    std::mt19937_64 rng(42);
    std::uniform_int_distribution<uint64_t> at(0, info->size - *piece);
    for (uint64_t k = 0; k < ranges; ++k) {
      fetches.push_back({at(rng), dest->bytes().subspan(k * *piece, *piece)});
    }
  } else {
    const uint64_t part = (total + n - 1) / n;
    for (uint64_t off = 0; off < total; off += part) {
      fetches.push_back({off, dest->bytes().subspan(off, std::min(part, total - off))});
    }
  }

  // Like the baselines, which fault their destination in before timing: I/O threads, their
  // rings and the pinned pool's registration are set up first.
  oc::net::Scheduler::global().prestart();
  rusage before{}, after{};
  const auto ring0 = oc::net::ring_totals();
  getrusage(RUSAGE_SELF, &before);
  const auto t0 = std::chrono::steady_clock::now();
  if (auto r = (*client)->fetch_ranges(obj, info->etag, fetches); !r.ok()) return fail(r.error());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  getrusage(RUSAGE_SELF, &after);
  const auto ring1 = oc::net::ring_totals();

  const auto& c = (*client)->counters();
  std::printf(
      "bytes=%llu wall_s=%.4f user_s=%.4f sys_s=%.4f requests=%llu copied=%llu "
      "connections=%llu pinned=%d ring_enters=%llu ring_ops=%llu fixed_reads=%llu\n",
      static_cast<unsigned long long>(total), wall,
      seconds(after.ru_utime) - seconds(before.ru_utime),
      seconds(after.ru_stime) - seconds(before.ru_stime),
      static_cast<unsigned long long>(c.requests.load()),
      static_cast<unsigned long long>(c.copied_bytes.load()), static_cast<unsigned long long>(n),
      dest->pinned() ? 1 : 0, static_cast<unsigned long long>(ring1.submits - ring0.submits),
      static_cast<unsigned long long>(ring1.operations - ring0.operations),
      static_cast<unsigned long long>(ring1.fixed_reads - ring0.fixed_reads));
  return 0;
}
