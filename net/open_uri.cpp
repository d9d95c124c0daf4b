// SPDX-License-Identifier: Apache-2.0
#include "net/open_uri.hpp"

#include <fnmatch.h>
#include <glob.h>

#include <algorithm>
#include <filesystem>

#include "net/dataset.hpp"
#include "net/rados.hpp"
#include "net/rados_pushdown.hpp"
#include "net/s3_source.hpp"
#include "net/url.hpp"

namespace oc::net {

Result<std::shared_ptr<format::VortexFile>> open_uri(std::string_view uri) {
  if (uri.starts_with("rados://")) {
    OC_ASSIGN_OR_RETURN(auto object, parse_rados_uri(uri));
    return open_rados_file(object);
  }
  if (uri.starts_with("s3://") || uri.starts_with("http://") || uri.starts_with("https://")) {
    OC_ASSIGN_OR_RETURN(ObjectRef ref, object_ref_from_uri(uri));
    OC_ASSIGN_OR_RETURN(auto client, environment_client());
    return open_object_file(std::move(client), std::move(ref));
  }
  OC_ASSIGN_OR_RETURN(auto source, net::open_any_source(uri));
  return format::VortexFile::open(std::move(source));
}

namespace {

bool has_wildcard(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

Result<std::vector<std::string>> expand_s3(std::string_view pattern, uint64_t max_entries) {
  OC_ASSIGN_OR_RETURN(net::S3Uri uri, net::parse_s3_uri(pattern));
  OC_ASSIGN_OR_RETURN(auto client, net::environment_client());
  OC_ASSIGN_OR_RETURN(auto objects, list_matching_objects(*client, uri, max_entries));
  std::vector<std::string> out;
  out.reserve(objects.size());
  for (const auto& o : objects) out.push_back("s3://" + uri.bucket + "/" + o.key);
  return out;
}

// rados://pool/ or a name ending in '/' lists the *.vortex objects under that prefix; a name
// with a wildcard lists those it matches; anything else is itself, unchecked.
Result<std::vector<std::string>> expand_rados(const std::string& pattern, uint64_t max_entries) {
  OC_ASSIGN_OR_RETURN(auto uri, parse_rados_uri(pattern, /*allow_empty_object=*/true));
  const bool prefix_only = uri.object.empty() || uri.object.ends_with('/');
  const size_t wild = uri.object.find_first_of("*?[");
  if (!prefix_only && wild == std::string::npos) return std::vector<std::string>{pattern};
  OC_ASSIGN_OR_RETURN(auto pool, rados_pool(uri.pool));
  OC_ASSIGN_OR_RETURN(
      auto names,
      names_under(*pool, prefix_only ? uri.object : uri.object.substr(0, wild), max_entries));
  std::vector<std::string> out;
  for (const auto& n : names) {
    // Without FNM_PATHNAME, `*` crosses `/`, as for S3 keys.
    const bool match =
        prefix_only ? is_vortex_name(n) : ::fnmatch(uri.object.c_str(), n.c_str(), 0) == 0;
    if (match) out.push_back("rados://" + uri.pool + "/" + n);
  }
  OC_EXPECT(!out.empty(), not_found, "no Vortex objects match {}", pattern);
  return out;
}

// std::filesystem's error_code overloads only: a name too long or a directory that vanishes is
// an error for this call, never an exception.
Result<std::vector<std::string>> expand_local(const std::string& pattern, uint64_t max_entries) {
  std::vector<std::string> out;
  std::error_code ec;
  if (std::filesystem::is_directory(pattern, ec)) {
    std::filesystem::directory_iterator it(pattern, ec);
    for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      std::error_code type_ec;
      if (it->is_regular_file(type_ec) && is_vortex_name(it->path().filename().string())) {
        out.push_back(it->path().string());
        OC_EXPECT(out.size() <= max_entries, invalid, "{} holds more than {} Vortex files", pattern,
                  max_entries);
      }
    }
    if (ec) return Error(Errc::io, fmt::format("listing {}: {}", pattern, ec.message()));
    return out;
  }
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g);
  for (size_t i = 0; rc == 0 && i < g.gl_pathc && out.size() <= max_entries; ++i) {
    out.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  OC_EXPECT(out.size() <= max_entries, invalid, "{} matches more than {} files", pattern,
            max_entries);
  OC_EXPECT(rc == 0 || rc == GLOB_NOMATCH, io, "glob {} failed", pattern);
  return out;
}

}  // namespace

bool is_vortex_name(std::string_view name) noexcept {
  return name.size() > 7 && name.ends_with(".vortex");
}

Result<std::vector<std::string>> expand_uri(std::string_view pattern, uint64_t max_entries) {
  const bool s3 = pattern.starts_with("s3://");
  const bool remote = pattern.find("://") != std::string_view::npos;
  if (pattern.starts_with("rados://")) return expand_rados(std::string(pattern), max_entries);
  std::vector<std::string> out;
  if (s3 && (pattern.back() == '/' || has_wildcard(pattern.substr(5)))) {
    OC_ASSIGN_OR_RETURN(out, expand_s3(pattern, max_entries));
  } else if (std::error_code ec;
             !remote && (has_wildcard(pattern) || std::filesystem::is_directory(pattern, ec))) {
    OC_ASSIGN_OR_RETURN(out, expand_local(std::string(pattern), max_entries));
  } else {
    // A local name that is not there is an answer of its own, not a listing of itself: the
    // caller (onecopyd's clients included) learns it here, not from a later open.
    OC_EXPECT(remote || std::filesystem::exists(pattern, ec), not_found,
              "{}: no such file or directory", pattern);
    return std::vector<std::string>{std::string(pattern)};
  }
  OC_EXPECT(!out.empty(), not_found, "no Vortex files match {}", pattern);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace oc::net
