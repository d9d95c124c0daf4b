// SPDX-License-Identifier: Apache-2.0
#include "format/fuzz.hpp"

#include <string>
#include <vector>

#include "format/pushdown.hpp"
#include "format/reader.hpp"
#include "format/string_views.hpp"

namespace oc::format {
namespace {

Result<std::shared_ptr<VortexFile>> open_bytes(std::span<const uint8_t> bytes) {
  return VortexFile::open(memory_source(Buffer::copy_of(bytes), "fuzz input"));
}

// Strings come as views (the default); turning them into offsets reads every value through its
// view, so a view that a consumer could follow out of its buffer fails under ASan.
Result<void> read_every_string(const ColumnPtr& batch) {
  OC_TRY(with_string_layout(batch, StringLayout::offsets));
  return {};
}

Result<void> drain(const VortexFile& file, const ScanOptions& options) {
  OC_ASSIGN_OR_RETURN(auto scan, file.scan(options));
  while (true) {
    OC_ASSIGN_OR_RETURN(auto batch, scan->next());
    if (!batch) return {};
    OC_TRY(read_every_string(*batch));
  }
}

}  // namespace

Result<void> fuzz_open_scan(std::span<const uint8_t> bytes) {
  OC_ASSIGN_OR_RETURN(auto file, open_bytes(bytes));
  return drain(*file, {});
}

Result<void> fuzz_take(std::span<const uint8_t> bytes) {
  OC_ASSIGN_OR_RETURN(auto file, open_bytes(bytes));
  const uint64_t n = file->row_count();
  if (n == 0) return {};
  const uint64_t step = bytes.size() % 97 + 1;
  std::vector<uint64_t> rows{n - 1, 0, n / 2, n / 2};
  for (uint64_t r = 1; r < n && rows.size() < 64; r += step * (rows.size() + 1)) rows.push_back(r);
  OC_ASSIGN_OR_RETURN(ColumnPtr taken, file->take(rows));
  return read_every_string(taken);
}

Result<void> fuzz_filtered_scan(std::span<const uint8_t> file, std::string_view predicate) {
  OC_ASSIGN_OR_RETURN(auto f, open_bytes(file));
  ScanOptions options;
  options.filter = std::string(predicate);
  return drain(*f, options);
}

Result<void> fuzz_pushdown(std::span<const uint8_t> file, std::span<const uint8_t> request) {
  OC_ASSIGN_OR_RETURN(PushdownRequest req, decode_pushdown_request(request, 1 << 20));
  req.file_size = file.size();
  auto source = memory_source(Buffer::copy_of(file), "fuzz file");
  OC_ASSIGN_OR_RETURN(std::string stream, run_pushdown_scan(*source, req, 4 << 20));
  OC_EXPECT(stream.size() <= (4 << 20), invalid, "a {} byte answer passed the 4 MiB cap",
            stream.size());
  return {};
}

}  // namespace oc::format
