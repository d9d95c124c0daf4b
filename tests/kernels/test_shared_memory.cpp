// SPDX-License-Identifier: Apache-2.0
// Device memory shared across processes (onecopy-tests-gpu): a VMM export maps again through its
// descriptor and shows the exporter's bytes; an IPC export gives a handle. The cross-process
// hand-off itself is the device check's (scripts/gpu_check.sh).
#include <cuda_runtime.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <vector>

#include "kernels/shared_memory.hpp"

using namespace oc;

TEST_CASE("VMM device memory maps again through its exported descriptor", "[kernels][gpu][share]") {
  auto kind = kernels::share_kind(0);
  REQUIRE(kind.ok());
  if (*kind != kernels::ShareKind::vmm) {
    WARN(
        "device 0 has no VMM with POSIX descriptors: the IPC fallback is what onecopyd uses there");
    CHECK(*kind == kernels::ShareKind::ipc);
    return;
  }
  auto m = kernels::SharedDeviceMemory::allocate(0, 3 << 20, kernels::ShareKind::vmm);
  REQUIRE(m.ok());
  CHECK(m->size() >= (3u << 20));
  std::vector<uint8_t> bytes(m->size());
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7);
  REQUIRE(cudaMemcpy(m->data(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice) == cudaSuccess);
  auto fd = m->export_fd();
  REQUIRE(fd.ok());
  auto imported = kernels::SharedDeviceMemory::import_fd(0, *fd, m->size());
  ::close(*fd);
  REQUIRE(imported.ok());
  CHECK(imported->imported());
  CHECK(imported->data() != m->data());  // a second mapping of the same memory
  std::vector<uint8_t> back(bytes.size());
  REQUIRE(cudaMemcpy(back.data(), imported->data(), back.size(), cudaMemcpyDeviceToHost) ==
          cudaSuccess);
  CHECK(back == bytes);
  CHECK_FALSE(m->ipc_handle().ok());  // VMM memory has no IPC handle
}

TEST_CASE("IPC device memory gives a handle and no descriptor", "[kernels][gpu][share]") {
  auto m = kernels::SharedDeviceMemory::allocate(0, 4096, kernels::ShareKind::ipc);
  REQUIRE(m.ok());
  auto h = m->ipc_handle();
  REQUIRE(h.ok());
  bool nonzero = false;
  for (uint8_t b : *h) nonzero = nonzero || b != 0;
  CHECK(nonzero);
  auto fd = m->export_fd();
  REQUIRE_FALSE(fd.ok());
  CHECK(fd.error().code() == Errc::invalid);
}
