// SPDX-License-Identifier: Apache-2.0
// Builds without nvcc: the same interface, reporting that no device can exist.
#include <utility>

#include "config/defaults.hpp"
#include "kernels/alprd.hpp"
#include "kernels/device.hpp"
#include "kernels/device_export.hpp"
#include "kernels/device_memory.hpp"
#include "kernels/filter.hpp"
#include "kernels/frame_of_reference.hpp"
#include "kernels/fsst.hpp"
#include "kernels/fused_decode.hpp"
#include "kernels/gather.hpp"
#include "kernels/shared_memory.hpp"
#include "kernels/string_dict.hpp"

namespace oc::kernels {

DeviceInfo probe_devices() {
  DeviceInfo info;
  info.why_none = "onecopy was built without CUDA (no nvcc at build time)";
  return info;
}

bool built_with_cuda() noexcept { return false; }

template <class T>
Result<void> add_reference_on_device(std::span<T>, T) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}

#define OC_INSTANTIATE(T) template Result<void> add_reference_on_device<T>(std::span<T>, T);
OC_FOR_EACH_REFERENCE_TYPE(OC_INSTANTIATE)
#undef OC_INSTANTIATE

// Every factory fails, so no object below ever owns memory: the destructors have nothing to free.
Result<Stream> Stream::create() { return OC_ERROR(Errc::cuda, "onecopy was built without CUDA"); }
Result<void> Stream::synchronize() {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}

Result<DeviceBuffer> DeviceBuffer::allocate(size_t, Stream&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&&) noexcept {}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&&) noexcept { return *this; }
DeviceBuffer::~DeviceBuffer() = default;
void DeviceBuffer::release_after(CUstream_st*) noexcept {}

Result<PinnedBuffer> PinnedBuffer::allocate(size_t) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
PinnedBuffer::PinnedBuffer(PinnedBuffer&&) noexcept {}
PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&&) noexcept { return *this; }
PinnedBuffer::~PinnedBuffer() = default;

Result<void> DeviceColumn::finish(Stream&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
Result<void> DeviceBatch::finish(Stream&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
Result<DeviceColumn> decode_on_device(const FusedPlan&, Stream&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
Result<format::Buffer> decode_on_device_to_host(const FusedPlan&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}

DecodeSession::Options DecodeSession::Options::defaults() {
  return {oc::defaults().gpu_streams, oc::defaults().gpu_staging_bytes};
}
Result<DecodeSession> DecodeSession::create(const Options&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
DecodeSession::Slot::Slot(Slot&&) noexcept {}
DecodeSession::Slot::~Slot() = default;
Result<DeviceColumn> DecodeSession::decode(const FusedPlan&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
Result<DeviceBatch> DecodeSession::decode_batch(std::span<const FusedPlan* const>) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
Result<std::vector<DeviceBuffer>> DecodeSession::upload(std::span<const std::span<const uint8_t>>) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
Result<void> DecodeSession::finish(DeviceColumn&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
Result<void> DecodeSession::finish(DeviceBatch&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
Result<Stream*> DecodeSession::stream_of(CUstream_st*) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
Result<void> DecodeSession::synchronize() {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}

Result<void> export_arrow_device(DeviceColumn&&, const format::DTypePtr&, Stream&,
                                 ArrowDeviceArray*) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
Result<DLManagedTensor*> export_dlpack(DeviceColumn&&, const format::DTypePtr&, Stream&,
                                       CUstream_st*) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}

Result<void> DeviceStrings::finish(Stream&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
Result<DeviceStrings> decode_strings_on_device(const StringDictPlan&, Stream&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}

Result<void> DeviceFsst::finish(Stream&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
Result<DeviceFsst> decode_fsst_on_device(const FsstPlan&, Stream&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}

Result<void> DeviceAlprd::finish(Stream&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
Result<DeviceAlprd> decode_alprd_on_device(const AlprdPlan&, Stream&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}

Result<uint64_t> FilteredColumn::count(Stream&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
Result<FilteredColumn> filter_on_device(const Predicate&, const void*, const uint8_t*, uint64_t,
                                        Stream&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}

Result<void> use_device(int) { return OC_ERROR(Errc::cuda, "onecopy was built without CUDA"); }
Result<void> copy_to_device(void*, const void*, size_t, Stream&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
Result<void> copy_to_host(void*, const void*, size_t, Stream&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
Result<void> copy_and_wait(void*, const void*, size_t) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
Result<void> wait_for_stream(CUstream_st*) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}

Result<void> gather_on_device(const GatherParams&, Stream&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}

Result<ShareKind> share_kind(int) { return OC_ERROR(Errc::cuda, "onecopy was built without CUDA"); }
Result<SharedDeviceMemory> SharedDeviceMemory::allocate(int, size_t, ShareKind) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
Result<SharedDeviceMemory> SharedDeviceMemory::import_fd(int, int, size_t) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
Result<SharedDeviceMemory> SharedDeviceMemory::import_ipc(int, const std::array<uint8_t, 64>&) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
SharedDeviceMemory::SharedDeviceMemory(SharedDeviceMemory&&) noexcept {}
SharedDeviceMemory& SharedDeviceMemory::operator=(SharedDeviceMemory&&) noexcept { return *this; }
SharedDeviceMemory::~SharedDeviceMemory() = default;
Result<int> SharedDeviceMemory::export_fd() const {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}
Result<std::array<uint8_t, 64>> SharedDeviceMemory::ipc_handle() const {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}

}  // namespace oc::kernels
