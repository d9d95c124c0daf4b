// SPDX-License-Identifier: Apache-2.0
#include "net/rados_pushdown.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>

#include "config/defaults.hpp"
#include "format/arrow_ipc_read.hpp"
#include "format/pushdown.hpp"

namespace oc::net {
namespace {

constexpr const char* kClass = "onecopy";
constexpr const char* kMethod = "scan";

// Pools whose OSDs answered that the class is not there (or not allowed): later scans of any
// file in them read client-side at once instead of asking again.
std::mutex absent_mu;
std::set<std::string> pools_without_class;

bool class_absent(const std::string& pool) {
  std::lock_guard lock(absent_mu);
  return pools_without_class.count(pool) != 0;
}

void mark_class_absent(const std::string& pool) {
  std::lock_guard lock(absent_mu);
  pools_without_class.insert(pool);
}

// -EOPNOTSUPP: no such class or method; -EPERM: classes not allowed; -EIO from the class
// loader is ambiguous with a read error, so it is not taken as absence.
bool means_no_class(int rc) { return rc == -EOPNOTSUPP || rc == -EPERM; }

// An OSD that timed out, restarted or was remapped: the same call may succeed again.
bool retryable(int rc) {
  return rc == -ETIMEDOUT || rc == -EAGAIN || rc == -ENOTCONN || rc == -ECONNRESET ||
         rc == -ESHUTDOWN;
}

struct RowRange {
  uint64_t begin;
  uint64_t end;
};

// One call of the scan, in row order; `call` is null until it is started.
struct Slot {
  RowRange rows;
  std::unique_ptr<net::RadosPool::Call> call;
  uint32_t attempts = 0;
};

class PushdownScan final : public format::Scan {
 public:
  PushdownScan(std::shared_ptr<const format::VortexFile> file, std::shared_ptr<net::RadosPool> pool,
               std::string object, format::ScanOptions options, format::DTypePtr dtype,
               format::StringLayout strings, std::vector<RowRange> pieces, bool may_fall_back)
      : file_(std::move(file)),
        pool_(std::move(pool)),
        object_(std::move(object)),
        options_(std::move(options)),
        dtype_(std::move(dtype)),
        strings_(strings),
        may_fall_back_(may_fall_back) {
    for (const RowRange& r : pieces) slots_.push_back(Slot{r, nullptr, 0});
  }

  // Starts calls until `rados_ops_in_flight` are in flight (of the first ones not answered).
  Result<void> start_calls() {
    const size_t window = std::max<size_t>(defaults().rados_ops_in_flight, 1);
    for (size_t i = 0; i < slots_.size() && i < window; ++i) {
      if (slots_[i].call) continue;
      OC_ASSIGN_OR_RETURN(slots_[i].call,
                          pool_->exec_async(object_, kClass, kMethod, request_for(slots_[i].rows)));
      ++slots_[i].attempts;
    }
    return {};
  }

  const format::DTypePtr& dtype() const override { return dtype_; }
  format::StringLayout strings() const override { return strings_; }
  format::ScanStats stats() const override {
    format::ScanStats s = stats_;
    if (fallback_) {
      const format::ScanStats f = fallback_->stats();
      format::add_read_stats(s, f);
      s.batches += f.batches;
      s.rows += f.rows;
    }
    return s;
  }

 protected:
  Result<std::optional<format::ColumnPtr>> next_batch() override {
    while (true) {
      if (!ready_.empty()) return deliver();
      if (fallback_) return fallback_->next();
      if (slots_.empty()) return std::optional<format::ColumnPtr>{};
      OC_TRY(start_calls());
      OC_TRY(finish_front());
    }
  }

 private:
  std::optional<format::ColumnPtr> deliver() {
    format::ColumnPtr b = std::move(ready_.front());
    ready_.pop_front();
    const uint64_t cap = options_.batch_rows;
    if (cap != 0 && b->length > cap) {
      // Hand out the first `cap` rows; the rest waits at the front.
      ready_.push_front(format::slice(b, cap, b->length - cap));
      b = format::slice(b, 0, cap);
    }
    ++stats_.batches;
    stats_.rows += b->length;
    return b;
  }

