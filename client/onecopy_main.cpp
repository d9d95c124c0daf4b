// SPDX-License-Identifier: Apache-2.0
// `onecopy`: the command-line client.
//
//   onecopy inspect FILE [--json]
//   onecopy scan FILE|PATTERN [--columns a,b] [--filter EXPR] [--limit N] [--rows BEGIN:END]
//                     [--batch-rows N] [--format csv|jsonl|arrow] [--explain]
//                     PATTERN: a directory, glob, s3:// or rados:// prefix or glob, whose files
//                     (of one dtype) are scanned in turn, --rows applying to each;
//                     --filter keeps rows where the SQL WHERE predicate EXPR is TRUE;
//                     --explain runs the scan, prints no rows and reports what it read and
//                     pruned and where the time went, one "key: value" per line;
//                     --format arrow writes an Arrow IPC stream (format/arrow_ipc.hpp) to stdout
//   onecopy take FILE ROW,ROW,... [--columns a,b] [--format csv|jsonl|arrow] [--explain]
//                     the given rows (0-based, any order, repeats allowed), as scan prints them;
//                     --explain prints no rows but what the take read from the file
//   onecopy ls s3://bucket[/prefix] [--recursive] | rados://pool[/prefix]
//   onecopy cp SRC DST          S3 (or an http(s) URL) or rados://pool/object to a local file, or
//                               a local file to S3 or RADOS
//   onecopy convert INPUT ... --to DIR|s3://PREFIX/ [--format parquet|jsonl|wds|mds]
//                     [--rows-per-file N]
//                     Parquet, JSONL, WebDataset or MosaicML MDS shards, local or s3://, to
//                     Vortex files (python -m onecopy.convert, run with $ONECOPY_PYTHON, else
//                     python3)
//   onecopy defaults            every knob with its environment variable and default
//   onecopy status [--json] [--socket PATH]
//   onecopy metrics [--socket PATH]
//                     onecopyd's version, uptime, clients, scans, bytes delivered, errors, pool;
//                     status also lists the asking user's scans with their stages
//   onecopy version
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "client/inspect.hpp"
#include "client/open_uri.hpp"
#include "client/row_format.hpp"
#include "client/s3_commands.hpp"
#include "config/defaults.hpp"
#include "config/log.hpp"
#include "format/arrow_ipc.hpp"
#include "format/reader.hpp"
#include "daemon/client.hpp"
#include "onecopy_build_config.h"

namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

int usage(const std::string& why) {
  if (!why.empty()) std::cerr << "onecopy: " << why << "\n";
  std::cerr << "usage:\n"
               "  onecopy inspect FILE|s3://bucket/key|rados://pool/object|URL [--json]\n"
               "  onecopy scan FILE|PATTERN [--columns a,b] [--filter EXPR] [--limit N]\n"
               "                    [--rows BEGIN:END] [--batch-rows N] [--format csv|jsonl|arrow]\n"
               "                    [--explain]\n"
               "  onecopy take FILE ROW,ROW,... [--columns a,b] [--format csv|jsonl|arrow]\n"
               "                    [--explain]\n"
               "  --format arrow writes an Arrow IPC stream (schema, batches, end marker) to stdout\n"
               "  onecopy ls s3://bucket[/prefix] [--recursive] | rados://pool[/prefix]\n"
               "  onecopy cp SRC DST   (S3, rados://pool/object or an http(s) URL to a file, or a\n"
               "                        file to S3 or RADOS)\n"
               "  onecopy convert INPUT ... --to DIR|s3://PREFIX/ [--format parquet|jsonl|wds|mds]\n"
               "  onecopy defaults\n"
               "  onecopy status [--json] [--socket PATH]\n"
               "  onecopy metrics [--socket PATH]\n"
               "  onecopy version\n";
  return kExitUsage;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

bool parse_u64(const std::string& s, uint64_t& out) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return false;
  try {
    out = std::stoull(s);
  } catch (...) {
    return false;
  }
  return true;
}

int fail(const oc::Error& e) {
  std::cerr << "onecopy: " << e.to_string() << "\n";
  return kExitError;
}

