// SPDX-License-Identifier: Apache-2.0
// A flat chunk first tries the fused plan: if the tree is a chain the kernel covers, the chunk
// decodes whole on the device (its encoded bytes are what crosses PCIe) and the batch's rows are
// gathered from it; otherwise the CPU decodes just the window, as a plain scan would, and the
// result is placed. The host reference takes the same branches and runs the same plan and
// gather code on the host, so the CPU tests cover every decision up to the CUDA calls.
#include "client/device_scan.hpp"

#include <algorithm>
#include <numeric>

#include "format/expr_eval.hpp"
#include "format/string_views.hpp"
#include "kernels/device.hpp"
#include "kernels/fused_decode.hpp"
#include "kernels/fused_plan.hpp"
#include "kernels/gather.hpp"

namespace oc::client {

using format::Buffer;
using format::Column;
using format::ColumnPtr;

struct DeviceChunkDecoder::Cuda {
  std::mutex mu;  // one decode at a time: the session and its streams belong to one thread
  kernels::DecodeSession session;
};

namespace {

// The rows @p keep marks (relative to the window), or every row of a window of @p n.
std::vector<uint32_t> selection_of(const std::vector<uint8_t>& keep) {
  std::vector<uint32_t> rows;
  for (size_t i = 0; i < keep.size(); ++i) {
    if (keep[i] != 0) rows.push_back(static_cast<uint32_t>(i));
  }
  return rows;
}

// Device memory that the buffers of a delivered column point into.
struct DeviceHold {
  std::vector<kernels::DeviceBuffer> buffers;
};

// A host column with offset 0 and buffers holding exactly its rows, so that what is copied to
// the device is what the column shows.
Result<ColumnPtr> compacted(const ColumnPtr& c) {
  if (c->offset == 0) return c;
  std::vector<uint64_t> all(c->length);
  std::iota(all.begin(), all.end(), uint64_t{0});
  return format::take(c, all);
}

}  // namespace

Result<std::shared_ptr<DeviceChunkDecoder>> DeviceChunkDecoder::create(int device, DeviceDecodes where) {
  std::shared_ptr<DeviceChunkDecoder> d(new DeviceChunkDecoder(device, where));
  if (where == DeviceDecodes::host_reference) return d;
  const kernels::DeviceInfo info = kernels::probe_devices();
  OC_EXPECT(info.count > 0, cuda, "no CUDA device for a scan on cuda:{}: {}", device, info.why_none);
  OC_EXPECT(device >= 0 && device < info.count, cuda, "no CUDA device cuda:{} ({} device(s))", device, info.count);
  OC_TRY(kernels::use_device(device));
  OC_ASSIGN_OR_RETURN(kernels::DecodeSession session, kernels::DecodeSession::create());
  d->cuda_ = std::make_unique<Cuda>();
  d->cuda_->session = std::move(session);
  return d;
}

DeviceChunkDecoder::DeviceChunkDecoder(int device, DeviceDecodes where) : device_(device), where_(where) {}

DeviceChunkDecoder::~DeviceChunkDecoder() = default;

DeviceScanStats DeviceChunkDecoder::stats() const {
  return {fused_chunks_.load(), cpu_chunks_.load(), placed_columns_.load(), bytes_uploaded_.load(),
          bytes_delivered_.load()};
}

Result<ColumnPtr> DeviceChunkDecoder::decode_flat(const format::ArrayView& tree, const format::DTypePtr& dtype,
                                                  uint64_t chunk_rows, format::RowWindow rows,
                                                  const std::vector<uint8_t>* keep, format::StringLayout strings) {
  format::DecodeContext ctx;
  auto plan = kernels::build_fused_plan(tree, dtype, chunk_rows, ctx);
  if (!plan.ok()) {
    if (plan.error().code() != Errc::unsupported) return plan.error();  // corrupt, as the CPU says
    ++cpu_chunks_;
    format::DecodeContext cpu;
    cpu.prefer_strings(strings);
    auto col = rows.size() == chunk_rows ? cpu.decode(tree, dtype, chunk_rows)
                                         : cpu.decode_slice(tree, dtype, chunk_rows, rows);
    OC_TRY(col);
    return place(std::move(col).value(), keep);
  }
  ++fused_chunks_;
  const std::vector<uint32_t> selection = keep != nullptr ? selection_of(*keep) : std::vector<uint32_t>{};
  kernels::GatherParams g;
  g.first = rows.begin;
  g.n = keep != nullptr ? selection.size() : rows.size();
  g.width = plan->params.out_bytes();
  auto out = std::make_shared<Column>();
  out->dtype = dtype;
  out->length = g.n;

  if (where_ == DeviceDecodes::host_reference) {
    OC_ASSIGN_OR_RETURN(Buffer values, kernels::run_plan_on_host(*plan));
    g.source = values.data();
    g.validity = plan->validity.empty() ? nullptr : plan->validity.data();
    g.selection = keep != nullptr ? selection.data() : nullptr;
    uint64_t nulls = 0;
    auto gathered = kernels::gather_on_host(g, nulls);
    out->buffers.push_back(std::move(gathered.values));
    out->null_count = static_cast<int64_t>(nulls);
    if (nulls != 0) out->validity = std::move(gathered.validity);
    bytes_uploaded_ += plan->input_bytes() + selection.size() * sizeof(uint32_t);
    bytes_delivered_ += out->buffers[0].size() + out->validity.size();
    return ColumnPtr(std::move(out));
  }

  std::lock_guard<std::mutex> lock(cuda_->mu);
  OC_TRY(kernels::use_device(device_));
  kernels::DecodeSession& session = cuda_->session;
  OC_ASSIGN_OR_RETURN(kernels::DeviceColumn col, session.decode(*plan));
  OC_ASSIGN_OR_RETURN(kernels::Stream * stream, session.stream_of(col.queued_on));
  auto hold = std::make_shared<DeviceHold>();
  kernels::DeviceBuffer selected;
  if (keep != nullptr && !selection.empty()) {
    OC_ASSIGN_OR_RETURN(selected, kernels::DeviceBuffer::allocate(selection.size() * sizeof(uint32_t), *stream));
    OC_TRY(kernels::copy_to_device(selected.data(), selection.data(), selected.size(), *stream));
  }
  g.source = col.values.as<uint8_t>();
  g.validity = col.validity.size() == 0 ? nullptr : col.validity.as<uint8_t>();
  g.selection = keep != nullptr ? selected.as<uint32_t>() : nullptr;
  kernels::DeviceBuffer nulls_word;
  OC_ASSIGN_OR_RETURN(auto gathered, kernels::gather_on_device(g, nulls_word, *stream));
  unsigned long long nulls = 0;
  OC_TRY(kernels::copy_to_host(&nulls, nulls_word.data(), sizeof(nulls), *stream));
  OC_TRY(session.finish(col));  // waits for the stream (the gather and the count too), checks codes
  out->device = device_;
  out->null_count = static_cast<int64_t>(nulls);
  auto wrap = [&](const kernels::DeviceBuffer& b) {
    return Buffer::wrap(hold, b.as<uint8_t>(), b.size());
  };
  out->buffers.push_back(wrap(gathered.values));
  if (nulls != 0) out->validity = wrap(gathered.validity);
  bytes_uploaded_ += plan->input_bytes() + selected.size();
  bytes_delivered_ += gathered.values.size() + (nulls != 0 ? gathered.validity.size() : 0);
  hold->buffers.push_back(std::move(gathered.values));
  hold->buffers.push_back(std::move(gathered.validity));
  return ColumnPtr(std::move(out));
}

Result<ColumnPtr> DeviceChunkDecoder::place(ColumnPtr decoded, const std::vector<uint8_t>* keep) {
  ColumnPtr col = std::move(decoded);
  if (keep != nullptr) {
    format::Mask mask{*keep, static_cast<uint64_t>(std::count_if(keep->begin(), keep->end(),
                                                                 [](uint8_t k) { return k != 0; }))};
    OC_ASSIGN_OR_RETURN(col, format::filter_rows(col, mask));
  }
  // String views point into host buffers: the device gets offsets.
  OC_ASSIGN_OR_RETURN(col, format::with_string_layout(col, format::StringLayout::offsets));
  ++placed_columns_;
  if (where_ == DeviceDecodes::host_reference) return col;
  std::lock_guard<std::mutex> lock(cuda_->mu);
  OC_TRY(kernels::use_device(device_));
  return upload(col);
}

Result<ColumnPtr> DeviceChunkDecoder::upload(const ColumnPtr& host) {
  OC_ASSIGN_OR_RETURN(ColumnPtr c, compacted(host));
  kernels::Stream* stream = &cuda_->session.stream_at(0);
  auto hold = std::make_shared<DeviceHold>();
  auto copy = [&](const Buffer& b) -> Result<Buffer> {
    if (b.size() == 0) return Buffer();
    OC_ASSIGN_OR_RETURN(kernels::DeviceBuffer d, kernels::DeviceBuffer::allocate(b.size(), *stream));
    OC_TRY(kernels::copy_to_device(d.data(), b.data(), b.size(), *stream));
    bytes_uploaded_ += b.size();
    bytes_delivered_ += b.size();
    Buffer wrapped = Buffer::wrap(hold, d.as<uint8_t>(), d.size());
    hold->buffers.push_back(std::move(d));
    return wrapped;
  };
  auto out = std::make_shared<Column>(*c);
  out->device = device_;
  OC_ASSIGN_OR_RETURN(out->validity, copy(c->validity));
  for (auto& b : out->buffers) {
    OC_ASSIGN_OR_RETURN(b, copy(b));
  }
  for (auto& child : out->children) {
    OC_ASSIGN_OR_RETURN(child, upload(child));
  }
  // The host buffers stay alive in `c` until the copies ran: wait here, once per column.
  OC_TRY(stream->synchronize());
  return ColumnPtr(std::move(out));
}

Result<std::unique_ptr<format::Scan>> scan_on_device(const format::VortexFile& file, format::ScanOptions options,
                                                     std::shared_ptr<DeviceChunkDecoder> decoder) {
  options.strings = format::StringLayout::offsets;
  options.chunk_decoder = std::move(decoder);
  return file.scan_here(options);
}

}  // namespace oc::client
