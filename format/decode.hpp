// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Serialized array trees and the encoding registry that decodes them to `Column`s.
///
/// One flat segment holds one array tree (layout in format/array_tree.hpp). `ArrayView` is a parsed
/// node of that tree: encoding ID, metadata bytes, buffers and children. Nodes carry neither
/// dtype nor length; the parent supplies both, by each encoding's rules, when it decodes a child.
///
/// Each encoding registers one `DecodeFn` under its Vortex ID (`register_default_encodings`). An ID
/// with no decoder fails with `Errc::unsupported` naming the ID ("unsupported encoding
/// vortex.pco"). An encoding that can decode a few scattered rows cheaply also registers a `TakeFn`
/// (`register_take`); `DecodeContext::decode_take` uses it, and any other encoding decodes the
/// window from the first to the last row and gathers.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "config/checked_size.hpp"
#include "config/error.hpp"
#include "format/buffer.hpp"
#include "format/column.hpp"
#include "format/dtype.hpp"

namespace oc::format {

/// Per-node statistics as written by the array serializer (all optional).
struct ArrayStatsView {
  std::optional<uint64_t> null_count;
  std::optional<bool> is_constant;
  std::optional<bool> is_sorted;
  std::vector<uint8_t> min, max;  ///< protobuf ScalarValue bytes, empty if absent
  bool min_exact = false, max_exact = false;
};

/// One node of a serialized array tree.
struct ArrayView {
  std::string encoding;  ///< resolved through the footer's array_specs
  std::vector<uint8_t> metadata;
  std::vector<Buffer> buffers;  ///< slices of the segment, in node order
  std::vector<ArrayView> children;
  ArrayStatsView stats;
};

/// The encodings that code outside their own unit branches on (the GPU's fused plan), by kind
/// rather than by comparing ID strings; every other encoding is `other`.
enum class EncodingKind : uint8_t {
  other,
  primitive,           // vortex.primitive
  constant,            // vortex.constant
  dict,                // vortex.dict
  runend,              // vortex.runend
  sequence,            // vortex.sequence
  zigzag,              // vortex.zigzag
  alp,                 // vortex.alp
  decimal_byte_parts,  // vortex.decimal_byte_parts
  ext,                 // vortex.ext
  bitpacked,           // fastlanes.bitpacked
  frame_of_reference,  // fastlanes.for
};

/// @return the kind of the encoding with Vortex ID @p id.
[[nodiscard]] EncodingKind encoding_kind(std::string_view id) noexcept;

class DecodeContext;
class PartialSegment;

/// Decodes @p node of type @p dtype and @p len rows into a Column.
using DecodeFn = Result<ColumnPtr> (*)(const ArrayView& node, const DTypePtr& dtype, uint64_t len,
                                       DecodeContext& ctx);

/// Decodes rows @p rows (sorted, unique, each < @p len) of @p node, of @p len rows, into a
/// Column of rows.size() rows. Children are decoded through `DecodeContext::decode_take` (or
/// `decode` for children in another row space, such as dictionary values or patches). Before it
/// reads bytes of one of the node's own buffers it names them with `DecodeContext::need`, so that
/// a take reading its segment in part fetches just those (children see to their own).
using TakeFn = Result<ColumnPtr> (*)(const ArrayView& node, const DTypePtr& dtype, uint64_t len,
                                     std::span<const uint64_t> rows, DecodeContext& ctx);

/// Rows [begin, end) of a node: a slice decode asks only for these.
struct RowWindow {
  uint64_t begin = 0, end = 0;
  [[nodiscard]] uint64_t size() const noexcept { return end - begin; }
};

/// State threaded through a recursive decode: recursion depth, size limits and, for slice
/// decodes, the row window.
///
/// Slicing: `decode_slice` sets a window. An encoding registered as window-aware then returns
/// only those rows (a primitive slices its buffer, a bitpacked array unpacks only the blocks
/// that hold them, FoR and zigzag pass the window to their child). Any other encoding decodes
/// in full with the window cleared, and the result is sliced, so every encoding is correct and
/// the aware ones are cheap.
class DecodeContext {
 public:
  DecodeContext();

