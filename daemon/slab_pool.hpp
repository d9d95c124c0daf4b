// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The memory onecopyd places batches in, shared by every client: host slabs (memfds,
/// daemon/slab.hpp) within `daemon_pool_bytes` in all and `daemon_uid_max_pool_bytes` per user,
/// and device slabs (daemon/device_slab.hpp) within `daemon_device_pool_bytes` per GPU, with the
/// decoder of each GPU that device scans have used. It never blocks: a slab that does not fit now
/// is a null result, and the batch waits (`wait`) until a slab or range is given back and the
/// pool calls its `on_room` callback.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "config/defaults.hpp"
#include "config/error.hpp"
#include "daemon/session.hpp"
#include "kernels/device.hpp"
#include "kernels/device_scan.hpp"
#include "kernels/shared_memory.hpp"

namespace oc::daemon {

class SlabPool {
 public:
  /// @param cfg the daemon's knobs, read at each call (a reload changes them)
  /// @param next_id the daemon's id counter (slabs share the id space of files, scans, leases)
  /// @param on_room called when room may have appeared for a waiting batch
  SlabPool(const Defaults& cfg, std::function<uint64_t()> next_id, std::function<void()> on_room)
      : cfg_(cfg), next_id_(std::move(next_id)), on_room_(std::move(on_room)) {}

  /// A new host slab of @p bytes for @p s (one batch alone when @p dedicated, else part of its
  /// arena); null when the pool or the user's share has no room now. `io` when @p descriptor_left
  /// is false (onecopyd is at its descriptor budget).
  [[nodiscard]] Result<std::shared_ptr<Slab>> make(Session& s, uint64_t bytes, bool dedicated,
                                                   bool descriptor_left);
  /// Drops @p s's slab @p id from the pool (a copy still writing keeps the memory until done).
  void forget(Session& s, uint64_t id);
  /// A range of @p need bytes for @p scan's batch in @p s's slabs (host, or the scan's device's),
  /// in a new slab when none has room; false when the pool has none now (the batch waits).
  [[nodiscard]] Result<bool> find_range(Session& s, const ActiveScan& scan, uint64_t need,
                                        Placed& p, bool descriptor_left);
  /// Ends the range at @p offset: a dedicated slab emptied so leaves the pool.
  void give_back(Session& s, const std::shared_ptr<Slab>& slab, uint64_t offset);
  void give_back(const std::shared_ptr<DeviceSlab>& slab, uint64_t offset);
  /// Drops every slab of @p s (its connection ended).
  void forget_all(Session& s);

  /// The decoder of device scans on @p device, made on first use (a decode session: streams and
  /// pinned staging) and shared by every client's scans there; `cuda` for a device @p gpu has
  /// not got.
  [[nodiscard]] Result<std::shared_ptr<kernels::DeviceChunkDecoder>> device_decoder(
      int32_t device, const kernels::DeviceInfo& gpu);

  /// Session @p serial has a batch waiting for room; `stop_waiting` when it has none left.
  void wait(uint64_t serial) { waiters_.insert(serial); }
  void stop_waiting(uint64_t serial) { waiters_.erase(serial); }
  [[nodiscard]] const std::set<uint64_t>& waiters() const noexcept { return waiters_; }

  /// The figures of `onecopy status`.
  [[nodiscard]] uint64_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] uint64_t slabs() const noexcept { return slabs_; }
  struct DeviceUse {
    std::shared_ptr<kernels::DeviceChunkDecoder> decoder;
    kernels::ShareKind share = kernels::ShareKind::vmm;
    uint64_t pool_bytes = 0;  ///< its device slabs, every client's
  };
  /// The devices device scans have used.
  [[nodiscard]] const std::map<int32_t, DeviceUse>& devices() const noexcept { return devices_; }

 private:
  Result<std::shared_ptr<DeviceSlab>> make_device(Session& s, int32_t device, uint64_t bytes);
  void freed();

  const Defaults& cfg_;
  std::function<uint64_t()> next_id_;
  std::function<void()> on_room_;
  uint64_t bytes_ = 0, slabs_ = 0;
  std::map<uid_t, uint64_t> bytes_by_uid_;
  std::set<uint64_t> waiters_;  // serials of sessions with a batch waiting for room
  std::map<int32_t, DeviceUse> devices_;
  bool logged_pages_ = false;
};

}  // namespace oc::daemon
