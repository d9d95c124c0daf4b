// SPDX-License-Identifier: Apache-2.0
#include "net/dataset.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "config/crc32c.hpp"
#include "config/log.hpp"
#include "format/metadata_cache.hpp"
#include "format/shard.hpp"
#include "format/string_views.hpp"
#include "net/open_uri.hpp"
#include "net/s3_source.hpp"

namespace oc::net {
namespace {

// Footers read from their own files at once by one index: an index of many small files is bound
// by the store's bandwidth, not by one request's latency; and by all indexes of the process, so
// that many clients' requests do not grow it by as many threads.
constexpr size_t kOpenThreads = 16;
constexpr size_t kOpenThreadsPerProcess = 64;
std::atomic<size_t> open_threads{0};
// The footer bytes one index with `footers` may gather (the client's largest reply).
constexpr uint64_t kMaxFooterBytes = uint64_t{64} << 20;

// Quoted as a response's ETag header is (some servers list it bare), so that a version means
// the same whichever way it was learnt.
void quote_etag(std::string& etag) {
  if (!etag.empty() && etag.front() != '"') etag = '"' + etag + '"';
}

bool under_metadata_dir(std::string_view key) {
  return key.starts_with("_onecopy/") || key.find("/_onecopy/") != std::string_view::npos;
}

struct ManifestEntry {
  std::string etag;
  uint64_t size = 0, footer_offset = 0;
  uint32_t crc = 0;
  format::Buffer footer;
};

// Column @p name of a manifest batch, when present with one of @p kinds.
const format::Column* column(const format::Column& batch, const format::DType& type,
                             std::string_view name, format::TypeKind kind,
                             format::PType ptype = format::PType::u8) {
  for (size_t i = 0; i < type.names.size() && i < batch.children.size(); ++i) {
    if (type.names[i] != name) continue;
    const format::DType& t = *type.children[i];
    if (t.kind != kind || (kind == format::TypeKind::primitive && t.ptype != ptype)) return nullptr;
    return batch.children[i].get();
  }
  return nullptr;
}

// The manifest's entries by key relative to the prefix; an error when it is not one.
Result<std::unordered_map<std::string, ManifestEntry>> read_manifest(
    std::shared_ptr<S3Client> client, const ObjectRef& ref, const ObjectInfo& info) {
  using format::PType;
  using format::TypeKind;
  OC_ASSIGN_OR_RETURN(auto file, open_object_file(client, ref, &info));
  format::ScanOptions o;
  o.strings = format::StringLayout::offsets;
  OC_ASSIGN_OR_RETURN(auto scan, file->scan(o));
  std::unordered_map<std::string, ManifestEntry> out;
  const format::DType& type = *file->dtype();
  OC_EXPECT(type.kind == TypeKind::struct_, corrupt, "{}: not a table", ref.describe());
  while (true) {
    OC_ASSIGN_OR_RETURN(auto batch, scan->next());
    if (!batch) break;
    const format::Column& b = **batch;
    const auto* key = column(b, type, "key", TypeKind::utf8);
    const auto* etag = column(b, type, "etag", TypeKind::utf8);
    const auto* size = column(b, type, "size", TypeKind::primitive, PType::u64);
    const auto* offset = column(b, type, "footer_offset", TypeKind::primitive, PType::u64);
    const auto* footer = column(b, type, "footer", TypeKind::binary);
    const auto* crc = column(b, type, "footer_crc32c", TypeKind::primitive, PType::u32);
    OC_EXPECT(key && etag && size && offset && footer && crc, corrupt,
              "{}: not a onecopy manifest (its columns are key, etag, size, rows, "
              "footer_offset, footer and footer_crc32c)",
              ref.describe());
    for (uint64_t i = 0; i < b.length; ++i) {
      if (!key->is_valid(i) || !etag->is_valid(i) || !footer->is_valid(i)) continue;
      ManifestEntry e;
      e.etag = std::string(format::string_at(*etag, i));
      e.size = format::unsigned_at(*size, i);
      e.footer_offset = format::unsigned_at(*offset, i);
      e.crc = static_cast<uint32_t>(format::unsigned_at(*crc, i));
      const std::string_view bytes = format::string_at(*footer, i);
      e.footer =
          format::Buffer::copy_of({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
      out[std::string(format::string_at(*key, i))] = std::move(e);
    }
  }
  return out;
}

}  // namespace

Result<std::vector<ListedObject>> list_matching_objects(S3Client& client, const S3Uri& pattern,
                                                        uint64_t max_entries,
                                                        std::optional<ListedObject>* manifest) {
  const std::string& key = pattern.key;
  const bool prefix_only = key.empty() || key.back() == '/';
  const std::string list_prefix = prefix_only ? key : key.substr(0, key.find_first_of("*?["));
  OC_ASSIGN_OR_RETURN(auto page, client.list_all(pattern.bucket, list_prefix, "", max_entries));
  std::vector<ListedObject> out;
  const std::string manifest_key = key + std::string(kManifestName);
  for (auto& o : page.contents) {
    if (manifest && prefix_only && o.key == manifest_key) {
      *manifest = o;
      quote_etag((*manifest)->etag);
    }
    if (under_metadata_dir(std::string_view(o.key).substr(list_prefix.size()))) continue;
    // Without FNM_PATHNAME, `*` crosses `/`: keys have no directories, only a convention.
    const bool match =
        prefix_only ? is_vortex_name(o.key) : ::fnmatch(key.c_str(), o.key.c_str(), 0) == 0;
    if (!match) continue;
    quote_etag(o.etag);
    out.push_back(std::move(o));
  }
  std::sort(out.begin(), out.end(),
            [](const ListedObject& a, const ListedObject& b) { return a.key < b.key; });
  return out;
}

Result<std::shared_ptr<format::VortexFile>> open_object_file(std::shared_ptr<S3Client> client,
                                                             ObjectRef obj,
                                                             const ObjectInfo* known) {
  ObjectInfo info;
  if (known) {
    info = *known;
  } else {
    OC_ASSIGN_OR_RETURN(info, client->stat(obj));
  }
  const std::string version = cache_version(obj, info);
  auto source = open_object_source(std::move(client), std::move(obj), info);
  auto& cache = format::MetadataCache::process();
  if (!version.empty()) {
    if (auto footer = cache.find(source->name(), version)) {
      return format::VortexFile::open(std::move(source), std::move(*footer));
    }
  }
  OC_ASSIGN_OR_RETURN(auto file, format::VortexFile::open(source));
  if (!version.empty()) cache.keep(source->name(), version, file->footer());
  return file;
}

Result<DatasetIndex> index_dataset(std::string_view pattern, const DatasetOptions& options) {
  OC_ASSIGN_OR_RETURN(S3Uri uri, parse_s3_uri(pattern));
  OC_ASSIGN_OR_RETURN(auto client, environment_client());
  std::optional<ListedObject> manifest_object;
  OC_ASSIGN_OR_RETURN(std::vector<ListedObject> objects,
                      list_matching_objects(*client, uri, options.max_entries, &manifest_object));
  const auto may_read = [&](std::string_view key) {
    return !options.may_read || options.may_read(uri.bucket, key);
  };
  std::erase_if(objects, [&](const ListedObject& o) { return !may_read(o.key); });
  OC_EXPECT(!objects.empty(), not_found, "no Vortex files match {}", pattern);

  DatasetIndex index;
  std::unordered_map<std::string, ManifestEntry> manifest;
  if (manifest_object && may_read(manifest_object->key)) {
    const ObjectRef ref{uri.bucket, manifest_object->key, "", false};
    const ObjectInfo info{manifest_object->key, manifest_object->size, manifest_object->etag, ""};
    auto read = read_manifest(client, ref, info);
    if (read.ok()) {
      manifest = std::move(*read);
      index.manifest = ref.describe();
    } else {
      log::get().warn("{}: not used ({}); each file's footer is read instead", ref.describe(),
                      read.error().describe());
    }
  }

  index.files.resize(objects.size());
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> from_cache{0}, from_manifest{0}, fallbacks{0}, footer_bytes{0};
  std::mutex error_mu;
  std::optional<Error> first_error;
  auto index_one = [&](size_t i) -> Result<void> {
    const ListedObject& o = objects[i];
    const ObjectRef ref{uri.bucket, o.key, "", false};
    const ObjectInfo info{o.key, o.size, o.etag, o.last_modified};
    DatasetFile& out = index.files[i];
    out.uri = ref.describe();
    out.etag = o.etag;
    out.size = o.size;
    auto& cache = format::MetadataCache::process();
    std::optional<format::Footer> footer = cache.find(out.uri, o.etag);
    if (footer) {
      ++from_cache;
    } else if (auto e = manifest.find(o.key.substr(uri.key.size()));
               e != manifest.end() && e->second.etag == o.etag && e->second.size == o.size &&
               crc32c(e->second.footer.span()) == e->second.crc) {
      auto parsed = catch_all("reading a manifest footer", [&] {
        return format::footer_from_bytes(out.uri, o.size, e->second.footer_offset,
                                         e->second.footer);
      });
      if (parsed.ok()) {
        footer = std::move(*parsed);
        cache.keep(out.uri, o.etag, *footer);
        ++from_manifest;
      }
    }
    std::shared_ptr<format::VortexFile> file;
    if (footer) {
      OC_ASSIGN_OR_RETURN(file, format::VortexFile::open(open_object_source(client, ref, info),
                                                         std::move(*footer)));
    } else {
      OC_ASSIGN_OR_RETURN(file, open_object_file(client, ref, &info));
      ++fallbacks;
    }
    out.rows = file->row_count();
    if (options.unit_rows > 0) {
      OC_ASSIGN_OR_RETURN(auto units, format::file_units(*file, 0, options.unit_rows));
      out.units.reserve(2 * units.size());
      for (const auto& u : units) out.units.insert(out.units.end(), {u.begin, u.end});
    }
    if (options.footers) {
      const format::Footer& f = file->footer();
      const uint64_t gathered = footer_bytes += o.size - f.footer_start;
      OC_EXPECT(gathered <= kMaxFooterBytes, invalid,
                "{}: its files' footers are over {} MiB, more than one reply holds: index a "
                "narrower prefix",
                pattern, kMaxFooterBytes >> 20);
      out.footer_offset = f.footer_start;
      out.footer = f.tail.slice(f.footer_start - f.tail_range.offset, o.size - f.footer_start);
    }
    return {};
  };
  auto worker = [&] {
    for (size_t i = next++; i < objects.size(); i = next++) {
      Result<void> r = [&]() -> Result<void> {
        try {
          return index_one(i);
        } catch (const std::exception& e) {
          return Error(Errc::io, fmt::format("indexing {}: {}", objects[i].key, e.what()));
        } catch (...) {
          return Error(Errc::io, fmt::format("indexing {} failed", objects[i].key));
        }
      }();
      if (!r.ok()) {
        std::lock_guard lock(error_mu);
        if (!first_error) first_error = r.error();
        next = objects.size();  // the others stop after the file they are on
      }
    }
  };
  std::vector<std::thread> threads;
  const size_t want = std::min(kOpenThreads, objects.size()) - 1;  // this thread works too
  const size_t got =
      std::min(want, kOpenThreadsPerProcess -
                         std::min(kOpenThreadsPerProcess, open_threads.fetch_add(want)));
  open_threads -= want - got;
  for (size_t t = 0; t < got; ++t) {
    try {
      threads.emplace_back(worker);
    } catch (const std::system_error&) {  // fewer threads, the same index
      open_threads -= got - t;
      break;
    }
  }
  worker();
  for (auto& t : threads) t.join();
  open_threads -= threads.size();
  if (first_error) return std::move(*first_error);
  index.from_cache = from_cache;
  index.from_manifest = from_manifest;
  index.fallbacks = fallbacks;
  return index;
}

}  // namespace oc::net
