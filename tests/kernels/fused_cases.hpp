// SPDX-License-Identifier: Apache-2.0
// Seeded array trees for the fused decode, shared by the CPU test of the plan and its host
// executor (test_fused_plan.cpp) and the GPU test of the kernel (test_fused_decode.cpp): every
// bit width of u8/u16/u32/u64 with a varying block offset, patches on tile edges, and the
// FoR, zigzag and dict chains over them. Each case is checked against the CPU decoder.
#pragma once

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "format/proto/alp.pb.h"
#include "format/proto/bitpacked.pb.h"
#include "format/proto/decimal_byte_parts.pb.h"
#include "format/proto/dict.pb.h"
#include "format/proto/runend.pb.h"
#include "format/proto/scalar.pb.h"
#include "format/proto/sequence.pb.h"
#include "tests/format/bitpacked_fixtures.hpp"
#include "tests/format/fixtures.hpp"

namespace oc::test {

struct FusedCase {
  std::string name;
  ArrayView node;
  DTypePtr dtype;
  uint64_t len = 0;
};

/// Random values of T that fit in @p width bits.
template <class T>
std::vector<T> fitting_values(uint64_t n, unsigned width, std::mt19937_64& rng) {
  const uint64_t mask = width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(rng() & mask);
  return v;
}

/// Random validity with about one row in @p one_in null.
inline std::vector<bool> random_validity(uint64_t len, unsigned one_in, std::mt19937_64& rng) {
  std::vector<bool> v(len);
  for (uint64_t i = 0; i < len; ++i) v[i] = rng() % one_in != 0;
  return v;
}

/// A fastlanes.bitpacked node of @p values at @p width after @p offset rows; when @p patched,
/// the rows whose packed position is the first or last of a tile, and the last row, are
/// patched with full-width values (the value packed there is kept as the low bits).
template <class T>
ArrayView bitpacked_with_patches(std::vector<T> values, unsigned width, unsigned offset,
                                 bool patched, std::mt19937_64& rng) {
  using U = std::make_unsigned_t<T>;
  std::vector<uint64_t> rows;
  if (patched) {
    for (uint64_t r = 0; r < values.size(); ++r) {
      const uint64_t p = r + offset;
      if (p % 1024 == 0 || p % 1024 == 1023 || r + 1 == values.size()) rows.push_back(r);
    }
  }
  std::vector<T> patch_values(rows.size());
  for (auto& v : patch_values) v = static_cast<T>(rng() | (uint64_t{1} << (sizeof(T) * 8 - 1)));
  std::vector<U> packed_values(values.size());
  for (size_t i = 0; i < values.size(); ++i) packed_values[i] = static_cast<U>(values[i]);
  ArrayView n = bitpacked_node<U>(packed_values, width, offset);
  if (!rows.empty()) {
    pb::BitPackedMetadata m;
    m.set_bit_width(width);
    m.set_offset(offset);
    m.mutable_patches()->set_len(rows.size());
    m.mutable_patches()->set_indices_ptype(static_cast<uint32_t>(PType::u64));
    const std::string s = m.SerializeAsString();
    n.metadata.assign(s.begin(), s.end());
    n.children = {primitive_node<uint64_t>(rows), primitive_node<T>(patch_values)};
  }
  return n;
}

inline std::string for_meta_signed(int64_t v) {
  pb::ScalarValue s;
  s.set_int64_value(v);
  return s.SerializeAsString();
}

inline std::string for_meta_unsigned(uint64_t v) {
  pb::ScalarValue s;
  s.set_uint64_value(v);
  return s.SerializeAsString();
}

inline std::string fused_dict_meta(uint32_t values_len, PType codes) {
  pb::DictMetadata m;
  m.set_values_len(values_len);
  m.set_codes_ptype(static_cast<uint32_t>(codes));
  return m.SerializeAsString();
}

/// dict(codes = u8 {0, @p code_1, 1}, values = i64 {10, 20, 30}): corrupt when @p code_1 >= 3.
inline ArrayView three_value_dict(uint8_t code_1) {
  return node("vortex.dict", fused_dict_meta(3, PType::u8), {},
              {primitive_node<uint8_t>({0, code_1, 1}), primitive_node<int64_t>({10, 20, 30})});
}

inline std::string sequence_meta(int64_t base, int64_t multiplier) {
  pb::ScalarValue b, m;
  b.set_int64_value(base);
  m.set_int64_value(multiplier);
  pb::SequenceMetadata meta;
  meta.set_base(b.SerializeAsString());
  meta.set_multiplier(m.SerializeAsString());
  return meta.SerializeAsString();
}

inline std::string runend_meta(PType ends, uint64_t runs, uint64_t offset) {
  pb::RunEndMetadata m;
  m.set_ends_ptype(static_cast<uint32_t>(ends));
  m.set_num_runs(runs);
  m.set_offset(offset);
  return m.SerializeAsString();
}

/// A non-nullable `vortex.date` (days, i32 storage) extension type.
inline DTypePtr date_dtype() {
  auto t = std::make_shared<DType>();
  t->kind = format::TypeKind::extension;
  t->ext_id = "vortex.date";
  t->ext_metadata.push_back(static_cast<uint8_t>(format::TimeUnit::days));
  t->children.push_back(DType::make_primitive(PType::i32, false));
  return t;
}

/// A vortex.alp node over @p encoded; with @p patch_rows, those rows become NaN, -0.0, inf, -inf
/// and a denormal in turn (the exceptions a writer stores as patches).
inline ArrayView alp_node(ArrayView encoded, uint32_t e, uint32_t f, bool f32,
                          const std::vector<uint64_t>& patch_rows) {
  pb::ALPMetadata m;
  m.set_exp_e(e);
  m.set_exp_f(f);
  std::vector<ArrayView> children = {std::move(encoded)};
  if (!patch_rows.empty()) {
    m.mutable_patches()->set_len(patch_rows.size());
    m.mutable_patches()->set_indices_ptype(static_cast<uint32_t>(PType::u64));
    const double specials[] = {std::numeric_limits<double>::quiet_NaN(), -0.0,
                               std::numeric_limits<double>::infinity(),
                               -std::numeric_limits<double>::infinity(), 4.9e-324};
    children.push_back(primitive_node<uint64_t>(patch_rows));
    if (f32) {
      std::vector<float> v(patch_rows.size());
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = i % 5 == 4 ? 1e-45f : static_cast<float>(specials[i % 5]);
      children.push_back(primitive_node<float>(v));
    } else {
      std::vector<double> v(patch_rows.size());
      for (size_t i = 0; i < v.size(); ++i) v[i] = specials[i % 5];
      children.push_back(primitive_node<double>(v));
    }
  }
  return node("vortex.alp", m.SerializeAsString(), {}, std::move(children));
}

/// Rows on tile edges (0, 1023, 1024, ...) and the last row.
inline std::vector<uint64_t> edge_rows(uint64_t len) {
  std::vector<uint64_t> rows;
  for (uint64_t r = 0; r < len; ++r) {
    if (r % 1024 == 0 || r % 1024 == 1023 || r + 1 == len) rows.push_back(r);
  }
  return rows;
}

/// A non-nullable decimal type.
inline DTypePtr decimal_dtype(uint8_t precision, int8_t scale) {
  auto t = std::make_shared<DType>();
  t->kind = format::TypeKind::decimal;
  t->precision = precision;
  t->scale = scale;
  return t;
}

inline std::string decimal_parts_meta(PType msp) {
  pb::DecimalBytePartsMetadata m;
  m.set_zeroth_child_ptype(static_cast<int32_t>(msp));
  return m.SerializeAsString();
}

inline ArrayView constant_node(const pb::ScalarValue& s) {
  return node("vortex.constant", {}, {bytes_of(s.SerializeAsString())});
}

/// Ends of runs of random lengths 1..max_run covering physical rows [offset, offset + rows) (a
/// sliced array's runs all end past its offset).
inline std::vector<uint32_t> random_run_ends(uint64_t offset, uint64_t rows, uint32_t max_run,
                                             std::mt19937_64& rng) {
  std::vector<uint32_t> ends;
  uint64_t at = offset;
  while (at < offset + rows) {
    at += 1 + rng() % max_run;
    ends.push_back(static_cast<uint32_t>(at));
  }
  return ends;
}

/// Every bit width of every unsigned word type at @p len rows; patched at every third width.
template <class T>
void add_bitpacked_cases(std::vector<FusedCase>& out, uint64_t len, std::mt19937_64& rng) {
  for (unsigned width = 0; width <= sizeof(T) * 8; ++width) {
    const unsigned offset = (width * 37 + static_cast<unsigned>(len)) % 1024;
    const bool patched = width % 3 == 1 && width < sizeof(T) * 8;
    auto values = fitting_values<T>(len, width, rng);
    out.push_back({"bitpacked u" + std::to_string(sizeof(T) * 8) + " w" + std::to_string(width) +
                       " offset " + std::to_string(offset) + (patched ? " patched" : "") + " len " +
                       std::to_string(len),
                   bitpacked_with_patches<T>(std::move(values), width, offset, patched, rng),
                   DType::make_primitive(ptype_of<T>(), false), len});
  }
}

/// The FoR, zigzag and dict chains at @p len rows.
inline void add_chain_cases(std::vector<FusedCase>& out, uint64_t len, std::mt19937_64& rng) {
  const std::string suffix = " len " + std::to_string(len);
  // for(bitpacked) on i32 with a negative reference, patched.
  out.push_back({"for i32 > bitpacked w11 patched" + suffix,
                 node("fastlanes.for", for_meta_signed(-1'000'000), {},
                      {bitpacked_with_patches<int32_t>(fitting_values<int32_t>(len, 11, rng), 11, 5,
                                                       true, rng)}),
                 DType::make_primitive(PType::i32, false), len});
  // for(bitpacked) on u8, wrapping.
  out.push_back({"for u8 > bitpacked w3" + suffix,
                 node("fastlanes.for", for_meta_unsigned(250), {},
                      {bitpacked_with_patches<uint8_t>(fitting_values<uint8_t>(len, 3, rng), 3, 0,
                                                       false, rng)}),
                 DType::make_primitive(PType::u8, false), len});
  // zigzag(for(bitpacked)) on i64: the FoR node is unsigned, under the zigzag.
  out.push_back({"zigzag i64 > for u64 > bitpacked w40" + suffix,
                 node("vortex.zigzag", {}, {},
                      {node("fastlanes.for", for_meta_unsigned(uint64_t{1} << 62), {},
                            {bitpacked_with_patches<uint64_t>(
                                fitting_values<uint64_t>(len, 40, rng), 40, 700, true, rng)})}),
                 DType::make_primitive(PType::i64, false), len});
  // zigzag(bitpacked) on i16.
  out.push_back({"zigzag i16 > bitpacked w16" + suffix,
                 node("vortex.zigzag", {}, {},
                      {bitpacked_with_patches<uint16_t>(fitting_values<uint16_t>(len, 16, rng), 16,
                                                        1, false, rng)}),
                 DType::make_primitive(PType::i16, false), len});
  // dict(codes = for(bitpacked u16), values = f64 with NaN, -0.0 and infinities).
  std::vector<double> doubles = {
      std::numeric_limits<double>::quiet_NaN(), -0.0, 0.0,  std::numeric_limits<double>::infinity(),
      -std::numeric_limits<double>::infinity(), 1.5,  -2.25};
  for (int i = 0; i < 293; ++i) doubles.push_back(static_cast<double>(rng() % 100000) / 7.0);
  // Codes 7..299, stored minus the FoR reference 7: they fit in 9 bits.
  std::vector<uint16_t> shifted(len);
  for (auto& s : shifted) s = static_cast<uint16_t>(rng() % (doubles.size() - 7));
  out.push_back(
      {"dict f64 > for u16 > bitpacked w9" + suffix,
       node("vortex.dict", fused_dict_meta(static_cast<uint32_t>(doubles.size()), PType::u16), {},
            {node("fastlanes.for", for_meta_unsigned(7), {},
                  {bitpacked_with_patches<uint16_t>(shifted, 9, 0, false, rng)}),
             primitive_node<double>(doubles)}),
       DType::make_primitive(PType::f64, false), len});
  // dict(codes = patched bitpacked u8, values = i32).
  std::vector<int32_t> ints(256);
  for (auto& v : ints) v = static_cast<int32_t>(rng());
  out.push_back({"dict i32 > bitpacked u8 w4 patched" + suffix,
                 node("vortex.dict", fused_dict_meta(256, PType::u8), {},
                      {bitpacked_with_patches<uint8_t>(fitting_values<uint8_t>(len, 4, rng), 4,
                                                       1023, true, rng),
                       primitive_node<int32_t>(ints)}),
                 DType::make_primitive(PType::i32, false), len});
  // dict with signed codes (i32) and u8 values.
  std::vector<uint8_t> bytes(1000);
  for (auto& v : bytes) v = static_cast<uint8_t>(rng());
  std::vector<int32_t> signed_codes(len);
  for (auto& c : signed_codes) c = static_cast<int32_t>(rng() % bytes.size());
  out.push_back({"dict u8 > primitive i32 codes" + suffix,
                 node("vortex.dict", fused_dict_meta(1000, PType::i32), {},
                      {primitive_node<int32_t>(signed_codes), primitive_node<uint8_t>(bytes)}),
                 DType::make_primitive(PType::u8, false), len});
  // sequence sources, one wrapping in u8.
  out.push_back({"sequence i32 -5 + 3i" + suffix, node("vortex.sequence", sequence_meta(-5, 3)),
                 DType::make_primitive(PType::i32, false), len});
  out.push_back({"sequence u8 250 + 7i" + suffix, node("vortex.sequence", sequence_meta(250, 7)),
                 DType::make_primitive(PType::u8, false), len});
  // constant sources: -0.0 as f64, and a FoR over a constant i16.
  pb::ScalarValue minus_zero;
  minus_zero.set_f64_value(-0.0);
  out.push_back({"constant f64 -0.0" + suffix, constant_node(minus_zero),
                 DType::make_primitive(PType::f64, false), len});
  pb::ScalarValue i16;
  i16.set_int64_value(-300);
  out.push_back({"for i16 > constant" + suffix,
                 node("fastlanes.for", for_meta_signed(1000), {}, {constant_node(i16)}),
                 DType::make_primitive(PType::i16, false), len});
  // runend over i64 values with an offset, its ends bitpacked; and dict codes as runs.
  {
    // No runs (len 0) take no offset: vortex-data refuses an empty run-end array with one.
    const uint64_t offset = len == 0 ? 0 : 17;
    auto ends = random_run_ends(offset, len, 40, rng);
    std::vector<int64_t> run_values(ends.size());
    for (auto& v : run_values) v = static_cast<int64_t>(rng());
    out.push_back({"runend i64, bitpacked u32 ends, offset 17" + suffix,
                   node("vortex.runend", runend_meta(PType::u32, ends.size(), offset), {},
                        {bitpacked_with_patches<uint32_t>(ends, 32, 0, false, rng),
                         primitive_node<int64_t>(run_values)}),
                   DType::make_primitive(PType::i64, false), len});
    auto code_ends = random_run_ends(0, len, 300, rng);
    std::vector<uint8_t> run_codes(code_ends.size());
    for (auto& c : run_codes) c = static_cast<uint8_t>(rng() % 200);
    out.push_back(
        {"dict i32 > runend u8 codes" + suffix,
         node("vortex.dict", fused_dict_meta(256, PType::u8), {},
              {node("vortex.runend", runend_meta(PType::u32, code_ends.size(), 0), {},
                    {primitive_node<uint32_t>(code_ends), primitive_node<uint8_t>(run_codes)}),
               primitive_node<int32_t>(ints)}),
         DType::make_primitive(PType::i32, false), len});
  }
  // an extension (date) over FoR over bitpacked storage.
  out.push_back({"ext date > for i32 > bitpacked w15" + suffix,
                 node("vortex.ext", {}, {},
                      {node("fastlanes.for", for_meta_signed(8000), {},
                            {bitpacked_with_patches<int32_t>(fitting_values<int32_t>(len, 15, rng),
                                                             15, 0, false, rng)})}),
                 date_dtype(), len});
  // ALP, bit-exact: f64 over for(bitpacked) with patched specials, f32 over i32 with large e.
  out.push_back({"alp f64 e14 f2 > for i64 > bitpacked w25, patched" + suffix,
                 alp_node(node("fastlanes.for", for_meta_signed(-12'345'678), {},
                               {bitpacked_with_patches<int64_t>(
                                   fitting_values<int64_t>(len, 25, rng), 25, 0, false, rng)}),
                          14, 2, false, edge_rows(len)),
                 DType::make_primitive(PType::f64, false), len});
  std::vector<int32_t> alp_ints(len);
  for (auto& v : alp_ints) v = static_cast<int32_t>(rng());
  out.push_back({"alp f32 e10 f3 > primitive i32, patched" + suffix,
                 alp_node(primitive_node<int32_t>(alp_ints), 10, 3, true, edge_rows(len)),
                 DType::make_primitive(PType::f32, false), len});
  out.push_back({"alp f64 e0 f18 > primitive i64" + suffix,
                 alp_node(primitive_node<int64_t>(std::vector<int64_t>(len, -7)), 0, 18, false, {}),
                 DType::make_primitive(PType::f64, false), len});
  // decimals: i128 from for(bitpacked i64) with negative values, i256 from a primitive i32.
  out.push_back({"decimal(15,2) > for i64 > bitpacked w30" + suffix,
                 node("vortex.decimal_byte_parts", decimal_parts_meta(PType::i64), {},
                      {node("fastlanes.for", for_meta_signed(-(int64_t{1} << 29)), {},
                            {bitpacked_with_patches<int64_t>(fitting_values<int64_t>(len, 30, rng),
                                                             30, 3, true, rng)})}),
                 decimal_dtype(15, 2), len});
  std::vector<int32_t> parts(len);
  for (auto& v : parts) v = static_cast<int32_t>(rng());
  out.push_back({"decimal(50,0) > primitive i32" + suffix,
                 node("vortex.decimal_byte_parts", decimal_parts_meta(PType::i32), {},
                      {primitive_node<int32_t>(parts)}),
                 decimal_dtype(50, 0), len});
  // nulls: a bitpacked source with a validity child under FoR, and dict codes whose null rows
  // hold codes far out of range (the lookup must skip them).
  {
    auto valid = random_validity(len, 3, rng);
    ArrayView packed =
        bitpacked_with_patches<int32_t>(fitting_values<int32_t>(len, 9, rng), 9, 0, false, rng);
    packed.children.push_back(bool_node(valid));
    out.push_back({"for i32? > bitpacked w9 with nulls" + suffix,
                   node("fastlanes.for", for_meta_signed(-70), {}, {packed}),
                   DType::make_primitive(PType::i32, true), len});
    std::vector<uint16_t> codes(len);
    for (uint64_t i = 0; i < len; ++i)
      codes[i] = valid[i] ? static_cast<uint16_t>(rng() % 300) : 0xffff;
    ArrayView code_node = primitive_node<uint16_t>(codes);
    code_node.children.push_back(bool_node(valid));
    pb::DictMetadata m;
    m.set_values_len(static_cast<uint32_t>(doubles.size()));
    m.set_codes_ptype(static_cast<uint32_t>(PType::u16));
    m.set_is_nullable_codes(true);
    out.push_back({"dict f64? > primitive u16 codes with nulls" + suffix,
                   node("vortex.dict", m.SerializeAsString(), {},
                        {code_node, primitive_node<double>(doubles)}),
                   DType::make_primitive(PType::f64, true), len});
  }
  // patches over null rows: a patched row takes its patch value's validity (format/patches.cpp),
  // so the rows every patch lands on (the edge rows) are null underneath.
  if (len > 0) {
    auto valid = random_validity(len, 3, rng);
    for (uint64_t r : edge_rows(len)) valid[r] = false;
    ArrayView packed =
        bitpacked_with_patches<int32_t>(fitting_values<int32_t>(len, 9, rng), 9, 0, true, rng);
    packed.children.push_back(bool_node(valid));
    out.push_back({"for i32? > bitpacked w9 patched, null under every patch" + suffix,
                   node("fastlanes.for", for_meta_signed(-70), {}, {packed}),
                   DType::make_primitive(PType::i32, true), len});
    // dict codes patched over null rows: the patched code is looked up.
    ArrayView codes =
        bitpacked_with_patches<uint8_t>(fitting_values<uint8_t>(len, 4, rng), 4, 0, true, rng);
    codes.children.push_back(bool_node(valid));
    pb::DictMetadata dm;
    dm.set_values_len(static_cast<uint32_t>(ints.size()));
    dm.set_codes_ptype(static_cast<uint32_t>(PType::u8));
    dm.set_is_nullable_codes(true);
    out.push_back(
        {"dict i32? > bitpacked u8 w4 patched, null under every patch" + suffix,
         node("vortex.dict", dm.SerializeAsString(), {}, {codes, primitive_node<int32_t>(ints)}),
         DType::make_primitive(PType::i32, true), len});
    // ALP patches over null dict codes that lie far out of range: the output row is valid (the
    // patch's), the code underneath stays null, so its lookup is skipped as the CPU skips it.
    std::vector<int64_t> small(300);
    for (size_t i = 0; i < small.size(); ++i) small[i] = static_cast<int64_t>(i * 7) - 1000;
    std::vector<uint16_t> alp_codes(len);
    for (uint64_t i = 0; i < len; ++i)
      alp_codes[i] = valid[i] ? static_cast<uint16_t>(rng() % 300) : 0xffff;
    ArrayView alp_code_node = primitive_node<uint16_t>(alp_codes);
    alp_code_node.children.push_back(bool_node(valid));
    pb::DictMetadata am;
    am.set_values_len(300);
    am.set_codes_ptype(static_cast<uint32_t>(PType::u16));
    am.set_is_nullable_codes(true);
    out.push_back(
        {"alp f64? > dict i64 > primitive u16 codes, patched over null out-of-range codes" + suffix,
         alp_node(node("vortex.dict", am.SerializeAsString(), {},
                       {alp_code_node, primitive_node<int64_t>(small)}),
                  2, 0, false, edge_rows(len)),
         DType::make_primitive(PType::f64, true), len});
  }
  // a plain primitive source with no ops.
  std::vector<int16_t> shorts(len);
  for (auto& s : shorts) s = static_cast<int16_t>(rng());
  out.push_back({"primitive i16" + suffix, primitive_node<int16_t>(shorts),
                 DType::make_primitive(PType::i16, false), len});
}

/// Every case at every length of @p lengths.
inline std::vector<FusedCase> fused_cases(const std::vector<uint64_t>& lengths, bool every_width) {
  std::vector<FusedCase> out;
  for (uint64_t len : lengths) {
    std::mt19937_64 rng(0x5eed + len);
    if (every_width) {
      add_bitpacked_cases<uint8_t>(out, len, rng);
      add_bitpacked_cases<uint16_t>(out, len, rng);
      add_bitpacked_cases<uint32_t>(out, len, rng);
      add_bitpacked_cases<uint64_t>(out, len, rng);
    }
    add_chain_cases(out, len, rng);
  }
  return out;
}

inline std::vector<uint8_t> buffer_bytes(const format::Buffer& b) {
  return std::vector<uint8_t>(b.data(), b.data() + b.size());
}

/// @return "" when @p got (the decoded values) and @p validity (a plan's bitmap, empty when all
/// valid) equal column @p want on every row, values compared on valid rows only (a null row's
/// value is undefined in Arrow); else the first difference.
inline std::string compare_rows(const std::vector<uint8_t>& got, const format::Buffer& validity,
                                const format::Column& want) {
  const size_t w = format::fixed_width_of(*want.dtype);
  if (got.size() != want.length * w) return "size " + std::to_string(got.size());
  const uint8_t* base = want.buffers[0].data() + want.offset * w;
  for (uint64_t i = 0; i < want.length; ++i) {
    const bool valid = validity.empty() || ((validity.data()[i >> 3] >> (i & 7)) & 1);
    if (valid != want.is_valid(i)) return "validity of row " + std::to_string(i);
    if (valid && std::memcmp(got.data() + i * w, base + i * w, w) != 0)
      return "value of row " + std::to_string(i);
  }
  return "";
}

}  // namespace oc::test
