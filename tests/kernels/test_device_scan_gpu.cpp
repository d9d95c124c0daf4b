// SPDX-License-Identifier: Apache-2.0
// Scans into GPU memory (onecopy-tests-gpu): every batch column lands on device 0, and copied
// back it equals the plain scan's, row for row; the gather kernel equals its host executor.
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <random>
#include <sstream>

#include "client/row_format.hpp"
#include "format/reader.hpp"
#include "format/scan_request.hpp"
#include "kernels/device_scan.hpp"
#include "kernels/gather.hpp"
#include "tests/format/seed_files.hpp"

using namespace oc;

namespace {

// A device column's buffers copied to host memory (children too).
format::ColumnPtr to_host(const format::ColumnPtr& c) {
  auto out = std::make_shared<format::Column>(*c);
  out->device = -1;
  auto copy = [](const format::Buffer& b) {
    format::Buffer h = format::Buffer::allocate(b.size());
    if (b.size() > 0)
      REQUIRE(cudaMemcpy(h.mutable_data(), b.data(), b.size(), cudaMemcpyDeviceToHost) ==
              cudaSuccess);
    return h;
  };
  if (c->device >= 0) {
    out->validity = copy(c->validity);
    for (auto& b : out->buffers) b = copy(b);
  }
  for (auto& k : out->children) k = to_host(k);
  return out;
}

std::string rows_of(format::Scan& scan, bool on_device) {
  std::ostringstream os;
  while (true) {
    auto b = scan.next();
    REQUIRE(b.ok());
    if (!*b) break;
    for (const auto& child : (**b)->children) CHECK(child->device == (on_device ? 0 : -1));
    client::write_rows(os, *to_host(**b), client::RowFormat::jsonl, false);
  }
  return os.str();
}

}  // namespace

TEST_CASE("a scan into GPU memory equals the plain scan on every seed file and filter",
          "[kernels][gpu][device-scan]") {
  for (const char* name : {"tiny.vortex", "mixed.vortex", "zoned.vortex", "compact_numbers.vortex",
                           "compact_strings.vortex"}) {
    auto file = format::VortexFile::open_path(test::seed_path(name));
    REQUIRE(file.ok());
    const std::string first = (*file)->dtype()->names[0];
    for (const std::string& filter : std::vector<std::string>{"", first + " < 37"}) {
      INFO(name << " filter '" << filter << "'");
      format::ScanOptions opts;
      opts.filter = filter;
      opts.strings = format::StringLayout::offsets;
      auto plain = (*file)->scan(opts);
      if (!plain.ok()) {
        CHECK(plain.error().code() ==
              Errc::invalid);  // a filter the file's first column cannot take
        continue;
      }
      const std::string want = rows_of(**plain, false);
      auto decoder = kernels::DeviceChunkDecoder::create(0, kernels::DeviceDecodes::cuda);
      REQUIRE(decoder.ok());
      format::ScanRequest request;
      request.filter = filter;
      request.device = 0;
      auto scan = format::plan(*file, request, {.device_decoder = *decoder});
      REQUIRE(scan.ok());
      CHECK(rows_of(*scan->scan, true) == want);
    }
  }
}

TEST_CASE("the gather kernel equals its host executor", "[kernels][gpu][device-scan]") {
  std::mt19937_64 rng(3);
  for (uint32_t width : {1u, 2u, 4u, 8u, 16u}) {
    const uint64_t rows = 100'003, first = 17;
    std::vector<uint8_t> values(rows * width), validity((rows + 7) / 8);
    for (auto& v : values) v = static_cast<uint8_t>(rng());
    for (auto& v : validity) v = static_cast<uint8_t>(rng());
    std::vector<uint32_t> selection;
    for (uint32_t i = 0; i + first < rows; ++i) {
      if (rng() % 3 == 0) selection.push_back(i);
    }
    kernels::GatherParams p;
    p.first = first;
    p.n = selection.size();
    p.width = width;
    p.source = values.data();
    p.validity = validity.data();
    p.selection = selection.data();
    std::vector<uint8_t> host_values(rows * width), host_bits((selection.size() + 7) / 8);
    p.out = host_values.data();
    p.out_validity = host_bits.data();
    const uint64_t host_nulls = kernels::gather_on_host(p);
    CHECK(kernels::gather_null_count(p) == host_nulls);
    host_values.resize(selection.size() * width);
    auto stream = kernels::Stream::create();
    REQUIRE(stream.ok());
    auto src = kernels::DeviceBuffer::allocate(values.size(), *stream);
    auto bits = kernels::DeviceBuffer::allocate(validity.size(), *stream);
    auto sel = kernels::DeviceBuffer::allocate(selection.size() * 4, *stream);
    auto out = kernels::DeviceBuffer::allocate(host_values.size(), *stream);
    auto out_bits = kernels::DeviceBuffer::allocate(host_bits.size(), *stream);
    auto nulls = kernels::DeviceBuffer::allocate(sizeof(unsigned long long), *stream);
    REQUIRE((src.ok() && bits.ok() && sel.ok() && out.ok() && out_bits.ok() && nulls.ok()));
    const unsigned long long zero = 0;
    REQUIRE(kernels::copy_to_device(src->data(), values.data(), values.size(), *stream).ok());
    REQUIRE(kernels::copy_to_device(bits->data(), validity.data(), validity.size(), *stream).ok());
    REQUIRE(
        kernels::copy_to_device(sel->data(), selection.data(), selection.size() * 4, *stream).ok());
    REQUIRE(kernels::copy_to_device(nulls->data(), &zero, sizeof(zero), *stream).ok());
    p.source = src->as<uint8_t>();
    p.validity = bits->as<uint8_t>();
    p.selection = sel->as<uint32_t>();
    p.out = out->as<uint8_t>();
    p.out_validity = out_bits->as<uint8_t>();
    p.nulls = nulls->as<unsigned long long>();
    REQUIRE(kernels::gather_on_device(p, *stream).ok());
    std::vector<uint8_t> got_values(host_values.size()), got_bits(host_bits.size());
    unsigned long long got_nulls = 0;
    REQUIRE(kernels::copy_to_host(got_values.data(), out->data(), got_values.size(), *stream).ok());
    REQUIRE(
        kernels::copy_to_host(got_bits.data(), out_bits->data(), got_bits.size(), *stream).ok());
    REQUIRE(kernels::copy_to_host(&got_nulls, nulls->data(), sizeof(got_nulls), *stream).ok());
    REQUIRE(stream->synchronize().ok());
    CHECK(got_values == host_values);
    CHECK(got_bits == host_bits);
    CHECK(got_nulls == host_nulls);
  }
}