  /// Decodes a child node, enforcing the depth limit and adding the encoding to error context.
  /// Inside a window-aware decoder with a window set, returns only the window's rows.
  [[nodiscard]] Result<ColumnPtr> decode(const ArrayView& node, const DTypePtr& dtype,
                                         uint64_t len);

  /// `decode`, offering @p node's decoder @p reference to add to every value it outputs
  /// (wrapping, in the values' width): FastLanes' fused frame of reference, which adds it while
  /// each unpacked block is still in cache instead of in a second pass over the column. @p added
  /// says whether the decoder took it (`take_reference`); when not, the caller adds it.
  [[nodiscard]] Result<ColumnPtr> decode_adding(const ArrayView& node, const DTypePtr& dtype,
                                                uint64_t len, uint64_t reference, bool& added);
  /// Inside a decoder: the reference its parent offered (`decode_adding`), now the decoder's to
  /// add to every value it outputs; nullopt when none was offered. Offered to this node only:
  /// the decodes of its children see none.
  [[nodiscard]] std::optional<uint64_t> take_reference() noexcept {
    reference_taken_ = reference_.has_value();
    return std::exchange(reference_, std::nullopt);
  }

  /// Decodes rows @p window of @p node (of @p len rows), touching as little as the encodings
  /// allow. The window must lie within [0, len).
  [[nodiscard]] Result<ColumnPtr> decode_slice(const ArrayView& node, const DTypePtr& dtype,
                                               uint64_t len, RowWindow window);

  /// Decodes rows @p rows of @p node (of @p len rows) into a column of rows.size() rows, in
  /// that order. @p rows must be sorted, unique and below @p len (`Errc::invalid` otherwise).
  /// Encodings with a `TakeFn` decode only those rows (and their children only the rows those
  /// need); others decode the window [rows.front(), rows.back() + 1) and gather. The context's
  /// window does not apply to a take, nor to the decodes below it.
  [[nodiscard]] Result<ColumnPtr> decode_take(const ArrayView& node, const DTypePtr& dtype,
                                              uint64_t len, std::span<const uint64_t> rows);

  /// Makes this a decode of a segment read in part (format/partial_segment.hpp): bytes named by
  /// `need` that have not been read are recorded for the next round. A full or slice decode
  /// (`decode`) needs every buffer of its subtree; a take needs what its `TakeFn` names.
  void read_in_part(PartialSegment* segment) noexcept { partial_ = segment; }
  /// Says that bytes [offset, offset + length) of @p buffer, a buffer of the node being decoded,
  /// are about to be read. Reading a segment in part, missing bytes are recorded as pending and
  /// read as zeros in this round (the round's result is then discarded); otherwise, and for
  /// buffers that are not slices of the segment, a no-op. The range is clipped to the buffer.
  void need(const Buffer& buffer, uint64_t offset, uint64_t length);
  /// `need` of all of @p buffer.
  void need(const Buffer& buffer) { need(buffer, 0, buffer.size()); }
  /// Whether `need` does anything here: decoders shared by full decodes and takes skip the
  /// loops that compute what to name when it does not.
  [[nodiscard]] bool reads_in_part() const noexcept { return partial_ != nullptr && !whole_; }

  /// The layout the decode's consumer wants its strings in: decoders that can write either
  /// (a dictionary's gather, FSST) write this one; others give their natural layout (a
  /// varbinview its views), and the scan converts at the end (format/string_views.hpp).
  [[nodiscard]] StringLayout strings() const noexcept { return strings_; }
  void prefer_strings(StringLayout strings) noexcept { strings_ = strings; }

  /// The window a window-aware decoder must honour, if any.
  [[nodiscard]] const std::optional<RowWindow>& window() const noexcept { return window_; }

