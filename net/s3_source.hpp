// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Vortex files in object storage: a `format::SegmentSource` over the S3 client.
///
/// Opening costs one HEAD (size and ETag), or none when a listing already said them; every later
/// read is pinned to that ETag, which is also the version its bytes are cached under
/// (format/byte_cache.hpp). A batch of
/// segment ranges is coalesced with the object-store options (`object_coalesce_distance`,
/// `object_coalesce_max`; or those a caller passes to `read_coalesced`), each merged read lands in
/// a lease of the pinned pool, and the segments handed to the decoder are slices of those leases:
/// the bytes are never copied again.
#pragma once

#include <memory>
#include <string_view>

#include "config/error.hpp"
#include "format/segment_source.hpp"
#include "net/s3_client.hpp"

namespace oc::net {

/// Opens @p obj through @p client: one HEAD (or a 1-byte GET for a URL) for its size and ETag.
[[nodiscard]] Result<std::shared_ptr<format::SegmentSource>> open_object_source(
    std::shared_ptr<S3Client> client, ObjectRef obj);
/// Opens @p obj as @p known says it is (a listing's size and ETag), without a request: reads
/// are pinned to that ETag, so an object that has changed since fails them (`Errc::corrupt`,
/// "the object changed while being read", from the 412), never serving another version's bytes.
[[nodiscard]] std::shared_ptr<format::SegmentSource> open_object_source(
    std::shared_ptr<S3Client> client, ObjectRef obj, ObjectInfo known);

/// What the caches (format/byte_cache.hpp, format/metadata_cache.hpp) key @p obj's bytes by: its
/// ETag for an S3 object; none for a URL object, whose name drops its query (a signature, which
/// no cache file may hold, or a selector of another resource) and whose ETag a server may reuse
/// across resources.
[[nodiscard]] std::string cache_version(const ObjectRef& obj, const ObjectInfo& info);

/// Opens `s3://bucket/key` or an `http(s)://` URL with a client configured from the environment
/// (shared by every call in the process), or a local path.
[[nodiscard]] Result<std::shared_ptr<format::SegmentSource>> open_any_source(std::string_view uri);

/// The process-wide client configured from the environment, created on first use.
[[nodiscard]] Result<std::shared_ptr<S3Client>> environment_client();
/// The client environment_client() made, or null when nothing has asked for one yet (so that a
/// status query never resolves credentials).
[[nodiscard]] std::shared_ptr<S3Client> environment_client_if_made();
/// Drops the process-wide client, so that the next environment_client() reads the AWS_*
/// environment again; readers already open keep the client they hold.
void forget_environment_client();

/// Parses "s3://bucket/key" or an http(s) URL into an `ObjectRef`.
[[nodiscard]] Result<ObjectRef> object_ref_from_uri(std::string_view uri);

}  // namespace oc::net
