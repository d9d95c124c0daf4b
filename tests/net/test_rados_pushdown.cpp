// SPDX-License-Identifier: Apache-2.0
// The pushed-down scan's protocol with the OSDs, faults injected: a pool whose `onecopy.scan`
// calls run the real method body (format/pushdown.hpp) in-process over the file's bytes, and
// fail chosen calls with the errno an OSD would answer. Whatever happens, a scan delivers every
// row of the local scan exactly once and in order, or ends with a clear error; answers compressed
// or not, as the rados_pushdown_compression knob asks.
#include <catch2/catch.hpp>
#include <cerrno>
#include <fstream>
#include <functional>
#include <iterator>

#include "config/defaults.hpp"
#include "format/pushdown.hpp"
#include "net/rados_pushdown.hpp"
#include "tests/format/fixtures.hpp"

using namespace oc;
using namespace oc::format;

namespace {

// Decides the fate of call @p n (0-based, retries counted) asking for @p req: 0 runs it.
using Fault = std::function<int(int n, const PushdownRequest& req)>;

class ReadyCall final : public net::RadosPool::Call {
 public:
  explicit ReadyCall(std::pair<std::string, int> r) : r_(std::move(r)) {}
  std::pair<std::string, int> wait() override { return std::move(r_); }

 private:
  std::pair<std::string, int> r_;
};

class FaultyPool final : public net::RadosPool {
 public:
  FaultyPool(std::string name, Buffer file, Fault fault)
      : name_(std::move(name)), file_(std::move(file)), fault_(std::move(fault)) {}
  const std::string& name() const override { return name_; }
  Result<uint64_t> stat(const std::string&) override { return file_.size(); }
  Result<void> read(const std::string&, std::span<const ByteRange>,
                    std::span<uint8_t* const>) override {
    return OC_ERROR(Errc::unsupported, "reads go through the file's own source here");
  }
  Result<void> write(const std::string&, uint64_t,
                     const std::function<Result<size_t>(std::span<uint8_t>)>&) override {
    return OC_ERROR(Errc::unsupported, "no writes");
  }
  Result<std::vector<std::string>> list(uint64_t) override {
    return OC_ERROR(Errc::unsupported, "no listings");
  }
  Result<std::unique_ptr<Call>> exec_async(const std::string&, const std::string& cls,
                                           const std::string& method, std::string in) override {
    REQUIRE(cls == "onecopy");
    REQUIRE(method == "scan");
    auto req = decode_pushdown_request(
        std::span(reinterpret_cast<const uint8_t*>(in.data()), in.size()), 1 << 20);
    REQUIRE(req.ok());
    const int n = calls++;
    if (const int rc = fault_(n, *req); rc != 0) {
      return std::unique_ptr<Call>(std::make_unique<ReadyCall>(std::pair{std::string(), rc}));
    }
    ++ran;
    auto source = memory_source(file_, name_);
    auto out = run_pushdown_scan(*source, *req, 64 << 20);
    if (!out.ok()) {
      return std::unique_ptr<Call>(
          std::make_unique<ReadyCall>(std::pair{std::string(), pushdown_errno(out.error())}));
    }
    return std::unique_ptr<Call>(std::make_unique<ReadyCall>(std::pair{std::move(*out), 0}));
  }
  int calls = 0;
  int ran = 0;

