// SPDX-License-Identifier: Apache-2.0
// String dictionaries for the GPU string decode, shared by its CPU and GPU tests.
#pragma once

#include "format/string_views.hpp"
#include "tests/kernels/fused_cases.hpp"

namespace oc::test {

/// A vortex.varbin node of utf8 @p values (i32 offsets).
inline ArrayView utf8_varbin(const std::vector<std::string>& values) {
  std::string bytes;
  std::vector<int32_t> offsets = {0};
  for (const auto& v : values) {
    bytes += v;
    offsets.push_back(static_cast<int32_t>(bytes.size()));
  }
  return node("vortex.varbin", "\x08\x06", {bytes_of(bytes)}, {primitive_node(offsets)});
}

/// Dictionaries of strings (empty ones included) at @p len rows: codes bitpacked under FoR, and
/// nullable u16 codes whose null rows hold codes out of range.
inline std::vector<FusedCase> string_dict_cases(uint64_t len) {
  std::mt19937_64 rng(len * 3 + 1);
  std::vector<std::string> words = {"",  "AIR",   "REG AIR", "DELIVER IN PERSON",
                                    "x", "TRUCK", "MAIL",    "FOB"};
  for (int i = 0; i < 50; ++i)
    words.push_back(std::string(rng() % 40, static_cast<char>('a' + i % 26)));
  std::vector<FusedCase> out;
  std::vector<uint8_t> shifted(len);
  for (auto& s : shifted) s = static_cast<uint8_t>(rng() % (words.size() - 2));
  out.push_back(
      {"dict utf8 > for u8 > bitpacked w6, len " + std::to_string(len),
       node("vortex.dict", fused_dict_meta(static_cast<uint32_t>(words.size()), PType::u8), {},
            {node("fastlanes.for", for_meta_unsigned(2), {},
                  {bitpacked_with_patches<uint8_t>(shifted, 6, 0, false, rng)}),
             utf8_varbin(words)}),
       DType::make_utf8(false), len});
  auto valid = random_validity(len, 5, rng);
  std::vector<uint16_t> codes(len);
  for (uint64_t i = 0; i < len; ++i)
    codes[i] = valid[i] ? static_cast<uint16_t>(rng() % words.size()) : 0xffff;
  ArrayView code_node = primitive_node<uint16_t>(codes);
  code_node.children.push_back(bool_node(valid));
  pb::DictMetadata m;
  m.set_values_len(static_cast<uint32_t>(words.size()));
  m.set_codes_ptype(static_cast<uint32_t>(PType::u16));
  m.set_is_nullable_codes(true);
  out.push_back({"dict utf8? > primitive u16 codes with nulls, len " + std::to_string(len),
                 node("vortex.dict", m.SerializeAsString(), {}, {code_node, utf8_varbin(words)}),
                 DType::make_utf8(true), len});
  return out;
}

/// @return "" when the strings @p offsets / @p data with @p validity equal column @p want row
/// by row (null rows: validity only), else the first difference.
inline std::string compare_strings(const std::vector<int32_t>& offsets,
                                   const std::vector<uint8_t>& data, const format::Buffer& validity,
                                   const format::Column& want) {
  if (offsets.size() != want.length + 1) return "offsets size";
  for (uint64_t i = 0; i < want.length; ++i) {
    const bool valid = validity.empty() || ((validity.data()[i >> 3] >> (i & 7)) & 1);
    if (valid != want.is_valid(i)) return "validity of row " + std::to_string(i);
    if (!valid) continue;
    const std::string got(data.begin() + offsets[i], data.begin() + offsets[i + 1]);
    const std::string exp(format::string_at(want, i));
    if (got != exp) return "row " + std::to_string(i) + ": '" + got + "' != '" + exp + "'";
  }
  return "";
}

}  // namespace oc::test
