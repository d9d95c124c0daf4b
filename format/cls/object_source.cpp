// SPDX-License-Identifier: Apache-2.0
#include "format/cls/object_source.hpp"

#include <atomic>
#include <cerrno>
#include <thread>
#include <vector>

namespace oc::format {
namespace {

class ObjectSource final : public SegmentSource {
 public:
  ObjectSource(ObjectRead read, uint64_t size, std::string name)
      : read_(std::move(read)),
        size_(size),
        name_(std::move(name)),
        owner_(std::this_thread::get_id()) {}

  uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }
  SourceStats stats() const override { return {requests_.load(), reads_.load(), bytes_.load()}; }

  Result<std::vector<Buffer>> read(std::span<const ByteRange> ranges) override {
    OC_EXPECT(std::this_thread::get_id() == owner_, unsupported,
              "{}: read from a thread other than the method's", name_);
    std::vector<Buffer> out;
    out.reserve(ranges.size());
    for (const ByteRange& r : ranges) {
      OC_EXPECT(r.offset <= size_ && r.length <= size_ - r.offset, corrupt,
                "{}: range [{}, +{}) is past the end of {} bytes", name_, r.offset, r.length,
                size_);
      if (r.length == 0) {
        out.emplace_back();
        continue;
      }
      OC_ASSIGN_OR_RETURN(Buffer b, read_(r.offset, r.length));
      // The size was checked at open and an object does not change under a method call (its
      // placement group is locked), so a short read is the storage failing.
      OC_EXPECT(b.size() == r.length, io, "{}: read [{}, +{}) returned {} bytes", name_, r.offset,
                r.length, b.size());
      out.push_back(std::move(b));
      ++reads_;
      bytes_ += r.length;
    }
    requests_ += ranges.size();
    return out;
  }

 private:
  ObjectRead read_;
  uint64_t size_;
  std::string name_;
  std::thread::id owner_;
  std::atomic<uint64_t> requests_{0}, reads_{0}, bytes_{0};
};

}  // namespace

Result<std::shared_ptr<SegmentSource>> open_object_source(ObjectRead read, uint64_t claimed_size,
                                                          std::string name) {
  // Reading one byte past the claimed end tells a longer object from an exact one: a read
  // returns fewer bytes only where the object ends.
  const uint64_t offset = claimed_size == 0 ? 0 : claimed_size - 1;
  const uint64_t expect = claimed_size == 0 ? 0 : 1;
  OC_ASSIGN_OR_RETURN(Buffer tail, read(offset, expect + 1));
  if (tail.size() != expect) {
    return Error(Errc::io,
                 fmt::format("{}: the object is {} than the {} bytes the request says", name,
                             tail.size() > expect ? "longer" : "shorter", claimed_size),
                 __FILE__, __LINE__, ESTALE);
  }
  return std::shared_ptr<SegmentSource>(
      std::make_shared<ObjectSource>(std::move(read), claimed_size, std::move(name)));
}

}  // namespace oc::format
