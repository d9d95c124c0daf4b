// SPDX-License-Identifier: Apache-2.0
#include "client/cli_help.hpp"

#include <array>

namespace oc::client {
namespace {

constexpr std::array<CliCommand, 14> kCommands{{
    {"inspect", "a Vortex file's schema, rows, layout and encodings",
     "onecopy inspect FILE|s3://bucket/key|rados://pool/object|URL [--verbose] [--json]",
     "  (default)      one screen: size, footer, rows, and per column its type, chunks,\n"
     "                 bytes, encodings and statistics\n"
     "  --verbose, -v  the whole layout tree, with every segment, encoding and zone map\n"
     "  --json         the whole report (layout tree, encodings, segments, zone maps) as JSON\n"},
    {"scan", "rows of one file or of every file a pattern names, filtered and projected",
     "onecopy scan FILE|PATTERN [--columns a,b] [--filter EXPR] [--limit N] [--rows BEGIN:END]\n"
     "             [--batch-rows N] [--format csv|jsonl|arrow] [--explain]",
     "  PATTERN        a directory, a glob, or an s3:// or rados:// prefix (ending in /) or glob:\n"
     "                 its files, of one schema, are scanned in turn (--rows applies to each)\n"
     "  --columns a,b  the columns to print (all by default)\n"
     "  --filter EXPR  keep the rows where the SQL WHERE predicate EXPR is TRUE,\n"
     "                 e.g. \"score > 0.5 AND tag IN ('a', 'b')\"\n"
     "  --limit N      stop after N rows\n"
     "  --rows B:E     rows B (inclusive) to E (exclusive) of each file\n"
     "  --batch-rows N at most N rows per batch\n"
     "  --format F     csv (default), jsonl, or arrow: an Arrow IPC stream on stdout\n"
     "  --explain      print no rows but what was read and pruned, and where the time went\n"},
    {"take", "given rows of a file, in any order",
     "onecopy take FILE ROW,ROW,... [--columns a,b] "
     "[--format csv|jsonl|arrow] [--explain]",
     "  ROW,ROW,...    0-based row numbers, any order, repeats allowed\n"
     "  --columns a,b  the columns to print (all by default)\n"
     "  --format F     csv (default), jsonl or arrow\n"
     "  --explain      print no rows but the reads the take made\n"},
    {"ls", "objects under an S3 prefix or in a RADOS pool",
     "onecopy ls s3://bucket[/prefix] [--recursive] | rados://pool[/prefix]",
     "  --recursive, -r  every key under the prefix, not one level\n"
     "S3 is reached with the usual AWS environment (AWS_ENDPOINT_URL, AWS_REGION, AWS_PROFILE,\n"
     "AWS_ACCESS_KEY_ID/..., IMDSv2); RADOS as any Ceph client (CEPH_CONF, CEPH_ARGS).\n"},
    {"cp", "copy between S3 (or RADOS, or an http(s) URL) and a local file", "onecopy cp SRC DST",
     "  One side is s3://bucket/key (or rados://pool/object; an http(s) URL as SRC), the other\n"
     "  a local path; a DST ending in / keeps the source's name.\n"},
    {"convert", "Parquet, JSONL, WebDataset or MDS to Vortex files (vortex-data's writer)",
     "onecopy convert INPUT ... --to DIR|s3://PREFIX/ [--format parquet|jsonl|wds|mds]\n"
     "                [--rows-per-file N]",
     "  Runs python -m onecopy.convert with a Python that has the onecopy package: "
     "$ONECOPY_PYTHON,\n"
     "  else the python3 beside this onecopy (a virtual environment's), else python3 on PATH.\n"
     "  `onecopy convert --help` prints the converter's own options.\n"},
    {"index", "write a dataset's manifest: planning it is then one LIST and one GET",
     "onecopy index s3://BUCKET/PREFIX/ [--socket PATH | --in-process]",
     "  Writes PREFIX/_onecopy/manifest.vortex: per file its key, ETag, size, rows and footer\n"
     "  bytes. A stale manifest costs time, never rows: files it does not describe as listed\n"
     "  are read from their own footers. Runs python -m onecopy.index (as convert runs).\n"},
    {"prefetch", "warm the node's cache for a coming job",
     "onecopy prefetch URI ... [--columns a,b] [--filter EXPR] [--socket PATH | --in-process]",
     "  Scans the files as the job will and drops the rows: the bytes stay in onecopyd's\n"
     "  byte cache. Runs python -m onecopy.prefetch (as convert runs).\n"},
    {"defaults", "every knob: its environment variable, default and meaning", "onecopy defaults",
     "  One line per knob, tab-separated: name, ONECOPY_* variable, default, meaning. onecopyd\n"
     "  reads the same knobs from its config file (onecopyd --print-example-config).\n"},
    {"status", "how onecopyd is doing: clients, scans, bytes, rates, pool, GPU",
     "onecopy status [--json] [--socket PATH]",
     "  --json         the raw figures (bytes, nanoseconds) as one JSON object\n"
     "  --socket PATH  the daemon's socket (default: $ONECOPY_SOCKET, else\n"
     "                 /run/onecopy/onecopyd.sock)\n"
     "  Lists the asking user's scans with where their time went (root sees every user's).\n"},
    {"metrics", "onecopyd's status in Prometheus' text format", "onecopy metrics [--socket PATH]",
     "  --socket PATH  as for status\n"},
    {"cache", "empty the node's byte and metadata caches (root or onecopyd's user)",
     "onecopy cache clear [--socket PATH]",
     "  Drops every cached range, in memory and on disk (cache_dir), and every cached footer.\n"
     "  Scans under way go on, reading from storage.\n"},
    {"version", "this onecopy's version", "onecopy version", ""},
    {"help", "this overview, or one command's help", "onecopy help [COMMAND]", ""},
}};

}  // namespace

const CliCommand* find_command(std::string_view name) {
  for (const CliCommand& c : kCommands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

void print_overview(std::ostream& out) {
  out << "usage: onecopy COMMAND [ARGS]   (onecopy COMMAND --help for its options)\n\n"
         "Reads Vortex files, local or in object storage, and talks to onecopyd.\n\n"
         "commands:\n";
  for (const CliCommand& c : kCommands) {
    out << "  " << c.name << std::string(10 - c.name.size(), ' ') << c.summary << "\n";
  }
  out << "\nONECOPY_* variables set the knobs (onecopy defaults); AWS_* reach S3.\n";
}

void print_command_help(std::ostream& out, const CliCommand& cmd) {
  out << "usage: " << cmd.usage << "\n" << cmd.summary << "\n";
  if (!cmd.details.empty()) out << "\n" << cmd.details;
}

}  // namespace oc::client
