// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief A dataset's index: the files an s3:// prefix or glob names, with their versions, row
/// counts and units, planned with one LIST and at most one GET whatever the file count.
///
/// Each file's footer comes, in this order, from the process's metadata cache
/// (format/metadata_cache.hpp) under (object, ETag); from the dataset manifest, the Vortex file
/// `<prefix>_onecopy/manifest.vortex` that `onecopy index` writes beside the data, when its entry
/// has the listed ETag and size; else from the file itself (a footer GET, no HEAD: the listing
/// said its size and ETag), counted as a fallback. A manifest is an optimisation, never the
/// truth: an entry that disagrees with the listing, or whose footer bytes do not parse as a
/// footer of a file of the listed size, is passed over, and row counts always come from the
/// footers. Its columns:
///
/// | column          | type   | meaning                                               |
/// |-----------------|--------|-------------------------------------------------------|
/// | key             | utf8   | the object's key relative to the prefix               |
/// | etag            | utf8   | its ETag when indexed (quotes included, as S3 sends)  |
/// | size            | u64    | its size in bytes                                     |
/// | rows            | u64    | its row count (informative: the footer's is used)     |
/// | footer_offset   | u64    | where its footer begins (format/footer.hpp)           |
/// | footer          | binary | its bytes from footer_offset to the end               |
/// | footer_crc32c   | u32    | CRC-32C of `footer`                                   |
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.hpp"
#include "format/reader.hpp"
#include "net/s3_client.hpp"
#include "net/s3_xml.hpp"
#include "net/url.hpp"

namespace oc::net {

/// Where a prefix's manifest lives, relative to the prefix.
inline constexpr std::string_view kManifestName = "_onecopy/manifest.vortex";

/// One file of a dataset.
struct DatasetFile {
  std::string uri;
  std::string etag;
  uint64_t size = 0;
  uint64_t rows = 0;
  std::vector<uint64_t> units;  ///< begin, end row pairs (format/shard.hpp file_units)
  uint64_t footer_offset = 0;   ///< with `DatasetOptions::footers`: the footer's bytes
  format::Buffer footer;
};

struct DatasetIndex {
  std::vector<DatasetFile> files;  ///< sorted by URI
  std::string manifest;            ///< the manifest used, or empty
  uint64_t from_cache = 0;         ///< footers found in the metadata cache
  uint64_t from_manifest = 0;      ///< footers taken from the manifest
  uint64_t fallbacks = 0;          ///< footers read from the files themselves
};

struct DatasetOptions {
  uint64_t unit_rows = 0;  ///< units of at most this many rows (0: no units)
  bool footers = false;    ///< keep each file's footer bytes (for writing a manifest)
  uint64_t max_entries = UINT64_MAX;
  /// Whether the asker may read an object (onecopyd's grants); files it may not are left out,
  /// and a manifest it may not read is not used. Null: everything.
  std::function<bool(std::string_view bucket, std::string_view key)> may_read;
};

/// The objects of `s3://bucket/prefix/` (every `*.vortex` key under it) or an s3:// glob (the
/// keys it matches, `*` crossing `/`), with their sizes and ETags, from one listing: what
/// net/open_uri.hpp `expand_uri` names, sorted by key. Keys under a `_onecopy/` directory are
/// never data; @p manifest, when given, is set to the prefix's manifest when it was listed.
[[nodiscard]] Result<std::vector<ListedObject>> list_matching_objects(
    S3Client& client, const S3Uri& pattern, uint64_t max_entries = UINT64_MAX,
    std::optional<ListedObject>* manifest = nullptr);

/// The index of `s3://bucket/prefix/` or an s3:// glob (`list_matching_objects`); a manifest is
/// looked for under a prefix only. `not_found` when it names no file the asker may read.
[[nodiscard]] Result<DatasetIndex> index_dataset(std::string_view pattern,
                                                 const DatasetOptions& options);

/// Opens @p obj: one HEAD (for authority and its ETag) unless @p known says its size and ETag,
/// then its footer from the metadata cache, or read and kept there.
[[nodiscard]] Result<std::shared_ptr<format::VortexFile>> open_object_file(
    std::shared_ptr<S3Client> client, ObjectRef obj, const ObjectInfo* known = nullptr);

}  // namespace oc::net