  std::string request_for(const RowRange& rows) const {
    format::PushdownRequest req;
    req.file_size = file_->source().size();
    req.columns = options_.columns;
    req.filter = options_.filter;
    req.row_begin = rows.begin;
    req.row_end = rows.end;
    req.string_views = strings_ == format::StringLayout::views;
    // The reader needs no flag of its own: the stream says how its bodies are compressed.
    req.compression = defaults().rados_pushdown_compression == "zstd"
                          ? format::IpcCompression::zstd
                          : format::IpcCompression::none;
    return format::encode_pushdown_request(req);
  }

  Error call_error(const RowRange& rows, int rc) const {
    const int e = -rc;
    // A timeout is librados' (rados_op_timeout_ms), not the class's: the table has no row.
    Error err(e == ETIMEDOUT ? Errc::timeout : format::errc_from_pushdown_errno(rc),
              fmt::format("rados://{}/{} rows [{}, {}): the scan in the OSD failed: {}",
                          pool_->name(), object_, rows.begin, rows.end, std::strerror(e)),
              __FILE__, __LINE__, e);
    return err;
  }

  // Waits for the first call and turns its answer into batches, or retries, halves or falls
  // back; rows of the slots behind it stay undelivered until their turn.
  Result<void> finish_front() {
    Slot& s = slots_.front();
    auto [bytes, rc] = s.call->wait();
    s.call.reset();
    if (rc == 0) {
      stats_.bytes_read += bytes.size();
      stats_.rows_scanned += s.rows.end - s.rows.begin;
      ++stats_.pushdown_calls;
      auto owner = std::make_shared<std::string>(std::move(bytes));
      format::Buffer stream = format::Buffer::wrap(
          owner, reinterpret_cast<const uint8_t*>(owner->data()), owner->size());
      OC_ASSIGN_OR_RETURN(auto batches,
                          format::read_arrow_ipc_stream(stream, dtype_, {.strings = strings_}));
      for (auto& b : batches) {
        if (b->length != 0) ready_.push_back(std::move(b));
      }
      slots_.pop_front();
      return {};
    }
    if (rc == -EFBIG && s.rows.end - s.rows.begin > 1) {
      const RowRange whole = s.rows;
      const uint64_t mid = whole.begin + (whole.end - whole.begin) / 2;
      slots_.pop_front();
      slots_.push_front(Slot{{mid, whole.end}, nullptr, 0});
      slots_.push_front(Slot{{whole.begin, mid}, nullptr, 0});
      return {};
    }
    if (means_no_class(rc) && may_fall_back_) {
      mark_class_absent(pool_->name());
      return fall_back_from(s.rows.begin);
    }
    if (retryable(rc) && s.attempts < defaults().rados_op_attempts) return {};
    return call_error(s.rows, rc);
  }

  // Reads rows [row, end of the scan) client-side. Every row before `row` was delivered, none
  // after it: the calls in flight are dropped unread.
  Result<void> fall_back_from(uint64_t row) {
    const uint64_t end = slots_.back().rows.end;
    slots_.clear();
    format::ScanOptions o = options_;
    o.row_range = std::pair<uint64_t, uint64_t>{row, end};
    OC_ASSIGN_OR_RETURN(fallback_, file_->scan_here(o));
    return {};
  }

  std::shared_ptr<const format::VortexFile> file_;
  std::shared_ptr<net::RadosPool> pool_;
  std::string object_;
  format::ScanOptions options_;
  format::DTypePtr dtype_;
  format::StringLayout strings_;
  bool may_fall_back_;
  std::deque<Slot> slots_;
  std::deque<format::ColumnPtr> ready_;
  std::unique_ptr<format::Scan> fallback_;
  format::ScanStats stats_;
};

class RadosPushdown final : public format::ScanPushdown {
 public:
  RadosPushdown(std::shared_ptr<net::RadosPool> pool, std::string object)
      : pool_(std::move(pool)), object_(std::move(object)) {}

