// SPDX-License-Identifier: Apache-2.0
// onecopy-pco-decode CONTAINER OUT: decodes pcodec wrapped components with
// format/pcodec and writes the values, for tests/interop/test_pcodec_oracle.py.
//
// CONTAINER (all integers u32 little endian):
//   "PCOD"  number (the index of oc::format::pcodec::Number: u8=0 ... f64=10)
//   header_len, header bytes   n_chunks
//   per chunk: meta_len, meta bytes   n_pages   per page: n_values, page_len, page bytes
// OUT receives every page's values back to back (native little endian). Standard output gets
// one line per chunk: "chunk I: <ChunkDecoder::describe()> meta_size=N". On any error the
// message goes to standard error and the exit status is 1.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "format/pcodec/pcodec.hpp"

namespace pco = oc::format::pcodec;

namespace {

struct Cursor {
  const std::vector<uint8_t>& bytes;
  size_t pos = 0;
  bool u32(uint32_t& v) {
    if (bytes.size() - pos < 4) return false;
    v = uint32_t{bytes[pos]} | uint32_t{bytes[pos + 1]} << 8 | uint32_t{bytes[pos + 2]} << 16 |
        uint32_t{bytes[pos + 3]} << 24;
    pos += 4;
    return true;
  }
  bool span(std::span<const uint8_t>& s) {
    uint32_t n = 0;
    if (!u32(n) || bytes.size() - pos < n) return false;
    s = std::span<const uint8_t>(bytes.data() + pos, n);
    pos += n;
    return true;
  }
};

int fail(const std::string& msg) {
  std::fprintf(stderr, "onecopy-pco-decode: %s\n", msg.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return fail("usage: onecopy-pco-decode CONTAINER OUT");
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) return fail(std::string("cannot open ") + argv[1]);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  Cursor c{bytes};
  uint32_t number = 0;
  std::span<const uint8_t> header;
  uint32_t n_chunks = 0;
  if (bytes.size() < 4 || std::string(bytes.begin(), bytes.begin() + 4) != "PCOD") {
    return fail("not a PCOD container");
  }
  c.pos = 4;
  if (!c.u32(number) || number > static_cast<uint32_t>(pco::Number::f64) || !c.span(header) ||
      !c.u32(n_chunks)) {
    return fail("truncated container header");
  }
  const auto num = static_cast<pco::Number>(number);
  auto version = pco::parse_wrapped_header(header);
  if (!version.ok()) return fail(version.error().to_string());

  std::vector<uint8_t> out;
  for (uint32_t ci = 0; ci < n_chunks; ++ci) {
    std::span<const uint8_t> meta;
    uint32_t n_pages = 0;
    if (!c.span(meta) || !c.u32(n_pages)) return fail("truncated chunk");
    auto chunk = pco::ChunkDecoder::parse(*version, num, meta);
    if (!chunk.ok()) return fail("chunk " + std::to_string(ci) + ": " + chunk.error().to_string());
    std::printf("chunk %u: %s meta_size=%zu\n", ci, chunk->describe().c_str(), chunk->meta_size());
    for (uint32_t pi = 0; pi < n_pages; ++pi) {
      uint32_t n_values = 0;
      std::span<const uint8_t> page;
      if (!c.u32(n_values) || !c.span(page)) return fail("truncated page");
      if (n_values > pco::kMaxPageValues) return fail("page too large");
      const size_t at = out.size();
      out.resize(at + size_t{n_values} * pco::width(num));
      auto r = chunk->decode_page(page, n_values, out.data() + at);
      if (!r.ok()) {
        return fail("chunk " + std::to_string(ci) + " page " + std::to_string(pi) + ": " +
                    r.error().to_string());
      }
    }
  }
  std::ofstream o(argv[2], std::ios::binary);
  o.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
  if (!o) return fail(std::string("cannot write ") + argv[2]);
  return 0;
}
