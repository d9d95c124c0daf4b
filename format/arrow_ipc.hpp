// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief An Arrow IPC *stream* writer for decoded batches: `onecopy scan|take --format arrow`,
/// and later the object class that returns scan results as Arrow IPC streams.
///
/// Written from the published format (Columnar.rst, "Serialization and Interprocess
/// Communication"; Message.fbs and Schema.fbs, transcribed into format/fbs/arrow_ipc.fbs); no
/// Arrow code. A stream is the schema message, one record batch message per batch and the end
/// marker. Every message is framed the same way (all integers little endian):
///
///   bytes 0..4              FF FF FF FF   continuation marker
///   bytes 4..8              i32 M         metadata size: the flatbuffer plus its padding
///   bytes 8..8+M            `Message` flatbuffer (version V5), zero padded so that 8 + M % 8 == 0
///   then body_length bytes  the body: every buffer at an 8-aligned offset, zero padded to 8
///
/// and the stream ends with `FF FF FF FF 00 00 00 00`. Buffers go into the body in Arrow's
/// pre-order (a field's validity, its own buffers, then its children's), one `FieldNode` per
/// field, with an exact null count; a validity buffer is written empty (`{offset, 0}`) when the
/// field has no nulls. IPC has no array offset, so sliced columns (`Column::offset`) are
/// written from row 0: bitmaps shifted to bit 0 (shared when the offset is a multiple of 8),
/// fixed-width values cut, string and list offsets rebased to start at 0 (shared when they
/// already do), and children cut to the rows the parent reaches.
///
/// Nothing under a null row is written as the batch holds it (decoders leave unspecified bytes
/// there, and a stream may leave the process): a null row's fixed-width slot is zeros, its bool
/// bit clear, its string or list empty (offsets repeat; only valid rows' bytes and elements are
/// written), its view all zeros. Only columns with nulls are copied for it; struct fields and
/// fixed-size list elements follow their own validity.
///
/// Types follow `arrow_format` (the C Data Interface mapping, so IPC and the C export agree):
/// null, bool, ints, floats (f16 as HALF), decimal128/256, date32/64, time32/64,
/// timestamp[unit, tz], utf8/binary, list, fixed-size list and struct; extensions other than
/// the temporal ones travel as their storage. Strings and binaries are written as `Utf8` /
/// `Binary` (i32 offsets; what every Arrow reader reads) or, when asked, as `Utf8View` /
/// `BinaryView` (format 1.4: pyarrow reads them, Java, JS and nanoarrow do not). No dictionaries
/// are written; variant and union columns are `Errc::unsupported`.
///
/// Bodies may be compressed (`ArrowIpcOptions::compression`): the record batch then carries
/// `BodyCompression{ZSTD, BUFFER}` and every non-empty buffer becomes, at its 8-aligned offset,
///
///   bytes 0..8      i64 U   the buffer's uncompressed length, little endian; -1: not compressed
///   bytes 8..       a zstd frame of U bytes of content, or (U = -1) the buffer's raw bytes
///
/// (the `Buffer` entry's length counts both), raw whenever the frame would not be smaller. Empty
/// buffers stay empty, with no prefix. Node lengths and null counts are those of the raw data.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "config/defaults.hpp"
#include "config/error.hpp"
#include "format/buffer.hpp"
#include "format/column.hpp"
#include "format/dtype.hpp"

namespace oc::format {

/// Facts of the IPC stream format that may never change (asserted literally by a test).
namespace arrow_ipc_forever {
inline constexpr uint32_t kContinuation = 0xFFFFFFFFu;  ///< marker before every message length
inline constexpr size_t kAlignment = 8;                 ///< metadata and every body buffer
inline constexpr int16_t kMetadataV5 = 4;               ///< MetadataVersion::V5
}  // namespace arrow_ipc_forever

/// One encapsulated IPC message, ready to be written out in order: `metadata`, then the
/// `body` pieces.
/// @note The body pieces share the memory of the batch the message was made from (no value is
///       copied unless a slice has to be shifted or rebased, or the body is compressed), so they
///       keep it alive.
struct IpcMessage {
  /// Continuation marker, metadata size, the `Message` flatbuffer and its zero padding.
  std::string metadata;
  /// The body: buffers and zero padding, end to end; their sizes add up to `body_length`.
  std::vector<Buffer> body;
  /// Bytes of the body (a multiple of 8), as the flatbuffer's `Message.bodyLength` says.
  uint64_t body_length = 0;

