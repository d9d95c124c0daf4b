// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief `BatchSet`: record batches held for gathers of rows across them, the shuffled
/// batches of onecopy.torch. A gather writes each selected value once, straight into the new
/// batch's buffers: one copy, where concatenating the batches and taking from the result copies
/// every value twice (and pyarrow's take over chunks concatenates first).
///
/// Layouts gathered (Arrow C Data Interface format strings): null, bool, every fixed-width type
/// (integers, floats, decimals, fixed-size binary, dates, times, timestamps, durations,
/// intervals), utf8/binary and their large forms, string and binary views (each value longer
/// than a view holds copied into one new data buffer), list, large list, map, fixed-size list
/// and struct, each with its validity bitmap. Dictionaries, unions and run-end layouts are
/// `unsupported`.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "format/arrow_c_abi.h"

namespace oc::client {

/// How a schema node's buffers are laid out, as far as a gather cares.
struct GatherShape {
  enum class Layout {
    null,
    boolean,
    fixed,
    binary32,
    binary64,
    view,
    list32,
    list64,
    fixed_list,
    struct_
  };
  Layout layout = Layout::null;
  uint64_t width = 0;  ///< bytes per value (fixed) or values per list (fixed_list)
  std::vector<GatherShape> children;
};

class BatchSet {
 public:
  /// Holds @p batches, struct arrays of @p schema, moved in: each struct is left released, so
  /// the caller may free it. @p schema is read, not kept. `unsupported` for a layout the gather
  /// does not handle, `invalid` for an array whose buffers or children do not match the schema.
  [[nodiscard]] static Result<std::unique_ptr<BatchSet>> adopt(const ArrowSchema& schema,
                                                               std::span<ArrowArray> batches);
  BatchSet(const BatchSet&) = delete;
  BatchSet& operator=(const BatchSet&) = delete;
  ~BatchSet();  ///< releases the batches

  /// Rows in all the batches together.
  [[nodiscard]] uint64_t rows() const noexcept { return starts_.back(); }

  /// Rows @p rows (numbered across the batches in order; any order, repeats allowed) as one new
  /// batch of the schema in @p out, which owns its buffers. `invalid` for a row past rows().
  /// Safe to call from several threads at once.
  [[nodiscard]] Result<void> gather(std::span<const uint64_t> rows, ArrowArray* out) const;

 private:
  BatchSet() = default;
  GatherShape shape_;
  std::vector<ArrowArray> batches_;
  std::vector<uint64_t> starts_{0};  ///< starts_[i]: the first row of batch i; back(): rows()
};

}  // namespace oc::client
