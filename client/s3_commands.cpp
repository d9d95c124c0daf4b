// SPDX-License-Identifier: Apache-2.0
#include "client/s3_commands.hpp"

#include <chrono>
#include <iostream>

#include "client/rados_commands.hpp"
#include "net/s3_source.hpp"
#include "net/s3_transfer.hpp"
#include "net/url.hpp"

namespace oc::client {
namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

int fail(const Error& e) {
  std::cerr << "onecopy: " << e.to_string() << "\n";
  return kExitError;
}

bool is_remote(const std::string& s) {
  return s.starts_with("s3://") || s.starts_with("http://") || s.starts_with("https://");
}

}  // namespace

int run_ls(const std::vector<std::string>& args) {
  std::string uri;
  bool recursive = false;
  for (const auto& a : args) {
    if (a == "--recursive" || a == "-r")
      recursive = true;
    else if (uri.empty())
      uri = a;
    else {
      std::cerr << "onecopy: ls takes one s3://bucket/prefix\n";
      return kExitUsage;
    }
  }
  if (uri.starts_with("rados://")) return run_rados_ls(uri);
  auto parsed = net::parse_s3_uri(uri);
  if (!parsed.ok()) return fail(parsed.error());
  auto client = net::environment_client();
  if (!client.ok()) return fail(client.error());
  auto page = (*client)->list_all(parsed->bucket, parsed->key, recursive ? "" : "/");
  if (!page.ok()) return fail(page.error());
  for (const auto& p : page->common_prefixes) std::cout << "PRE " << p << "\n";
  for (const auto& o : page->contents) {
    std::cout << o.last_modified << " " << o.size << " " << o.key << "\n";
  }
  std::cout.flush();
  return std::cout.good() ? 0 : kExitError;
}

int run_cp(const std::vector<std::string>& args) {
  if (args.size() != 2) {
    std::cerr << "onecopy: cp takes SRC DST (one of them s3://...)\n";
    return kExitUsage;
  }
  const std::string& src = args[0];
  const std::string& dst = args[1];
  if (src.starts_with("rados://") || dst.starts_with("rados://")) return run_rados_cp(src, dst);
  auto client = net::environment_client();
  if (!client.ok()) return fail(client.error());
  const auto t0 = std::chrono::steady_clock::now();
  Result<net::TransferResult> r = OC_ERROR(Errc::invalid, "unreachable");
  if (is_remote(src) && !is_remote(dst)) {
    auto ref = net::object_ref_from_uri(src);
    if (!ref.ok()) return fail(ref.error());
    r = net::download_to_file(**client, *ref, dst);
  } else if (!is_remote(src) && dst.starts_with("s3://")) {
    auto to = net::parse_s3_uri(dst);
    if (!to.ok()) return fail(to.error());
    std::string key = to->key;
    if (key.empty() || key.ends_with('/')) key += src.substr(src.find_last_of('/') + 1);
    r = net::upload_from_file(**client, src, to->bucket, key);
  } else {
    std::cerr << "onecopy: cp copies between S3 and a local file (one side must be s3://)\n";
    return kExitUsage;
  }
  if (!r.ok()) return fail(r.error());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cerr << fmt::format("{} -> {}: {} bytes in {} {}{}, {:.1f} MB/s\n", net::redact_url(src),
                           net::redact_url(dst), r->bytes, r->requests,
                           r->multipart ? "parts" : "requests", r->multipart ? " (multipart)" : "",
                           r->bytes / 1e6 / std::max(s, 1e-9));
  const auto& k = (*client)->counters();
  const uint64_t attempts = std::max<uint64_t>(k.attempts.load(), 1);
  std::cerr << fmt::format(
      "  S3 requests {}, retries {}, hedges {}, body bytes copied in user space {}, "
      "mean time to first byte {:.1f} ms, CPU in requests {:.3f} s\n",
      k.requests.load(), k.retries.load(), k.hedges.load(), k.copied_bytes.load(),
      k.ttfb_ns_total.load() / 1e6 / attempts, k.cpu_ns.load() / 1e9);
  return 0;
}

}  // namespace oc::client
