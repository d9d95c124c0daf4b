// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief A `SegmentSource` over an object that can be read but not stat'ed: a RADOS object
/// inside an object-class method (format/cls/cls_onecopy.cpp), whose C ABI offers `cls_read`
/// and no size.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "config/error.hpp"
#include "format/buffer.hpp"
#include "format/segment_source.hpp"

namespace oc::format {

/// Reads bytes [@p offset, @p offset + @p length) of the object: all of them, or fewer where
/// the object ends first (none at or past its end), as `cls_read` does. Never called with a
/// @p length of 0 (to `cls_read`, 0 means "to the end of the object").
using ObjectRead = std::function<Result<Buffer>(uint64_t offset, uint64_t length)>;

/// Opens the object @p read reads, which the caller says is @p claimed_size bytes (the size a
/// client saw, from its request). The claim is checked with one read of 2 bytes from the last
/// one (1 byte from 0 when @p claimed_size is 0): exactly the last byte must come back, no more
/// (the object is longer) and no less (shorter).
///
/// Every range is one read, its buffer the one @p read returns (no copy, no coalescing: a merged
/// read would place segments at offsets of the read's start, not at the alignment their own
/// start has).
/// @param name the object, for messages.
/// @return the source, whose `size()` is @p claimed_size; `Errc::io` with errno ESTALE when the
///         object is another size; @p read's error when the check read fails.
/// @note Reads only on the thread that opened it (`cls_read` belongs to the method's thread):
///       a read from another thread (the reader's fetch-behind) fails `Errc::unsupported`, and
///       the reader then reads the same segments on its own thread.
[[nodiscard]] Result<std::shared_ptr<SegmentSource>> open_object_source(ObjectRead read,
                                                                        uint64_t claimed_size,
                                                                        std::string name);

}  // namespace oc::format