// Writes batches to stdout as CSV or JSON Lines rows (client/row_format.hpp), or as one Arrow
// IPC stream (format/arrow_ipc.hpp): the schema before the first batch, the end marker last.
struct RowPrinter {
  oc::client::RowFormat fmt = oc::client::RowFormat::csv;
  bool arrow = false;
  bool header = true;  // nothing written yet: CSV header or Arrow schema still to come
  std::optional<oc::format::ArrowIpcWriter> ipc;

  // Strings as Arrow offsets for the Arrow stream (its Utf8/Binary), so none is converted.
  [[nodiscard]] oc::format::StringLayout strings() const {
    return arrow ? oc::format::StringLayout::offsets : oc::format::StringLayout::views;
  }
  [[nodiscard]] oc::Result<void> start_arrow(const oc::format::DTypePtr& dtype) {
    OC_ASSIGN_OR_RETURN(auto w, oc::format::ArrowIpcWriter::make(dtype));
    ipc.emplace(std::move(w));
    ipc->schema_message().write_to(std::cout);
    header = false;
    return {};
  }
  // Writes `batch` (possibly empty); a CSV header is written before the first batch, or alone
  // when there are no rows.
  [[nodiscard]] oc::Result<void> write(const oc::format::ColumnPtr& batch) {
    if (arrow) {
      if (batch->length == 0) return {};
      if (!ipc) OC_TRY(start_arrow(batch->dtype));
      OC_ASSIGN_OR_RETURN(const auto msg, ipc->batch_message(batch));
      msg.write_to(std::cout);
      return {};
    }
    if (batch->length == 0 && !(header && fmt == oc::client::RowFormat::csv)) return {};
    oc::client::write_rows(std::cout, *batch, fmt, header);
    header = false;
    return {};
  }
  [[nodiscard]] oc::Result<void> finish(const oc::format::DTypePtr& dtype) {
    if (arrow) {
      if (!ipc) OC_TRY(start_arrow(dtype));
      oc::format::ArrowIpcWriter::end_of_stream().write_to(std::cout);
      return {};
    }
    if (!header) return {};
    auto empty = std::make_shared<oc::format::Column>();
    empty->dtype = dtype;
    return write(empty);
  }
};

bool parse_format(const std::string& v, RowPrinter& out) {
  if (v != "csv" && v != "jsonl" && v != "arrow") return false;
  out.arrow = v == "arrow";
  out.fmt = v == "jsonl" ? oc::client::RowFormat::jsonl : oc::client::RowFormat::csv;
  return true;
}

void print_explain(const oc::format::ScanStats& s, uint64_t file_size) {
  auto ms = [](uint64_t ns) { return static_cast<double>(ns) / 1e6; };
  const double pct =
      file_size ? 100.0 * static_cast<double>(s.bytes_read) / static_cast<double>(file_size) : 0.0;
  std::cout << std::fixed << "rows scanned: " << s.rows_scanned << "\n"
            << "rows delivered: " << s.rows << "\n"
            << "rows pruned: " << s.rows_pruned << "\n"
            << "zones total: " << s.zones_total << "\n"
            << "zones pruned: " << s.zones_pruned << "\n"
            << "file pruned: " << (s.file_pruned ? "yes" : "no") << "\n"
            << "batches: " << s.batches << "\n"
            << "segments read: " << s.segments_read << "\n"
            << "bytes read: " << s.bytes_read << "\n"
            << "pushdown calls: " << s.pushdown_calls << "\n"
            << "file size: " << file_size << "\n"
            << std::setprecision(2) << "bytes read %: " << pct << "\n"
            << std::setprecision(3) << "plan ms: " << ms(s.plan_ns) << "\n"
            << "fetch ms: " << ms(s.fetch_ns) << "\n"
            << "filter ms: " << ms(s.filter_ns) << "\n"
            << "decode ms: " << ms(s.decode_ns) << "\n";
}

