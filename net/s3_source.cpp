// SPDX-License-Identifier: Apache-2.0
#include "net/s3_source.hpp"

#include <mutex>

#include "net/buffer_pool.hpp"
#include "net/url.hpp"

namespace oc::net {
namespace {

class ObjectSource final : public format::SegmentSource {
 public:
  ObjectSource(std::shared_ptr<S3Client> client, ObjectRef obj, ObjectInfo info)
      : client_(std::move(client)), obj_(std::move(obj)), info_(std::move(info)),
        name_(obj_.describe()) {}

  uint64_t size() const override { return info_.size; }
  const std::string& name() const override { return name_; }
  format::SourceStats stats() const override {
    std::lock_guard lock(mu_);
    return stats_;
  }

  Result<std::vector<format::Buffer>> read(std::span<const format::ByteRange> ranges) override {
    return read_coalesced(ranges, format::CoalesceOptions::object_store());
  }

  Result<std::vector<format::Buffer>> read_coalesced(std::span<const format::ByteRange> ranges,
                                                     const format::CoalesceOptions& opts) override {
    for (const auto& r : ranges) {
      OC_EXPECT(r.offset <= info_.size && r.length <= info_.size - r.offset, corrupt,
                "{}: range [{}, +{}) is past the end of the {} byte object", name_, r.offset,
                r.length, info_.size);
    }
    const auto plan = format::coalesce(ranges, opts);
    std::vector<Lease> leases;
    std::vector<RangeFetch> fetches;
    leases.reserve(plan.size());
    for (const auto& m : plan) {
      if (m.range.length == 0) {
        leases.emplace_back();
        continue;
      }
      OC_ASSIGN_OR_RETURN(Lease lease, BufferPool::global().acquire(m.range.length));
      fetches.push_back({m.range.offset, lease.bytes().first(m.range.length)});
      leases.push_back(std::move(lease));
    }
    OC_TRY(client_->fetch_ranges(obj_, info_.etag, fetches));

    std::vector<format::Buffer> out(ranges.size());
    std::lock_guard lock(mu_);
    for (size_t k = 0; k < plan.size(); ++k) {
      const auto& m = plan[k];
      auto merged = format::Buffer::wrap(leases[k].owner(),
                                         reinterpret_cast<const uint8_t*>(leases[k].data()),
                                         m.range.length);
      for (size_t i : m.members) {
        out[i] = merged.slice(ranges[i].offset - m.range.offset, ranges[i].length);
      }
      stats_.bytes_read += m.range.length;
    }
    stats_.requests += ranges.size();
    stats_.reads += plan.size();
    return out;
  }

 private:
  std::shared_ptr<S3Client> client_;
  ObjectRef obj_;
  ObjectInfo info_;
  std::string name_;
  mutable std::mutex mu_;
  format::SourceStats stats_;
};

}  // namespace

Result<std::shared_ptr<format::SegmentSource>> open_object_source(std::shared_ptr<S3Client> client,
                                                                  ObjectRef obj) {
  OC_ASSIGN_OR_RETURN(ObjectInfo info, client->stat(obj));
  return std::shared_ptr<format::SegmentSource>(
      std::make_shared<ObjectSource>(std::move(client), std::move(obj), std::move(info)));
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
