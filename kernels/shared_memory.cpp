// SPDX-License-Identifier: Apache-2.0
// The driver's VMM calls come from the runtime's entry-point lookup, once per process: linking
// libcuda would make every onecopy binary fail to start on machines without a driver. Every
// object tears down what it built so far, in reverse, so a failure half-way leaks nothing.
#include "kernels/shared_memory.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstring>
#include <limits>
#include <utility>

#include "kernels/cuda_check.hpp"
#include "kernels/device_memory.hpp"

namespace oc::kernels {
namespace {

// The driver functions VMM sharing needs.
struct Driver {
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetAttribute) device_attribute = nullptr;
  decltype(&::cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&::cuMemCreate) create = nullptr;
  decltype(&::cuMemRelease) release = nullptr;
  decltype(&::cuMemAddressReserve) reserve = nullptr;
  decltype(&::cuMemAddressFree) address_free = nullptr;
  decltype(&::cuMemMap) map = nullptr;
  decltype(&::cuMemUnmap) unmap = nullptr;
  decltype(&::cuMemSetAccess) set_access = nullptr;
  decltype(&::cuMemExportToShareableHandle) export_handle = nullptr;
  decltype(&::cuMemImportFromShareableHandle) import_handle = nullptr;
};

// The driver ABI version the lookups ask for: VMM's calls as CUDA 12.0 defines them.
constexpr unsigned kDriverAbi = 12000;

template <class F>
Result<void> lookup(const char* name, F& fn) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  OC_TRY(cuda_check(
      cudaGetDriverEntryPointByVersion(name, &p, kDriverAbi, cudaEnableDefault, &found), name));
  OC_EXPECT(found == cudaDriverEntryPointSuccess && p != nullptr, cuda, "the CUDA driver has no {}",
            name);
  fn = reinterpret_cast<F>(p);
  return {};
}

Result<Driver> load_driver() {
  Driver d;
  OC_TRY(lookup("cuDeviceGet", d.device_get));
  OC_TRY(lookup("cuDeviceGetAttribute", d.device_attribute));
  OC_TRY(lookup("cuMemGetAllocationGranularity", d.granularity));
  OC_TRY(lookup("cuMemCreate", d.create));
  OC_TRY(lookup("cuMemRelease", d.release));
  OC_TRY(lookup("cuMemAddressReserve", d.reserve));
  OC_TRY(lookup("cuMemAddressFree", d.address_free));
  OC_TRY(lookup("cuMemMap", d.map));
  OC_TRY(lookup("cuMemUnmap", d.unmap));
  OC_TRY(lookup("cuMemSetAccess", d.set_access));
  OC_TRY(lookup("cuMemExportToShareableHandle", d.export_handle));
  OC_TRY(lookup("cuMemImportFromShareableHandle", d.import_handle));
  return d;
}

// The driver's functions, looked up on first use; the same error every time after a failure.
Result<const Driver*> driver() {
  static const Result<Driver> loaded = load_driver();
  if (!loaded.ok()) return loaded.error();
  return &loaded.value();
}

Result<void> cu_check(CUresult rc, const char* what) {
  if (rc == CUDA_SUCCESS) return {};
  return OC_ERROR(Errc::cuda, "{}: CUresult {}", what, static_cast<int>(rc));
}

// Makes @p device current and its primary context live, so that driver calls find a context.
Result<void> enter(int device) {
  OC_TRY(use_device(device));
  return cuda_check(cudaFree(nullptr), "initialise the CUDA context");
}

CUmemAllocationProp vmm_properties(int device) {
  CUmemAllocationProp prop;
  std::memset(&prop, 0, sizeof(prop));
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

// Reserves an address range for @p handle's @p bytes, maps it and opens it to @p device.
// @return the address; on failure nothing stays reserved or mapped.
Result<CUdeviceptr> map_for(const Driver& d, CUmemGenericAllocationHandle handle, size_t bytes,
                            int device) {
  CUdeviceptr ptr = 0;
  OC_TRY(cu_check(d.reserve(&ptr, bytes, 0, 0, 0), "cuMemAddressReserve"));
  if (auto r = cu_check(d.map(ptr, bytes, 0, handle, 0), "cuMemMap"); !r.ok()) {
    (void)d.address_free(ptr, bytes);
    return r.error();
  }
  CUmemAccessDesc access;
  std::memset(&access, 0, sizeof(access));
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (auto r = cu_check(d.set_access(ptr, bytes, &access, 1), "cuMemSetAccess"); !r.ok()) {
    (void)d.unmap(ptr, bytes);
    (void)d.address_free(ptr, bytes);
    return r.error();
  }
  return ptr;
}

// Undoes map_for and releases @p handle (this process's reference to the allocation).
void unmap_and_release(void* data, size_t bytes, unsigned long long handle) noexcept {
  auto d = driver();
  if (!d.ok()) return;
  if (data != nullptr) {
    const auto ptr = reinterpret_cast<CUdeviceptr>(data);
    (void)(*d)->unmap(ptr, bytes);
    (void)(*d)->address_free(ptr, bytes);
  }
  if (handle != 0) (void)(*d)->release(handle);
}

}  // namespace