  /// Runs @p f with no window: for children in another row space (patches, dictionaries).
  template <class F>
  auto without_window(F&& f) {
    const std::optional<RowWindow> w = window_;
    window_.reset();
    auto r = f();
    window_ = w;
    return r;
  }

  /// Fails with `Errc::corrupt` when @p bytes exceeds the `max_decoded_bytes` knob.
  [[nodiscard]] Result<void> check_alloc(uint64_t bytes, std::string_view what) const;
  /// `check_alloc` of @p count items of @p width bytes; a product that overflows fails it.
  [[nodiscard]] Result<void> check_alloc(uint64_t count, uint64_t width,
                                         std::string_view what) const {
    return check_alloc(saturating_mul(count, width), what);
  }

 private:
  // `need` of every buffer of @p node and its descendants.
  void need_subtree(const ArrayView& node);

  uint32_t depth_ = 0;
  std::optional<uint64_t> offered_reference_;  // set by decode_adding for the next decode only
  std::optional<uint64_t> reference_;          // the node being decoded's, until it takes it
  bool reference_taken_ = false;               // whether the node being decoded took it
  bool last_reference_taken_ = false;          // whether the last decoded node took its own
  std::optional<RowWindow> window_;
  PartialSegment* partial_ = nullptr;
  bool whole_ = false;  // inside a decode whose whole subtree was needed already
  StringLayout strings_ = StringLayout::views;
  uint32_t max_depth_;
  uint64_t max_bytes_;
};

/// Registers @p fn for encoding @p id (replaces an earlier registration). A @p window_aware
/// decoder honours `DecodeContext::window()` (see `DecodeContext`).
void register_encoding(std::string id, DecodeFn fn, bool window_aware = false);
/// Registers @p fn as the row-gathering decoder of encoding @p id (see
/// `DecodeContext::decode_take`). The encoding must also have a `DecodeFn`.
void register_take(std::string id, TakeFn fn);
/// @return the decoder for @p id, or nullptr.
[[nodiscard]] DecodeFn find_encoding(std::string_view id);
/// @return every registered encoding ID, sorted.
[[nodiscard]] std::vector<std::string> registered_encodings();
/// Registers every encoding onecopy implements. Idempotent and thread-safe.
void register_default_encodings();

// ---- helpers shared by decoders ----------------------------------------------------------------

/// Checks that @p node has exactly @p buffers buffers and at least @p min_children children.
[[nodiscard]] Result<void> expect_shape(const ArrayView& node, size_t buffers, size_t min_children,
                                        size_t max_children);

/// Decodes the validity child at @p index of @p node, if present, into an Arrow bitmap for a
/// column of @p len rows (bits from 0); under a window, for the window's rows. Absent child: all
/// valid (empty buffer) when the child index is past the end. A `vortex.constant` false child or
/// any Bool array works.
/// @param null_count receives the number of nulls.
[[nodiscard]] Result<Buffer> decode_validity(const ArrayView& node, size_t index, bool nullable,
                                             uint64_t len, DecodeContext& ctx, int64_t& null_count);

/// Like `decode_validity`, for rows @p rows of the node (see `DecodeContext::decode_take`): a
/// bitmap of rows.size() bits from 0, empty when every taken row is valid.
[[nodiscard]] Result<Buffer> take_validity(const ArrayView& node, size_t index, bool nullable,
                                           uint64_t len, std::span<const uint64_t> rows,
                                           DecodeContext& ctx, int64_t& null_count);

/// @return the protobuf message parsed from @p bytes, or `Errc::corrupt` naming @p what.
template <class Message>
[[nodiscard]] Result<Message> parse_metadata(std::span<const uint8_t> bytes, const char* what) {
  Message m;
  OC_EXPECT(m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())), corrupt,
            "{} metadata is not a valid protobuf message ({} bytes)", what, bytes.size());
  return m;
}

}  // namespace oc::format
