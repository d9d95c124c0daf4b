// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Host names to addresses with a deadline, for callers that must not block.
///
/// glibc's `getaddrinfo` blocks for as long as resolv.conf's timeouts and attempts allow and
/// cannot be cancelled, so lookups run on a few threads of their own (`dns_resolver_threads`)
/// and a caller waits through a `Waiter` (suspending its fiber on a reactor) until its deadline
/// at most; a lookup that outlives the deadline finishes in the background and fills the cache.
/// One lookup per name is in flight however many callers ask. Answers are reused for
/// `dns_cache_ttl_ms` (getaddrinfo reports no TTL); failures are not cached. The cache holds
/// `kMaxCachedHosts` names at most: a name cached past that drops the expired ones, then the
/// one that expires first, so a client naming ever new hosts cannot grow it. Address literals
/// (`127.0.0.1`, `::1`, `[::1]`) are answered at once.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "config/error.hpp"
#include "net/ring.hpp"

namespace oc::net {

struct ResolvedAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  [[nodiscard]] const sockaddr* addr() const noexcept {
    return reinterpret_cast<const sockaddr*>(&storage);
  }
};

/// @return @p host without the brackets of an IPv6 literal ("[::1]" gives "::1").
[[nodiscard]] std::string_view unbracketed(std::string_view host) noexcept;

class Resolver {
 public:
  /// Looks up a name (no port): the system's getaddrinfo, or a fault injected by a test.
  using Lookup = std::function<Result<std::vector<ResolvedAddress>>(const std::string& host)>;

  static constexpr size_t kMaxCachedHosts = 4096;

  /// @param lookup null means getaddrinfo. @param max_cached at most this many names cached.
  Resolver(uint32_t threads, std::chrono::milliseconds ttl, Lookup lookup = nullptr,
           size_t max_cached = kMaxCachedHosts);
  ~Resolver();  ///< waits for lookups in progress
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  /// @return the process-wide resolver, sized by `dns_resolver_threads` and `dns_cache_ttl_ms`.
  [[nodiscard]] static Resolver& global();

  /// The addresses of @p host with @p port set, in the resolver's order. Errors: `Errc::timeout`
  /// when no answer came before @p deadline, `Errc::io` naming the host when it does not resolve.
  [[nodiscard]] Result<std::vector<ResolvedAddress>> resolve(std::string_view host, uint16_t port,
                                                             Deadline deadline);

  [[nodiscard]] uint64_t lookups() const;     ///< lookups started (cache misses)
  [[nodiscard]] size_t cached_hosts() const;  ///< names in the cache, expired ones included

 private:
  struct Pending;
  struct Cached {
    std::vector<ResolvedAddress> addresses;
    Clock::time_point expires;
  };
  void worker();
  void start_locked();
  void cache_locked(const std::string& host, const std::vector<ResolvedAddress>& addresses);

  uint32_t thread_count_;
  std::chrono::milliseconds ttl_;
  Lookup lookup_;
  size_t max_cached_;
  mutable std::mutex mu_;
  std::condition_variable work_;
  std::deque<std::shared_ptr<Pending>> queue_;
  std::map<std::string, std::shared_ptr<Pending>, std::less<>> pending_;
  std::map<std::string, Cached, std::less<>> cache_;
  std::vector<std::thread> threads_;
  pid_t owner_ = 0;
  uint64_t lookups_ = 0;
  bool stopping_ = false;
};

}  // namespace oc::net
