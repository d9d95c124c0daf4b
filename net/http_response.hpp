// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Incremental HTTP/1.1 response parsing (RFC 9112) on llhttp.
///
/// The S3 client feeds bytes as they arrive from the socket. The status line and headers are
/// collected into a small `ResponseHead` (bounded by the `http_max_header_bytes` knob); body
/// bytes are handed to a sink as spans into the caller's buffer, already de-framed when the body
/// is chunked (RFC 9112 §7.1), so no intermediate copy is made here.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/error.hpp"

namespace oc::net {

/// Status line and header fields of one response.
struct ResponseHead {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  ///< in arrival order
  std::optional<uint64_t> content_length;
  bool chunked = false;
  bool keep_alive = true;

  /// @return the first value of header @p name (case-insensitive, RFC 9110 §5.1), or nullptr.
  [[nodiscard]] const std::string* find(std::string_view name) const;
};

/// Receives body bytes; the span is valid only during the call.
using BodySink = std::function<void(std::span<const uint8_t>)>;

class ResponseParser {
 public:
  /// @param head_only for responses to HEAD requests, which carry headers but never a body.
  explicit ResponseParser(bool head_only = false);
  ~ResponseParser();
  ResponseParser(const ResponseParser&) = delete;
  ResponseParser& operator=(const ResponseParser&) = delete;

  /// Parses @p bytes; body bytes go to @p sink. Stops at the end of one message.
  /// @return the number of bytes consumed (less than the input only when the message ended);
  ///         `Errc::protocol` for malformed or oversized input, naming llhttp's reason.
  [[nodiscard]] Result<size_t> feed(std::span<const uint8_t> bytes, const BodySink& sink);
  /// Signals end of stream: completes a read-until-close body, or fails for a truncated message.
  [[nodiscard]] Result<void> finish();

  [[nodiscard]] bool head_complete() const noexcept;
  [[nodiscard]] bool message_complete() const noexcept;
  [[nodiscard]] const ResponseHead& head() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// Fuzzing entry point: parses @p bytes as one response, split at @p split into two feeds.
[[nodiscard]] Result<ResponseHead> fuzz_parse_response(std::span<const uint8_t> bytes,
                                                       size_t split);

}  // namespace oc::net
