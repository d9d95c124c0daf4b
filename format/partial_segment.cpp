// SPDX-License-Identifier: Apache-2.0
#include "format/partial_segment.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace oc::format {
namespace {

// Needed ranges grow to this alignment: neighbouring rows then ask for one range, not many
// overlapping ones, and a round trip costs the same for 64 bytes as for 8.
constexpr uint64_t kNeedAlignment = 64;

}  // namespace

Result<std::shared_ptr<PartialSegment>> PartialSegment::reserve(ByteRange range) {
  OC_EXPECT(range.length > 0, invalid, "a partial segment needs at least one byte");
  // MAP_NORESERVE: only the pages that reads fill are ever backed.
  void* p = ::mmap(nullptr, range.length, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return OC_ERROR(Errc::out_of_memory, "no address space for a segment of {} bytes",
                    range.length);
  }
  // make_shared cannot reach the private constructor.
  return std::shared_ptr<PartialSegment>(new PartialSegment(range, static_cast<uint8_t*>(p)));
}

PartialSegment::~PartialSegment() { ::munmap(base_, range_.length); }

Buffer PartialSegment::bytes() const {
  return Buffer::wrap(shared_from_this(), base_, range_.length);
}

bool PartialSegment::need(uint64_t offset, uint64_t length) {
  if (length == 0) return true;
  uint64_t begin = offset / kNeedAlignment * kNeedAlignment;
  const uint64_t end = std::min(
      range_.length, (offset + length + kNeedAlignment - 1) / kNeedAlignment * kNeedAlignment);
  std::lock_guard lock(mu_);
  bool resident = true;
  // Walk the read intervals that overlap [begin, end), recording the gaps between them.
  auto it = resident_.upper_bound(begin);
  if (it != resident_.begin()) --it;
  for (; begin < end; ++it) {
    if (it == resident_.end() || it->first >= end) {
      pending_.push_back({begin, end - begin});
      return false;
    }
    if (it->second <= begin) continue;
    if (it->first > begin) {
      pending_.push_back({begin, it->first - begin});
      resident = false;
    }
    begin = it->second;
  }
  return resident;
}

bool PartialSegment::has_pending() const {
  std::lock_guard lock(mu_);
  return !pending_.empty();
}

std::vector<ByteRange> PartialSegment::take_pending() {
  std::vector<ByteRange> ranges;
  {
    std::lock_guard lock(mu_);
    ranges.swap(pending_);
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const ByteRange& a, const ByteRange& b) { return a.offset < b.offset; });
  std::vector<ByteRange> out;
  for (const ByteRange& r : ranges) {
    if (!out.empty() && r.offset <= out.back().end()) {
      out.back().length = std::max(out.back().end(), r.end()) - out.back().offset;
    } else {
      out.push_back(r);
    }
  }
  for (ByteRange& r : out) r.offset += range_.offset;
  return out;
}

void PartialSegment::fill(uint64_t file_offset, std::span<const uint8_t> bytes) {
  if (bytes.empty()) return;  // nothing read, nothing resident
  std::memcpy(destination(file_offset), bytes.data(), bytes.size());
  mark_read(file_offset, bytes.size());
}

void PartialSegment::mark_read(uint64_t file_offset, uint64_t length) {
  if (length == 0) return;
  const uint64_t begin = file_offset - range_.offset;
  uint64_t end = begin + length;
  std::lock_guard lock(mu_);
  // Merge with every interval that overlaps or touches [begin, end).
  uint64_t lo = begin;
  auto it = resident_.upper_bound(begin);
  if (it != resident_.begin() && std::prev(it)->second >= begin) --it;
  while (it != resident_.end() && it->first <= end) {
    lo = std::min(lo, it->first);
    end = std::max(end, it->second);
    it = resident_.erase(it);
  }
  resident_.emplace(lo, end);
}

uint64_t PartialSegment::memory_resident() const {
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  std::lock_guard lock(mu_);
  uint64_t pages = 0, next = 0;  // next: the first page not counted yet (ranges come in order)
  for (const auto& [b, e] : resident_) {
    const uint64_t first = std::max(b / page, next), last = (e + page - 1) / page;
    if (last > first) {
      pages += last - first;
      next = last;
    }
  }
  return pages * page;
}

uint64_t PartialSegment::bytes_resident() const {
  std::lock_guard lock(mu_);
  uint64_t n = 0;
  for (const auto& [b, e] : resident_) n += e - b;
  return n;
}

}  // namespace oc::format
