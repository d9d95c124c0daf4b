// SPDX-License-Identifier: Apache-2.0
#include "format/arrow_ipc_fuzz.hpp"

#include <memory>
#include <string>
#include <vector>

#include "format/arrow_ipc.hpp"
#include "format/arrow_ipc_read.hpp"

namespace oc::format {
namespace {

std::shared_ptr<DType> with_kind(TypeKind kind, std::vector<DTypePtr> children, bool nullable) {
  auto t = std::make_shared<DType>();
  t->kind = kind;
  t->children = std::move(children);
  t->nullable = nullable;
  return t;
}

DTypePtr decimal(uint8_t precision, int8_t scale, bool nullable) {
  auto t = std::make_shared<DType>();
  t->kind = TypeKind::decimal;
  t->precision = precision;
  t->scale = scale;
  t->nullable = nullable;
  return t;
}

// A vortex.date / time / timestamp extension (metadata: the unit byte, then for timestamps a
// u16 zone length and the zone).
DTypePtr temporal(const char* id, TimeUnit unit, PType storage, std::string zone) {
  auto t = std::make_shared<DType>();
  t->kind = TypeKind::extension;
  t->nullable = true;
  t->ext_id = id;
  t->ext_metadata.push_back(static_cast<uint8_t>(unit));
  if (t->ext_id == "vortex.timestamp") {
    t->ext_metadata.push_back(static_cast<uint8_t>(zone.size()));
    t->ext_metadata.push_back(0);
    t->ext_metadata.insert(t->ext_metadata.end(), zone.begin(), zone.end());
  }
  t->children.push_back(DType::make_primitive(storage, true));
  return t;
}

std::vector<DTypePtr> make_dtypes() {
  const auto i32 = DType::make_primitive(PType::i32, false);
  auto fsl =
      with_kind(TypeKind::fixed_size_list, {DType::make_primitive(PType::f32, false)}, false);
  fsl->list_size = 2;
  return {
      DType::make_struct(
          {"i", "s", "flag", "f", "n"},
          {DType::make_primitive(PType::i64, true), DType::make_utf8(true), DType::make_bool(true),
           DType::make_primitive(PType::f64, false), DType::make_null()},
          false),
      DType::make_struct({"l", "ls", "pair", "st"},
                         {with_kind(TypeKind::list, {i32}, false),
                          with_kind(TypeKind::list, {DType::make_utf8(true)}, true), fsl,
                          DType::make_struct({"a", "b"}, {i32, DType::make_utf8(true)}, true)},
                         false),
      DType::make_struct({"dec", "wide", "day", "ts", "t", "half", "bin"},
                         {decimal(10, 2, true), decimal(50, 0, false),
                          temporal("vortex.date", TimeUnit::days, PType::i32, ""),
                          temporal("vortex.timestamp", TimeUnit::us, PType::i64, "UTC"),
                          temporal("vortex.time", TimeUnit::ns, PType::i64, ""),
                          DType::make_primitive(PType::f16, true), DType::make_binary(false)},
                         false),
  };
}

}  // namespace

std::span<const DTypePtr> arrow_ipc_fuzz_dtypes() {
  static const std::vector<DTypePtr> dtypes = make_dtypes();
  return dtypes;
}

Result<void> fuzz_read_arrow_ipc(std::span<const uint8_t> input) {
  OC_EXPECT(!input.empty(), invalid, "fuzz input is empty");
  const auto dtypes = arrow_ipc_fuzz_dtypes();
  const DTypePtr& expected = dtypes[(input[0] & 0x7f) % dtypes.size()];
  const ArrowIpcReadOptions options{.strings = (input[0] & 0x80) != 0 ? StringLayout::views
                                                                      : StringLayout::offsets};
  // Copied, so that the reader sees the stream where its owner would have it (64-aligned).
  const Buffer stream = Buffer::copy_of(input.subspan(1));
  OC_ASSIGN_OR_RETURN(const auto batches, read_arrow_ipc_stream(stream, expected, options));
  OC_ASSIGN_OR_RETURN(const auto writer,
                      ArrowIpcWriter::make(expected, {.strings = options.strings}));
  std::string again = writer.schema_message().to_string();
  for (const ColumnPtr& b : batches) {
    OC_ASSIGN_OR_RETURN(const IpcMessage m, writer.batch_message(b));
    again += m.to_string();
  }
  again += ArrowIpcWriter::end_of_stream().to_string();
  const Buffer written =
      Buffer::copy_of({reinterpret_cast<const uint8_t*>(again.data()), again.size()});
  OC_TRY(read_arrow_ipc_stream(written, expected, options));
  return {};
}

}  // namespace oc::format
