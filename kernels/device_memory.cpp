// SPDX-License-Identifier: Apache-2.0
#include "kernels/device_memory.hpp"

#include <cuda_runtime.h>

#include <utility>

#include "kernels/cuda_check.hpp"

namespace oc::kernels {

Result<Stream> Stream::create() {
  cudaStream_t s = nullptr;
  OC_TRY(cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"));
  return Stream(
      std::shared_ptr<CUstream_st>(s, [](cudaStream_t h) { (void)cudaStreamDestroy(h); }));
}

Result<void> Stream::synchronize() {
  return cuda_check(cudaStreamSynchronize(handle()), "cudaStreamSynchronize");
}

Result<DeviceBuffer> DeviceBuffer::allocate(size_t bytes, Stream& stream) {
  DeviceBuffer b;
  if (bytes == 0) return b;
  OC_TRY(cuda_check(cudaMallocAsync(&b.data_, bytes, stream.handle()), "cudaMallocAsync"));
  b.size_ = bytes;
  b.stream_ = stream.share();
  return b;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      stream_(std::move(other.stream_)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    stream_ = std::move(other.stream_);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { reset(); }

void DeviceBuffer::reset() noexcept {
  if (data_ != nullptr) (void)cudaFreeAsync(data_, stream_.get());
  data_ = nullptr;
  size_ = 0;
  stream_.reset();
}

void DeviceBuffer::release_after(CUstream_st* consumer) noexcept {
  if (data_ == nullptr) return;
  if (consumer == nullptr) {
    // No stream to order on: wait for everything queued on the device, then free.
    (void)cudaDeviceSynchronize();
  } else if (consumer != stream_.get()) {
    // The free is queued behind the consumer's work through an event; the host does not wait.
    cudaEvent_t done = nullptr;
    if (cudaEventCreateWithFlags(&done, cudaEventDisableTiming) != cudaSuccess ||
        cudaEventRecord(done, consumer) != cudaSuccess ||
        cudaStreamWaitEvent(stream_.get(), done, 0) != cudaSuccess) {
      (void)cudaDeviceSynchronize();  // ordering failed: fall back to waiting for the device
    }
    if (done != nullptr) (void)cudaEventDestroy(done);  // released once the wait has run
  }
  reset();
}

Result<PinnedBuffer> PinnedBuffer::allocate(size_t bytes) {
  PinnedBuffer b;
  if (bytes == 0) return b;
  void* p = nullptr;
  OC_TRY(cuda_check(cudaMallocHost(&p, bytes), "cudaMallocHost"));
  b.data_ = static_cast<uint8_t*>(p);
  b.size_ = bytes;
  return b;
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

PinnedBuffer::~PinnedBuffer() { reset(); }

void PinnedBuffer::reset() noexcept {
  if (data_ != nullptr) (void)cudaFreeHost(data_);
  data_ = nullptr;
  size_ = 0;
}

Result<void> use_device(int device) { return cuda_check(cudaSetDevice(device), "cudaSetDevice"); }

Result<void> copy_to_device(void* dst, const void* src, size_t bytes, Stream& stream) {
  if (bytes == 0) return {};
  return cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream.handle()),
                    "copy to device");
}

Result<void> copy_to_host(void* dst, const void* src, size_t bytes, Stream& stream) {
  if (bytes == 0) return {};
  return cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream.handle()),
                    "copy to host");
}

Result<void> copy_and_wait(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return {};
  // cudaMemcpy may return before a device-to-device copy is done; the calling thread's own
  // stream, waited for, covers every direction and waits for nothing else.
  OC_TRY(cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cudaStreamPerThread),
                    "cudaMemcpyAsync"));
  return cuda_check(cudaStreamSynchronize(cudaStreamPerThread), "cudaStreamSynchronize");
}

Result<void> wait_for_stream(CUstream_st* stream) {
  if (stream == nullptr) return cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

}  // namespace oc::kernels