  /// @return bytes of the whole message.
  [[nodiscard]] uint64_t size() const noexcept { return metadata.size() + body_length; }
  /// @return the message as one string (copies the body).
  [[nodiscard]] std::string to_string() const;
  /// Writes the message to @p out (binary); the caller checks the stream's state.
  void write_to(std::ostream& out) const;
};

/// Compression of record batch bodies. The values are the pushdown request's wire values
/// (format/fbs/pushdown.fbs `ScanRequest.compression`), which may never change.
enum class IpcCompression : uint8_t {
  none = 0,  ///< buffers as they are
  zstd = 1,  ///< Arrow `CompressionType::ZSTD`, method `BUFFER`
};

/// How `ArrowIpcWriter` lays out what it writes.
struct ArrowIpcOptions {
  /// utf8 and binary columns, nested ones included: `offsets` writes `Utf8` / `Binary` (i32
  /// offsets), `views` writes `Utf8View` / `BinaryView`. Batches in the other layout are
  /// converted (format/string_views.hpp); to offsets, a batch whose strings pass 2^31 - 1
  /// bytes in one column is an error from that conversion.
  StringLayout strings = StringLayout::offsets;
  /// Body compression of record batches (the schema message has no body).
  IpcCompression compression = IpcCompression::none;
  /// zstd level when `compression` is zstd (the `ipc_zstd_level` knob).
  uint32_t zstd_level = ::oc::defaults().ipc_zstd_level;

  [[nodiscard]] static ArrowIpcOptions defaults() { return {}; }
};

/// Writes the messages of one Arrow IPC stream whose batches all have one struct dtype.
///
/// Usage: `make` with the scan's dtype, write `schema_message()` once, `batch_message(b)` for
/// every batch, then `end_of_stream()`. Thread-compatible: every method is const, and messages
/// are independent of each other, so batches may be encoded on several threads (their order
/// in the stream is the caller's business).
class ArrowIpcWriter {
 public:
  /// A writer for batches of @p schema, a struct dtype whose fields become the stream's
  /// top-level fields (its own nullability is dropped: a record batch has no top-level nulls).
  /// @return `Errc::invalid` when @p schema is not a struct; `Errc::unsupported` for a type
  ///         with no Arrow mapping (variant, union) anywhere in it.
  [[nodiscard]] static Result<ArrowIpcWriter> make(
      DTypePtr schema, ArrowIpcOptions options = ArrowIpcOptions::defaults());

  /// @return the dtype batches must have.
  [[nodiscard]] const DTypePtr& dtype() const noexcept { return schema_; }
  [[nodiscard]] const ArrowIpcOptions& options() const noexcept { return options_; }

  /// @return the `Schema` message (no body), the stream's first message.
  [[nodiscard]] IpcMessage schema_message() const { return schema_message_; }

  /// The `RecordBatch` message of @p batch: a column of this writer's dtype, any length (0
  /// included) and any offset.
  /// @return `Errc::invalid` for a batch of another dtype, with top-level nulls, or whose
  ///         buffers are too short for its rows (a batch from the reader never is).
  [[nodiscard]] Result<IpcMessage> batch_message(const ColumnPtr& batch) const;

  /// @return the end-of-stream marker, `FF FF FF FF 00 00 00 00`.
  [[nodiscard]] static IpcMessage end_of_stream();

 private:
  ArrowIpcWriter(DTypePtr schema, ArrowIpcOptions options, IpcMessage schema_message)
      : schema_(std::move(schema)), options_(options), schema_message_(std::move(schema_message)) {}

  DTypePtr schema_;
  ArrowIpcOptions options_;
  IpcMessage schema_message_;
};

}  // namespace oc::format
