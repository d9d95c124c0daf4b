// SPDX-License-Identifier: Apache-2.0
// The device stream owns a plain Arrow stream and forwards to it: the buffers the plain export
// points at are already the device's, so it tags each batch, and on CUDA makes the batch's
// release wait for the consumer's stream first.
#include "kernels/device_stream.hpp"

#include <cerrno>
#include <new>

#include "format/arrow_export.hpp"
#include "kernels/device_memory.hpp"

namespace oc::kernels {
namespace {

struct DeviceStreamState {
  ArrowArrayStream inner{};
  int64_t device_id = -1;
  std::optional<uintptr_t> consumer;  // set: releases wait for this stream (0: the device)
};

// What a batch's release needs once its own release is wrapped.
struct WaitingRelease {
  void (*release)(ArrowArray*);
  void* private_data;
  uintptr_t consumer;
};

// Waits for the consumer's stream, then releases the batch as its producer would have.
void release_after_consumer(ArrowArray* a) {
  auto* w = static_cast<WaitingRelease*>(a->private_data);
  // A failed wait (the context is gone) leaves no kernel that could still read the memory.
  (void)kernels::wait_for_stream(reinterpret_cast<CUstream_st*>(w->consumer));
  a->private_data = w->private_data;
  a->release = w->release;
  delete w;
  a->release(a);
}

DeviceStreamState* state_of(ArrowDeviceArrayStream* s) {
  return static_cast<DeviceStreamState*>(s->private_data);
}

int get_schema(ArrowDeviceArrayStream* s, ArrowSchema* out) {
  ArrowArrayStream& inner = state_of(s)->inner;
  return inner.get_schema(&inner, out);
}

int get_next(ArrowDeviceArrayStream* s, ArrowDeviceArray* out) {
  DeviceStreamState* st = state_of(s);
  *out = ArrowDeviceArray{};
  const int rc = st->inner.get_next(&st->inner, &out->array);
  if (rc != 0) return rc;
  out->device_type = s->device_type;
  out->device_id = st->device_id;
  out->sync_event = nullptr;  // the scan finished the batch's decodes before handing it out
  if (st->consumer && out->array.release != nullptr) {
    // A C callback: an allocation failure is ENOMEM, not an exception.
    auto* w = new (std::nothrow)
        WaitingRelease{out->array.release, out->array.private_data, *st->consumer};
    if (w == nullptr) {
      out->array.release(&out->array);
      return ENOMEM;
    }
    out->array.private_data = w;
    out->array.release = release_after_consumer;
  }
  return 0;
}

const char* get_last_error(ArrowDeviceArrayStream* s) {
  ArrowArrayStream& inner = state_of(s)->inner;
  return inner.get_last_error(&inner);
}

void release(ArrowDeviceArrayStream* s) {
  DeviceStreamState* st = state_of(s);
  if (st->inner.release != nullptr) st->inner.release(&st->inner);
  delete st;
  s->release = nullptr;
}

}  // namespace

void export_device_stream(std::unique_ptr<format::Scan> scan, ArrowDeviceType device_type,
                          int64_t device_id, ArrowDeviceArrayStream* out,
                          std::optional<uintptr_t> consumer_stream) {
  ArrowArrayStream inner{};
  format::export_stream(std::move(scan), &inner);
  wrap_device_stream(&inner, device_type, device_id, out, consumer_stream);
}

void wrap_device_stream(ArrowArrayStream* inner, ArrowDeviceType device_type, int64_t device_id,
                        ArrowDeviceArrayStream* out, std::optional<uintptr_t> consumer_stream) {
  auto st = std::make_unique<DeviceStreamState>();
  st->device_id = device_id;
  if (device_type == ARROW_DEVICE_CUDA) st->consumer = consumer_stream;
  st->inner = *inner;
  inner->release = nullptr;  // moved
  *out = ArrowDeviceArrayStream{};
  out->device_type = device_type;
  out->get_schema = get_schema;
  out->get_next = get_next;
  out->get_last_error = get_last_error;
  out->release = release;
  out->private_data = st.release();
}

}  // namespace oc::kernels
