// SPDX-License-Identifier: Apache-2.0
#include "net/byteranges.hpp"

#include <fmt/format.h>
#include <strings.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <vector>

#include "config/strings.hpp"
#include "net/content_range.hpp"
#include "net/url.hpp"

namespace oc::net {

namespace {

// Part headers are a Content-Type and a Content-Range: a few hundred bytes. More is refused.
constexpr size_t kMaxPartHead = 8192;
constexpr size_t kReadBytes = 4096;

// HTTP's optional white space (RFC 9110, 5.6.3): spaces and tabs.
constexpr std::string_view kOws = " \t";

bool iequals_prefix(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && strncasecmp(s.data(), prefix.data(), prefix.size()) == 0;
}

// The body as a stream: a small window of bytes already received, refilled from the wire
// without ever reading past the body's length.
class BodyStream {
 public:
  BodyStream(std::string_view spill, uint64_t wire, const ReceiveFn& receive)
      : buf_(spill), wire_(wire), receive_(receive) {}

  std::string_view window() const { return std::string_view(buf_).substr(pos_); }
  void consume(size_t n) { pos_ += n; }

  // Reads more into the window. @return false at the end of the body.
  Result<bool> more() {
    if (wire_ == 0) return false;
    if (pos_ > 0) {
      buf_.erase(0, pos_);
      pos_ = 0;
    }
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kReadBytes, wire_));
    const size_t at = buf_.size();
    buf_.resize(at + want);
    OC_ASSIGN_OR_RETURN(size_t n,
                        receive_(std::as_writable_bytes(std::span(buf_.data() + at, want))));
    buf_.resize(at + n);
    OC_EXPECT(n > 0, protocol, "connection closed {} bytes before the end of a multipart body",
              wire_);
    wire_ -= n;
    return true;
  }

  // Moves @p dest.size() body bytes into @p dest: first from the window, then straight off the
  // wire.
  Result<void> fill(std::span<std::byte> dest, DeframeCounters& c) {
    const size_t from_window = std::min(dest.size(), window().size());
    std::memcpy(dest.data(), buf_.data() + pos_, from_window);
    pos_ += from_window;
    c.copied += from_window;
    size_t done = from_window;
    while (done < dest.size()) {
      OC_EXPECT(wire_ > 0, protocol, "multipart body ends inside a part");
      const size_t want = static_cast<size_t>(std::min<uint64_t>(dest.size() - done, wire_));
      OC_ASSIGN_OR_RETURN(size_t n, receive_(dest.subspan(done, want)));
      OC_EXPECT(n > 0, protocol, "connection closed inside a multipart part");
      wire_ -= n;
      done += n;
    }
    c.placed += dest.size();
    return {};
  }

  uint64_t wire_left() const { return wire_; }

 private:
  std::string buf_;
  size_t pos_ = 0;
  uint64_t wire_;
  const ReceiveFn& receive_;
};

}  // namespace

std::string byte_ranges_header(std::span<const RangeFetch> ranges) {
  std::string out = "bytes=";
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (i > 0) out += ',';
    out += fmt::format("{}-{}", ranges[i].offset, ranges[i].offset + ranges[i].dest.size() - 1);
  }
  return out;
}

std::optional<std::string> byteranges_boundary(std::string_view content_type) {
  const size_t semi = content_type.find(';');
  if (semi == std::string_view::npos) return std::nullopt;
  const std::string_view type = trim(content_type.substr(0, semi), kOws);
  constexpr std::string_view kType = "multipart/byteranges";
  if (type.size() != kType.size() || strncasecmp(type.data(), kType.data(), kType.size()) != 0) {
    return std::nullopt;
  }
  std::string_view rest = content_type.substr(semi + 1);
  while (!rest.empty()) {
    const size_t next = rest.find(';');
    std::string_view param = trim(rest.substr(0, next), kOws);
    rest = next == std::string_view::npos ? std::string_view{} : rest.substr(next + 1);
    if (!iequals_prefix(param, "boundary=")) continue;
    std::string_view b = param.substr(9);
    if (b.size() >= 2 && b.front() == '"' && b.back() == '"') b = b.substr(1, b.size() - 2);
    // RFC 2046 §5.1.1: 1 to 70 characters.
    if (b.empty() || b.size() > 70) return std::nullopt;
    return std::string(b);
  }
  return std::nullopt;
}

