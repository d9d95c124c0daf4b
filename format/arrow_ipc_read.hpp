// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief An Arrow IPC *stream* reader for the streams format/arrow_ipc.hpp writes: the object
/// class's scan results (format/pushdown.hpp) turned back into the reader's column batches.
///
/// A parser of untrusted bytes (they come from a storage server over the network), written
/// from the same published format as the writer (framing, pre-order of nodes and buffers: see
/// format/arrow_ipc.hpp). It reads what the writer writes, and what any Arrow writer writes for
/// the same schema without dictionaries, uncompressed or zstd-compressed (pyarrow's streams
/// included):
///
///   schema message, then record batch messages, then FF FF FF FF 00 00 00 00
///
/// Every message must carry the continuation marker and a metadata size that is a positive
/// multiple of 8 within the input; every `Message` flatbuffer is verified (its depth, like the
/// expected dtype's, bounded by the `max_array_depth` knob) and must be metadata version V5; every
/// body must lie within the input. The end-of-stream marker is required and nothing may follow it.
///
/// The schema must be the one the writer writes for the caller's expected dtype, field by field
/// (names, nullability, Arrow type and its parameters, children), except the names of list
/// elements, which Arrow readers do not compare either.
///
/// Record batches become struct columns of exactly the expected dtype, offset 0, no top-level
/// nulls. Buffers are slices of the input `Buffer` (sharing its owner) when they are aligned
/// for their values, copies otherwise. Every node's length and null count, every buffer's range,
/// every offset (monotone, within its values), every view (`make_views_column`) and the node,
/// buffer and variadic counts are checked against the body before anything is read.
///
/// A body compressed with `BodyCompression{ZSTD, BUFFER}` (layout in format/arrow_ipc.hpp) has
/// each non-empty buffer decompressed first, into memory of exactly its length prefix once that
/// prefix fits what is left of `max_decoded_bytes` (a frame must decompress to exactly that many
/// bytes; prefix -1 takes the raw bytes that follow), then checked as above.
#pragma once

#include <cstdint>
#include <vector>

#include "config/defaults.hpp"
#include "config/error.hpp"
#include "format/buffer.hpp"
#include "format/column.hpp"
#include "format/dtype.hpp"

namespace oc::format {

/// What `read_arrow_ipc_stream` expects and how much it may produce (designated initializers:
/// `{.strings = StringLayout::views}`).
struct ArrowIpcReadOptions {
  /// The string layout the stream was written in (`ArrowIpcOptions::strings`): `offsets` reads
  /// `Utf8` / `Binary` into the offsets layout, `views` reads `Utf8View` / `BinaryView` into
  /// the views layout (format/string_views.hpp). The other is a schema mismatch.
  StringLayout strings = StringLayout::offsets;
  /// Bound on the batches' size: the bytes of every buffer they hold, sliced, copied or
  /// decompressed (a decompressed buffer counts whole), plus one for every row of every field
  /// (so columns without buffers, null-typed ones, count).
  uint64_t max_decoded_bytes = defaults().max_decoded_bytes;
};

/// Reads the whole Arrow IPC stream in @p stream.
/// @param expected the struct dtype of the batches (the projected scan's dtype; its own
///        nullability is not compared, as the writer drops it).
/// @return the record batches in stream order (none for a stream without batches), each a
///         struct column of dtype @p expected whose buffers share @p stream's owner where they
///         are not copies. Errors: `Errc::invalid` for an @p expected that is not a struct or is
///         deeper than the `max_array_depth` knob, or has no Arrow type (`Errc::unsupported` from
///         the writer's mapping); `Errc::protocol` for a schema that is not the expected one,
///         naming the field; `Errc::unsupported` for dictionary batches, bodies compressed with
///         another codec than ZSTD (LZ4_FRAME) or method than BUFFER,
///         big-endian schemas, metadata versions other than V5 and message kinds other than schema
///         and record batch; `Errc::out_of_memory` past `max_decoded_bytes`; `Errc::corrupt` for
///         anything else malformed (truncation, bad framing or flatbuffers, counts, lengths,
///         offsets, views, length prefixes and zstd frames, a missing end-of-stream marker or
///         bytes after it).
/// @note Never reads outside @p stream; runs on the calling thread.
[[nodiscard]] Result<std::vector<ColumnPtr>> read_arrow_ipc_stream(
    const Buffer& stream, const DTypePtr& expected,
    const ArrowIpcReadOptions& options = ArrowIpcReadOptions{});

}  // namespace oc::format
