// SPDX-License-Identifier: Apache-2.0
#include "format/arrow_ipc_read.hpp"

#include <flatbuffers/flatbuffers.h>
#include <fmt/format.h>
#include <zstd.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "config/checked_size.hpp"
#include "format/arrow_ipc.hpp"
#include "format/fbs/arrow_ipc_generated.h"
#include "format/flatbuffer_util.hpp"
#include "format/string_views.hpp"
#include "format/zstd_bound.hpp"

namespace oc::format {
namespace {

namespace fb = ::oc::arrow_fb;

// ---- framing ------------------------------------------------------------------------------------

struct Message {
  AlignedBytes metadata;  // keeps `msg` alive
  const fb::Message* msg = nullptr;
  Buffer body;
};

// The message at byte @p at of @p stream, framed as the writer frames it (little endian):
//
//   bytes 0..4          FF FF FF FF   continuation marker
//   bytes 4..8          i32 M         metadata size; 0 is the end-of-stream marker
//   bytes 8..8+M        `Message` flatbuffer, zero padded (M a multiple of 8)
//   bodyLength bytes    the body
//
// @return nullopt for the end-of-stream marker; @p at moves past what was read.
Result<std::optional<Message>> read_message(const Buffer& stream, uint64_t& at) {
  const uint64_t left = stream.size() - at;
  OC_EXPECT(left != 0, corrupt, "Arrow IPC stream ends at byte {} without its end-of-stream marker",
            at);
  OC_EXPECT(left >= 8, corrupt, "Arrow IPC stream ends {} bytes into the message at byte {}", left,
            at);
  const uint8_t* p = stream.data() + at;
  const auto marker = load_le<uint32_t>(p);
  OC_EXPECT(marker == arrow_ipc_forever::kContinuation, corrupt,
            "Arrow IPC message at byte {} starts with {:#010x}, not the continuation marker", at,
            marker);
  const auto size = load_le<int32_t>(p + 4);
  if (size == 0) {
    at += 8;
    return std::optional<Message>();
  }
  OC_EXPECT(size > 0 && size % arrow_ipc_forever::kAlignment == 0, corrupt,
            "Arrow IPC message at byte {} has a metadata size of {}, not a positive multiple of 8",
            at, size);
  OC_EXPECT(static_cast<uint64_t>(size) <= left - 8, corrupt,
            "Arrow IPC message at byte {} has {} bytes of metadata, {} are left", at, size,
            left - 8);
  Message m;
  // A copy: the verifier needs the flatbuffer 8-aligned, which the input need not be.
  m.metadata = AlignedBytes(stream.span().subspan(at + 8, static_cast<size_t>(size)));
  OC_ASSIGN_OR_RETURN(m.msg, verified_root<fb::Message>(m.metadata.span(), "Arrow IPC message"));
  OC_EXPECT(m.msg->version() == fb::MetadataVersion::V5, unsupported,
            "Arrow IPC message at byte {} has metadata version {}, only V5 is read", at,
            static_cast<int>(m.msg->version()));
  const uint64_t body_at = at + 8 + static_cast<uint64_t>(size);
  const int64_t body = m.msg->body_length();
  OC_EXPECT(body >= 0 && static_cast<uint64_t>(body) <= stream.size() - body_at, corrupt,
            "Arrow IPC message at byte {} has a body of {} bytes, {} are left", at, body,
            stream.size() - body_at);
  m.body = stream.slice(body_at, static_cast<size_t>(body));
  at = body_at + static_cast<uint64_t>(body);
  return std::optional<Message>(std::move(m));
}

// ---- schema -------------------------------------------------------------------------------------

std::string_view str(const flatbuffers::String* s) {
  return s ? s->string_view() : std::string_view();
}

// The Arrow type of @p f with its parameters, for messages and for comparing two fields.
std::string type_text(const fb::Field& f) {
  const char* name = fb::EnumNameType(f.type_type());
  switch (f.type_type()) {
    case fb::Type::Int: {
      const auto* t = f.type_as_Int();
      return fmt::format("{}({}, {})", name, t->bit_width(),
                         t->is_signed() ? "signed" : "unsigned");
    }
    case fb::Type::FloatingPoint:
      return fmt::format("{}({})", name,
                         fb::EnumNamePrecision(f.type_as_FloatingPoint()->precision()));
    case fb::Type::Decimal: {
      const auto* t = f.type_as_Decimal();
      return fmt::format("{}({}, {}, {} bits)", name, t->precision(), t->scale(), t->bit_width());
    }
    case fb::Type::Date:
      return fmt::format("{}({})", name, fb::EnumNameDateUnit(f.type_as_Date()->unit()));
    case fb::Type::Time: {
      const auto* t = f.type_as_Time();
      return fmt::format("{}({}, {} bits)", name, fb::EnumNameTimeUnit(t->unit()), t->bit_width());
    }
    case fb::Type::Timestamp: {
      const auto* t = f.type_as_Timestamp();
      return fmt::format("{}({}, \"{}\")", name, fb::EnumNameTimeUnit(t->unit()),
                         str(t->timezone()));
    }
    case fb::Type::FixedSizeList:
      return fmt::format("{}({})", name, f.type_as_FixedSizeList()->list_size());
    default:
      return name;
  }
}

// Whether field @p got of the stream is field @p want of the schema the writer makes for the
// expected dtype (the writer's own type mapping, so there is one). Both are verified.
Result<void> same_field(const fb::Field& got, const fb::Field& want, const std::string& path,
                        bool compare_name) {
  if (compare_name) {
    OC_EXPECT(str(got.name()) == str(want.name()), protocol,
              "Arrow IPC field {} is named \"{}\" in the stream", path, str(got.name()));
  }
  OC_EXPECT(got.dictionary() == nullptr, unsupported,
            "Arrow IPC field {} is dictionary encoded, which is not read", path);
  OC_EXPECT(got.type() != nullptr, corrupt, "Arrow IPC field {} has no type", path);
  const std::string got_type = type_text(got);
  const std::string want_type = type_text(want);
  OC_EXPECT(got_type == want_type, protocol, "Arrow IPC field {} is {} in the stream, expected {}",
            path, got_type, want_type);
  OC_EXPECT(got.nullable() == want.nullable(), protocol,
            "Arrow IPC field {} is {}nullable in the stream, expected {}nullable", path,
            got.nullable() ? "" : "not ", want.nullable() ? "" : "not ");
  const uint32_t got_kids = got.children() ? got.children()->size() : 0;
  const uint32_t want_kids = want.children() ? want.children()->size() : 0;
  OC_EXPECT(got_kids == want_kids, protocol,
            "Arrow IPC field {} has {} children in the stream, expected {}", path, got_kids,
            want_kids);
  // List elements are compared by type only: Arrow writers name them as they like.
  const bool struct_kids = want.type_type() == fb::Type::Struct_;
  for (uint32_t i = 0; i < want_kids; ++i) {
    const fb::Field* w = want.children()->Get(i);
    OC_TRY(same_field(*got.children()->Get(i), *w, fmt::format("{}.{}", path, str(w->name())),
                      struct_kids));
  }
  return {};
}

// Checks the stream's `Schema` against the one the writer makes for @p expected.
Result<void> check_schema(const fb::Schema& got, const DTypePtr& expected, StringLayout strings) {
  OC_EXPECT(got.endianness() == fb::Endianness::Little, unsupported,
            "Arrow IPC stream is big endian, which is not read");
  OC_ASSIGN_OR_RETURN(const ArrowIpcWriter writer,
                      ArrowIpcWriter::make(expected, ArrowIpcOptions{.strings = strings}));
  const std::string meta = writer.schema_message().metadata;
  const AlignedBytes bytes(
      std::span(reinterpret_cast<const uint8_t*>(meta.data()), meta.size()).subspan(8));
  OC_ASSIGN_OR_RETURN(const fb::Message* m,
                      verified_root<fb::Message>(bytes.span(), "expected schema"));
  const fb::Schema& want = *m->header_as_Schema();
  const uint32_t got_n = got.fields() ? got.fields()->size() : 0;
  OC_EXPECT(got_n == want.fields()->size(), protocol,
            "Arrow IPC schema has {} fields, expected {} ({})", got_n, want.fields()->size(),
            expected->to_string());
  for (uint32_t i = 0; i < got_n; ++i) {
    const fb::Field* w = want.fields()->Get(i);
    OC_TRY(same_field(*got.fields()->Get(i), *w, fmt::format("\"{}\"", str(w->name())), true));
  }
  return {};
}

uint32_t depth_of(const DType& t) {
  uint32_t d = 0;
  for (const DTypePtr& c : t.storage().children) d = std::max(d, depth_of(*c));
  return d + 1;
}

// ---- record batches -----------------------------------------------------------------------------

// The verifier aligns vectors to 4 bytes only, so the 8-byte fields of the vectors below may sit
// unaligned in hostile metadata: they are read byte-wise, never through the generated accessors.

// Entry @p i of a vector of `FieldNode` {i64 length, i64 null_count} or `Buffer` {i64 offset,
// i64 length}: 16 bytes, little endian.
template <class Vector>
std::pair<int64_t, int64_t> pair_at(const Vector& v, uint32_t i) {
  static_assert(sizeof(fb::FieldNode) == 16 && sizeof(fb::Buffer) == 16);
  const uint8_t* p = v.Data() + size_t{i} * 16;
  return {load_le<int64_t>(p), load_le<int64_t>(p + 8)};
}

int64_t long_at(const flatbuffers::Vector<int64_t>& v, uint32_t i) {
  return load_le<int64_t>(v.Data() + size_t{i} * 8);
}

// Walks one record batch's field nodes, buffers and variadic counts in Arrow's pre-order (a
// field's node, its validity, its own buffers, then its children's), alongside the expected
// dtype, building its columns.
class BatchReader {
 public:
  // @p dctx decompresses the buffers of a zstd-compressed body; null for an uncompressed one.
  BatchReader(const fb::RecordBatch& rb, Buffer body, ZSTD_DCtx* dctx, StringLayout strings,
              uint64_t& decoded, uint64_t max_decoded)
      : rb_(rb),
        body_(std::move(body)),
        dctx_(dctx),
        strings_(strings),
        decoded_(decoded),
        max_decoded_(max_decoded) {}

