// SPDX-License-Identifier: Apache-2.0
// `onecopy`: the command-line client. Its commands and their options are listed in
// client/cli_help.cpp (`onecopy --help`, `onecopy CMD --help`).
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <iomanip>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/cli_help.hpp"
#include "client/inspect.hpp"
#include "client/remote/client.hpp"
#include "client/row_format.hpp"
#include "client/s3_commands.hpp"
#include "client/status_text.hpp"
#include "config/defaults.hpp"
#include "config/log.hpp"
#include "format/arrow_ipc.hpp"
#include "format/reader.hpp"
#include "net/open_uri.hpp"
#include "onecopy_build_config.h"

namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

// A usage error: @p why, then @p cmd's usage line (every command's without one).
int usage(std::string_view cmd, const std::string& why) {
  if (!why.empty()) std::cerr << "onecopy: " << why << "\n";
  if (const auto* c = oc::client::find_command(cmd)) {
    std::cerr << "usage: " << c->usage << "\n(onecopy " << cmd << " --help for the options)\n";
  } else {
    oc::client::print_overview(std::cerr);
  }
  return kExitUsage;
}

// @p args with their first @p count positional arguments (neither an option nor an option's
// value) moved to the front, in order, so that options may come before FILE as well as after it
// (`onecopy inspect --verbose FILE`). @p valued lists the options that take a value; after "--"
// every argument is positional. nullopt when fewer than @p count positional arguments are there.
std::optional<std::vector<std::string>> positionals_first(
    const std::vector<std::string>& args, size_t count,
    std::initializer_list<std::string_view> valued) {
  std::vector<std::string> front, rest;
  bool options = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (options && a == "--") {
      options = false;
    } else if (options && a.size() > 1 && a[0] == '-') {
      rest.push_back(a);
      const bool takes_value = std::find(valued.begin(), valued.end(), a) != valued.end();
      if (takes_value && i + 1 < args.size()) rest.push_back(args[++i]);
    } else if (front.size() < count) {
      front.push_back(a);
    } else {
      rest.push_back(a);
    }
  }
  if (front.size() < count) return std::nullopt;
  front.insert(front.end(), rest.begin(), rest.end());
  return front;
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

