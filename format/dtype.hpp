// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Vortex logical types (DType) and their mapping to Arrow.
///
/// A Vortex file stores one DType FlatBuffer for the whole file (`oc.fb.DType`,
/// format/fbs/vortex_file.fbs). Nothing below the root stores a dtype: every layout and array
/// node derives its children's dtypes from its own. `DType` is the immutable, shared, parsed form.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config/error.hpp"

namespace oc::fb {
struct DType;
}

namespace oc::format {

/// Physical primitive types; the numeric values are the Vortex `PType` enum (FlatBuffers and
/// protobuf agree on them).
enum class PType : uint8_t { u8 = 0, u16, u32, u64, i8, i16, i32, i64, f16, f32, f64 };

/// @return the width of one value of @p p in bytes.
[[nodiscard]] constexpr size_t ptype_width(PType p) noexcept {
  constexpr size_t kWidths[] = {1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8};
  return kWidths[static_cast<uint8_t>(p)];
}
[[nodiscard]] constexpr bool ptype_is_float(PType p) noexcept { return p >= PType::f16; }
[[nodiscard]] constexpr bool ptype_is_signed(PType p) noexcept {
  return p >= PType::i8 && p <= PType::i64;
}
[[nodiscard]] std::string_view ptype_name(PType p) noexcept;
/// @return the PType for a raw enum value, or `Errc::corrupt`.
[[nodiscard]] Result<PType> ptype_from(uint64_t raw);

enum class TypeKind : uint8_t {
  null,
  boolean,
  primitive,
  decimal,
  utf8,
  binary,
  struct_,
  list,
  fixed_size_list,
  extension,
  variant,
  union_,
};

struct DType;
using DTypePtr = std::shared_ptr<const DType>;

/// Vortex temporal extension units (the u8 in date/time/timestamp metadata).
enum class TimeUnit : uint8_t { ns = 0, us = 1, ms = 2, s = 3, days = 4 };

/// A parsed Vortex logical type.
struct DType {
  TypeKind kind = TypeKind::null;
  bool nullable = false;           ///< for extensions: the storage type's nullability
  PType ptype = PType::u8;         ///< primitive only
  uint8_t precision = 0;           ///< decimal only
  int8_t scale = 0;                ///< decimal only
  uint32_t list_size = 0;          ///< fixed-size list only
  std::vector<std::string> names;  ///< struct field names
  /// struct fields; list / fixed-size list element (one); extension storage (one)
  std::vector<DTypePtr> children;
  std::string ext_id;  ///< extension only, e.g. "vortex.timestamp"
  std::vector<uint8_t> ext_metadata;

  [[nodiscard]] static DTypePtr make_null();
  [[nodiscard]] static DTypePtr make_bool(bool nullable);
  [[nodiscard]] static DTypePtr make_primitive(PType p, bool nullable);
  [[nodiscard]] static DTypePtr make_utf8(bool nullable);
  [[nodiscard]] static DTypePtr make_binary(bool nullable);
  [[nodiscard]] static DTypePtr make_struct(std::vector<std::string> names,
                                            std::vector<DTypePtr> fields, bool nullable);

  /// @return a copy of this type with nullability @p n (for extensions, on the storage).
  [[nodiscard]] DTypePtr with_nullable(bool n) const;
  /// @return the struct field named @p name, or nullptr.
  [[nodiscard]] DTypePtr field(std::string_view name) const;
  /// @return the storage type for extensions, else this type's own kind.
  [[nodiscard]] const DType& storage() const {
    return kind == TypeKind::extension ? *children[0] : *this;
  }
  /// @return a readable form such as `struct{a=i64?, b=utf8}`; `?` marks nullable.
  [[nodiscard]] std::string to_string() const;
  [[nodiscard]] bool operator==(const DType& other) const;
};

/// Parses a DType FlatBuffer table. Depth beyond `max_array_depth` is `Errc::corrupt`.
[[nodiscard]] Result<DTypePtr> dtype_from_flatbuffer(const fb::DType* node, uint32_t depth = 0);

/// Verifies and parses a serialized DType FlatBuffer (the file's dtype segment).
[[nodiscard]] Result<DTypePtr> parse_dtype(std::span<const uint8_t> bytes);

/// Temporal extension info, when @p t is `vortex.date`, `vortex.time` or `vortex.timestamp`.
struct Temporal {
  enum class Kind : uint8_t { date, time, timestamp } kind;
  TimeUnit unit;
  std::string tz;  ///< timestamp only; empty when naive
};
/// @return the temporal view of an extension dtype; `Errc::unsupported` for other extensions,
/// `Errc::corrupt` for malformed metadata.
[[nodiscard]] Result<Temporal> temporal_of(const DType& t);

}  // namespace oc::format
