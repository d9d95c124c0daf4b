/* SPDX-License-Identifier: Apache-2.0 */
/* The Arrow C Device Data Interface (arrow.apache.org/docs/format/CDeviceDataInterface.html)
 * and DLPack's tensor structures (dmlc/dlpack, include/dlpack/dlpack.h, v0.8 ABI), written from
 * the published specifications. The include guards are the ones they prescribe, so these
 * definitions coexist with any other copy of the same ABI. */
#ifndef ONECOPY_DEVICE_EXPORT_ABI_H
#define ONECOPY_DEVICE_EXPORT_ABI_H

#include <stdint.h>

#include "format/arrow_c_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ARROW_C_DEVICE_DATA_INTERFACE
#define ARROW_C_DEVICE_DATA_INTERFACE

typedef int32_t ArrowDeviceType;
#define ARROW_DEVICE_CPU 1
#define ARROW_DEVICE_CUDA 2
#define ARROW_DEVICE_CUDA_HOST 3

/* array: an ArrowArray whose buffers live on the device; sync_event: for CUDA, a pointer to a
 * cudaEvent_t the consumer waits on before reading, or NULL when no wait is needed. */
struct ArrowDeviceArray {
  struct ArrowArray array;
  int64_t device_id;
  ArrowDeviceType device_type;
  void* sync_event;
  int64_t reserved[3];
};

#endif /* ARROW_C_DEVICE_DATA_INTERFACE */

#ifndef ARROW_C_DEVICE_STREAM_INTERFACE
#define ARROW_C_DEVICE_STREAM_INTERFACE

/* A stream of device arrays, all on `device_type`: callbacks as ArrowArrayStream's, get_next
 * fills an ArrowDeviceArray (a released one at the end of the stream). */
struct ArrowDeviceArrayStream {
  ArrowDeviceType device_type;
  int (*get_schema)(struct ArrowDeviceArrayStream* self, struct ArrowSchema* out);
  int (*get_next)(struct ArrowDeviceArrayStream* self, struct ArrowDeviceArray* out);
  const char* (*get_last_error)(struct ArrowDeviceArrayStream* self);
  void (*release)(struct ArrowDeviceArrayStream* self);
  void* private_data;
};

#endif /* ARROW_C_DEVICE_STREAM_INTERFACE */

#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_
typedef enum { kDLCPU = 1, kDLCUDA = 2 } DLDeviceType;
typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;
typedef enum { kDLInt = 0U, kDLUInt = 1U, kDLFloat = 2U } DLDataTypeCode;
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;
#endif /* DLPACK_DLPACK_H_ */

#ifdef __cplusplus
}
#endif

#endif /* ONECOPY_DEVICE_EXPORT_ABI_H */