int run_scan(const std::vector<std::string>& given) {
  const auto ordered = positionals_first(
      given, 1, {"--columns", "--filter", "--limit", "--batch-rows", "--rows", "--format"});
  if (!ordered) return usage("scan", "scan needs a FILE");
  const std::vector<std::string>& args = *ordered;
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
    if (i + 1 >= args.size()) return usage("scan", "option " + a + " needs a value");
    const std::string& v = args[++i];
    if (a == "--columns") {
      opts.columns = split(v, ',');
    } else if (a == "--filter") {
      if (v.empty()) return usage("scan", "--filter takes an expression");
      opts.filter = v;
    } else if (a == "--limit") {
      if (!parse_u64(v, limit)) return usage("scan", "--limit takes a row count");
    } else if (a == "--batch-rows") {
      if (!parse_u64(v, opts.batch_rows)) return usage("scan", "--batch-rows takes a row count");
    } else if (a == "--rows") {
      auto parts = split(v, ':');
      std::pair<uint64_t, uint64_t> r;
      if (parts.size() != 2 || !parse_u64(parts[0], r.first) || !parse_u64(parts[1], r.second)) {
        return usage("scan", "--rows takes BEGIN:END");
      }
      if (r.first > r.second) {
        return usage("scan", "--rows: row range " + v + " is reversed (end before begin)");
      }
      if (r.first == r.second) {
        return usage("scan", "--rows: row range " + v + " is empty (END is exclusive)");
      }
      opts.row_range = r;
    } else if (a == "--format") {
      if (!parse_format(v, out)) return usage("scan", "--format is csv, jsonl or arrow");
    } else {
      return usage("scan", "unknown option " + a);
    }
  }
  opts.strings = out.strings();
  auto uris = oc::net::expand_uri(args[0]);
  if (!uris.ok()) return fail(uris.error());
  // Files are scanned in turn, the next one's scan started before this one is read: a scan
  // pushed into the OSDs has the next object's calls in flight meanwhile.
  struct Opened {
    std::shared_ptr<oc::format::VortexFile> file;
    std::unique_ptr<oc::format::Scan> scan;
  };
  auto start = [&](const std::string& uri) -> oc::Result<Opened> {
    OC_ASSIGN_OR_RETURN(auto file, oc::net::open_uri(uri));
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

int run_take(const std::vector<std::string>& given) {
  const auto ordered = positionals_first(given, 2, {"--columns", "--format"});
  if (!ordered) return usage("take", "take needs a FILE and ROW,ROW,...");
  const std::vector<std::string>& args = *ordered;
  std::vector<uint64_t> rows;
  for (const auto& r : split(args[1], ',')) {
    uint64_t v = 0;
    if (!parse_u64(r, v))
      return usage("take", "take rows are 0-based row numbers separated by commas");
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
    if (i + 1 >= args.size()) return usage("take", "option " + a + " needs a value");
    const std::string& v = args[++i];
    if (a == "--columns") {
      columns = split(v, ',');
    } else if (a == "--format") {
      if (!parse_format(v, out)) return usage("take", "--format is csv, jsonl or arrow");
    } else {
      return usage("take", "unknown option " + a);
    }
  }
  auto file = oc::net::open_uri(args[0]);
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

int run_inspect(const std::vector<std::string>& given) {
  const auto ordered = positionals_first(given, 1, {});
  if (!ordered) return usage("inspect", "inspect needs a FILE");
  const std::vector<std::string>& args = *ordered;
  bool json = false;
  bool verbose = false;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--json")
      json = true;
    else if (args[i] == "--verbose" || args[i] == "-v")
      verbose = true;
    else
      return usage("inspect", "unknown option " + args[i]);
  }
  auto file = oc::net::open_uri(args[0]);
  if (!file.ok()) return fail(file.error());
  auto r = oc::client::inspect(**file, std::cout, json, verbose);
  if (!r.ok()) return fail(r.error());
  return 0;
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
      return usage("status", "status: unexpected argument " + args[i]);
    }
  }
  auto r = oc::client::query_status(oc::client::client_socket_path(socket));
  if (!r.ok()) return fail(r.error());
  const auto& s = *r;
  if (json) {
    std::cout << oc::daemon::status_json(s) << "\n";
    return 0;
  }
  oc::client::print_status(std::cout, s);
  return 0;
}

// onecopy cache clear [--socket PATH]: empties the node's caches.
int run_cache(const std::vector<std::string>& args) {
  std::string socket;
  if (args.empty() || args[0] != "clear") return usage("cache", "cache: say `cache clear`");
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--socket" && i + 1 < args.size()) {
      socket = args[++i];
    } else {
      return usage("cache", "cache: unexpected argument " + args[i]);
    }
  }
  auto r = oc::client::clear_cache(oc::client::client_socket_path(socket));
  if (!r.ok()) return fail(r.error());
  std::cout << "cleared " << oc::client::human_bytes(r->memory_bytes) << " in memory, "
            << oc::client::human_bytes(r->disk_bytes) << " on disk, "
            << oc::client::human_bytes(r->metadata_bytes) << " of metadata\n";
  return 0;
}

// onecopy metrics [--socket PATH]: onecopyd's status for Prometheus (text exposition format).
int run_metrics(const std::vector<std::string>& args) {
  std::string socket;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--socket" && i + 1 < args.size()) {
      socket = args[++i];
    } else {
      return usage("metrics", "metrics: unexpected argument " + args[i]);
    }
  }
  auto r = oc::client::query_status(oc::client::client_socket_path(socket));
  if (!r.ok()) return fail(r.error());
  std::cout << oc::daemon::status_prometheus(*r);
  return 0;
}

bool asks_help(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(),
                     [](const std::string& a) { return a == "--help" || a == "-h"; });
}

