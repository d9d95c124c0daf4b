// SPDX-License-Identifier: Apache-2.0
#include "format/decode.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "config/defaults.hpp"
#include "format/partial_segment.hpp"

namespace oc::format {

EncodingKind encoding_kind(std::string_view id) noexcept {
  static constexpr std::pair<std::string_view, EncodingKind> kKinds[] = {
      {"vortex.primitive", EncodingKind::primitive},
      {"vortex.constant", EncodingKind::constant},
      {"vortex.dict", EncodingKind::dict},
      {"vortex.runend", EncodingKind::runend},
      {"vortex.sequence", EncodingKind::sequence},
      {"vortex.zigzag", EncodingKind::zigzag},
      {"vortex.alp", EncodingKind::alp},
      {"vortex.decimal_byte_parts", EncodingKind::decimal_byte_parts},
      {"vortex.ext", EncodingKind::ext},
      {"fastlanes.bitpacked", EncodingKind::bitpacked},
      {"fastlanes.for", EncodingKind::frame_of_reference},
  };
  for (const auto& [name, kind] : kKinds) {
    if (name == id) return kind;
  }
  return EncodingKind::other;
}
namespace {

struct Entry {
  DecodeFn fn = nullptr;
  bool window_aware = false;
  TakeFn take = nullptr;
};

struct Registry {
  std::shared_mutex mu;
  std::map<std::string, Entry, std::less<>> fns;
};

Registry& registry() {
  static Registry r;
  return r;
}

Entry find_entry(std::string_view id) {
  auto& r = registry();
  std::shared_lock lock(r.mu);
  auto it = r.fns.find(id);
  return it == r.fns.end() ? Entry{} : it->second;
}

// The values of the decoded validity column @p v as a bitmap from bit 0 (empty when all valid).
Buffer bitmap_of(const Column& v, int64_t& null_count) {
  const uint64_t n = v.length;
  const uint8_t* bits = v.buffers[0].data();
  null_count = count_nulls(bits, v.offset, n);
  if (null_count == 0) return Buffer();
  if (v.offset == 0) return v.buffers[0];
  Buffer out = make_bitmap(n, false);
  for (uint64_t i = 0; i < n; ++i) {
    if (bitmap_get(bits, v.offset + i)) bitmap_set(out.mutable_data(), i, true);
  }
  return out;
}

}  // namespace

void register_encoding(std::string id, DecodeFn fn, bool window_aware) {
  auto& r = registry();
  std::unique_lock lock(r.mu);
  Entry& e = r.fns[std::move(id)];
  e.fn = fn;
  e.window_aware = window_aware;
}

void register_take(std::string id, TakeFn fn) {
  auto& r = registry();
  std::unique_lock lock(r.mu);
  r.fns[std::move(id)].take = fn;
}

DecodeFn find_encoding(std::string_view id) { return find_entry(id).fn; }

std::vector<std::string> registered_encodings() {
  auto& r = registry();
  std::shared_lock lock(r.mu);
  std::vector<std::string> out;
  for (const auto& [id, fn] : r.fns) out.push_back(id);
  return out;
}

DecodeContext::DecodeContext()
    : max_depth_(defaults().max_array_depth), max_bytes_(defaults().max_decoded_bytes) {}

Result<ColumnPtr> DecodeContext::decode(const ArrayView& node, const DTypePtr& dtype,
                                        uint64_t len) {
  OC_EXPECT(depth_ < max_depth_, corrupt, "encoding tree deeper than {}", max_depth_);
  const Entry e = find_entry(node.encoding);
  OC_EXPECT(e.fn != nullptr, unsupported, "unsupported encoding {}", node.encoding);
  // An encoding that cannot slice decodes in full, with no window below it, and is sliced after.
  const std::optional<RowWindow> window = window_;
  if (window && !e.window_aware) window_.reset();
  ++depth_;
  const bool whole = whole_;
  // A reference offered by decode_adding is this node's alone, not its children's.
  const std::optional<uint64_t> outer_reference = std::exchange(reference_, offered_reference_);
  const bool outer_taken = std::exchange(reference_taken_, false);
  offered_reference_.reset();
  // A failed allocation (or any exception a decoder lets through) fails this decode alone.
  auto r = catch_all(node.encoding, [&] {
    if (partial_ != nullptr && !whole_) {
      need_subtree(node);  // decoders name the bytes they read only for takes
      whole_ = true;
    }
    return e.fn(node, dtype, len, *this);
  });
  last_reference_taken_ = reference_taken_;
  reference_ = outer_reference;
  reference_taken_ = outer_taken;
  whole_ = whole;
  --depth_;
  window_ = window;
  if (!r.ok()) {
    return std::move(r.error()).with_context(
        fmt::format("decoding {} as {}", node.encoding, dtype->to_string()));
  }
  // Every decoder must honour the length and dtype its parent asked for; a mismatch means the
  // file lied about a length somewhere, which must never reach a consumer.
  const uint64_t want = window && e.window_aware ? window->size() : len;
  OC_EXPECT((*r)->length == want, corrupt, "{} decoded {} rows, expected {}", node.encoding,
            (*r)->length, want);
  if (window && !e.window_aware) return slice(*r, window->begin, window->size());
  return r;
}

Result<ColumnPtr> DecodeContext::decode_adding(const ArrayView& node, const DTypePtr& dtype,
                                               uint64_t len, uint64_t reference, bool& added) {
  offered_reference_ = reference;
  last_reference_taken_ = false;
  auto r = decode(node, dtype, len);
  offered_reference_.reset();  // decode returned before reaching a decoder (depth, encoding)
  added = r.ok() && last_reference_taken_;
  return r;
}

Result<ColumnPtr> DecodeContext::decode_slice(const ArrayView& node, const DTypePtr& dtype,
                                              uint64_t len, RowWindow window) {
  OC_EXPECT(window.begin <= window.end && window.end <= len, invalid,
            "row window [{}, {}) outside {} rows", window.begin, window.end, len);
  const std::optional<RowWindow> outer = window_;
  window_ = window;
  auto r = decode(node, dtype, len);
  window_ = outer;
  return r;
}

Result<ColumnPtr> DecodeContext::decode_take(const ArrayView& node, const DTypePtr& dtype,
                                             uint64_t len, std::span<const uint64_t> rows) {
  for (size_t i = 0; i < rows.size(); ++i) {
    OC_EXPECT(rows[i] < len && (i == 0 || rows[i] > rows[i - 1]), invalid,
              "take row {} (position {}) is not below {} and above the row before", rows[i], i,
              len);
  }
  const Entry e = find_entry(node.encoding);
  if (e.take == nullptr) {
    // No row-level decoder: the window's rows are decoded (cheaply where the encoding can
    // slice), then gathered.
    const RowWindow window =
        rows.empty() ? RowWindow{0, 0} : RowWindow{rows.front(), rows.back() + 1};
    OC_ASSIGN_OR_RETURN(ColumnPtr part, decode_slice(node, dtype, len, window));
    std::vector<uint64_t> local(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) local[i] = rows[i] - window.begin;
    return take(part, local);
  }
  OC_EXPECT(depth_ < max_depth_, corrupt, "encoding tree deeper than {}", max_depth_);
  // A take addresses the node's own rows; a window set by a caller above does not apply.
  const std::optional<RowWindow> window = window_;
  window_.reset();
  ++depth_;
  auto r = catch_all(node.encoding, [&] { return e.take(node, dtype, len, rows, *this); });
  --depth_;
  window_ = window;
  if (!r.ok()) {
    return std::move(r.error()).with_context(
        fmt::format("taking {} rows of {} as {}", rows.size(), node.encoding, dtype->to_string()));
  }
  OC_EXPECT((*r)->length == rows.size(), corrupt, "{} took {} rows, expected {}", node.encoding,
            (*r)->length, rows.size());
  return r;
}

void DecodeContext::need(const Buffer& buffer, uint64_t offset, uint64_t length) {
  if (!reads_in_part() || offset >= buffer.size()) return;
  const auto base = reinterpret_cast<uintptr_t>(partial_->data());
  const auto at = reinterpret_cast<uintptr_t>(buffer.data());
  const uint64_t len = partial_->range().length;
  if (at < base || buffer.size() > len || at - base > len - buffer.size())
    return;  // not the segment's
  (void)partial_->need(at - base + offset, std::min<uint64_t>(length, buffer.size() - offset));
}

void DecodeContext::need_subtree(const ArrayView& node) {
  for (const Buffer& b : node.buffers) need(b);
  for (const ArrayView& c : node.children) need_subtree(c);
}

Result<void> DecodeContext::check_alloc(uint64_t bytes, std::string_view what) const {
  OC_EXPECT(bytes <= max_bytes_, corrupt, "{} would decode to {} bytes, over the {} byte limit",
            what, bytes, max_bytes_);
  return {};
}

Result<void> expect_shape(const ArrayView& node, size_t buffers, size_t min_children,
                          size_t max_children) {
  OC_EXPECT(node.buffers.size() == buffers, corrupt, "{} has {} buffers, expected {}",
            node.encoding, node.buffers.size(), buffers);
  OC_EXPECT(node.children.size() >= min_children && node.children.size() <= max_children, corrupt,
            "{} has {} children, expected {}..{}", node.encoding, node.children.size(),
            min_children, max_children);
  return {};
}

Result<Buffer> decode_validity(const ArrayView& node, size_t index, bool nullable, uint64_t len,
                               DecodeContext& ctx, int64_t& null_count) {
  null_count = 0;
  if (index >= node.children.size()) return Buffer();
  OC_EXPECT(nullable, corrupt, "{} has a validity child but a non-nullable dtype", node.encoding);
  OC_ASSIGN_OR_RETURN(ColumnPtr v, ctx.decode(node.children[index], DType::make_bool(false), len));
  return bitmap_of(*v, null_count);
}

Result<Buffer> take_validity(const ArrayView& node, size_t index, bool nullable, uint64_t len,
                             std::span<const uint64_t> rows, DecodeContext& ctx,
                             int64_t& null_count) {
  null_count = 0;
  if (index >= node.children.size()) return Buffer();
  OC_EXPECT(nullable, corrupt, "{} has a validity child but a non-nullable dtype", node.encoding);
  OC_ASSIGN_OR_RETURN(ColumnPtr v,
                      ctx.decode_take(node.children[index], DType::make_bool(false), len, rows));
  return bitmap_of(*v, null_count);
}

}  // namespace oc::format