int run_scan(const std::vector<std::string>& args) {
  if (args.empty()) return usage("scan needs a FILE");
  oc::format::ScanOptions opts;
  uint64_t limit = UINT64_MAX;
  bool explain = false;
  RowPrinter out;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--explain") {
      explain = true;
      continue;
    }
    if (i + 1 >= args.size()) return usage("option " + a + " needs a value");
    const std::string& v = args[++i];
    if (a == "--columns") {
      opts.columns = split(v, ',');
    } else if (a == "--filter") {
      if (v.empty()) return usage("--filter takes an expression");
      opts.filter = v;
    } else if (a == "--limit") {
      if (!parse_u64(v, limit)) return usage("--limit takes a row count");
    } else if (a == "--batch-rows") {
      if (!parse_u64(v, opts.batch_rows)) return usage("--batch-rows takes a row count");
    } else if (a == "--rows") {
      auto parts = split(v, ':');
      std::pair<uint64_t, uint64_t> r;
      if (parts.size() != 2 || !parse_u64(parts[0], r.first) || !parse_u64(parts[1], r.second)) {
        return usage("--rows takes BEGIN:END");
      }
      opts.row_range = r;
    } else if (a == "--format") {
      if (!parse_format(v, out)) return usage("--format is csv, jsonl or arrow");
    } else {
      return usage("unknown option " + a);
    }
  }
  opts.strings = out.strings();
  auto uris = oc::client::expand_uri(args[0]);
  if (!uris.ok()) return fail(uris.error());
  // Files are scanned in turn, the next one's scan started before this one is read: a scan
  // pushed into the OSDs has the next object's calls in flight meanwhile.
  struct Opened {
    std::shared_ptr<oc::format::VortexFile> file;
    std::unique_ptr<oc::format::Scan> scan;
  };
  auto start = [&](const std::string& uri) -> oc::Result<Opened> {
    OC_ASSIGN_OR_RETURN(auto file, oc::client::open_uri(uri));
    OC_ASSIGN_OR_RETURN(auto scan, file->scan(opts));
    return Opened{std::move(file), std::move(scan)};
  };
  oc::format::ScanStats total;
  uint64_t bytes = 0;
  oc::format::DTypePtr dtype;
  uint64_t printed = 0;
  auto next = start(uris->front());
  for (size_t k = 0; k < uris->size() && printed < limit; ++k) {
    if (!next.ok()) return fail(next.error());
    Opened cur = std::move(*next);
    if (k + 1 < uris->size()) next = start((*uris)[k + 1]);
    if (dtype && !(*cur.scan->dtype() == *dtype)) {
      std::cerr << "onecopy: " << (*uris)[k] << " holds " << cur.scan->dtype()->to_string()
                << ", not the " << dtype->to_string() << " of " << uris->front() << "\n";
      return kExitError;
    }
    dtype = cur.scan->dtype();
    while (printed < limit) {
      auto batch = cur.scan->next();
      if (!batch.ok()) return fail(batch.error());
      if (!*batch) break;
      oc::format::ColumnPtr b = **batch;
      if (b->length > limit - printed) b = oc::format::slice(b, 0, limit - printed);
      if (!explain) {
        if (auto r = out.write(b); !r.ok()) return fail(r.error());
      }
      printed += b->length;
    }
    const oc::format::ScanStats s = cur.scan->stats();
    oc::format::add_read_stats(total, s);
    total.batches += s.batches;
    total.rows += s.rows;
    bytes += cur.file->source_ptr()->size();
  }
  if (explain) {
    print_explain(total, bytes);
  } else {
    if (auto r = out.finish(dtype); !r.ok()) return fail(r.error());
  }
  std::cout.flush();
  return std::cout.good() ? 0 : kExitError;
}

