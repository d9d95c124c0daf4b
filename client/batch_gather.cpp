// SPDX-License-Identifier: Apache-2.0
#include "client/batch_gather.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <string_view>

#include "format/arrow_export.hpp"
#include "format/buffer.hpp"
#include "format/column.hpp"
#include "format/string_views.hpp"

namespace oc::client {
namespace {

using format::Buffer;
using Layout = GatherShape::Layout;

// ---- schema ------------------------------------------------------------------------------------

// Bytes per value of a fixed-width format string, 0 when @p f is not one.
uint64_t fixed_width(std::string_view f) {
  if (f.size() == 1) {
    switch (f[0]) {
      case 'c':
      case 'C':
        return 1;
      case 's':
      case 'S':
      case 'e':
        return 2;
      case 'i':
      case 'I':
      case 'f':
        return 4;
      case 'l':
      case 'L':
      case 'g':
        return 8;
      default:
        return 0;
    }
  }
  if (f.starts_with("d:")) {  // d:precision,scale[,bitwidth]; 128 bits when absent
    const size_t last = f.rfind(',');
    if (last == f.find(',')) return 16;
    uint64_t bits = 0;
    auto [p, ec] = std::from_chars(f.data() + last + 1, f.data() + f.size(), bits);
    return ec == std::errc() && p == f.data() + f.size() && bits % 8 == 0 ? bits / 8 : 0;
  }
  if (f == "tdD" || f == "tts" || f == "ttm" || f == "tiM") return 4;
  if (f == "tdm" || f == "ttu" || f == "ttn" || f == "tiD") return 8;
  if (f == "tin") return 16;
  if (f.starts_with("ts") || (f.size() == 3 && f.starts_with("tD")))
    return 8;  // timestamp, duration
  return 0;
}

// The N of "w:N" (fixed-size binary) or "+w:N" (fixed-size list) after @p prefix; 0 if malformed.
uint64_t size_after(std::string_view f, std::string_view prefix) {
  uint64_t n = 0;
  const char* end = f.data() + f.size();
  auto [p, ec] = std::from_chars(f.data() + prefix.size(), end, n);
  return ec == std::errc() && p == end ? n : 0;
}

Result<GatherShape> shape_of(const ArrowSchema& s) {
  OC_EXPECT(s.format != nullptr, invalid, "an Arrow schema node without a format");
  const std::string_view f(s.format);
  OC_EXPECT(s.dictionary == nullptr, unsupported, "gathering dictionary-encoded columns");
  GatherShape out;
  size_t want_children = 0;
  if (f == "n") {
    out.layout = Layout::null;
  } else if (f == "b") {
    out.layout = Layout::boolean;
  } else if (f == "u" || f == "z") {
    out.layout = Layout::binary32;
  } else if (f == "U" || f == "Z") {
    out.layout = Layout::binary64;
  } else if (f == "vu" || f == "vz") {
    out.layout = Layout::view;
  } else if (f == "+l" || f == "+m") {
    out.layout = Layout::list32;
    want_children = 1;
  } else if (f == "+L") {
    out.layout = Layout::list64;
    want_children = 1;
  } else if (f.starts_with("+w:")) {
    out.layout = Layout::fixed_list;
    out.width = size_after(f, "+w:");
    OC_EXPECT(out.width > 0, invalid, "malformed Arrow format '{}'", f);
    want_children = 1;
  } else if (f == "+s") {
    out.layout = Layout::struct_;
    OC_EXPECT(s.n_children >= 0, invalid, "a struct schema with {} children", s.n_children);
    want_children = static_cast<size_t>(s.n_children);
  } else if (f.starts_with("w:")) {
    out.layout = Layout::fixed;
    out.width = size_after(f, "w:");
    OC_EXPECT(out.width > 0, invalid, "malformed Arrow format '{}'", f);
  } else if (const uint64_t w = fixed_width(f); w > 0) {
    out.layout = Layout::fixed;
    out.width = w;
  } else {
    return OC_ERROR(Errc::unsupported, "gathering columns of Arrow format '{}'", f);
  }
  OC_EXPECT(s.n_children == static_cast<int64_t>(want_children) &&
                (want_children == 0 || s.children != nullptr),
            invalid, "an Arrow schema node '{}' with {} children", f, s.n_children);
  for (size_t i = 0; i < want_children; ++i) {
    OC_EXPECT(s.children[i] != nullptr, invalid, "an Arrow schema node without child {}", i);
    OC_ASSIGN_OR_RETURN(auto child, shape_of(*s.children[i]));
    out.children.push_back(std::move(child));
  }
  return out;
}

// The buffers an array of @p layout has, validity first (Arrow C Data Interface).
int64_t buffer_count(Layout layout) {
  switch (layout) {
    case Layout::null:
      return 0;
    case Layout::fixed_list:
    case Layout::struct_:
      return 1;
    case Layout::binary32:
    case Layout::binary64:
      return 3;
    case Layout::view:
      return 3;  // at least: validity, views, the variadic sizes
    default:
      return 2;
  }
}

Result<void> check_array(const GatherShape& shape, const ArrowArray& a) {
  OC_EXPECT(a.length >= 0 && a.offset >= 0 && a.dictionary == nullptr, invalid,
            "an Arrow array of length {}, offset {}", a.length, a.offset);
  // A views array has its k data buffers between the views and their sizes: 3 + k buffers.
  const bool counted = shape.layout == Layout::view ? a.n_buffers >= buffer_count(shape.layout)
                                                    : a.n_buffers == buffer_count(shape.layout);
  OC_EXPECT(counted && (a.n_buffers == 0 || a.buffers != nullptr), invalid,
            "an Arrow array with {} buffers where its type has {}", a.n_buffers,
            buffer_count(shape.layout));
  for (int64_t i = 1; i < a.n_buffers; ++i) {
    // The variadic sizes of a views array with no data buffer may be absent.
    const bool optional = shape.layout == Layout::view && a.n_buffers == 3 && i == 2;
    OC_EXPECT(a.buffers[i] != nullptr || a.length == 0 || optional, invalid,
              "an Arrow array without buffer {}", i);
  }
  OC_EXPECT(a.n_children == static_cast<int64_t>(shape.children.size()) &&
                (a.n_children == 0 || a.children != nullptr),
            invalid, "an Arrow array with {} children where its type has {}", a.n_children,
            shape.children.size());
  for (size_t i = 0; i < shape.children.size(); ++i) {
    OC_EXPECT(a.children[i] != nullptr, invalid, "an Arrow array without child {}", i);
    OC_TRY(check_array(shape.children[i], *a.children[i]));
  }
  return {};
}

// ---- gather ------------------------------------------------------------------------------------

// `count` consecutive logical elements from `begin` of batch `batch`'s array at one node: rows
// of the batches at the top, then the element ranges of lists, the rows of struct fields, ...
struct Run {
  uint32_t batch;
  uint64_t begin, count;
};

using Sources = std::vector<const ArrowArray*>;  // one node's array in every batch

const uint8_t* buffer(const ArrowArray* a, int i) {
  return static_cast<const uint8_t*>(a->buffers[i]);
}
uint64_t first(const ArrowArray* a, const Run& r) {
  return static_cast<uint64_t>(a->offset) + r.begin;
}

// Bits [first, first + count) of buffer @p i of each run's array, one after another; a run whose
// array has no such buffer (a validity bitmap when nothing is null) reads as all set.
Buffer gather_bits(const Sources& src, std::span<const Run> runs, uint64_t len, int i) {
  Buffer bits = Buffer::allocate_for_overwrite((len + 7) / 8);
  uint64_t at = 0;
  for (const Run& r : runs) {
    const ArrowArray* a = src[r.batch];
    if (a->buffers[i] != nullptr) {
      format::copy_bits(buffer(a, i), first(a, r), bits.mutable_data(), at, r.count);
    } else {
      for (uint64_t k = 0; k < r.count; ++k) format::bitmap_set(bits.mutable_data(), at + k, true);
    }
    at += r.count;
  }
  return bits;
}

Buffer gather_validity(const Sources& src, std::span<const Run> runs, uint64_t len,
                       int64_t* nulls) {
  *nulls = 0;
  const bool any = std::any_of(runs.begin(), runs.end(), [&](const Run& r) {
    return src[r.batch]->null_count != 0 && src[r.batch]->buffers[0] != nullptr;
  });
  if (!any) return {};
  Buffer bits = gather_bits(src, runs, len, 0);
  *nulls = format::count_nulls(bits.data(), 0, len);
  return bits;
}

Buffer gather_fixed(const Sources& src, std::span<const Run> runs, uint64_t len, uint64_t width) {
  Buffer out = Buffer::allocate_array_for_overwrite(len, width);
  uint8_t* dst = out.mutable_data();
  for (const Run& r : runs) {
    std::memcpy(dst, buffer(src[r.batch], 1) + first(src[r.batch], r) * width, r.count * width);
    dst += r.count * width;
  }
  return out;
}

// New offsets (O: int32_t or int64_t) for @p runs of an offsets buffer (buffer 1), and for each
// run the range of the child (or of the bytes) it covers, appended to @p spans.
template <class O>
Result<Buffer> gather_offsets(const Sources& src, std::span<const Run> runs, uint64_t len,
                              std::vector<Run>* spans) {
  Buffer out = Buffer::allocate_array_for_overwrite(len + 1, sizeof(O));
  O* dst = out.mutable_as<O>();
  uint64_t total = 0;
  dst[0] = 0;
  for (const Run& r : runs) {
    const O* so = reinterpret_cast<const O*>(buffer(src[r.batch], 1)) + first(src[r.batch], r);
    OC_EXPECT(so[0] >= 0 && so[r.count] >= so[0], invalid, "decreasing Arrow offsets");
    for (uint64_t i = 0; i < r.count; ++i) {
      OC_EXPECT(so[i + 1] >= so[i], invalid, "decreasing Arrow offsets");
      dst[1] = static_cast<O>(dst[0] + (so[i + 1] - so[i]));
      ++dst;
    }
    const auto n = static_cast<uint64_t>(so[r.count] - so[0]);
    total += n;
    OC_EXPECT(total <= static_cast<uint64_t>(std::numeric_limits<O>::max()), invalid,
              "a gather of {} elements overflows {}-bit offsets", total, sizeof(O) * 8);
    if (n > 0) spans->push_back({r.batch, static_cast<uint64_t>(so[0]), n});
  }
  return out;
}

// Views (format/string_views.hpp) of @p runs into one new views buffer, each value of more than
// kMaxInlined bytes copied into one new data buffer; a null row gets the null view. A view that
// points outside its data buffer (by the array's own variadic sizes) is `invalid`.
Result<std::vector<Buffer>> gather_view_values(const Sources& src, std::span<const Run> runs,
                                               uint64_t len) {
  using format::kMaxInlined;
  using format::kViewBytes;
  const auto view = [&](const Run& r, uint64_t i) {
    return buffer(src[r.batch], 1) + (first(src[r.batch], r) + i) * kViewBytes;
  };
  const auto valid = [&](const Run& r, uint64_t i) {
    const ArrowArray* a = src[r.batch];
    return a->null_count == 0 || a->buffers[0] == nullptr ||
           format::bitmap_get(buffer(a, 0), first(a, r) + i);
  };
  uint64_t long_bytes = 0;
  for (const Run& r : runs) {
    for (uint64_t i = 0; i < r.count; ++i) {
      uint32_t size;
      std::memcpy(&size, view(r, i), 4);
      if (size > kMaxInlined && valid(r, i)) long_bytes += size;
    }
  }
  OC_EXPECT(long_bytes <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max()), invalid,
            "a gather of {} string bytes overflows a view's i32 offset", long_bytes);
  Buffer views = Buffer::allocate_array_for_overwrite(len, kViewBytes);
  Buffer data = Buffer::allocate_for_overwrite(long_bytes);
  uint8_t* out = views.mutable_data();
  uint64_t at = 0;
  for (const Run& r : runs) {
    const ArrowArray* a = src[r.batch];
    const auto k = static_cast<uint64_t>(a->n_buffers - 3);  // its data buffers
    const auto* sizes = static_cast<const int64_t*>(a->buffers[a->n_buffers - 1]);
    for (uint64_t i = 0; i < r.count; ++i, out += kViewBytes) {
      const uint8_t* v = view(r, i);
      uint32_t size;
      std::memcpy(&size, v, 4);
      if (!valid(r, i)) {
        std::memset(out, 0, kViewBytes);
        continue;
      }
      std::memcpy(out, v, kViewBytes);
      if (size <= kMaxInlined) continue;
      int32_t index, offset;
      std::memcpy(&index, v + 8, 4);
      std::memcpy(&offset, v + 12, 4);
      OC_EXPECT(
          index >= 0 && static_cast<uint64_t>(index) < k && offset >= 0 && sizes != nullptr &&
              uint64_t{size} + static_cast<uint64_t>(offset) <= static_cast<uint64_t>(sizes[index]),
          invalid, "a string view outside its data buffer (buffer {}, offset {}, {} bytes)", index,
          offset, size);
      std::memcpy(data.mutable_data() + at, buffer(a, 2 + index) + offset, size);
      const int32_t zero = 0, moved = static_cast<int32_t>(at);
      std::memcpy(out + 8, &zero, 4);
      std::memcpy(out + 12, &moved, 4);
      at += size;
    }
  }
  std::vector<Buffer> data_buffers;
  if (long_bytes > 0) data_buffers.push_back(std::move(data));
  return format::view_buffers(std::move(views), std::move(data_buffers));
}

uint64_t total_count(std::span<const Run> runs) {
  uint64_t n = 0;
  for (const Run& r : runs) n += r.count;
  return n;
}

Sources children_at(const Sources& src, size_t i) {
  Sources out;
  out.reserve(src.size());
  for (const ArrowArray* a : src) out.push_back(a->children[i]);
  return out;
}

Result<format::ArrayParts> gather_node(const GatherShape& shape, const Sources& src,
                                       std::span<const Run> runs, uint64_t len) {
  format::ArrayParts out;
  out.length = static_cast<int64_t>(len);
  if (shape.layout == Layout::null) {
    out.null_count = out.length;
    return out;
  }
  out.buffers.push_back(gather_validity(src, runs, len, &out.null_count));
  switch (shape.layout) {
    case Layout::boolean:
      out.buffers.push_back(gather_bits(src, runs, len, 1));
      break;
    case Layout::fixed:
      out.buffers.push_back(gather_fixed(src, runs, len, shape.width));
      break;
    case Layout::binary32:
    case Layout::binary64: {
      std::vector<Run> bytes;
      OC_ASSIGN_OR_RETURN(auto offsets, shape.layout == Layout::binary32
                                            ? gather_offsets<int32_t>(src, runs, len, &bytes)
                                            : gather_offsets<int64_t>(src, runs, len, &bytes));
      Buffer data = Buffer::allocate_for_overwrite(total_count(bytes));
      uint8_t* dst = data.mutable_data();
      for (const Run& r : bytes) {  // the data buffer is not offset: offsets index it directly
        std::memcpy(dst, buffer(src[r.batch], 2) + r.begin, r.count);
        dst += r.count;
      }
      out.buffers.push_back(std::move(offsets));
      out.buffers.push_back(std::move(data));
      break;
    }
    case Layout::view: {
      OC_ASSIGN_OR_RETURN(auto buffers, gather_view_values(src, runs, len));
      for (Buffer& b : buffers) out.buffers.push_back(std::move(b));
      break;
    }
    case Layout::list32:
    case Layout::list64: {
      // List offsets index the child's logical elements, which its own offset shifts.
      std::vector<Run> elements;
      OC_ASSIGN_OR_RETURN(auto offsets, shape.layout == Layout::list32
                                            ? gather_offsets<int32_t>(src, runs, len, &elements)
                                            : gather_offsets<int64_t>(src, runs, len, &elements));
      out.buffers.push_back(std::move(offsets));
      OC_ASSIGN_OR_RETURN(auto child, gather_node(shape.children[0], children_at(src, 0), elements,
                                                  total_count(elements)));
      out.children.push_back(std::move(child));
      break;
    }
    case Layout::fixed_list: {
      std::vector<Run> elements;
      for (const Run& r : runs) {
        elements.push_back({r.batch, first(src[r.batch], r) * shape.width, r.count * shape.width});
      }
      uint64_t n = 0;
      OC_EXPECT(!__builtin_mul_overflow(len, shape.width, &n), invalid,
                "a fixed-size list gather overflows");
      OC_ASSIGN_OR_RETURN(auto child,
                          gather_node(shape.children[0], children_at(src, 0), elements, n));
      out.children.push_back(std::move(child));
      break;
    }
    case Layout::struct_: {
      // A field's element i is the struct's physical element i: the struct's offset carries over.
      std::vector<Run> rows;
      for (const Run& r : runs) rows.push_back({r.batch, first(src[r.batch], r), r.count});
      for (size_t i = 0; i < shape.children.size(); ++i) {
        OC_ASSIGN_OR_RETURN(auto child,
                            gather_node(shape.children[i], children_at(src, i), rows, len));
        out.children.push_back(std::move(child));
      }
      break;
    }
    case Layout::null:
      break;
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<BatchSet>> BatchSet::adopt(const ArrowSchema& schema,
                                                  std::span<ArrowArray> batches) {
  std::unique_ptr<BatchSet> set(new BatchSet());
  // Moved in first, so that every batch is released on every path out of here.
  set->batches_.reserve(batches.size());
  for (ArrowArray& a : batches) {
    set->batches_.push_back(a);
    a.release = nullptr;
  }
  OC_ASSIGN_OR_RETURN(set->shape_, shape_of(schema));
  OC_EXPECT(set->shape_.layout == Layout::struct_, invalid,
            "record batches are struct arrays, not '{}'", std::string_view(schema.format));
  OC_EXPECT(set->batches_.size() < std::numeric_limits<uint32_t>::max(), invalid,
            "too many batches");
  for (const ArrowArray& a : set->batches_) {
    OC_EXPECT(a.release != nullptr, invalid, "a released Arrow array");
    OC_TRY(check_array(set->shape_, a));
    set->starts_.push_back(set->starts_.back() + static_cast<uint64_t>(a.length));
  }
  return set;
}

BatchSet::~BatchSet() {
  for (ArrowArray& a : batches_) {
    if (a.release) a.release(&a);
  }
}

Result<void> BatchSet::gather(std::span<const uint64_t> rows, ArrowArray* out) const {
  // Consecutive rows of one batch become one run, so that slices copy as blocks.
  std::vector<Run> runs;
  for (const uint64_t row : rows) {
    OC_EXPECT(row < this->rows(), invalid, "row {} is past the {} rows gathered from", row,
              this->rows());
    const auto batch = static_cast<uint32_t>(std::upper_bound(starts_.begin(), starts_.end(), row) -
                                             starts_.begin() - 1);
    const uint64_t local = row - starts_[batch];
    if (!runs.empty() && runs.back().batch == batch &&
        runs.back().begin + runs.back().count == local) {
      ++runs.back().count;
    } else {
      runs.push_back({batch, local, 1});
    }
  }
  Sources src;
  for (const ArrowArray& a : batches_) src.push_back(&a);
  OC_ASSIGN_OR_RETURN(auto built, gather_node(shape_, src, runs, rows.size()));
  format::export_parts(std::move(built), out);
  return {};
}

}  // namespace oc::client
