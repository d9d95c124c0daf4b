// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Multi-range GETs (RFC 9110 §14.2): the `Range` header for many ranges, and the
/// `multipart/byteranges` answer (RFC 9110 §14.6) deframed straight into each range's slot.
///
/// The body of a multi-range 206 is, for each part:
///
///     CRLF "--" boundary CRLF
///     Content-Type: ... CRLF            (any header fields)
///     Content-Range: bytes FIRST-LAST/SIZE CRLF
///     CRLF
///     <LAST - FIRST + 1 bytes>
///
/// then CRLF "--" boundary "--" CRLF (and an epilogue nobody sends). The delimiters and part
/// headers are read into a small buffer; each part's bytes go to the slot of the range its
/// `Content-Range` names, received there directly except for what arrived with its header.
/// A part that names a range not asked for (or one already filled) is refused before any of its
/// bytes land, so nothing is ever written to the wrong place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "config/error.hpp"

namespace oc::net {

/// One piece of a multi-range read: bytes [offset, offset + dest.size()) go to dest.
struct RangeFetch {
  uint64_t offset = 0;
  std::span<std::byte> dest;
};

/// @return "bytes=a-b,c-d,..." for @p ranges (non-empty, each non-empty).
[[nodiscard]] std::string byte_ranges_header(std::span<const RangeFetch> ranges);

/// @return the boundary of a `Content-Type: multipart/byteranges; boundary=...` value, or
///         nullopt for any other type or a missing or malformed boundary.
[[nodiscard]] std::optional<std::string> byteranges_boundary(std::string_view content_type);

/// Receives more body bytes into the span; 0 means the peer closed.
using ReceiveFn = std::function<Result<size_t>(std::span<std::byte>)>;

struct DeframeCounters {
  uint64_t placed = 0;  ///< range bytes written to slots
  uint64_t copied = 0;  ///< of those, copied from the delimiter buffer rather than received there
};

/// Deframes a multipart/byteranges body of @p body_length bytes, of which @p spill arrived with
/// the response head, the rest coming from @p receive. Every range of @p ranges must be filled
/// exactly once. Errors: `Errc::protocol` naming what was wrong (a part not asked for, a
/// missing part, framing, a body longer or shorter than its length).
[[nodiscard]] Result<void> deframe_byteranges(std::string_view boundary,
                                              std::span<const RangeFetch> ranges,
                                              std::string_view spill, uint64_t body_length,
                                              const ReceiveFn& receive, DeframeCounters& counters);

/// Fuzzing entry point: @p bytes is a range list ("a-b,c-d", at most 16 ranges of at most
/// 64 KiB each), a newline, then a multipart body with boundary "B", delivered in pieces of
/// the first byte's value (mod 64, plus 1).
[[nodiscard]] Result<void> fuzz_deframe_byteranges(std::span<const uint8_t> bytes);

/// Which endpoints ("host:port" of a URL) answered a multi-range GET with multipart/byteranges,
/// and which did not. Thread-safe. It holds `kMaxEndpoints` endpoints at most: when a new one
/// finds it full it starts over (forgetting only costs one probe per endpoint), so a client
/// naming ever new hosts cannot grow it.
class MultirangeMemo {
 public:
  static constexpr size_t kMaxEndpoints = 4096;
  explicit MultirangeMemo(size_t max_endpoints = kMaxEndpoints) : max_(max_endpoints) {}

  /// @return whether @p url's endpoint answered with multipart/byteranges; nullopt until noted.
  [[nodiscard]] std::optional<bool> known(std::string_view url) const;
  void note(std::string_view url, bool works);
  [[nodiscard]] size_t size() const;

 private:
  size_t max_;
  mutable std::mutex mu_;
  std::map<std::string, bool, std::less<>> works_;
};

}  // namespace oc::net