int run_take(const std::vector<std::string>& args) {
  if (args.size() < 2) return usage("take needs a FILE and ROW,ROW,...");
  std::vector<uint64_t> rows;
  for (const auto& r : split(args[1], ',')) {
    uint64_t v = 0;
    if (!parse_u64(r, v)) return usage("take rows are 0-based row numbers separated by commas");
    rows.push_back(v);
  }
  std::vector<std::string> columns;
  RowPrinter out;
  bool explain = false;
  for (size_t i = 2; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--explain") {
      explain = true;
      continue;
    }
    if (i + 1 >= args.size()) return usage("option " + a + " needs a value");
    const std::string& v = args[++i];
    if (a == "--columns") {
      columns = split(v, ',');
    } else if (a == "--format") {
      if (!parse_format(v, out)) return usage("--format is csv, jsonl or arrow");
    } else {
      return usage("unknown option " + a);
    }
  }
  auto file = oc::client::open_uri(args[0]);
  if (!file.ok()) return fail(file.error());
  const oc::format::SourceStats before = (*file)->source().stats();
  auto batch = (*file)->take(rows, columns, out.strings());
  if (!batch.ok()) return fail(batch.error());
  if (explain) {
    // Reads of the take alone: opening the file (its footer) is not counted.
    const oc::format::SourceStats after = (*file)->source().stats();
    std::cout << "rows delivered: " << (*batch)->length << "\n"
              << "reads: " << after.reads - before.reads << "\n"
              << "bytes read: " << after.bytes_read - before.bytes_read << "\n"
              << "file size: " << (*file)->source().size() << "\n";
  } else {
    if (auto r = out.write(*batch); !r.ok()) return fail(r.error());
    if (auto r = out.finish((*batch)->dtype); !r.ok()) return fail(r.error());
  }
  std::cout.flush();
  return std::cout.good() ? 0 : kExitError;
}

int run_inspect(const std::vector<std::string>& args) {
  if (args.empty()) return usage("inspect needs a FILE");
  bool json = false;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--json") json = true;
    else return usage("unknown option " + args[i]);
  }
  auto file = oc::client::open_uri(args[0]);
  if (!file.ok()) return fail(file.error());
  auto r = oc::client::inspect(**file, std::cout, json);
  if (!r.ok()) return fail(r.error());
  return 0;
}

// Each scan on one line, its stages in seconds: where its time went, and which held it up.
void print_scans(const std::vector<oc::daemon::ScanStatus>& scans) {
  std::cout << "scans (this user's; root sees every user's): " << scans.size() << "\n";
  if (scans.empty()) return;
  std::cout << fmt::format("  {:>6} {:>8} {:<9} {:>12} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}  {:<10} {}\n",
                           "scan", "pid", "state", "rows", "wall s", "storage", "decode", "copy",
                           "consumer", "pool", "bottleneck", "uri");
  const auto sec = [](uint64_t ns) { return static_cast<double>(ns) / 1e9; };
  for (const auto& c : scans) {
    const auto& p = c.profile;
    // A client names its own files: no control character of its reaches root's terminal.
    std::string uri = c.uri;
    for (char& ch : uri) {
      if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = '?';
    }
    std::cout << fmt::format(
        "  {:>6} {:>8} {:<9} {:>12} {:>8.3f} {:>8.3f} {:>8.3f} {:>8.3f} {:>8.3f} {:>8.3f}  {:<10} {}\n",
        c.scan, c.pid, c.state, p.rows, sec(p.wall_ns), sec(p.storage_ns), sec(p.decode_ns),
        sec(p.copy_ns), sec(p.consumer_wait_ns), sec(p.pool_wait_ns), oc::format::bottleneck(p),
        uri);
  }
}

