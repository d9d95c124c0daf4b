// SPDX-License-Identifier: Apache-2.0
#include "format/arrow_ipc.hpp"

#include <flatbuffers/flatbuffers.h>
#include <fmt/format.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "config/checked_size.hpp"
#include "format/fbs/arrow_ipc_generated.h"
#include "format/string_views.hpp"

namespace oc::format {
namespace {

namespace fb = ::oc::arrow_fb;
using arrow_ipc_forever::kAlignment;

constexpr uint8_t kZeros[kAlignment] = {};
// One i32 zero: the offsets of a 0-row utf8/binary/list column whose own offsets buffer is
// empty (Arrow accepts an empty one for 0 rows too, but one offset is what every reader knows).
constexpr int32_t kZeroOffset = 0;
// The length prefix of a buffer a compressed body carries as it is.
constexpr int64_t kUncompressed = -1;

struct FreeCCtx {
  void operator()(ZSTD_CCtx* p) const noexcept { ZSTD_freeCCtx(p); }
};

Buffer static_bytes(const void* p, size_t n) {
  return Buffer::wrap(nullptr, static_cast<const uint8_t*>(p), n);
}

constexpr uint64_t padded(uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

// Frames a finished `Message` flatbuffer: marker, padded length, the flatbuffer, zero padding.
std::string frame(const flatbuffers::FlatBufferBuilder& b) {
  const uint64_t size = padded(b.GetSize());
  std::string out(8 + size, '\0');
  const uint32_t marker = arrow_ipc_forever::kContinuation;
  const auto len = static_cast<int32_t>(size);  // metadata stays far below 2 GiB
  std::memcpy(out.data(), &marker, 4);          // little-endian hosts only (meson.build checks)
  std::memcpy(out.data() + 4, &len, 4);
  std::memcpy(out.data() + 8, b.GetBufferPointer(), b.GetSize());
  return out;
}

// ---- schema
// --------------------------------------------------------------------------------------

using TypeRef = std::pair<fb::Type, flatbuffers::Offset<void>>;

fb::TimeUnit time_unit(char c) {
  switch (c) {
    case 's':
      return fb::TimeUnit::SECOND;
    case 'm':
      return fb::TimeUnit::MILLISECOND;
    case 'u':
      return fb::TimeUnit::MICROSECOND;
    default:
      return fb::TimeUnit::NANOSECOND;
  }
}

// The Arrow type of @p t, read off its C Data Interface format string (`arrow_format`), so the
// IPC schema and the C export can never disagree.
Result<TypeRef> arrow_type(flatbuffers::FlatBufferBuilder& b, const DType& t,
                           StringLayout strings) {
  OC_ASSIGN_OR_RETURN(const std::string f, arrow_format(t, strings));
  const std::string_view v = f;
  auto ref = [](fb::Type type, auto table) { return TypeRef{type, table.Union()}; };
  if (v == "n") return ref(fb::Type::Null, fb::CreateNull(b));
  if (v == "b") return ref(fb::Type::Bool, fb::CreateBool(b));
  if (v.size() == 1) {
    constexpr std::string_view kInts = "cCsSiIlL";
    if (const size_t i = kInts.find(v[0]); i != std::string_view::npos) {
      return ref(fb::Type::Int, fb::CreateInt(b, 8 << (i / 2), /*is_signed=*/i % 2 == 0));
    }
    if (v == "e")
      return ref(fb::Type::FloatingPoint, fb::CreateFloatingPoint(b, fb::Precision::HALF));
    if (v == "f")
      return ref(fb::Type::FloatingPoint, fb::CreateFloatingPoint(b, fb::Precision::SINGLE));
    if (v == "g")
      return ref(fb::Type::FloatingPoint, fb::CreateFloatingPoint(b, fb::Precision::DOUBLE));
    if (v == "u") return ref(fb::Type::Utf8, fb::CreateUtf8(b));
    if (v == "z") return ref(fb::Type::Binary, fb::CreateBinary(b));
  }
  if (v == "vu") return ref(fb::Type::Utf8View, fb::CreateUtf8View(b));
  if (v == "vz") return ref(fb::Type::BinaryView, fb::CreateBinaryView(b));
  if (v == "+l") return ref(fb::Type::List, fb::CreateList(b));
  if (v == "+s") return ref(fb::Type::Struct_, fb::CreateStruct_(b));
  if (v.starts_with("+w:")) {
    // The dtype has the size already; the format string only said which table.
    return ref(fb::Type::FixedSizeList,
               fb::CreateFixedSizeList(b, static_cast<int32_t>(t.storage().list_size)));
  }
  if (v.starts_with("d:")) {
    const DType& s = t.storage();
    return ref(fb::Type::Decimal,
               fb::CreateDecimal(b, s.precision, s.scale, s.precision <= 38 ? 128 : 256));
  }
  if (v == "tdD") return ref(fb::Type::Date, fb::CreateDate(b, fb::DateUnit::DAY));
  if (v == "tdm") return ref(fb::Type::Date, fb::CreateDate(b, fb::DateUnit::MILLISECOND));
  if (v.size() == 3 && v.starts_with("tt")) {
    const bool wide = v[2] == 'u' || v[2] == 'n';
    return ref(fb::Type::Time, fb::CreateTime(b, time_unit(v[2]), wide ? 64 : 32));
  }
  if (v.size() >= 4 && v.starts_with("ts") && v[3] == ':') {
    const std::string_view tz = v.substr(4);
    const auto zone = tz.empty() ? flatbuffers::Offset<flatbuffers::String>()
                                 : b.CreateString(tz.data(), tz.size());
    return ref(fb::Type::Timestamp, fb::CreateTimestamp(b, time_unit(v[2]), zone));
  }
  return OC_ERROR(Errc::unsupported, "no Arrow IPC type for {} (format \"{}\")", t.to_string(), f);
}

Result<flatbuffers::Offset<fb::Field>> arrow_field(flatbuffers::FlatBufferBuilder& b,
                                                   const std::string& name, const DType& t,
                                                   StringLayout strings) {
  const DType& s = t.storage();
  std::vector<flatbuffers::Offset<fb::Field>> kids;
  if (s.kind == TypeKind::struct_) {
    for (size_t i = 0; i < s.children.size(); ++i) {
      OC_ASSIGN_OR_RETURN(auto k, arrow_field(b, s.names[i], *s.children[i], strings));
      kids.push_back(k);
    }
  } else if (s.kind == TypeKind::list || s.kind == TypeKind::fixed_size_list) {
    OC_ASSIGN_OR_RETURN(auto k, arrow_field(b, "item", *s.children[0], strings));
    kids.push_back(k);
  }
  OC_ASSIGN_OR_RETURN(const TypeRef type, arrow_type(b, t, strings));
  const auto name_off = b.CreateString(name);
  const auto kids_off = b.CreateVector(kids);  // present even when empty (doc section 5.5)
  return fb::CreateField(b, name_off, t.nullable, type.first, type.second, /*dictionary=*/0,
                         kids_off);
}

std::string finish_message(flatbuffers::FlatBufferBuilder& b, fb::MessageHeader type,
                           flatbuffers::Offset<void> header, uint64_t body_length) {
  const auto msg = fb::CreateMessage(b, fb::MetadataVersion::V5, type, header,
                                     static_cast<int64_t>(body_length));
  b.Finish(msg);  // no file identifier, no size prefix: Arrow frames it itself
  return frame(b);
}

// ---- record batch body
// ---------------------------------------------------------------------------

// A record batch's nodes, buffer entries and body pieces, gathered in Arrow's pre-order.
class BodyWriter {
 public:
  // @p cctx compresses every non-empty buffer at @p level; null writes them as they are.
  BodyWriter(ZSTD_CCtx* cctx, int level) : cctx_(cctx), level_(level) {}

  Result<void> append(const ColumnPtr& c);

  std::vector<fb::FieldNode> nodes;
  std::vector<fb::Buffer> buffers;
  std::vector<int64_t> variadic_counts;
  std::vector<Buffer> pieces;
  uint64_t length = 0;

 private:
  // Adds @p parts, end to end, as the next buffer, at the next 8-aligned body offset (behind
  // its length prefix, compressed or not, when compressing).
  void add(std::initializer_list<Buffer> parts) {
    uint64_t size = 0;
    for (const Buffer& p : parts) size += p.size();
    const uint64_t start = length;
    if (cctx_ != nullptr && size != 0) {
      if (std::optional<Buffer> framed = compressed(parts, size)) {
        push(*framed);
      } else {
        push(static_bytes(&kUncompressed, sizeof kUncompressed));
        for (const Buffer& p : parts) push(p);
      }
    } else {
      for (const Buffer& p : parts) push(p);
    }
    buffers.emplace_back(static_cast<int64_t>(start), static_cast<int64_t>(length - start));
    if (const uint64_t rest = padded(length) - length; rest != 0) {
      pieces.push_back(static_bytes(kZeros, rest));
      length += rest;
    }
  }
  void add(const Buffer& b) { add({b}); }
  void push(const Buffer& p) {
    if (p.empty()) return;
    pieces.push_back(p);
    length += p.size();
  }
  std::optional<Buffer> compressed(std::initializer_list<Buffer> parts, uint64_t size) const;
  Result<Buffer> bits(const Buffer& src, uint64_t offset, uint64_t n, const char* what) const;
  Result<void> offsets_and_values(const Column& c, const uint8_t* valid, ColumnPtr* child_rows);
  Result<void> compacted_offsets_and_values(const Column& c, const uint8_t* valid,
                                            ColumnPtr* child_rows);

  ZSTD_CCtx* cctx_;
  int level_;
};

// The buffer made of @p parts (@p size bytes) as `i64 size` and one zstd frame, or nullopt when
// that is not smaller than `i64 -1` and the bytes as they are.
std::optional<Buffer> BodyWriter::compressed(std::initializer_list<Buffer> parts,
                                             uint64_t size) const {
  Buffer joined;
  if (parts.size() == 1) {
    joined = *parts.begin();
  } else {
    joined = Buffer::allocate_for_overwrite(size);
    uint64_t at = 0;
    for (const Buffer& p : parts) {
      if (p.empty()) continue;
      std::memcpy(joined.mutable_data() + at, p.data(), p.size());
      at += p.size();
    }
  }
  const size_t bound = ZSTD_compressBound(size);
  Buffer out = Buffer::allocate_for_overwrite(sizeof(int64_t) + bound);
  const size_t n = ZSTD_compressCCtx(cctx_, out.mutable_data() + sizeof(int64_t), bound,
                                     joined.data(), size, level_);
  // An error (none is expected with a bound-sized output) falls back to the raw bytes too.
  if (ZSTD_isError(n) || n >= size) return std::nullopt;
  const auto prefix = static_cast<int64_t>(size);
  std::memcpy(out.mutable_data(), &prefix, sizeof prefix);  // little-endian hosts only
  return out.slice(0, sizeof(int64_t) + n);
}

// Zeroing under nulls: decoders leave whatever was in memory under a null slot (buffers come
// from `allocate_for_overwrite`), and a stream leaves the process (the object class sends it out
// of a storage server), so no byte under a null row may be written as it is. Columns without
// nulls are written without a copy; @p valid is the rows' validity from bit 0 otherwise.

// @p v (n bits from bit 0) with every bit of a null row cleared, and the bits past n too.
Buffer bits_under_nulls_cleared(const Buffer& v, const uint8_t* valid, uint64_t n) {
  const uint64_t bytes = bitmap_bytes(n);
  Buffer out = Buffer::allocate_for_overwrite(bytes);
  uint8_t* o = out.mutable_data();
  for (uint64_t i = 0; i < bytes; ++i) o[i] = v.data()[i] & valid[i];
  if (n % 8 != 0) o[bytes - 1] &= static_cast<uint8_t>((1u << (n % 8)) - 1);
  return out;
}

// @p values (n slots of @p width bytes) with the slots of null rows zeroed.
Buffer slots_under_nulls_zeroed(const Buffer& values, size_t width, const uint8_t* valid,
                                uint64_t n) {
  Buffer out = Buffer::allocate_for_overwrite(values.size());
  std::memcpy(out.mutable_data(), values.data(), values.size());
  for (uint64_t i = 0; i < n; ++i) {
    if (!bitmap_get(valid, i)) std::memset(out.mutable_data() + i * width, 0, width);
  }
  return out;
}

// Bits [offset, offset + n) of @p src from bit 0: shared when @p offset is a multiple of 8.
Result<Buffer> BodyWriter::bits(const Buffer& src, uint64_t offset, uint64_t n,
                                const char* what) const {
  const uint64_t bytes = (n + 7) / 8;
  OC_EXPECT((offset + n + 7) / 8 <= src.size(), invalid,
            "{} bitmap of {} bytes is too short for bits {}..{}", what, src.size(), offset,
            offset + n);
  if (offset % 8 == 0) return src.slice(offset / 8, bytes);
  Buffer out = make_bitmap(n, false);
  copy_bits(src.data(), offset, out.mutable_data(), 0, n);
  return out;
}

// The offsets (rebased to 0) and, for utf8/binary, the bytes of an offsets-layout column; for
// a list, *child_rows is set to the element rows its offsets reach.
Result<void> BodyWriter::offsets_and_values(const Column& c, const uint8_t* valid,
                                            ColumnPtr* child_rows) {
  const uint64_t n = c.length;
  const bool is_list = child_rows != nullptr;
  if (n == 0) {
    add(static_bytes(&kZeroOffset, sizeof kZeroOffset));
    if (is_list)
      *child_rows = slice(c.children[0], 0, 0);
    else
      add(Buffer());
    return {};
  }
  OC_EXPECT(!c.buffers.empty() && c.buffers[0].size() / 4 >= c.offset + n + 1, invalid,
            "{} column of {} rows at offset {} has {} bytes of offsets", c.dtype->to_string(), n,
            c.offset, c.buffers.empty() ? 0 : c.buffers[0].size());
  const int32_t* o = c.offsets();
  const int32_t first = o[0];
  const int32_t last = o[n];
  const uint64_t reach =
      is_list ? c.children[0]->length : (c.buffers.size() > 1 ? c.buffers[1].size() : 0);
  OC_EXPECT(first >= 0 && first <= last && static_cast<uint64_t>(last) <= reach, invalid,
            "{} offsets {}..{} outside its {} values", c.dtype->to_string(), first, last, reach);
  if (valid != nullptr) {
    for (uint64_t i = 0; i < n; ++i) {
      if (!bitmap_get(valid, i) && o[i + 1] != o[i]) {
        return compacted_offsets_and_values(c, valid, child_rows);
      }
    }
  }
  if (first == 0) {
    add(c.buffers[0].slice(c.offset * 4, (n + 1) * 4));
  } else {
    // IPC has no array offset; Arrow's own writer rebases sliced offsets to 0 as well.
    Buffer rebased = Buffer::allocate_array_for_overwrite(n + 1, 4);
    int32_t* r = rebased.mutable_as<int32_t>();
    for (uint64_t i = 0; i <= n; ++i) r[i] = o[i] - first;
    add(rebased);
  }
  const auto begin = static_cast<uint64_t>(first);
  const auto count = static_cast<uint64_t>(last - first);
  if (is_list)
    *child_rows = slice(c.children[0], begin, count);
  else
    add(c.buffers[1].slice(begin, count));
  return {};
}

// The offsets-layout column @p c (some of whose null rows reach values) with every null row
// empty: offsets rebuilt from 0, and only the valid rows' bytes or elements kept.
Result<void> BodyWriter::compacted_offsets_and_values(const Column& c, const uint8_t* valid,
                                                      ColumnPtr* child_rows) {
  const uint64_t n = c.length;
  const int32_t* o = c.offsets();
  Buffer offsets = Buffer::allocate_array_for_overwrite(n + 1, 4);
  int32_t* r = offsets.mutable_as<int32_t>();
  r[0] = 0;
  for (uint64_t i = 0; i < n; ++i) {
    OC_EXPECT(o[i] <= o[i + 1], invalid, "{} offsets fall from {} to {} at row {}",
              c.dtype->to_string(), o[i], o[i + 1], i);
    // The sum never passes o[n] - o[0], which the caller checked to fit.
    r[i + 1] = r[i] + (bitmap_get(valid, i) ? o[i + 1] - o[i] : 0);
  }
  add(offsets);
  const auto kept = static_cast<uint64_t>(r[n]);
  if (child_rows != nullptr) {
    std::vector<uint64_t> rows;
    rows.reserve(kept);
    for (uint64_t i = 0; i < n; ++i) {
      if (!bitmap_get(valid, i)) continue;
      for (int32_t k = o[i]; k < o[i + 1]; ++k) rows.push_back(static_cast<uint64_t>(k));
    }
    OC_ASSIGN_OR_RETURN(*child_rows, take(c.children[0], rows));
    return {};
  }
  Buffer bytes = Buffer::allocate_for_overwrite(kept);
  for (uint64_t i = 0; i < n; ++i) {
    if (r[i + 1] == r[i]) continue;
    std::memcpy(bytes.mutable_data() + r[i], c.buffers[1].data() + o[i],
                static_cast<size_t>(r[i + 1] - r[i]));
  }
  add(bytes);
  return {};
}

Result<void> BodyWriter::append(const ColumnPtr& col) {
  const Column& c = *col;
  const DType& s = c.dtype->storage();
  const uint64_t n = c.length;
  const auto rows = static_cast<int64_t>(n);
  if (s.kind == TypeKind::null) {  // no buffers at all in V5, every slot null
    nodes.emplace_back(rows, rows);
    return {};
  }
  // The exact count of these rows, whatever the column says (a wrong 0 drops the nulls).
  const int64_t nulls =
      c.validity.empty() || n == 0 ? 0 : count_nulls(c.validity.data(), c.offset, n);
  if (nulls > 0) {
    OC_EXPECT((c.offset + n + 7) / 8 <= c.validity.size(), invalid, "validity of {} too short",
              c.dtype->to_string());
  }
  nodes.emplace_back(rows, nulls);
  Buffer validity;  // these rows' validity from bit 0, when some are null
  if (nulls > 0) {
    OC_ASSIGN_OR_RETURN(validity, bits(c.validity, c.offset, n, "validity"));
  }
  add(validity);
  const uint8_t* valid = nulls > 0 ? validity.data() : nullptr;
  switch (s.kind) {
    case TypeKind::boolean: {
      OC_EXPECT(!c.buffers.empty(), invalid, "bool column without values");
      OC_ASSIGN_OR_RETURN(Buffer v, bits(c.buffers[0], c.offset, n, "bool values"));
      if (valid != nullptr) {
        add(bits_under_nulls_cleared(v, valid, n));
      } else if (c.offset % 8 == 0 && n % 8 != 0) {
        // The shared bitmap's last byte also holds the values of rows past these, which may be
        // nulls' garbage: that byte alone is written as a copy, the bits past n cleared.
        Buffer last = Buffer::allocate(1);
        last.mutable_data()[0] = v.data()[n / 8] & static_cast<uint8_t>((1u << (n % 8)) - 1);
        add({v.slice(0, n / 8), last});
      } else {
        add(v);  // whole bytes of these rows, or a shifted copy whose bits past n are clear
      }
      return {};
    }
    case TypeKind::primitive:
    case TypeKind::decimal: {
      const size_t w = fixed_width_of(s);
      OC_EXPECT(!c.buffers.empty() && c.buffers[0].size() / w >= c.offset + n, invalid,
                "{} column of {} rows at offset {} has {} bytes of values", s.to_string(), n,
                c.offset, c.buffers.empty() ? 0 : c.buffers[0].size());
      const Buffer values = n == 0 ? Buffer() : c.buffers[0].slice(c.offset * w, n * w);
      add(valid != nullptr ? slots_under_nulls_zeroed(values, w, valid, n) : values);
      return {};
    }
    case TypeKind::utf8:
    case TypeKind::binary: {
      if (!c.string_views) return offsets_and_values(c, valid, nullptr);
      // Views point into data buffers by index, so a slice keeps every data buffer; the views
      // themselves are canonical (format/string_views.hpp), null rows all zeros.
      OC_EXPECT(!c.buffers.empty() && c.buffers[0].size() / kViewBytes >= c.offset + n, invalid,
                "views column of {} rows at offset {} has {} bytes of views", n, c.offset,
                c.buffers.empty() ? 0 : c.buffers[0].size());
      Buffer views = n == 0 ? Buffer() : c.buffers[0].slice(c.offset * kViewBytes, n * kViewBytes);
      if (valid != nullptr) {
        // Views are canonical by invariant, but what leaves the process does not rest on it.
        for (uint64_t i = 0; i < n; ++i) {
          if (bitmap_get(valid, i)) continue;
          const uint8_t* v = views.data() + i * kViewBytes;
          if (std::any_of(v, v + kViewBytes, [](uint8_t x) { return x != 0; })) {
            views = slots_under_nulls_zeroed(views, kViewBytes, valid, n);
            break;
          }
        }
      }
      add(views);
      const auto data = view_data(c);
      for (const Buffer& d : data) add(d);
      variadic_counts.push_back(static_cast<int64_t>(data.size()));
      return {};
    }
    case TypeKind::list: {
      OC_EXPECT(c.children.size() == 1, invalid, "list column with {} children", c.children.size());
      ColumnPtr elements;
      OC_TRY(offsets_and_values(c, valid, &elements));
      return append(elements);
    }
    case TypeKind::fixed_size_list: {
      OC_EXPECT(c.children.size() == 1, invalid, "fixed-size list column with {} children",
                c.children.size());
      const uint64_t size = s.list_size;
      OC_EXPECT(c.children[0]->length >= (c.offset + n) * size, invalid,
                "fixed-size list of {} rows at offset {} has {} elements", n, c.offset,
                c.children[0]->length);
      return append(slice(c.children[0], c.offset * size, n * size));
    }
    case TypeKind::struct_: {
      OC_EXPECT(c.children.size() == s.children.size(), invalid,
                "struct column with {} of {} fields", c.children.size(), s.children.size());
      for (const ColumnPtr& field : c.children) {
        OC_EXPECT(field->length >= c.offset + n, invalid,
                  "struct field of {} rows under {} at offset {}", field->length, n, c.offset);
        OC_TRY(append(slice(field, c.offset, n)));
      }
      return {};
    }
    default:
      return OC_ERROR(Errc::unsupported, "no Arrow IPC layout for {}", c.dtype->to_string());
  }
}

}  // namespace

std::string IpcMessage::to_string() const {
  std::string out = metadata;
  out.reserve(size());
  for (const Buffer& b : body) out.append(reinterpret_cast<const char*>(b.data()), b.size());
  return out;
}

void IpcMessage::write_to(std::ostream& out) const {
  out.write(metadata.data(), static_cast<std::streamsize>(metadata.size()));
  for (const Buffer& b : body) {
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
}

Result<ArrowIpcWriter> ArrowIpcWriter::make(DTypePtr schema, ArrowIpcOptions options) {
  OC_EXPECT(schema && schema->kind == TypeKind::struct_, invalid,
            "an Arrow IPC stream needs a struct dtype, not {}",
            schema ? schema->to_string() : "none");
  flatbuffers::FlatBufferBuilder b;
  b.ForceDefaults(true);  // every scalar on the wire: no reader fills in a default of its own
  std::vector<flatbuffers::Offset<fb::Field>> fields;
  for (size_t i = 0; i < schema->children.size(); ++i) {
    OC_ASSIGN_OR_RETURN(auto f,
                        arrow_field(b, schema->names[i], *schema->children[i], options.strings));
    fields.push_back(f);
  }
  const auto fields_off = b.CreateVector(fields);  // present even for no fields
  const auto s = fb::CreateSchema(b, fb::Endianness::Little, fields_off);
  IpcMessage msg;
  msg.metadata = finish_message(b, fb::MessageHeader::Schema, s.Union(), 0);
  return ArrowIpcWriter(std::move(schema), options, std::move(msg));
}

Result<IpcMessage> ArrowIpcWriter::batch_message(const ColumnPtr& batch) const {
  OC_EXPECT(batch && batch->dtype && *batch->dtype == *schema_, invalid,
            "batch of {} in an Arrow IPC stream of {}",
            batch && batch->dtype ? batch->dtype->to_string() : "none", schema_->to_string());
  OC_EXPECT(batch->validity.empty() ||
                count_nulls(batch->validity.data(), batch->offset, batch->length) == 0,
            invalid, "a record batch has no top-level nulls");
  OC_EXPECT(batch->children.size() == schema_->children.size(), invalid,
            "batch with {} of {} fields", batch->children.size(), schema_->children.size());
  OC_ASSIGN_OR_RETURN(const ColumnPtr laid_out, with_string_layout(batch, options_.strings));
  const bool zstd = options_.compression == IpcCompression::zstd;
  std::unique_ptr<ZSTD_CCtx, FreeCCtx> cctx(zstd ? ZSTD_createCCtx() : nullptr);
  OC_EXPECT(!zstd || cctx != nullptr, out_of_memory, "no zstd compression context");
  BodyWriter body(cctx.get(), static_cast<int>(options_.zstd_level));
  for (const ColumnPtr& field : laid_out->children) {
    OC_EXPECT(field->length >= laid_out->offset + laid_out->length, invalid,
              "field of {} rows in a batch of {} at offset {}", field->length, laid_out->length,
              laid_out->offset);
    OC_TRY(body.append(slice(field, laid_out->offset, laid_out->length)));
  }
  flatbuffers::FlatBufferBuilder b;
  b.ForceDefaults(true);
  const auto nodes = b.CreateVectorOfStructs(body.nodes);
  const auto buffers = b.CreateVectorOfStructs(body.buffers);
  // Required whenever a view field exists, one entry per view field, so absent when none does.
  const auto variadic = body.variadic_counts.empty()
                            ? flatbuffers::Offset<flatbuffers::Vector<int64_t>>()
                            : b.CreateVector(body.variadic_counts);
  const auto compression = zstd ? fb::CreateBodyCompression(b, fb::CompressionType::ZSTD,
                                                            fb::BodyCompressionMethod::BUFFER)
                                : flatbuffers::Offset<fb::BodyCompression>();
  const auto rb = fb::CreateRecordBatch(b, static_cast<int64_t>(laid_out->length), nodes, buffers,
                                        compression, variadic);
  IpcMessage msg;
  msg.metadata = finish_message(b, fb::MessageHeader::RecordBatch, rb.Union(), body.length);
  msg.body = std::move(body.pieces);
  msg.body_length = body.length;
  return msg;
}

IpcMessage ArrowIpcWriter::end_of_stream() {
  IpcMessage msg;
  msg.metadata.assign("\xFF\xFF\xFF\xFF\0\0\0\0", 8);
  return msg;
}

}  // namespace oc::format
