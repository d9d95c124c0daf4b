// SPDX-License-Identifier: Apache-2.0
#include "kernels/device_export.hpp"

#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "format/column.hpp"
#include "kernels/cuda_check.hpp"

namespace oc::kernels {
namespace {

// Frees @p column's device memory once @p consumer's work queued so far has run (null: once
// the whole device's has).
void release_column(DeviceColumn& column, CUstream_st* consumer) noexcept {
  column.values.release_after(consumer);
  column.validity.release_after(consumer);
}

// What an exported array owns until its release callback. Arrow's release names no stream, so
// the free waits for the device: a consumer may still have work queued that reads the buffers.
struct ArrowHolder {
  DeviceColumn column;
  const void* buffers[2] = {nullptr, nullptr};
  cudaEvent_t event = nullptr;
  ~ArrowHolder() {
    release_column(column, nullptr);
    if (event != nullptr) (void)cudaEventDestroy(event);
  }
};

void release_arrow(ArrowArray* a) {
  delete static_cast<ArrowHolder*>(a->private_data);
  a->release = nullptr;
}

struct DlpackHolder {
  DeviceColumn column;
  CUstream_st* consumer = nullptr;
  int64_t shape[1] = {0};
  DLManagedTensor tensor{};
  ~DlpackHolder() { release_column(column, consumer); }
};

void delete_dlpack(DLManagedTensor* t) { delete static_cast<DlpackHolder*>(t->manager_ctx); }

}  // namespace

Result<void> export_arrow_device(DeviceColumn&& column, const format::DTypePtr& dtype,
                                 Stream& stream, ArrowDeviceArray* out) {
  OC_EXPECT(format::fixed_width_of(*dtype) == column.value_bytes, unsupported,
            "no Arrow device export of {} ({}-byte values decoded)", dtype->to_string(),
            column.value_bytes);
  OC_TRY(column.finish(stream));  // a corrupt dict code is an error, not a 0 handed on
  auto holder = std::make_unique<ArrowHolder>();
  OC_TRY(cuda_check(cudaEventCreateWithFlags(&holder->event, cudaEventDisableTiming),
                    "cudaEventCreate"));
  OC_TRY(cuda_check(cudaEventRecord(holder->event, stream.handle()), "cudaEventRecord"));
  holder->column = std::move(column);
  holder->buffers[0] = holder->column.validity.data();
  holder->buffers[1] = holder->column.values.data();
  *out = ArrowDeviceArray{};
  out->array.length = static_cast<int64_t>(holder->column.rows);
  out->array.null_count = holder->column.null_count;
  out->array.n_buffers = 2;
  out->array.buffers = holder->buffers;
  out->array.release = release_arrow;
  out->device_id = 0;
  out->device_type = ARROW_DEVICE_CUDA;
  out->sync_event = &holder->event;
  out->array.private_data = holder.release();
  return {};
}

Result<DLManagedTensor*> export_dlpack(DeviceColumn&& column, const format::DTypePtr& dtype,
                                       Stream& stream, CUstream_st* consumer) {
  const format::DType& t = dtype->storage();
  OC_EXPECT(t.kind == format::TypeKind::primitive && t.ptype != format::PType::f16, unsupported,
            "no DLPack export of {}", dtype->to_string());
  OC_EXPECT(column.null_count == 0, unsupported, "DLPack has no validity: {} nulls",
            column.null_count);
  OC_TRY(column.finish(stream));  // waits for the decode and checks its error word
  auto holder = std::make_unique<DlpackHolder>();
  holder->column = std::move(column);
  holder->consumer = consumer;
  holder->shape[0] = static_cast<int64_t>(holder->column.rows);
  DLTensor& d = holder->tensor.dl_tensor;
  d.data = holder->column.values.data();
  d.device = {kDLCUDA, 0};
  d.ndim = 1;
  d.dtype.code = static_cast<uint8_t>(format::ptype_is_float(t.ptype)    ? kDLFloat
                                      : format::ptype_is_signed(t.ptype) ? kDLInt
                                                                         : kDLUInt);
  d.dtype.bits = static_cast<uint8_t>(format::ptype_width(t.ptype) * 8);
  d.dtype.lanes = 1;
  d.shape = holder->shape;
  d.strides = nullptr;  // compact, row-major
  holder->tensor.manager_ctx = holder.get();
  holder->tensor.deleter = delete_dlpack;
  return &holder.release()->tensor;
}

}  // namespace oc::kernels
