// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief `vortex.dict` over strings on the GPU: the codes chain decodes with the fused kernel
/// (kernels/fused_decode.hpp), then each row's length is looked up, an exclusive scan
/// (cub::DeviceScan) turns lengths into Arrow offsets, and a gather copies the bytes.
///
/// Byte layout of the result (Arrow `utf8` / `binary`):
///   offsets: len + 1 little-endian int32, offsets[0] = 0, row i is data[offsets[i], offsets[i+1]);
///   data:    the rows' bytes back to back; allocated at `data_bytes_bound()` (rows x the longest
///            dictionary value), an upper bound known on the host, so nothing waits for the
///            exact total, which is offsets[len] on the device;
///   validity: the codes' Arrow bitmap, or none. A null row has length 0.
/// The dictionary itself (values_len + 1 offsets and the bytes) is decoded on the host from any
/// string encoding and uploaded once.
///
/// @note Untested on GPU hardware so far; the host executor `run_string_dict_on_host` runs the
/// same row functions and is tested against the CPU decoder.
#pragma once

#include <cstdint>
#include <vector>

#include "config/error.hpp"
#include "format/buffer.hpp"
#include "format/decode.hpp"
#include "kernels/device_memory.hpp"
#include "kernels/fused_decode.hpp"
#include "kernels/fused_plan.hpp"

namespace oc::kernels {

/// A string dictionary decode, planned on the host.
struct StringDictPlan {
  FusedPlan codes;                     ///< the codes chain, decoded as unsigned integers
  bool codes_signed = false;           ///< negative codes are corrupt
  std::vector<int64_t> value_offsets;  ///< values_len + 1 offsets into `value_bytes`
  format::Buffer value_bytes;
  uint64_t max_value_len = 0;
  format::DTypePtr dtype;

  [[nodiscard]] uint64_t rows() const noexcept { return codes.params.len; }
  /// Bytes allocated for the data: rows x the longest value.
  [[nodiscard]] uint64_t data_bytes_bound() const noexcept { return rows() * max_value_len; }
};

/// Plans @p node, a `vortex.dict` of utf8 or binary values, of @p len rows.
/// @return `Errc::unsupported` for other trees, codes chains the fused kernel cannot decode, null
/// dictionary values, or results past int32 offsets (2 GiB).
[[nodiscard]] Result<StringDictPlan> build_string_dict_plan(const format::ArrayView& node,
                                                            const format::DTypePtr& dtype,
                                                            uint64_t len,
                                                            format::DecodeContext& ctx);

/// An Arrow utf8 column on the host.
struct HostStrings {
  std::vector<int32_t> offsets;
  std::vector<uint8_t> data;
  format::Buffer validity;
};

/// Runs @p plan on the host with the device's row functions (the reference).
/// @return `Errc::corrupt` for a code out of range.
[[nodiscard]] Result<HostStrings> run_string_dict_on_host(const StringDictPlan& plan);

/// An Arrow utf8 column on the device.
struct DeviceStrings {
  DeviceBuffer offsets;  ///< rows + 1 int32
  DeviceBuffer data;     ///< `data_bytes_bound()` bytes, the first offsets[rows] used
  DeviceColumn codes;    ///< the decoded codes; its validity is the column's
  DeviceBuffer inputs;   ///< the uploaded dictionary and the error word
  DeviceBuffer scratch;  ///< CUB's scan storage
  PinnedBuffer staging;
  uint32_t* error = nullptr;

  /// Waits for the decode on @p stream and checks the codes.
  [[nodiscard]] Result<void> finish(Stream& stream);
};

/// Queues the decode of @p plan on @p stream.
[[nodiscard]] Result<DeviceStrings> decode_strings_on_device(const StringDictPlan& plan,
                                                             Stream& stream);

}  // namespace oc::kernels