Result<ShareKind> share_kind(int device) {
  OC_TRY(enter(device));
  auto d = driver();
  if (!d.ok()) return ShareKind::ipc;  // a driver without VMM's entry points
  CUdevice dev = 0;
  OC_TRY(cu_check((*d)->device_get(&dev, device), "cuDeviceGet"));
  int vmm = 0, fds = 0;
  OC_TRY(cu_check(
      (*d)->device_attribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev),
      "cuDeviceGetAttribute(VMM)"));
  OC_TRY(cu_check((*d)->device_attribute(
                      &fds, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, dev),
                  "cuDeviceGetAttribute(POSIX descriptors)"));
  return vmm != 0 && fds != 0 ? ShareKind::vmm : ShareKind::ipc;
}

Result<SharedDeviceMemory> SharedDeviceMemory::allocate(int device, size_t bytes, ShareKind kind) {
  OC_EXPECT(bytes > 0, invalid, "shared device memory of 0 bytes");
  OC_TRY(enter(device));
  SharedDeviceMemory m;
  m.kind_ = kind;
  if (kind == ShareKind::ipc) {
    OC_TRY(cuda_check(cudaMalloc(&m.data_, bytes), "cudaMalloc (shared)"));
    m.size_ = bytes;
    return m;
  }
  OC_ASSIGN_OR_RETURN(const Driver* d, driver());
  const CUmemAllocationProp prop = vmm_properties(device);
  size_t granularity = 0;
  OC_TRY(cu_check(d->granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                  "cuMemGetAllocationGranularity"));
  OC_EXPECT(granularity > 0 && bytes <= std::numeric_limits<size_t>::max() - granularity, invalid,
            "shared device memory of {} bytes", bytes);
  const size_t size = (bytes + granularity - 1) / granularity * granularity;
  CUmemGenericAllocationHandle handle = 0;
  OC_TRY(cu_check(d->create(&handle, size, &prop, 0), "cuMemCreate"));
  m.handle_ = handle;  // released by the destructor from here on
  m.size_ = size;
  OC_ASSIGN_OR_RETURN(CUdeviceptr ptr, map_for(*d, handle, size, device));
  m.data_ = reinterpret_cast<void*>(ptr);
  return m;
}

Result<SharedDeviceMemory> SharedDeviceMemory::import_fd(int device, int fd, size_t bytes) {
  OC_EXPECT(fd >= 0 && bytes > 0, invalid, "import of descriptor {} for {} bytes", fd, bytes);
  OC_TRY(enter(device));
  OC_ASSIGN_OR_RETURN(const Driver* d, driver());
  SharedDeviceMemory m;
  m.kind_ = ShareKind::vmm;
  m.imported_ = true;
  CUmemGenericAllocationHandle handle = 0;
  OC_TRY(cu_check(d->import_handle(&handle, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                  "cuMemImportFromShareableHandle"));
  m.handle_ = handle;
  m.size_ = bytes;
  OC_ASSIGN_OR_RETURN(CUdeviceptr ptr, map_for(*d, handle, bytes, device));
  m.data_ = reinterpret_cast<void*>(ptr);
  return m;
}

Result<SharedDeviceMemory> SharedDeviceMemory::import_ipc(int device,
                                                          const std::array<uint8_t, 64>& handle) {
  OC_TRY(enter(device));
  SharedDeviceMemory m;
  m.kind_ = ShareKind::ipc;
  m.imported_ = true;
  cudaIpcMemHandle_t h;
  std::memcpy(&h, handle.data(), sizeof(h));
  OC_TRY(cuda_check(cudaIpcOpenMemHandle(&m.data_, h, cudaIpcMemLazyEnablePeerAccess),
                    "cudaIpcOpenMemHandle"));
  return m;
}

SharedDeviceMemory::SharedDeviceMemory(SharedDeviceMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      handle_(std::exchange(other.handle_, 0)),
      kind_(other.kind_),
      imported_(other.imported_) {}

SharedDeviceMemory& SharedDeviceMemory::operator=(SharedDeviceMemory&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    handle_ = std::exchange(other.handle_, 0);
    kind_ = other.kind_;
    imported_ = other.imported_;
  }
  return *this;
}

SharedDeviceMemory::~SharedDeviceMemory() { reset(); }

void SharedDeviceMemory::reset() noexcept {
  if (kind_ == ShareKind::vmm) {
    unmap_and_release(data_, size_, handle_);
  } else if (data_ != nullptr) {
    (void)(imported_ ? cudaIpcCloseMemHandle(data_) : cudaFree(data_));
  }
  data_ = nullptr;
  size_ = 0;
  handle_ = 0;
}

Result<int> SharedDeviceMemory::export_fd() const {
  OC_EXPECT(kind_ == ShareKind::vmm && handle_ != 0, invalid,
            "only VMM memory exports a descriptor");
  OC_ASSIGN_OR_RETURN(const Driver* d, driver());
  int fd = -1;
  OC_TRY(cu_check(d->export_handle(&fd, handle_, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                  "cuMemExportToShareableHandle"));
  return fd;
}

Result<std::array<uint8_t, 64>> SharedDeviceMemory::ipc_handle() const {
  OC_EXPECT(kind_ == ShareKind::ipc && !imported_ && data_ != nullptr, invalid,
            "only cudaMalloc memory allocated here has an IPC handle");
  cudaIpcMemHandle_t h;
  OC_TRY(cuda_check(cudaIpcGetMemHandle(&h, data_), "cudaIpcGetMemHandle"));
  static_assert(sizeof(h) == 64, "cudaIpcMemHandle_t is 64 bytes");
  std::array<uint8_t, 64> out{};
  std::memcpy(out.data(), &h, sizeof(h));
  return out;
}

}  // namespace oc::kernels
