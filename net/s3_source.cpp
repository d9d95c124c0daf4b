// SPDX-License-Identifier: Apache-2.0
#include "net/s3_source.hpp"

#include <mutex>

#include "net/buffer_pool.hpp"
#include "net/url.hpp"

namespace oc::net {
namespace {

// An object's merged reads, each a ranged GET pinned to the ETag seen at open, into a lease of
// the pinned pool: the segments the decoder reads are slices of those leases.
class ObjectReader final : public format::RangeReader {
 public:
  ObjectReader(std::shared_ptr<S3Client> client, ObjectRef obj, ObjectInfo info)
      : RangeReader({info.size, obj.describe(), "object", format::CoalesceOptions::object_store(),
                     cache_version(obj, info)}),
        client_(std::move(client)),
        obj_(std::move(obj)),
        info_(std::move(info)) {}

  Result<std::vector<format::Buffer>> read_merged(
      std::span<const format::ByteRange> reads) override {
    std::vector<Lease> leases;
    std::vector<RangeFetch> fetches;
    leases.reserve(reads.size());
    for (const auto& r : reads) {
      if (r.length == 0) {
        leases.emplace_back();
        continue;
      }
      OC_ASSIGN_OR_RETURN(Lease lease, BufferPool::global().acquire(r.length));
      fetches.push_back({r.offset, lease.bytes().first(r.length)});
      leases.push_back(std::move(lease));
    }
    OC_TRY(client_->fetch_ranges(obj_, info_.etag, fetches));
    std::vector<format::Buffer> out;
    out.reserve(reads.size());
    for (size_t k = 0; k < reads.size(); ++k) {
      out.push_back(format::Buffer::wrap(
          leases[k].owner(), reinterpret_cast<const uint8_t*>(leases[k].data()), reads[k].length));
    }
    return out;
  }

 private:
  std::shared_ptr<S3Client> client_;
  ObjectRef obj_;
  ObjectInfo info_;
};

}  // namespace

std::string cache_version(const ObjectRef& obj, const ObjectInfo& info) {
  return obj.url.empty() ? info.etag : std::string();
}

Result<std::shared_ptr<format::SegmentSource>> open_object_source(std::shared_ptr<S3Client> client,
                                                                  ObjectRef obj) {
  OC_ASSIGN_OR_RETURN(ObjectInfo info, client->stat(obj));
  return open_object_source(std::move(client), std::move(obj), std::move(info));
}

std::shared_ptr<format::SegmentSource> open_object_source(std::shared_ptr<S3Client> client,
                                                          ObjectRef obj, ObjectInfo known) {
  return format::coalesced_source(
      std::make_unique<ObjectReader>(std::move(client), std::move(obj), std::move(known)));
}

namespace {
std::mutex environment_mu;
std::shared_ptr<S3Client> environment_s3;
}  // namespace

Result<std::shared_ptr<S3Client>> environment_client() {
  std::lock_guard lock(environment_mu);
  if (!environment_s3) {
    OC_ASSIGN_OR_RETURN(S3ClientConfig config, S3ClientConfig::from_environment());
    OC_ASSIGN_OR_RETURN(environment_s3, S3Client::create(std::move(config)));
  }
  return environment_s3;
}

std::shared_ptr<S3Client> environment_client_if_made() {
  std::lock_guard lock(environment_mu);
  return environment_s3;
}

void forget_environment_client() {
  std::lock_guard lock(environment_mu);
  environment_s3.reset();
}

Result<ObjectRef> object_ref_from_uri(std::string_view uri) {
  ObjectRef ref;
  if (uri.starts_with("s3://")) {
    OC_ASSIGN_OR_RETURN(S3Uri u, parse_s3_uri(uri));
    OC_EXPECT(!u.key.empty(), invalid, "{}: no object key", uri);
    ref.bucket = std::move(u.bucket);
    ref.key = std::move(u.key);
    return ref;
  }
  OC_EXPECT(uri.starts_with("http://") || uri.starts_with("https://"), invalid,
            "'{}' is neither s3://bucket/key nor an http(s) URL", uri);
  ref.url = std::string(uri);
  return ref;
}

Result<std::shared_ptr<format::SegmentSource>> open_any_source(std::string_view uri) {
  if (!uri.starts_with("s3://") && !uri.starts_with("http://") && !uri.starts_with("https://")) {
    return format::open_local_file(std::string(uri));
  }
  OC_ASSIGN_OR_RETURN(ObjectRef ref, object_ref_from_uri(uri));
  OC_ASSIGN_OR_RETURN(auto client, environment_client());
  return open_object_source(std::move(client), std::move(ref));
}

}  // namespace oc::net
