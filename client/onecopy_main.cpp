// SPDX-License-Identifier: Apache-2.0
// `onecopy`: the command-line client.
//
//   onecopy inspect FILE [--json]
//   onecopy scan FILE [--columns a,b] [--limit N] [--rows BEGIN:END] [--batch-rows N]
//                     [--format csv|jsonl]
//   onecopy ls s3://bucket[/prefix] [--recursive]
//   onecopy cp SRC DST          S3 (or an http(s) URL) to a local file, or a local file to S3
//   onecopy defaults            every knob with its environment variable and default
//   onecopy version
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "client/inspect.hpp"
#include "client/open_uri.hpp"
#include "client/row_format.hpp"
#include "client/s3_commands.hpp"
#include "config/defaults.hpp"
#include "config/log.hpp"
#include "format/reader.hpp"
#include "onecopy_build_config.h"

namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

int usage(const std::string& why) {
  if (!why.empty()) std::cerr << "onecopy: " << why << "\n";
  std::cerr << "usage:\n"
               "  onecopy inspect FILE|s3://bucket/key|URL [--json]\n"
               "  onecopy scan FILE [--columns a,b] [--limit N] [--rows BEGIN:END]\n"
               "                    [--batch-rows N] [--format csv|jsonl]\n"
               "  onecopy ls s3://bucket[/prefix] [--recursive]\n"
               "  onecopy cp SRC DST   (S3 or an http(s) URL to a file, or a file to S3)\n"
               "  onecopy defaults\n"
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

int run_scan(const std::vector<std::string>& args) {
  if (args.empty()) return usage("scan needs a FILE");
  oc::format::ScanOptions opts;
  uint64_t limit = UINT64_MAX;
  auto fmt = oc::client::RowFormat::csv;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (i + 1 >= args.size()) return usage("option " + a + " needs a value");
    const std::string& v = args[++i];
    if (a == "--columns") {
      opts.columns = split(v, ',');
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
      if (v == "csv") fmt = oc::client::RowFormat::csv;
      else if (v == "jsonl") fmt = oc::client::RowFormat::jsonl;
      else return usage("--format is csv or jsonl");
    } else {
      return usage("unknown option " + a);
    }
  }
  auto file = oc::client::open_uri(args[0]);
  if (!file.ok()) return fail(file.error());
  auto scan = (*file)->scan(opts);
  if (!scan.ok()) return fail(scan.error());
  bool header = true;
  uint64_t printed = 0;
  while (printed < limit) {
    auto batch = (*scan)->next();
    if (!batch.ok()) return fail(batch.error());
    if (!*batch) break;
    oc::format::ColumnPtr b = **batch;
    if (b->length > limit - printed) b = oc::format::slice(b, 0, limit - printed);
    oc::client::write_rows(std::cout, *b, fmt, header);
    header = false;
    printed += b->length;
  }
  if (header && fmt == oc::client::RowFormat::csv) {
    oc::format::Column empty;
    empty.dtype = (*scan)->dtype();
    oc::client::write_rows(std::cout, empty, fmt, true);
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
    if (cmd == "inspect") return run_inspect(args);
    if (cmd == "defaults") return run_defaults();
    if (cmd == "ls") return oc::client::run_ls(args);
    if (cmd == "cp") return oc::client::run_cp(args);
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
