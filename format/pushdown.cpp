// SPDX-License-Identifier: Apache-2.0
#include "format/pushdown.hpp"

#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <unordered_set>

#include "format/fbs/pushdown_generated.h"
#include "format/flatbuffer_util.hpp"
#include "format/reader.hpp"

namespace oc::format {
namespace {

namespace pfb = oc::fbs::pushdown;

// A source the caller owns, handed to VortexFile::open (which wants shared ownership) without
// taking it: the aliasing constructor with an empty owner deletes nothing.
std::shared_ptr<SegmentSource> borrowed(SegmentSource& source) {
  return std::shared_ptr<SegmentSource>(std::shared_ptr<void>(), &source);
}

Result<std::string> scan_to_ipc(SegmentSource& object, const PushdownRequest& request,
                                uint64_t cap) {
  if (object.size() != request.file_size) {
    return Error(Errc::io,
                 fmt::format("{}: the object is {} bytes, the request says {}", object.name(),
                             object.size(), request.file_size),
                 __FILE__, __LINE__, ESTALE);
  }
  OC_ASSIGN_OR_RETURN(auto file, VortexFile::open(borrowed(object)));
  const StringLayout strings = request.string_views ? StringLayout::views : StringLayout::offsets;
  ScanOptions opts;
  opts.columns = request.columns;
  opts.filter = request.filter;
  if (request.row_begin != 0 || request.row_end != 0) {
    opts.row_range = std::pair{request.row_begin, request.row_end};
  }
  opts.strings = strings;
  // One split decoded at a time bounds what the OSD holds to one batch and its message.
  opts.splits_in_flight = 1;
  opts.read_ahead = false;  // no fetch thread: cls_read belongs to the OSD's op thread
  OC_ASSIGN_OR_RETURN(auto scan, file->scan(opts));
  OC_ASSIGN_OR_RETURN(
      auto writer, ArrowIpcWriter::make(scan->dtype(),
                                        {.strings = strings, .compression = request.compression}));

  // The end marker always fits after what was appended: a message is appended only when it
  // and the marker both fit in what is left of the cap.
  const IpcMessage eos = ArrowIpcWriter::end_of_stream();
  std::string out;
  auto append = [&](const IpcMessage& m, bool then_eos = true) -> Result<void> {
    const uint64_t room = cap - out.size();
    const uint64_t after = then_eos ? eos.size() : 0;
    if (m.size() > room || after > room - m.size()) {
      return Error(Errc::out_of_memory,
                   fmt::format("{}: the Arrow IPC result passes its {} byte cap ({} bytes "
                               "written, a message of {} next)",
                               object.name(), cap, out.size(), m.size()),
                   __FILE__, __LINE__, EFBIG);
    }
    out += m.metadata;
    for (const Buffer& b : m.body) out.append(reinterpret_cast<const char*>(b.data()), b.size());
    return {};
  };
  OC_TRY(append(writer.schema_message()));
  for (;;) {
    OC_ASSIGN_OR_RETURN(auto batch, scan->next());
    if (!batch) break;
    if ((*batch)->length == 0) continue;  // a pruned or filtered-out split: nothing to say
    OC_ASSIGN_OR_RETURN(IpcMessage m, writer.batch_message(*batch));
    OC_TRY(append(m));
  }
  OC_TRY(append(eos, /*then_eos=*/false));
  return out;
}

}  // namespace

std::string encode_pushdown_request(const PushdownRequest& r) {
  flatbuffers::FlatBufferBuilder b;
  b.ForceDefaults(true);  // every field on the wire: a reader never guesses a default
  std::vector<flatbuffers::Offset<flatbuffers::String>> names;
  names.reserve(r.columns.size());
  for (const auto& c : r.columns) names.push_back(b.CreateString(c));
  const auto columns = b.CreateVector(names);
  const auto filter = b.CreateString(r.filter);
  b.Finish(pfb::CreateScanRequest(b, r.version, r.file_size, columns, filter, r.row_begin,
                                  r.row_end, r.max_result_bytes, r.string_views,
                                  static_cast<uint8_t>(r.compression)));
  return {reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize()};
}

Result<PushdownRequest> decode_pushdown_request(std::span<const uint8_t> bytes,
                                                uint64_t max_request_bytes) {
  if (bytes.size() > max_request_bytes) {
    return Error(Errc::invalid,
                 fmt::format("a {} byte scan request is over the {} byte cap "
                             "(cls_max_request_bytes)",
                             bytes.size(), max_request_bytes),
                 __FILE__, __LINE__, E2BIG);
  }
  // The OSD hands the input over at no particular alignment; FlatBuffers wants 8.
  const AlignedBytes aligned(bytes);
  auto root = verified_root<pfb::ScanRequest>(aligned.span(), "scan request");
  if (!root.ok()) return OC_ERROR(Errc::invalid, "{}", root.error().message());
  const pfb::ScanRequest& fb = **root;

  PushdownRequest r;
  r.version = fb.version();
  OC_EXPECT(r.version != 0, invalid, "scan request without a version");
  OC_EXPECT(r.version <= kPushdownVersion, unsupported,
            "scan request version {}; this build answers version {}", r.version, kPushdownVersion);
  r.file_size = fb.file_size();
  if (const auto* cols = fb.columns()) {
    std::unordered_set<std::string_view> seen;
    r.columns.reserve(cols->size());
    for (const flatbuffers::String* c : *cols) {
      OC_EXPECT(c != nullptr && c->size() != 0, invalid, "scan request names an empty column");
      OC_EXPECT(seen.insert(c->string_view()).second, invalid,
                "scan request names column '{}' twice", c->string_view());
      r.columns.emplace_back(c->string_view());
    }
  }
  if (const auto* f = fb.filter()) r.filter = f->str();
  r.row_begin = fb.row_begin();
  r.row_end = fb.row_end();
  OC_EXPECT(r.row_begin <= r.row_end, invalid, "scan request rows [{}, {}) run backwards",
            r.row_begin, r.row_end);
  r.max_result_bytes = fb.max_result_bytes();
  r.string_views = fb.string_views();
  const uint8_t compression = fb.compression();
  OC_EXPECT(compression <= static_cast<uint8_t>(IpcCompression::zstd), invalid,
            "scan request asks for compression {}; 0 (none) and 1 (zstd) exist", compression);
  r.compression = static_cast<IpcCompression>(compression);
  return r;
}

Result<std::string> run_pushdown_scan(SegmentSource& object, const PushdownRequest& request,
                                      uint64_t max_result_bytes) {
  const uint64_t cap = request.max_result_bytes == 0
                           ? max_result_bytes
                           : std::min(request.max_result_bytes, max_result_bytes);
  return catch_all("pushdown scan", [&] { return scan_to_ipc(object, request, cap); });
}

int pushdown_errno(const Error& error) noexcept {
  switch (error.sys_errno()) {
    case E2BIG:
    case EFBIG:
    case ESTALE:
      return -error.sys_errno();
    default:
      break;
  }
  switch (error.code()) {
    case Errc::invalid:
    case Errc::not_found:  // an unknown column: the request's fault
      return -EINVAL;
    case Errc::corrupt:
      return -EBADMSG;
    case Errc::unsupported:
      return -EPROTO;
    case Errc::out_of_memory:
      return -ENOMEM;
    default:
      return -EIO;
  }
}

Errc errc_from_pushdown_errno(int err) noexcept {
  switch (err < 0 ? -err : err) {
    case EINVAL:
    case E2BIG:
      return Errc::invalid;
    case EBADMSG:
      return Errc::corrupt;
    case EPROTO:
    case EOPNOTSUPP:
      return Errc::unsupported;
    case EFBIG:
    case ENOMEM:
      return Errc::out_of_memory;
    case EPERM:
      return Errc::denied;
    case ENOENT:
      return Errc::not_found;
    default:
      return Errc::io;
  }
}

}  // namespace oc::format