  // The column of field @p t (named @p path in messages), whose node must have @p rows rows.
  Result<ColumnPtr> field(const DTypePtr& t, uint64_t rows, const std::string& path);
  // Checks that the batch had no nodes, buffers or variadic counts left over.
  Result<void> finish() const;
  Result<void> count(uint64_t bytes, const std::string& path);

 private:
  struct Node {
    uint64_t length;
    int64_t nulls;
  };
  Result<Node> next_node(const std::string& path);
  Result<Buffer> next_buffer(const std::string& path, const char* what);
  Result<Buffer> validity(const DType& t, const Node& n, const std::string& path);
  Result<Buffer> offsets(const Node& n, const std::string& path);
  Result<Buffer> kept(Buffer b, size_t align, const std::string& path);
  Result<Buffer> decompressed(const Buffer& b, const std::string& path, const char* what);
  Result<void> count_body_bytes(const Buffer& b, const std::string& path);

  uint32_t nodes() const { return rb_.nodes() ? rb_.nodes()->size() : 0; }
  uint32_t buffers() const { return rb_.buffers() ? rb_.buffers()->size() : 0; }
  uint32_t variadic() const {
    return rb_.variadic_buffer_counts() ? rb_.variadic_buffer_counts()->size() : 0;
  }

  const fb::RecordBatch& rb_;
  Buffer body_;
  ZSTD_DCtx* dctx_;
  StringLayout strings_;
  uint64_t& decoded_;
  uint64_t max_decoded_;
  uint32_t node_ = 0;
  uint32_t buffer_ = 0;
  uint32_t variadic_ = 0;
};

Result<void> BatchReader::count(uint64_t bytes, const std::string& path) {
  decoded_ = saturating_add(decoded_, bytes);
  OC_EXPECT(decoded_ <= max_decoded_, out_of_memory,
            "Arrow IPC stream decodes past {} bytes at field {} (max_decoded_bytes)", max_decoded_,
            path);
  return {};
}

Result<BatchReader::Node> BatchReader::next_node(const std::string& path) {
  OC_EXPECT(node_ < nodes(), corrupt,
            "Arrow IPC record batch has {} field nodes, field {} needs more", nodes(), path);
  const auto [length, nulls] = pair_at(*rb_.nodes(), node_++);
  OC_EXPECT(length >= 0 && nulls >= 0 && nulls <= length, corrupt,
            "Arrow IPC field {} has {} rows and {} nulls", path, length, nulls);
  OC_TRY(count(static_cast<uint64_t>(length), path));
  return Node{static_cast<uint64_t>(length), nulls};
}

Result<Buffer> BatchReader::next_buffer(const std::string& path, const char* what) {
  OC_EXPECT(buffer_ < buffers(), corrupt,
            "Arrow IPC record batch has {} buffers, field {} needs its {}", buffers(), path, what);
  const auto [offset, length] = pair_at(*rb_.buffers(), buffer_++);
  OC_EXPECT(
      offset >= 0 && length >= 0 &&
          range_within(static_cast<uint64_t>(offset), static_cast<uint64_t>(length), body_.size()),
      corrupt, "Arrow IPC field {} has its {} at bytes {}+{} of a {} byte body", path, what, offset,
      length, body_.size());
  Buffer b = body_.slice(static_cast<size_t>(offset), static_cast<size_t>(length));
  if (dctx_ == nullptr || b.empty()) return b;
  return decompressed(b, path, what);
}

// A buffer of a compressed body (BodyCompression BUFFER; empty buffers have no prefix):
//
//   bytes 0..8   i64 U   uncompressed length, little endian; -1: the rest is the raw buffer
//   bytes 8..    one zstd frame whose content is exactly U bytes
//
// U is untrusted: before anything is allocated it must fit what is left of max_decoded_bytes and
// what the frame's bytes can inflate to (zstd_max_inflated: a tiny frame behind a huge U would
// otherwise reserve U), and the frame's own content size (when it declares one) must be U; the
// decompression, bounded by U, must produce U bytes. The result is counted here, being a new
// allocation.
Result<Buffer> BatchReader::decompressed(const Buffer& b, const std::string& path,
                                         const char* what) {
  OC_EXPECT(b.size() >= sizeof(int64_t), corrupt,
            "Arrow IPC field {} has a compressed {} of {} bytes, without its length prefix", path,
            what, b.size());
  const auto prefix = load_le<int64_t>(b.data());
  const Buffer frame = b.slice(sizeof(int64_t), b.size() - sizeof(int64_t));
  if (prefix == -1) return frame;
  OC_EXPECT(prefix >= 0, corrupt, "Arrow IPC field {} has a compressed {} of length {}", path, what,
            prefix);
  const auto size = static_cast<uint64_t>(prefix);
  OC_EXPECT(size <= max_decoded_ - decoded_, out_of_memory,
            "Arrow IPC field {} decompresses its {} to {} bytes, past max_decoded_bytes ({}, {} "
            "used)",
            path, what, size, max_decoded_, decoded_);
  OC_EXPECT(size <= zstd_max_inflated(frame.size()), corrupt,
            "Arrow IPC field {} has a zstd {} of {} bytes, which cannot inflate to its length {}",
            path, what, frame.size(), size);
  const unsigned long long declared = ZSTD_getFrameContentSize(frame.data(), frame.size());
  OC_EXPECT(declared != ZSTD_CONTENTSIZE_ERROR, corrupt,
            "Arrow IPC field {} has a {} that is not a zstd frame", path, what);
  OC_EXPECT(declared == ZSTD_CONTENTSIZE_UNKNOWN || declared == size, corrupt,
            "Arrow IPC field {} has a zstd {} of {} bytes behind a length of {}", path, what,
            declared, size);
  Buffer out = Buffer::allocate_for_overwrite(static_cast<size_t>(size));
  const size_t n = ZSTD_decompressDCtx(dctx_, out.mutable_data(), static_cast<size_t>(size),
                                       frame.data(), frame.size());
  OC_EXPECT(!ZSTD_isError(n), corrupt, "Arrow IPC field {} has a zstd {} that fails: {}", path,
            what, ZSTD_getErrorName(n));
  OC_EXPECT(n == size, corrupt,
            "Arrow IPC field {} has a zstd {} of {} bytes behind a length of {}", path, what, n,
            size);
  OC_TRY(count(size, path));
  return out;
}

// Counts @p b unless it is a decompressed buffer, which `decompressed` counted whole.
Result<void> BatchReader::count_body_bytes(const Buffer& b, const std::string& path) {
  const auto p = reinterpret_cast<uintptr_t>(b.data());
  const auto body = reinterpret_cast<uintptr_t>(body_.data());
  if (b.empty() || (p >= body && p - body < body_.size())) return count(b.size(), path);
  return {};
}

// @p b as the column keeps it: the input's bytes when their address suits values of @p align
// bytes, else a copy (the stream's buffer may sit anywhere in memory), counted either way.
Result<Buffer> BatchReader::kept(Buffer b, size_t align, const std::string& path) {
  OC_TRY(count_body_bytes(b, path));
  if (reinterpret_cast<uintptr_t>(b.data()) % align == 0) return b;
  return Buffer::copy_of(b.span());
}

// The validity bitmap of a field (empty when it has no nulls); its null count must be the
// bitmap's, and a field the expected dtype makes non-nullable must have none.
Result<Buffer> BatchReader::validity(const DType& t, const Node& n, const std::string& path) {
  OC_ASSIGN_OR_RETURN(Buffer v, next_buffer(path, "validity"));
  OC_EXPECT(n.nulls == 0 || t.nullable, corrupt,
            "Arrow IPC field {} is not nullable but has {} nulls", path, n.nulls);
  if (v.empty()) {
    OC_EXPECT(n.nulls == 0, corrupt, "Arrow IPC field {} has {} nulls and no validity", path,
              n.nulls);
    return Buffer();
  }
  const uint64_t bytes = bitmap_bytes(n.length);
  OC_EXPECT(v.size() >= bytes, corrupt, "Arrow IPC field {} of {} rows has {} bytes of validity",
            path, n.length, v.size());
  const int64_t zeros = count_nulls(v.data(), 0, n.length);
  OC_EXPECT(zeros == n.nulls, corrupt, "Arrow IPC field {} says {} nulls, its validity has {}",
            path, n.nulls, zeros);
  if (n.nulls == 0) return Buffer();
  return kept(v.slice(0, bytes), 1, path);
}

// The i32 offsets of an offsets-layout field: n + 1 of them, the first not negative, never
// falling (the caller checks the last against what they index). A field of no rows may have
// none, as Arrow allows.
Result<Buffer> BatchReader::offsets(const Node& n, const std::string& path) {
  OC_ASSIGN_OR_RETURN(Buffer o, next_buffer(path, "offsets"));
  if (n.length == 0 && o.empty()) {
    Buffer zero = Buffer::allocate_array(1, sizeof(int32_t));
    OC_TRY(count(zero.size(), path));
    return zero;
  }
  const auto count_offsets = checked_add(n.length, 1);
  OC_EXPECT(count_offsets && holds_at_least(o.size(), *count_offsets, sizeof(int32_t)), corrupt,
            "Arrow IPC field {} of {} rows has {} bytes of offsets", path, n.length, o.size());
  OC_ASSIGN_OR_RETURN(
      o, kept(o.slice(0, static_cast<size_t>(*count_offsets * 4)), alignof(int32_t), path));
  const int32_t* v = o.as<int32_t>();
  OC_EXPECT(v[0] >= 0, corrupt, "Arrow IPC field {} starts at offset {}", path, v[0]);
  for (uint64_t i = 0; i < n.length; ++i) {
    OC_EXPECT(v[i] <= v[i + 1], corrupt,
              "Arrow IPC field {} has offsets falling from {} to {} at row {}", path, v[i],
              v[i + 1], i);
  }
  return o;
}

Result<ColumnPtr> BatchReader::field(const DTypePtr& t, uint64_t rows, const std::string& path) {
  const DType& s = t->storage();
  OC_ASSIGN_OR_RETURN(const Node n, next_node(path));
  OC_EXPECT(n.length == rows, corrupt, "Arrow IPC field {} has {} rows, its parent {}", path,
            n.length, rows);
  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = n.length;
  if (s.kind == TypeKind::null) {  // no buffers in V5: every row is null
    OC_EXPECT(n.nulls == static_cast<int64_t>(n.length), corrupt,
              "Arrow IPC null field {} has {} nulls in {} rows", path, n.nulls, n.length);
    c->null_count = n.nulls;
    return ColumnPtr(std::move(c));
  }
  OC_ASSIGN_OR_RETURN(c->validity, validity(*t, n, path));
  c->null_count = c->validity.empty() ? 0 : n.nulls;
  switch (s.kind) {
    case TypeKind::boolean: {
      OC_ASSIGN_OR_RETURN(Buffer v, next_buffer(path, "values"));
      const uint64_t bytes = bitmap_bytes(n.length);
      OC_EXPECT(v.size() >= bytes, corrupt, "Arrow IPC bool field {} of {} rows has {} bytes", path,
                n.length, v.size());
      OC_ASSIGN_OR_RETURN(Buffer k, kept(v.slice(0, bytes), 1, path));
      c->buffers = {std::move(k)};
      break;
    }
    case TypeKind::primitive:
    case TypeKind::decimal: {
      OC_ASSIGN_OR_RETURN(Buffer v, next_buffer(path, "values"));
      const size_t w = fixed_width_of(s);
      OC_EXPECT(holds_at_least(v.size(), n.length, w), corrupt,
                "Arrow IPC field {} of {} rows of {} bytes has {} bytes", path, n.length, w,
                v.size());
      // i128 and i256 are read as 16-byte words.
      OC_ASSIGN_OR_RETURN(Buffer k, kept(v.slice(0, static_cast<size_t>(n.length * w)),
                                         std::min<size_t>(w, 16), path));
      c->buffers = {std::move(k)};
      break;
    }
    case TypeKind::utf8:
    case TypeKind::binary: {
      if (strings_ == StringLayout::offsets) {
        OC_ASSIGN_OR_RETURN(Buffer o, offsets(n, path));
        OC_ASSIGN_OR_RETURN(Buffer bytes, next_buffer(path, "bytes"));
        const auto end = static_cast<uint64_t>(o.as<int32_t>()[n.length]);
        OC_EXPECT(end <= bytes.size(), corrupt,
                  "Arrow IPC field {} has offsets up to {} in {} bytes", path, end, bytes.size());
        OC_ASSIGN_OR_RETURN(bytes, kept(bytes.slice(0, static_cast<size_t>(end)), 1, path));
        c->buffers = {std::move(o), std::move(bytes)};
        break;
      }
      // Views: the 16-byte views, then as many data buffers as the next variadic count says.
      OC_ASSIGN_OR_RETURN(Buffer views, next_buffer(path, "views"));
      OC_EXPECT(holds_at_least(views.size(), n.length, kViewBytes), corrupt,
                "Arrow IPC field {} of {} rows has {} bytes of views", path, n.length,
                views.size());
      views = views.slice(0, static_cast<size_t>(n.length * kViewBytes));
      OC_TRY(count_body_bytes(views, path));
      OC_EXPECT(variadic_ < variadic(), corrupt,
                "Arrow IPC record batch has {} variadic buffer counts, view field {} needs one",
                variadic(), path);
      const int64_t k = long_at(*rb_.variadic_buffer_counts(), variadic_++);
      OC_EXPECT(k >= 0 && static_cast<uint64_t>(k) <= buffers() - buffer_, corrupt,
                "Arrow IPC view field {} has {} data buffers, {} are left", path, k,
                buffers() - buffer_);
      std::vector<Buffer> data;
      data.reserve(static_cast<size_t>(k));
      for (int64_t i = 0; i < k; ++i) {
        OC_ASSIGN_OR_RETURN(Buffer d, next_buffer(path, "view data"));
        OC_ASSIGN_OR_RETURN(d, kept(std::move(d), 1, path));
        data.push_back(std::move(d));
      }
      // Checks every valid row's view against its data buffer, and zeroes null rows' views.
      return make_views_column(t, n.length, c->validity, c->null_count, std::move(views),
                               std::move(data));
    }
    case TypeKind::list: {
      OC_ASSIGN_OR_RETURN(Buffer o, offsets(n, path));
      const auto end = static_cast<uint64_t>(o.as<int32_t>()[n.length]);
      c->buffers = {std::move(o)};
      // The elements' node says how many there are; they must cover what the offsets reach.
      const uint32_t at = node_;
      OC_EXPECT(at < nodes(), corrupt,
                "Arrow IPC record batch has {} field nodes, field {} needs more", nodes(), path);
      const int64_t elements = pair_at(*rb_.nodes(), at).first;
      OC_EXPECT(elements >= 0 && end <= static_cast<uint64_t>(elements), corrupt,
                "Arrow IPC list field {} has offsets up to {} over {} elements", path, end,
                elements);
      OC_ASSIGN_OR_RETURN(ColumnPtr e,
                          field(s.children[0], static_cast<uint64_t>(elements), path + ".item"));
      c->children = {std::move(e)};
      break;
    }
    case TypeKind::fixed_size_list: {
      const auto elements = checked_mul(n.length, s.list_size);
      OC_EXPECT(elements.has_value(), corrupt, "Arrow IPC field {} of {} lists of {} overflows",
                path, n.length, s.list_size);
      OC_ASSIGN_OR_RETURN(ColumnPtr e, field(s.children[0], *elements, path + ".item"));
      c->children = {std::move(e)};
      break;
    }
    case TypeKind::struct_:
      for (size_t i = 0; i < s.children.size(); ++i) {
        OC_ASSIGN_OR_RETURN(ColumnPtr f,
                            field(s.children[i], n.length, fmt::format("{}.{}", path, s.names[i])));
        c->children.push_back(std::move(f));
      }
      break;
    default:  // the schema check let only types the writer maps through
      return OC_ERROR(Errc::unsupported, "no Arrow IPC layout for {} (field {})", t->to_string(),
                      path);
  }
  return ColumnPtr(std::move(c));
}

Result<void> BatchReader::finish() const {
  OC_EXPECT(node_ == nodes() && buffer_ == buffers() && variadic_ == variadic(), corrupt,
            "Arrow IPC record batch has {} field nodes, {} buffers and {} variadic counts; its "
            "fields use {}, {} and {}",
            nodes(), buffers(), variadic(), node_, buffer_, variadic_);
  return {};
}

struct FreeDCtx {
  void operator()(ZSTD_DCtx* p) const noexcept { ZSTD_freeDCtx(p); }
};

Result<ColumnPtr> read_batch(const fb::RecordBatch& rb, Buffer body, const DTypePtr& expected,
                             StringLayout strings, uint64_t& decoded, uint64_t max_decoded) {
  std::unique_ptr<ZSTD_DCtx, FreeDCtx> dctx;
  if (const fb::BodyCompression* c = rb.compression()) {
    OC_EXPECT(c->codec() == fb::CompressionType::ZSTD, unsupported,
              "Arrow IPC record batch is compressed with codec {}; only ZSTD is read",
              static_cast<int>(c->codec()));
    OC_EXPECT(c->method() == fb::BodyCompressionMethod::BUFFER, unsupported,
              "Arrow IPC record batch has body compression method {}; only BUFFER is read",
              static_cast<int>(c->method()));
    dctx.reset(ZSTD_createDCtx());
    OC_EXPECT(dctx != nullptr, out_of_memory, "no zstd decompression context");
  }
  OC_EXPECT(rb.length() >= 0, corrupt, "Arrow IPC record batch of {} rows", rb.length());
  const auto rows = static_cast<uint64_t>(rb.length());
  BatchReader r(rb, std::move(body), dctx.get(), strings, decoded, max_decoded);
  OC_TRY(r.count(rows, "(batch)"));
  auto batch = std::make_shared<Column>();
  batch->dtype = expected;
  batch->length = rows;
  for (size_t i = 0; i < expected->children.size(); ++i) {
    OC_ASSIGN_OR_RETURN(ColumnPtr f, r.field(expected->children[i], rows,
                                             fmt::format("\"{}\"", expected->names[i])));
    batch->children.push_back(std::move(f));
  }
  OC_TRY(r.finish());
  return ColumnPtr(std::move(batch));
}

Result<std::vector<ColumnPtr>> read_stream(const Buffer& stream, const DTypePtr& expected,
                                           const ArrowIpcReadOptions& options) {
  OC_EXPECT(expected && expected->kind == TypeKind::struct_, invalid,
            "an Arrow IPC stream is read as a struct dtype, not {}",
            expected ? expected->to_string() : "none");
  OC_EXPECT(depth_of(*expected) <= defaults().max_array_depth + 1, invalid,
            "{} nests deeper than max_array_depth ({})", expected->to_string(),
            defaults().max_array_depth);
  uint64_t at = 0;
  uint64_t decoded = 0;
  bool have_schema = false;
  std::vector<ColumnPtr> batches;
  while (true) {
    const uint64_t message_at = at;
    OC_ASSIGN_OR_RETURN(std::optional<Message> m, read_message(stream, at));
    if (!m) break;
    const fb::Message& msg = *m->msg;
    OC_EXPECT(msg.header() != nullptr, corrupt, "Arrow IPC message at byte {} has no header",
              message_at);
    switch (msg.header_type()) {
      case fb::MessageHeader::Schema:
        OC_EXPECT(!have_schema, corrupt, "Arrow IPC stream has a second schema at byte {}",
                  message_at);
        OC_EXPECT(m->body.empty(), corrupt, "Arrow IPC schema message has a body of {} bytes",
                  m->body.size());
        OC_TRY(check_schema(*msg.header_as_Schema(), expected, options.strings));
        have_schema = true;
        break;
      case fb::MessageHeader::RecordBatch: {
        OC_EXPECT(have_schema, corrupt, "Arrow IPC record batch at byte {} before the schema",
                  message_at);
        OC_ASSIGN_OR_RETURN(ColumnPtr b,
                            read_batch(*msg.header_as_RecordBatch(), m->body, expected,
                                       options.strings, decoded, options.max_decoded_bytes));
        batches.push_back(std::move(b));
        break;
      }
      case fb::MessageHeader::NONE:
        return OC_ERROR(Errc::corrupt, "Arrow IPC message at byte {} has no header type",
                        message_at);
      default:
        return OC_ERROR(Errc::unsupported,
                        "Arrow IPC message at byte {} is a {} (type {}), which is not read",
                        message_at,
                        msg.header_type() == fb::MessageHeader::DictionaryBatch ? "dictionary batch"
                                                                                : "message",
                        static_cast<int>(msg.header_type()));
    }
  }
  OC_EXPECT(have_schema, corrupt, "Arrow IPC stream ends before its schema");
  OC_EXPECT(at == stream.size(), corrupt,
            "Arrow IPC stream has {} bytes after its end-of-stream marker", stream.size() - at);
  return batches;
}

}  // namespace

Result<std::vector<ColumnPtr>> read_arrow_ipc_stream(const Buffer& stream, const DTypePtr& expected,
                                                     const ArrowIpcReadOptions& options) {
  // Copies of misaligned buffers are the only allocations of any size; they are bounded by the
  // input, but an allocation failure must still be an error, not an exception.
  return catch_all("reading an Arrow IPC stream",
                   [&] { return read_stream(stream, expected, options); });
}

}  // namespace oc::format
