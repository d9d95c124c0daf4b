// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Scans pushed into the storage: the request of the RADOS object-class method
/// `onecopy.scan` (libcls_onecopy.so, format/cls/), the scan it runs, and its errno contract.
///
/// A client asks an OSD for rows of one object (a whole Vortex file) with a FlatBuffers
/// `ScanRequest` (format/fbs/pushdown.fbs); the OSD opens the file over the object, scans it with
/// the request's projection, filter and row range, and answers with an Arrow IPC stream
/// (format/arrow_ipc.hpp): the schema, one record batch per non-empty scan batch, the end marker.
/// Everything here is plain C++ over a `SegmentSource`, so the method's body runs in-process in
/// tests (`memory_source`) exactly as in the OSD.
///
/// Errors cross the OSD as one negative errno (the method's return value), so the classes map:
///
/// | errno      | meaning                                                       | `Errc` back     |
/// |------------|---------------------------------------------------------------|-----------------|
/// | -EINVAL    | bad request, unknown column, bad filter, row range past end   | invalid         |
/// | -E2BIG     | request larger than `cls_max_request_bytes`                   | invalid         |
/// | -EBADMSG   | not a Vortex file, truncated or corrupt                       | corrupt         |
/// | -EPROTO    | valid but unsupported (a newer request version, an encoding)  | unsupported     |
/// | -EFBIG     | the result would pass its cap                                 | out_of_memory   |
/// | -ENOMEM    | an allocation failed                                          | out_of_memory   |
/// | -ESTALE    | the object's size is not the request's `file_size`            | io              |
/// | -EIO       | anything else                                                 | io              |
///
/// The OSD itself answers -EOPNOTSUPP (no such class or method: `unsupported`), -EPERM (classes
/// not allowed: `denied`) and -ENOENT (no such object: `not_found`).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "format/arrow_ipc.hpp"
#include "format/segment_source.hpp"

namespace oc::format {

/// The one request version this build writes and answers.
inline constexpr uint32_t kPushdownVersion = 1;

/// A decoded `oc.fbs.pushdown.ScanRequest` (format/fbs/pushdown.fbs), field for field.
struct PushdownRequest {
  uint32_t version = kPushdownVersion;
  /// The object's size as the client saw it; the scan fails with -ESTALE on any other.
  uint64_t file_size = 0;
  /// Top-level fields in output order; empty returns all of them.
  std::vector<std::string> columns;
  /// A SQL WHERE predicate (format/expr.hpp); empty keeps every row.
  std::string filter;
  /// Rows [row_begin, row_end) of the file; both 0 scans every row.
  uint64_t row_begin = 0;
  uint64_t row_end = 0;
  /// Cap on the result's bytes; 0 takes the OSD's cap, and a larger one is cut to it.
  uint64_t max_result_bytes = 0;
  /// Strings and binaries as Utf8View / BinaryView (true) or Utf8 / Binary (false).
  bool string_views = false;
  /// Body compression of the answer's record batches (zstd at the OSD's `ipc_zstd_level`).
  /// A request from before the field existed reads as `none`.
  IpcCompression compression = IpcCompression::none;

  friend bool operator==(const PushdownRequest&, const PushdownRequest&) = default;
};

/// @return @p request as a FlatBuffer `ScanRequest`, every field written (defaults included).
[[nodiscard]] std::string encode_pushdown_request(const PushdownRequest& request);

/// Decodes and checks a `ScanRequest` from untrusted @p bytes.
/// @param max_request_bytes larger inputs are refused before any byte is looked at.
/// @return the request; `Errc::invalid` with errno E2BIG for more than @p max_request_bytes;
///         `Errc::invalid` for bytes that do not verify as a `ScanRequest`, a version 0, an empty
///         or repeated column name, a row range that is not [begin, end) with begin <= end (or
///         0, 0), a compression other than 0 (none) or 1 (zstd); `Errc::unsupported` for a
///         version above `kPushdownVersion`.
[[nodiscard]] Result<PushdownRequest> decode_pushdown_request(std::span<const uint8_t> bytes,
                                                              uint64_t max_request_bytes);

/// The body of `onecopy.scan`: opens the Vortex file in @p object and returns the rows
/// @p request asks for as one Arrow IPC stream (the schema even when no row survives).
///
/// Decodes on the calling thread, one split at a time (`splits_in_flight` 1; the process's
/// `scan_decode_threads` decides whether columns spread over threads: the OSD sets it to 1).
/// @param max_result_bytes the caller's cap; the request's own `max_result_bytes` may lower it.
/// @return the stream; `Errc::io` with errno ESTALE when @p object's size is not the request's
///         `file_size`; `Errc::out_of_memory` with errno EFBIG as soon as the stream would pass
///         the cap (nothing larger than one batch message is held beyond it); the open's and the
///         scan's own errors otherwise. Never throws.
/// @note @p object is only borrowed: nothing keeps it after the call returns.
[[nodiscard]] Result<std::string> run_pushdown_scan(SegmentSource& object,
                                                    const PushdownRequest& request,
                                                    uint64_t max_result_bytes);

/// @return the negative errno that stands for @p error across the OSD (table above): an error
///         raised with errno E2BIG, EFBIG or ESTALE keeps it, the rest map by their `Errc`.
[[nodiscard]] int pushdown_errno(const Error& error) noexcept;

/// @return the `Errc` of a negative errno from `rados_exec` of `onecopy.scan` (table above;
///         the sign is ignored); one not in the table is `Errc::io`.
[[nodiscard]] Errc errc_from_pushdown_errno(int err) noexcept;

}  // namespace oc::format