Result<void> deframe_byteranges(std::string_view boundary, std::span<const RangeFetch> ranges,
                                std::string_view spill, uint64_t body_length,
                                const ReceiveFn& receive, DeframeCounters& counters) {
  OC_EXPECT(spill.size() <= body_length, protocol, "{} body bytes arrived for a {}-byte body",
            spill.size(), body_length);
  BodyStream body(spill, body_length - spill.size(), receive);
  std::vector<bool> filled(ranges.size(), false);
  size_t filled_count = 0;
  const std::string delimiter = fmt::format("--{}", boundary);
  for (;;) {
    // Up to and including the blank line that ends a part's header, or the closing delimiter.
    size_t head_end = std::string_view::npos;
    bool closing = false;
    for (;;) {
      std::string_view w = body.window();
      // The first delimiter may come without its leading CRLF (RFC 2046 §5.1.1: the CRLF
      // belongs to the delimiter, and a body may start with it or not).
      size_t skip = w.starts_with("\r\n") ? 2 : 0;
      if (w.size() >= skip + delimiter.size() + 2) {
        OC_EXPECT(w.substr(skip, delimiter.size()) == delimiter, protocol,
                  "multipart body: expected the boundary delimiter");
        if (w.substr(skip + delimiter.size(), 2) == "--") {
          closing = true;
          break;
        }
        head_end = w.find("\r\n\r\n", skip + delimiter.size());
        if (head_end != std::string_view::npos) {
          head_end += 4;
          break;
        }
      }
      OC_EXPECT(w.size() <= kMaxPartHead, protocol, "multipart part header over {} bytes",
                kMaxPartHead);
      OC_ASSIGN_OR_RETURN(bool got, body.more());
      OC_EXPECT(got, protocol, "multipart body ends before its closing delimiter");
    }
    if (closing) break;
    const std::string_view head = body.window().substr(0, head_end);
    std::optional<std::pair<uint64_t, uint64_t>> range;
    for (size_t at = head.find("\r\n", 2); at != std::string_view::npos && at + 2 < head.size();) {
      const size_t eol = head.find("\r\n", at + 2);
      const std::string_view line = head.substr(at + 2, eol - at - 2);
      if (iequals_prefix(line, "content-range:")) {
        if (auto cr = parse_content_range(line.substr(14))) range = std::pair{cr->first, cr->last};
      }
      at = eol;
    }
    OC_EXPECT(range, protocol, "multipart part without a valid Content-Range");
    // The part must be one of the ranges asked for, whole, and not yet filled.
    size_t index = ranges.size();
    for (size_t i = 0; i < ranges.size(); ++i) {
      if (ranges[i].offset == range->first && !filled[i] &&
          ranges[i].offset + ranges[i].dest.size() - 1 == range->second) {
        index = i;
        break;
      }
    }
    OC_EXPECT(index < ranges.size(), protocol,
              "multipart part with Content-Range bytes {}-{}, which was not asked for (or came "
              "twice)",
              range->first, range->second);
    body.consume(head_end);
    OC_TRY(body.fill(ranges[index].dest, counters));
    filled[index] = true;
    ++filled_count;
  }
  OC_EXPECT(filled_count == ranges.size(), protocol,
            "multipart body holds {} of the {} ranges asked for", filled_count, ranges.size());
  // The closing delimiter and any epilogue: read to the body's end so the connection can carry
  // the next request.
  while (body.wire_left() > 0) {
    body.consume(body.window().size());
    OC_ASSIGN_OR_RETURN(bool got, body.more());
    if (!got) break;
  }
  return {};
}

Result<void> fuzz_deframe_byteranges(std::span<const uint8_t> bytes) {
  OC_EXPECT(!bytes.empty(), invalid, "empty input");
  const size_t step = bytes[0] % 64 + 1;
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + 1, bytes.size() - 1);
  const size_t eol = text.find('\n');
  OC_EXPECT(eol != std::string_view::npos, invalid, "no range list");
  std::string_view list = text.substr(0, eol);
  const std::string_view body = text.substr(eol + 1);
  std::vector<std::vector<std::byte>> slots;
  std::vector<RangeFetch> ranges;
  while (!list.empty() && ranges.size() < 16) {
    uint64_t first = 0, last = 0;
    auto a = std::from_chars(list.data(), list.data() + list.size(), first);
    OC_EXPECT(a.ec == std::errc() && a.ptr != list.data() + list.size() && *a.ptr == '-', invalid,
              "bad range list");
    auto b = std::from_chars(a.ptr + 1, list.data() + list.size(), last);
    OC_EXPECT(b.ec == std::errc() && last >= first && last - first < 65536, invalid, "bad range");
    slots.emplace_back(last - first + 1);
    ranges.push_back({first, slots.back()});
    list.remove_prefix(static_cast<size_t>(b.ptr - list.data()));
    if (!list.empty() && list.front() == ',') list.remove_prefix(1);
  }
  OC_EXPECT(!ranges.empty(), invalid, "no ranges");
  size_t at = 0;
  const ReceiveFn wire = [&](std::span<std::byte> into) -> Result<size_t> {
    const size_t n = std::min({into.size(), step, body.size() - at});
    std::memcpy(into.data(), body.data() + at, n);
    at += n;
    return n;
  };
  DeframeCounters c;
  const size_t spill = std::min(body.size(), step);
  return deframe_byteranges("B", ranges, body.substr(0, spill), body.size(), wire, c);
}

namespace {

// "host:port" of a URL, the unit multi-range support is remembered by.
std::string endpoint_of(std::string_view url) {
  auto u = parse_url(url);
  return u.ok() ? fmt::format("{}:{}", u->host, u->port) : std::string(url);
}

}  // namespace

std::optional<bool> MultirangeMemo::known(std::string_view url) const {
  const std::string key = endpoint_of(url);
  std::lock_guard lock(mu_);
  auto it = works_.find(key);
  if (it == works_.end()) return std::nullopt;
  return it->second;
}

void MultirangeMemo::note(std::string_view url, bool works) {
  std::string key = endpoint_of(url);
  std::lock_guard lock(mu_);
  if (!works_.contains(key) && works_.size() >= max_) works_.clear();
  works_[std::move(key)] = works;
}

size_t MultirangeMemo::size() const {
  std::lock_guard lock(mu_);
  return works_.size();
}

}  // namespace oc::net
