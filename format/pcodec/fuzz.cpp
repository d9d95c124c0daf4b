// SPDX-License-Identifier: Apache-2.0
#include "format/pcodec/fuzz.hpp"

#include <vector>

#include "format/pcodec/pcodec.hpp"

namespace oc::format::pcodec {
namespace {

bool take_u16(std::span<const uint8_t>& in, uint32_t& v) {
  if (in.size() < 2) return false;
  v = uint32_t{in[0]} | uint32_t{in[1]} << 8;
  in = in.subspan(2);
  return true;
}

}  // namespace

Result<void> fuzz_decode(std::span<const uint8_t> input) {
  OC_EXPECT(input.size() >= 4, corrupt, "fuzz input too short");
  const auto number = static_cast<Number>(input[0] % 11);
  const FormatVersion v = (input[1] & 1) ? FormatVersion{3, 0} : FormatVersion{4, 1};
  input = input.subspan(2);
  uint32_t meta_len = 0;
  take_u16(input, meta_len);
  OC_EXPECT(meta_len <= input.size(), corrupt, "fuzz meta past the input");
  OC_ASSIGN_OR_RETURN(ChunkDecoder cd, ChunkDecoder::parse(v, number, input.first(meta_len)));
  input = input.subspan(meta_len);
  std::vector<uint8_t> out;
  uint32_t n = 0, len = 0;
  while (take_u16(input, n) && take_u16(input, len)) {
    OC_EXPECT(len <= input.size(), corrupt, "fuzz page past the input");
    out.assign(size_t{n} * width(number), 0);
    OC_TRY(cd.decode_page(input.first(len), n, out.data()));
    input = input.subspan(len);
  }
  return {};
}

}  // namespace oc::format::pcodec