 private:
  std::string name_;
  Buffer file_;
  Fault fault_;
};

Buffer file_bytes() {
  std::ifstream in(std::string(OC_SOURCE_DIR) + "/tests/fuzz/seeds/open_scan/zoned.vortex",
                   std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() > 1000);
  return Buffer::copy_of(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

// Knobs for one test, put back when it ends.
struct Knobs {
  Defaults saved = defaults();
  Knobs(std::string mode, uint64_t rows, uint32_t in_flight = 3) {
    Defaults d = saved;
    d.rados_pushdown = std::move(mode);
    d.rados_pushdown_rows = rows;
    d.rados_ops_in_flight = in_flight;
    d.rados_op_attempts = 3;
    set_defaults(d);
  }
  ~Knobs() { set_defaults(saved); }
};

struct Outcome {
  Result<std::vector<std::string>> rows = std::vector<std::string>{};
  ScanStats stats;
};

Outcome scan_rows(const std::shared_ptr<VortexFile>& file, const ScanOptions& o) {
  Outcome out;
  auto scan = file->scan(o);
  if (!scan.ok()) {
    out.rows = std::move(scan).error();
    return out;
  }
  std::vector<std::string> rows;
  while (true) {
    auto b = (*scan)->next();
    if (!b.ok()) {
      out.rows = std::move(b).error();
      return out;
    }
    if (!*b) break;
    auto r = test::rows_of(***b);
    rows.insert(rows.end(), r.begin(), r.end());
  }
  out.stats = (*scan)->stats();
  out.rows = std::move(rows);
  return out;
}

// The file, with its scans pushed into @p pool.
std::shared_ptr<VortexFile> pushed(const Buffer& bytes, std::shared_ptr<FaultyPool> pool) {
  auto file = VortexFile::open(memory_source(bytes, "zoned.vortex"));
  REQUIRE(file.ok());
  (*file)->set_pushdown(net::make_rados_pushdown(std::move(pool), "zoned.vortex"));
  return *file;
}

ScanOptions query() {
  ScanOptions o;
  o.columns = {"name", "id", "day"};
  o.filter = "grp < 20 OR score > 4000";
  return o;
}
const ScanOptions kQuery = query();

std::vector<std::string> local_rows(const Buffer& bytes, const ScanOptions& o) {
  auto file = VortexFile::open(memory_source(bytes, "zoned.vortex"));
  REQUIRE(file.ok());
  auto r = scan_rows(*file, o);
  REQUIRE(r.rows.ok());
  REQUIRE(r.rows->size() > 1000);
  return *r.rows;
}

}  // namespace

TEST_CASE("pushed-down scans equal local scans, cut into calls at most in flight",
          "[client][pushdown]") {
  const Buffer bytes = file_bytes();
  const auto expected = local_rows(bytes, kQuery);
  Knobs knobs("on", 4000);
  auto pool = std::make_shared<FaultyPool>("pd-plain", bytes,
                                           [](int, const PushdownRequest&) { return 0; });
  auto got = scan_rows(pushed(bytes, pool), kQuery);
  REQUIRE(got.rows.ok());
  CHECK(*got.rows == expected);
  CHECK(got.stats.pushdown_calls == 12);  // 50,000 rows: eleven calls of 4,000, the last of 6,000
  CHECK(pool->calls == 12);
  CHECK(got.stats.rows == expected.size());
  // A row range and a batch cap are kept.
  ScanOptions ranged = kQuery;
  ranged.row_range = std::pair<uint64_t, uint64_t>{1234, 40321};
  ranged.batch_rows = 100;
  auto some = scan_rows(pushed(bytes, pool), ranged);
  REQUIRE(some.rows.ok());
  CHECK(*some.rows == local_rows(bytes, ranged));
  CHECK(some.stats.batches >= some.rows->size() / 100);
}

TEST_CASE("calls ask for the answer's compression the knob names", "[client][pushdown]") {
  const Buffer bytes = file_bytes();
  const auto expected = local_rows(bytes, kQuery);
  Knobs knobs("on", 20000);
  CHECK(defaults().rados_pushdown_compression == "zstd");  // the built-in default
  for (const char* mode : {"zstd", "none"}) {
    INFO(mode);
    Defaults d = defaults();
    d.rados_pushdown_compression = mode;
    set_defaults(d);
    std::vector<IpcCompression> asked;
    auto pool =
        std::make_shared<FaultyPool>("pd-zstd", bytes, [&](int, const PushdownRequest& req) {
          asked.push_back(req.compression);
          return 0;
        });
    auto got = scan_rows(pushed(bytes, pool), kQuery);
    REQUIRE(got.rows.ok());
    CHECK(*got.rows == expected);
    const IpcCompression want =
        std::string(mode) == "zstd" ? IpcCompression::zstd : IpcCompression::none;
    REQUIRE(!asked.empty());
    CHECK(asked == std::vector<IpcCompression>(asked.size(), want));
  }
}

TEST_CASE("auto pushes down only scans that filter or project", "[client][pushdown]") {
  const Buffer bytes = file_bytes();
  Knobs knobs("auto", 20000);
  auto pool =
      std::make_shared<FaultyPool>("pd-auto", bytes, [](int, const PushdownRequest&) { return 0; });
  auto whole = scan_rows(pushed(bytes, pool), ScanOptions{});
  REQUIRE(whole.rows.ok());
  CHECK(pool->calls == 0);
  CHECK(whole.stats.pushdown_calls == 0);
  auto filtered = scan_rows(pushed(bytes, pool), kQuery);
  REQUIRE(filtered.rows.ok());
  CHECK(pool->calls > 0);
  CHECK(*filtered.rows == local_rows(bytes, kQuery));
}

TEST_CASE("an answer over the OSD's cap halves the call until it fits", "[client][pushdown]") {
  const Buffer bytes = file_bytes();
  Knobs knobs("on", 25000, 1);
  // One call of 50,000 rows (no cut below 2 x 25,000); more than 5,000 rows is "too big":
  // 50,000 -> 25,000 -> 12,500 -> 6,250 -> 3,125, sixteen calls that fit.
  auto pool = std::make_shared<FaultyPool>("pd-efbig", bytes, [](int, const PushdownRequest& r) {
    return r.row_end - r.row_begin > 5000 ? -EFBIG : 0;
  });
  auto got = scan_rows(pushed(bytes, pool), kQuery);
  REQUIRE(got.rows.ok());
  CHECK(*got.rows == local_rows(bytes, kQuery));
  CHECK(got.stats.pushdown_calls == 16);
}

TEST_CASE("a call whose OSD timed out or restarted is retried whole, up to the attempts knob",
          "[client][pushdown]") {
  const Buffer bytes = file_bytes();
  Knobs knobs("on", 5000, 4);
  auto flaky = std::make_shared<FaultyPool>("pd-flaky", bytes, [](int n, const PushdownRequest&) {
    return n == 1 || n == 2 ? -ETIMEDOUT : n == 5 ? -ENOTCONN : 0;
  });
  auto got = scan_rows(pushed(bytes, flaky), kQuery);
  REQUIRE(got.rows.ok());
  CHECK(*got.rows == local_rows(bytes, kQuery));
  CHECK(flaky->ran == 9);  // eight calls of 5,000 rows, the last of 10,000: each ran once

  auto dead = std::make_shared<FaultyPool>(
      "pd-dead", bytes, [](int n, const PushdownRequest&) { return n >= 2 ? -ETIMEDOUT : 0; });
  auto failed = scan_rows(pushed(bytes, dead), kQuery);
  REQUIRE_FALSE(failed.rows.ok());
  CHECK(failed.rows.error().code() == Errc::timeout);
  CHECK(failed.rows.error().message().find("rados://pd-dead/zoned.vortex rows [") !=
        std::string::npos);
}

TEST_CASE("without the class, auto reads the rest client-side and on fails", "[client][pushdown]") {
  const Buffer bytes = file_bytes();
  const auto expected = local_rows(bytes, kQuery);
  {
    Knobs knobs("auto", 5000, 3);
    // Two calls answered, then the class is gone (an OSD restarted without it).
    auto pool = std::make_shared<FaultyPool>(
        "pd-gone", bytes, [](int n, const PushdownRequest&) { return n >= 2 ? -EOPNOTSUPP : 0; });
    auto got = scan_rows(pushed(bytes, pool), kQuery);
    REQUIRE(got.rows.ok());
    CHECK(*got.rows == expected);  // rows before the fallback once, the rest read here once
    CHECK(got.stats.pushdown_calls == 2);
    // The pool is remembered: the next scan asks no OSD.
    const int before = pool->calls;
    auto again = scan_rows(pushed(bytes, pool), kQuery);
    REQUIRE(again.rows.ok());
    CHECK(*again.rows == expected);
    CHECK(pool->calls == before);
  }
  {
    Knobs knobs("on", 5000, 3);
    auto pool = std::make_shared<FaultyPool>(
        "pd-never", bytes, [](int, const PushdownRequest&) { return -EOPNOTSUPP; });
    auto got = scan_rows(pushed(bytes, pool), kQuery);
    REQUIRE_FALSE(got.rows.ok());
    CHECK(got.rows.error().code() == Errc::unsupported);
  }
}

TEST_CASE("the OSD's errors come back as the scan's, naming the object and rows",
          "[client][pushdown]") {
  const Buffer bytes = file_bytes();
  Knobs knobs("on", 5000, 2);
  for (const auto& [rc, code] : std::vector<std::pair<int, Errc>>{{-EBADMSG, Errc::corrupt},
                                                                  {-EINVAL, Errc::invalid},
                                                                  {-ESTALE, Errc::io},
                                                                  {-EPROTO, Errc::unsupported}}) {
    auto pool = std::make_shared<FaultyPool>(
        "pd-err", bytes, [rc = rc](int n, const PushdownRequest&) { return n == 3 ? rc : 0; });
    auto got = scan_rows(pushed(bytes, pool), kQuery);
    REQUIRE_FALSE(got.rows.ok());
    CHECK(got.rows.error().code() == code);
    CHECK(got.rows.error().message().find("rados://pd-err/zoned.vortex rows [15000, 20000)") !=
          std::string::npos);
  }
}
