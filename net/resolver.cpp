// SPDX-License-Identifier: Apache-2.0
#include "net/resolver.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "config/defaults.hpp"
#include "net/reactor.hpp"

namespace oc::net {

struct Resolver::Pending {
  std::string host;
  std::vector<Waiter*> waiters;
  std::optional<Result<std::vector<ResolvedAddress>>> result;
};

namespace {

Result<std::vector<ResolvedAddress>> system_lookup(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  OC_EXPECT(rc == 0, io, "cannot resolve {}: {}", host, gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> list(found, &freeaddrinfo);
  std::vector<ResolvedAddress> out;
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_addrlen > sizeof(sockaddr_storage)) continue;
    ResolvedAddress a;
    std::memcpy(&a.storage, ai->ai_addr, ai->ai_addrlen);
    a.length = ai->ai_addrlen;
    out.push_back(a);
  }
  OC_EXPECT(!out.empty(), io, "{} resolved to no address", host);
  return out;
}

std::optional<ResolvedAddress> literal(std::string_view host) {
  const std::string text(unbracketed(host));
  ResolvedAddress a;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a.storage);
  if (inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    a.length = sizeof(sockaddr_in);
    return a;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
  if (inet_pton(AF_INET6, text.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    a.length = sizeof(sockaddr_in6);
    return a;
  }
  return std::nullopt;
}

void set_port(ResolvedAddress& a, uint16_t port) {
  if (a.storage.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&a.storage)->sin_port = htons(port);
  } else if (a.storage.ss_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&a.storage)->sin6_port = htons(port);
  }
}

std::vector<ResolvedAddress> with_port(std::vector<ResolvedAddress> list, uint16_t port) {
  for (auto& a : list) set_port(a, port);
  return list;
}

}  // namespace

std::string_view unbracketed(std::string_view host) noexcept {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    return host.substr(1, host.size() - 2);
  return host;
}

Resolver::Resolver(uint32_t threads, std::chrono::milliseconds ttl, Lookup lookup,
                   size_t max_cached)
    : thread_count_(std::max<uint32_t>(1, threads)),
      ttl_(ttl),
      lookup_(lookup ? std::move(lookup) : Lookup(&system_lookup)),
      max_cached_(std::max<size_t>(1, max_cached)) {}

Resolver::~Resolver() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_.notify_all();
  for (auto& t : threads_) t.join();
}

Resolver& Resolver::global() {
  // Leaked on purpose, like the scheduler: a lookup may still be running at exit.
  static auto* r = new Resolver(defaults().dns_resolver_threads,
                                std::chrono::milliseconds(defaults().dns_cache_ttl_ms));
  return *r;
}

void Resolver::start_locked() {
  if (owner_ != ::getpid() && !threads_.empty()) {
    // A forked child has none of the parent's threads: forget them (never joined) and the
    // lookups they were running, whose waiters are in the parent.
    (void)new std::vector<std::thread>(std::move(threads_));
    threads_.clear();
    queue_.clear();
    pending_.clear();
  }
  owner_ = ::getpid();
  while (threads_.size() < thread_count_) threads_.emplace_back([this] { worker(); });
}

Result<std::vector<ResolvedAddress>> Resolver::resolve(std::string_view host, uint16_t port,
                                                       Deadline deadline) {
  OC_EXPECT(!host.empty(), invalid, "resolve: empty host name");
  if (auto a = literal(host)) return with_port({*a}, port);
  std::shared_ptr<Pending> pending;
  Waiter waiter;
  {
    std::lock_guard lock(mu_);
    if (auto it = cache_.find(host); it != cache_.end()) {
      if (Clock::now() < it->second.expires) return with_port(it->second.addresses, port);
      cache_.erase(it);
    }
    start_locked();
    auto it = pending_.find(host);
    if (it == pending_.end()) {
      pending = std::make_shared<Pending>();
      pending->host = std::string(host);
      pending_.emplace(pending->host, pending);
      queue_.push_back(pending);
      ++lookups_;
      work_.notify_one();
    } else {
      pending = it->second;
    }
    pending->waiters.push_back(&waiter);
  }
  const bool answered = waiter.wait_until(deadline);
  std::lock_guard lock(mu_);
  if (!answered && !pending->result) {
    std::erase(pending->waiters, &waiter);
    return OC_ERROR(Errc::timeout, "resolving {} took longer than the deadline", host);
  }
  if (!pending->result->ok()) return pending->result->error();
  return with_port(pending->result->value(), port);
}

void Resolver::worker() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;
    std::shared_ptr<Pending> p = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    auto r = lookup_(p->host);
    lock.lock();
    if (r.ok() && ttl_.count() > 0) cache_locked(p->host, r.value());
    p->result = std::move(r);
    if (auto it = pending_.find(p->host); it != pending_.end() && it->second == p)
      pending_.erase(it);
    for (Waiter* w : p->waiters) w->notify();
    p->waiters.clear();
  }
}

// Entries are otherwise dropped only when their own name is asked for again after the TTL, so
// a full cache is swept here: the expired names first, then (all still fresh) the one that
// expires first. A sweep is linear in the cache; only a new name in a full cache sweeps.
void Resolver::cache_locked(const std::string& host,
                            const std::vector<ResolvedAddress>& addresses) {
  const Clock::time_point now = Clock::now();
  if (!cache_.contains(host) && cache_.size() >= max_cached_) {
    std::erase_if(cache_, [&](const auto& e) { return e.second.expires <= now; });
    if (cache_.size() >= max_cached_) {
      auto first = std::min_element(cache_.begin(), cache_.end(), [](const auto& a, const auto& b) {
        return a.second.expires < b.second.expires;
      });
      cache_.erase(first);
    }
  }
  cache_[host] = Cached{addresses, now + ttl_};
}

size_t Resolver::cached_hosts() const {
  std::lock_guard lock(mu_);
  return cache_.size();
}

uint64_t Resolver::lookups() const {
  std::lock_guard lock(mu_);
  return lookups_;
}

}  // namespace oc::net