// onecopy status [--json] [--socket PATH]: asks onecopyd how it is doing.
int run_status(const std::vector<std::string>& args) {
  bool json = false;
  std::string socket;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--json") {
      json = true;
    } else if (args[i] == "--socket" && i + 1 < args.size()) {
      socket = args[++i];
    } else {
      return usage("status: unexpected argument " + args[i]);
    }
  }
  auto r = oc::daemon::query_status(oc::daemon::client_socket_path(socket));
  if (!r.ok()) return fail(r.error());
  const auto& s = *r;
  if (json) {
    std::cout << oc::daemon::status_json(s) << "\n";
    return 0;
  }
  std::cout << "onecopyd " << s.version << ", up " << s.uptime_ms / 1000 << " s\n"
            << "clients:           " << s.clients << "\n"
            << "active scans:      " << s.active_scans << "\n"
            << "batches in flight: " << s.batches_in_flight << "\n"
            << "bytes fetched:     " << s.bytes_fetched << " (S3: " << s.s3_requests
            << " requests, " << s.s3_retries << " retries, " << s.s3_failures << " failed)\n"
            << "bytes delivered:   " << s.bytes_delivered << " in " << s.batches_delivered
            << " batches\n"
            << "rate (last 10 s):  " << fmt::format("{:.3f}", s.gbps_10s) << " GB/s\n"
            << "requests in flight: " << s.requests_in_flight << " (" << s.worker_threads
            << " worker threads)\n"
            << "copies per byte:   " << fmt::format("{:.3f}", s.copies_per_byte) << " ("
            << s.bytes_copied << " bytes copied into slabs)\n"
            << "copied after decode: " << s.bytes_copied_after_decode << " bytes ("
            << s.bytes_in_place << " bytes sent where they were decoded)\n"
            << "errors:            " << s.errors << "\n"
            << "pool:              " << s.pool_bytes << " of " << s.pool_limit_bytes << " bytes ("
            << s.slabs_sent << " slabs sent)\n";
  if (s.gpu_devices == 0) {
    std::cout << "GPU:               none\n";
  } else {
    std::cout << "GPU:               " << s.gpu_devices << " devices, "
              << s.gpu_memory_used_bytes << " of " << s.gpu_memory_total_bytes
              << " bytes of device memory used\n";
  }
  print_scans(s.scans);
  return 0;
}

// onecopy metrics [--socket PATH]: onecopyd's status for Prometheus (text exposition format).
int run_metrics(const std::vector<std::string>& args) {
  std::string socket;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--socket" && i + 1 < args.size()) {
      socket = args[++i];
    } else {
      return usage("metrics: unexpected argument " + args[i]);
    }
  }
  auto r = oc::daemon::query_status(oc::daemon::client_socket_path(socket));
  if (!r.ok()) return fail(r.error());
  std::cout << oc::daemon::status_prometheus(*r);
  return 0;
}

// The writer is vortex-data's, a Python package: convert is onecopy.convert, run with
// $ONECOPY_PYTHON (else python3), with the same arguments.
int run_convert(const std::vector<std::string>& args) {
  const char* env = std::getenv("ONECOPY_PYTHON");
  const std::string python = env && *env ? env : "python3";
  std::vector<std::string> argv{python, "-m", "onecopy.convert"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> ptrs;
  for (auto& a : argv) ptrs.push_back(a.data());
  ptrs.push_back(nullptr);
  ::execvp(ptrs[0], ptrs.data());
  std::cerr << "onecopy convert: cannot run " << python << " -m onecopy.convert ("
            << std::strerror(errno) << "); set ONECOPY_PYTHON to a Python with onecopy and "
            << "vortex-data installed\n";
  return kExitError;
}

int run_defaults() {
  for (const auto& k : oc::knob_table()) {
    std::cout << k.name << "\t" << k.env << "\t" << k.default_value << "\t" << k.doc << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return usage("");
  if (auto r = oc::load_defaults_from_env(); !r.ok()) return fail(r.error());
  if (auto r = oc::log::init(oc::defaults().log_level); !r.ok()) return fail(r.error());
  const std::string cmd = args[0];
  args.erase(args.begin());
  try {
    if (cmd == "scan") return run_scan(args);
    if (cmd == "take") return run_take(args);
    if (cmd == "inspect") return run_inspect(args);
    if (cmd == "defaults") return run_defaults();
    if (cmd == "status") return run_status(args);
    if (cmd == "metrics") return run_metrics(args);
    if (cmd == "ls") return oc::client::run_ls(args);
    if (cmd == "cp") return oc::client::run_cp(args);
    if (cmd == "convert") return run_convert(args);
    if (cmd == "version" || cmd == "--version") {
      std::cout << "onecopy " << OC_VERSION << "\n";
      return 0;
    }
  } catch (const std::bad_alloc&) {
    std::cerr << "onecopy: out of memory\n";
    return kExitError;
  }
  return usage("unknown command " + cmd);
}