// The commands written in Python (convert and index use vortex-data's writer; prefetch is a few
// scans): `onecopy CMD` is onecopy.CMD, run with the same arguments by the first Python that has
// the onecopy package: $ONECOPY_PYTHON as it is, else
// python3 (or python) beside this executable, which is the virtual environment's when the wheel
// installed onecopy there, else python3 on PATH (an activated environment's).
bool has_onecopy(const std::string& python) {
  std::vector<std::string> argv{python, "-c",
                                "import importlib.util, sys; "
                                "sys.exit(importlib.util.find_spec('onecopy') is None)"};
  std::vector<char*> ptrs;
  for (auto& a : argv) ptrs.push_back(a.data());
  ptrs.push_back(nullptr);
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&quiet, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, ptrs[0], &quiet, nullptr, ptrs.data(), environ);
  posix_spawn_file_actions_destroy(&quiet);
  if (rc != 0) return false;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int run_python_tool(const std::string& cmd, const std::vector<std::string>& args) {
  std::vector<std::string> tried;
  std::string python, origin;
  if (const char* env = std::getenv("ONECOPY_PYTHON"); env && *env) {
    python = env;
    origin = " (from $ONECOPY_PYTHON)";
  } else {
    std::vector<std::string> candidates;
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
      for (const char* name : {"python3", "python"}) {
        candidates.push_back((self.parent_path() / name).string());
      }
    }
    candidates.emplace_back("python3");
    for (const auto& c : candidates) {
      if (c.find('/') != std::string::npos && ::access(c.c_str(), X_OK) != 0) continue;
      tried.push_back(c);
      if (has_onecopy(c)) {
        python = c;
        break;
      }
    }
  }
  if (python.empty() && asks_help(args)) {
    oc::client::print_command_help(std::cout, *oc::client::find_command(cmd));
    std::cout << "\n(no Python with the onecopy package was found to list all the options)\n";
    return 0;
  }
  if (python.empty()) {
    std::cerr << "onecopy " << cmd << ": no Python with the onecopy package (tried";
    for (const auto& t : tried) std::cerr << " " << t;
    std::cerr << "). Install it into a virtual environment (pip install onecopy vortex-data) and "
                 "run that environment's onecopy, or set ONECOPY_PYTHON to its python.\n";
    return kExitError;
  }
  std::vector<std::string> argv{python, "-m", "onecopy." + cmd};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> ptrs;
  for (auto& a : argv) ptrs.push_back(a.data());
  ptrs.push_back(nullptr);
  ::execvp(ptrs[0], ptrs.data());
  std::cerr << "onecopy " << cmd << ": cannot run " << python << origin << " -m onecopy." << cmd
            << " (" << std::strerror(errno) << ")\n";
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
  if (args.empty()) return usage("", "");
  const std::string cmd = args[0];
  args.erase(args.begin());
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    const auto* c = args.empty() ? nullptr : oc::client::find_command(args[0]);
    if (!args.empty() && c == nullptr) return usage("", "unknown command " + args[0]);
    if (c)
      oc::client::print_command_help(std::cout, *c);
    else
      oc::client::print_overview(std::cout);
    return 0;
  }
  const auto* command = oc::client::find_command(cmd == "--version" ? "version" : cmd);
  if (command == nullptr) return usage("", "unknown command " + cmd);
  // The Python tools' options are theirs: their own --help lists them.
  const bool python_tool = cmd == "convert" || cmd == "index" || cmd == "prefetch";
  if (!python_tool && asks_help(args)) {
    oc::client::print_command_help(std::cout, *command);
    return 0;
  }
  if (auto r = oc::load_defaults_from_env(); !r.ok()) return fail(r.error());
  if (auto r = oc::log::init(oc::defaults().log_level); !r.ok()) return fail(r.error());
  try {
    if (cmd == "scan") return run_scan(args);
    if (cmd == "take") return run_take(args);
    if (cmd == "inspect") return run_inspect(args);
    if (cmd == "defaults") return run_defaults();
    if (cmd == "status") return run_status(args);
    if (cmd == "metrics") return run_metrics(args);
    if (cmd == "cache") return run_cache(args);
    if (cmd == "ls") return oc::client::run_ls(args);
    if (cmd == "cp") return oc::client::run_cp(args);
    if (python_tool) return run_python_tool(cmd, args);
    if (cmd == "version" || cmd == "--version") {
      std::cout << "onecopy " << OC_VERSION << "\n";
      return 0;
    }
  } catch (const std::bad_alloc&) {
    std::cerr << "onecopy: out of memory\n";
    return kExitError;
  }
  return usage("", "unknown command " + cmd);
}
