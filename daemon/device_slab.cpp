// SPDX-License-Identifier: Apache-2.0
#include "daemon/device_slab.hpp"

#include <unistd.h>

#include <utility>

#include "kernels/device_memory.hpp"

namespace oc::daemon {

Result<std::shared_ptr<DeviceSlab>> DeviceSlab::create(uint64_t id, int device, uint64_t bytes,
                                                       kernels::ShareKind kind) {
  OC_ASSIGN_OR_RETURN(kernels::SharedDeviceMemory memory,
                      kernels::SharedDeviceMemory::allocate(device, bytes, kind));
  std::shared_ptr<DeviceSlab> slab(new DeviceSlab(id, device, std::move(memory)));
  if (kind == kernels::ShareKind::vmm) {
    OC_ASSIGN_OR_RETURN(slab->fd_, slab->memory_.export_fd());
  } else {
    OC_ASSIGN_OR_RETURN(slab->ipc_, slab->memory_.ipc_handle());
  }
  return slab;
}

DeviceSlab::DeviceSlab(uint64_t id, int device, kernels::SharedDeviceMemory memory)
    : memory_(std::move(memory)), ranges_(memory_.size()), id_(id), device_(device) {}

DeviceSlab::~DeviceSlab() { close_fd(); }

void DeviceSlab::close_fd() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::optional<uint64_t> DeviceSlab::allocate(uint64_t bytes) {
  std::lock_guard lock(mu_);
  return ranges_.allocate(bytes);
}

bool DeviceSlab::free(uint64_t offset) {
  std::lock_guard lock(mu_);
  return ranges_.free(offset);
}

bool DeviceSlab::empty() const {
  std::lock_guard lock(mu_);
  return ranges_.empty();
}

Result<uint64_t> copy_batch_to_device(BatchLayout& layout, uint8_t* dst, int device) {
  OC_TRY(kernels::use_device(device));
  uint64_t copied = 0;
  // Each copy is waited for before the Batch naming the range is sent: the client's kernels run
  // on streams of another process, which nothing here orders against.
  for (const auto& [at, b] : layout.copies) {
    OC_TRY(kernels::copy_and_wait(dst + at, b->data(), b->size()));
    copied += b->size();
  }
  layout.copies.clear();  // they point into the batch
  layout.sources.clear();
  layout.batch.reset();
  return copied;
}

}  // namespace oc::daemon