  Result<std::unique_ptr<format::Scan>> try_scan(const format::VortexFile& file,
                                                 const format::ScanOptions& options) override {
    const std::string& mode = defaults().rados_pushdown;
    const bool forced = mode == "on";
    // The object class delivers no row numbers: such a scan runs here.
    if (mode == "off" || options.row_numbers || (!forced && class_absent(pool_->name()))) {
      return std::unique_ptr<format::Scan>();
    }
    const auto [begin, end] =
        options.row_range.value_or(std::pair<uint64_t, uint64_t>{0, file.row_count()});
    if (begin >= end)
      return std::unique_ptr<format::Scan>();  // binds and checks only: nothing to move
    if (!forced && options.filter.empty() && projects_everything(file, options)) {
      return std::unique_ptr<format::Scan>();
    }

    // A local plan of no rows binds the projection and the filter: their errors surface here,
    // and it gives the dtype and string layout the OSD's batches must have.
    format::ScanOptions probe = options;
    probe.row_range = std::pair<uint64_t, uint64_t>{0, 0};
    OC_ASSIGN_OR_RETURN(auto plan, file.scan_here(probe));
    OC_ASSIGN_OR_RETURN(auto pieces, cut(file, begin, end));
    auto scan =
        std::make_unique<PushdownScan>(file.shared_from_this(), pool_, object_, options,
                                       plan->dtype(), plan->strings(), std::move(pieces), !forced);
    OC_TRY(scan->start_calls());  // the OSDs work while the caller does something else
    return std::unique_ptr<format::Scan>(std::move(scan));
  }

 private:
  static bool projects_everything(const format::VortexFile& file, const format::ScanOptions& o) {
    if (o.columns.empty()) return true;
    const std::set<std::string> wanted(o.columns.begin(), o.columns.end());
    return std::all_of(file.dtype()->names.begin(), file.dtype()->names.end(),
                       [&](const std::string& n) { return wanted.count(n) != 0; });
  }

  // Rows [begin, end) in pieces of about `rados_pushdown_rows`, cut where chunks start so that
  // no two calls decode the same chunk.
  static Result<std::vector<RowRange>> cut(const format::VortexFile& file, uint64_t begin,
                                           uint64_t end) {
    format::SegmentCache cache(file.source_ptr(), file.footer());
    OC_ASSIGN_OR_RETURN(auto reader, file.open_reader(cache));
    std::vector<uint64_t> starts;
    reader->collect_splits(0, starts);
    std::sort(starts.begin(), starts.end());
    const uint64_t target = std::max<uint64_t>(defaults().rados_pushdown_rows, 1);
    std::vector<RowRange> out;
    uint64_t from = begin;
    for (uint64_t s : starts) {
      if (s <= from || s >= end) continue;
      if (s - from >= target) {
        out.push_back({from, s});
        from = s;
      }
    }
    // A file of one huge chunk is still cut, mid-chunk, so that calls stay bounded.
    while (end - from > 2 * target) {
      out.push_back({from, from + target});
      from += target;
    }
    out.push_back({from, end});
    return out;
  }

  std::shared_ptr<net::RadosPool> pool_;
  std::string object_;
};

}  // namespace

Result<std::shared_ptr<format::VortexFile>> open_rados_file(const net::RadosUri& uri) {
  OC_ASSIGN_OR_RETURN(auto pool, net::rados_pool(uri.pool));
  OC_ASSIGN_OR_RETURN(auto source, net::open_rados_source(uri));
  OC_ASSIGN_OR_RETURN(auto file, format::VortexFile::open(std::move(source)));
  file->set_pushdown(make_rados_pushdown(std::move(pool), uri.object));
  return file;
}

std::shared_ptr<format::ScanPushdown> make_rados_pushdown(std::shared_ptr<net::RadosPool> pool,
                                                          std::string object) {
  return std::make_shared<RadosPushdown>(std::move(pool), std::move(object));
}

}  // namespace oc::net
