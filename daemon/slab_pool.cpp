// SPDX-License-Identifier: Apache-2.0
#include "daemon/slab_pool.hpp"

#include <algorithm>

#include "config/log.hpp"

namespace oc::daemon {

Result<std::shared_ptr<Slab>> SlabPool::make(Session& s, uint64_t bytes, bool dedicated,
                                             bool descriptor_left) {
  const uint64_t footprint = Slab::footprint(bytes);
  const auto mine = bytes_by_uid_.find(s.peer.uid);
  const uint64_t held = mine == bytes_by_uid_.end() ? 0 : mine->second;
  if (bytes_ + footprint > cfg_.daemon_pool_bytes ||
      held + footprint > cfg_.daemon_uid_max_pool_bytes) {
    return std::shared_ptr<Slab>();  // no room now
  }
  OC_EXPECT(descriptor_left, io, "no descriptor for a new slab: onecopyd is at its budget");
  OC_ASSIGN_OR_RETURN(auto slab, Slab::create(next_id_(), bytes, dedicated));
  bytes_ += slab->bytes();
  bytes_by_uid_[s.peer.uid] += slab->bytes();
  ++slabs_;
  const auto level = logged_pages_ ? spdlog::level::debug : spdlog::level::info;
  log::get().log(level, "slab {} for client pid {}: {} bytes{}, {}", slab->id(), s.peer.pid,
                 slab->bytes(), dedicated ? " (one large batch)" : "",
                 slab->hugepages() ? "hugepages" : "normal pages (no hugepages to spare)");
  logged_pages_ = true;
  s.slabs[slab->id()] = slab;
  if (!dedicated) s.arena->add(slab);
  return slab;
}

void SlabPool::forget(Session& s, uint64_t id) {
  auto it = s.slabs.find(id);
  if (it == s.slabs.end()) return;
  const uint64_t bytes = it->second->bytes();
  bytes_ -= bytes;
  if (auto u = bytes_by_uid_.find(s.peer.uid); u != bytes_by_uid_.end()) {
    u->second -= bytes;
    if (u->second == 0) bytes_by_uid_.erase(u);
  }
  --slabs_;
  s.arena->remove(id);
  s.slabs.erase(it);  // a copy job still writing keeps the memory until it is done
  freed();
}

void SlabPool::forget_all(Session& s) {
  std::vector<uint64_t> ids;
  for (const auto& [id, slab] : s.slabs) ids.push_back(id);
  for (uint64_t id : ids) forget(s, id);
  for (const auto& [id, slab] : s.device_slabs)
    devices_.at(slab->device()).pool_bytes -= slab->bytes();
  s.device_slabs.clear();  // a copy job still writing keeps its slab until it is done
  waiters_.erase(s.serial);
  freed();
}

// Room in the pool may let a waiting batch go.
void SlabPool::freed() {
  if (!waiters_.empty() && on_room_) on_room_();
}

void SlabPool::give_back(Session& s, const std::shared_ptr<Slab>& slab, uint64_t offset) {
  (void)slab->free(offset);
  if (slab->dedicated() && slab->empty()) forget(s, slab->id());
}

void SlabPool::give_back(const std::shared_ptr<DeviceSlab>& slab, uint64_t offset) {
  (void)slab->free(offset);
  freed();
}

Result<bool> SlabPool::find_range(Session& s, const ActiveScan& scan, uint64_t need, Placed& p,
                                  bool descriptor_left) {
  if (scan.device >= 0) {
    for (const auto& [id, slab] : s.device_slabs) {
      if (slab->device() != scan.device) continue;
      if (auto at = slab->allocate(need)) {
        p.device_slab = slab;
        p.offset = *at;
        return true;
      }
    }
    OC_ASSIGN_OR_RETURN(auto made,
                        make_device(s, scan.device, std::max(need, cfg_.daemon_device_slab_bytes)));
    if (!made) return false;
    p.device_slab = std::move(made);
    p.offset = *p.device_slab->allocate(need);
    return true;
  }
  for (const auto& [id, slab] : s.slabs) {
    if (slab->dedicated()) continue;
    if (auto at = slab->allocate(need)) {
      p.slab = slab;
      p.offset = *at;
      return true;
    }
  }
  const bool dedicated = need > cfg_.daemon_slab_bytes;
  OC_ASSIGN_OR_RETURN(
      auto made, make(s, dedicated ? need : cfg_.daemon_slab_bytes, dedicated, descriptor_left));
  if (!made) return false;
  p.slab = std::move(made);
  p.offset = *p.slab->allocate(need);
  return true;
}

Result<std::shared_ptr<DeviceSlab>> SlabPool::make_device(Session& s, int32_t device,
                                                          uint64_t bytes) {
  DeviceUse& use = devices_.at(device);  // its decoder made it, before the scan began
  if (use.pool_bytes + bytes > cfg_.daemon_device_pool_bytes) return std::shared_ptr<DeviceSlab>();
  OC_ASSIGN_OR_RETURN(auto slab, DeviceSlab::create(next_id_(), device, bytes, use.share));
  use.pool_bytes += slab->bytes();
  log::get().debug("device slab {} on cuda:{} for client pid {}: {} bytes", slab->id(), device,
                   s.peer.pid, slab->bytes());
  s.device_slabs[slab->id()] = slab;
  return slab;
}

Result<std::shared_ptr<kernels::DeviceChunkDecoder>> SlabPool::device_decoder(
    int32_t device, const kernels::DeviceInfo& gpu) {
  if (auto it = devices_.find(device); it != devices_.end()) return it->second.decoder;
  OC_EXPECT(device < gpu.count, cuda, "onecopyd has no CUDA device cuda:{}{}", device,
            gpu.count == 0 ? ": " + gpu.why_none : fmt::format(" (it sees {})", gpu.count));
  DeviceUse use;
  OC_ASSIGN_OR_RETURN(use.share, kernels::share_kind(device));
  OC_ASSIGN_OR_RETURN(use.decoder,
                      kernels::DeviceChunkDecoder::create(device, kernels::DeviceDecodes::cuda));
  log::get().info(
      "device scans on cuda:{}: memory shared by {}", device,
      use.share == kernels::ShareKind::vmm ? "VMM descriptors" : "CUDA IPC handles (no VMM)");
  return devices_.emplace(device, std::move(use)).first->second.decoder;
}

}  // namespace oc::daemon
