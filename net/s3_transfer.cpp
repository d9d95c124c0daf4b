// SPDX-License-Identifier: Apache-2.0
#include "net/s3_transfer.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "config/defaults.hpp"
#include "net/scheduler.hpp"

namespace oc::net {
namespace {

// A file mapped for the duration of a transfer; unmapped and closed on every path out.
class Mapping {
 public:
  ~Mapping() {
    if (data_ && data_ != MAP_FAILED) ::munmap(data_, size_);
    if (fd_ >= 0) ::close(fd_);
  }
  Result<void> open_read(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return errno_error(-errno, "open " + path, __FILE__, __LINE__);
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return errno_error(-errno, "stat " + path, __FILE__, __LINE__);
    OC_EXPECT(S_ISREG(st.st_mode), invalid, "{} is not a regular file", path);
    size_ = static_cast<size_t>(st.st_size);
    return map(PROT_READ, path);
  }
  Result<void> create_write(const std::string& path, size_t size) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) return errno_error(-errno, "create " + path, __FILE__, __LINE__);
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      return errno_error(-errno, "resize " + path, __FILE__, __LINE__);
    }
    size_ = size;
    return map(PROT_READ | PROT_WRITE, path);
  }
  std::span<std::byte> bytes() { return {static_cast<std::byte*>(data_), size_}; }
  Result<void> sync(const std::string& path) {
    if (size_ > 0 && ::msync(data_, size_, MS_SYNC) != 0) {
      return errno_error(-errno, "msync " + path, __FILE__, __LINE__);
    }
    return {};
  }

 private:
  Result<void> map(int prot, const std::string& path) {
    if (size_ == 0) return {};
    data_ = ::mmap(nullptr, size_, prot, MAP_SHARED, fd_, 0);
    if (data_ == MAP_FAILED) return errno_error(-errno, "mmap " + path, __FILE__, __LINE__);
    return {};
  }
  int fd_ = -1;
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

Result<TransferResult> download_to_file(S3Client& client, const ObjectRef& src,
                                        const std::string& path) {
  struct stat st {};
  // Never replace a device or a directory entry that is not a plain file (think /dev/null).
  if (::stat(path.c_str(), &st) == 0) {
    OC_EXPECT(S_ISREG(st.st_mode), invalid, "{} exists and is not a regular file", path);
  }
  OC_ASSIGN_OR_RETURN(ObjectInfo info, client.stat(src));
  const std::string tmp = path + ".onecopy-partial";
  TransferResult out{info.size, 0, false};
  {
    Mapping file;
    OC_TRY(file.create_write(tmp, info.size));
    // The kernel receives each range straight into the file's page cache: no bounce buffer.
    const uint64_t part = defaults().s3_get_part_bytes;
    std::vector<RangeFetch> fetches;
    for (uint64_t at = 0; at < info.size; at += part) {
      fetches.push_back({at, file.bytes().subspan(at, std::min(part, info.size - at))});
    }
    out.requests = static_cast<uint32_t>(fetches.size());
    auto r = client.fetch_ranges(src, info.etag, fetches);
    if (r.ok()) r = file.sync(tmp);
    if (!r.ok()) {
      ::unlink(tmp.c_str());
      return std::move(r).error().with_context(
          fmt::format("copying {} to {}", src.describe(), path));
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return errno_error(-e, "rename to " + path, __FILE__, __LINE__);
  }
  return out;
}

Result<TransferResult> upload_from_file(S3Client& client, const std::string& path,
                                        std::string_view bucket, std::string_view key) {
  Mapping file;
  OC_TRY(file.open_read(path));
  const auto bytes = file.bytes();
  const Defaults& d = defaults();
  if (bytes.size() < d.s3_multipart_threshold) {
    OC_TRY(client.put_object(bucket, key, bytes));
    return TransferResult{bytes.size(), 1, false};
  }

  OC_ASSIGN_OR_RETURN(std::string upload_id, client.create_multipart(bucket, key));
  const uint64_t part = d.s3_multipart_part_bytes;
  const size_t count = (bytes.size() + part - 1) / part;
  std::vector<CompletedPart> parts(count);
  Result<void> sent;
  {
    TaskGroup group;
    for (size_t i = 0; i < count; ++i) {
      group.run([&, i]() -> Result<void> {
        const auto body =
            bytes.subspan(i * part, std::min<uint64_t>(part, bytes.size() - i * part));
        OC_ASSIGN_OR_RETURN(
            std::string etag,
            client.upload_part(bucket, key, upload_id, static_cast<uint32_t>(i + 1), body));
        parts[i] = CompletedPart{static_cast<uint32_t>(i + 1), std::move(etag)};
        return {};
      });
    }
    sent = group.wait();
  }
  if (sent.ok()) {
    auto done = client.complete_multipart(bucket, key, upload_id, parts);
    if (done.ok()) return TransferResult{bytes.size(), static_cast<uint32_t>(count), true};
    sent = std::move(done).error();
  }
  // Parts of an unfinished upload are billed until aborted; do not leave them behind.
  (void)client.abort_multipart(bucket, key, upload_id);
  return std::move(sent).error().with_context(
      fmt::format("uploading {} to s3://{}/{} ({} parts)", path, bucket, key, count));
}

}  // namespace oc::net
