// SPDX-License-Identifier: Apache-2.0
#include "kernels/device_memory.hpp"

#include <cuda_runtime.h>

#include <utility>

#include "kernels/cuda_check.hpp"

namespace oc::kernels {

Result<Stream> Stream::create() {
  cudaStream_t s = nullptr;
  OC_TRY(cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"));
  return Stream(s);
}

Stream& Stream::operator=(Stream&& other) noexcept {
  std::swap(handle_, other.handle_);
  return *this;
}

Stream::~Stream() {
  if (handle_ != nullptr) (void)cudaStreamDestroy(handle_);
}

Result<void> Stream::synchronize() {
  return cuda_check(cudaStreamSynchronize(handle_), "cudaStreamSynchronize");
}

Result<DeviceBuffer> DeviceBuffer::allocate(size_t bytes, Stream& stream) {
  DeviceBuffer b;
  if (bytes == 0) return b;
  OC_TRY(cuda_check(cudaMallocAsync(&b.data_, bytes, stream.handle()), "cudaMallocAsync"));
  b.size_ = bytes;
  b.stream_ = stream.handle();
  return b;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      stream_(std::exchange(other.stream_, nullptr)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { reset(); }

void DeviceBuffer::reset() noexcept {
  if (data_ != nullptr) (void)cudaFreeAsync(data_, stream_);
  data_ = nullptr;
  size_ = 0;
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

}  // namespace oc::kernels
