// SPDX-License-Identifier: Apache-2.0
// A flat chunk first tries the fused plan: if the tree is a chain the kernel covers, the chunk
// decodes whole on the device (its encoded bytes are what crosses PCIe) and the batch's rows are
// gathered from it; otherwise the CPU decodes just the window, as a plain scan would, and the
// result is placed. The host reference takes the same branches and runs the same plan and
// gather code on the host, so the CPU tests cover every decision up to the CUDA calls.
#include "kernels/device_scan.hpp"

#include <algorithm>
#include <numeric>

#include "config/checked_size.hpp"
#include "format/expr_eval.hpp"
#include "format/scan_profile.hpp"
#include "format/string_views.hpp"
#include "kernels/device.hpp"
#include "kernels/fused_decode.hpp"
#include "kernels/fused_plan.hpp"
#include "kernels/gather.hpp"

namespace oc::kernels {

using format::Buffer;
using format::Column;
using format::ColumnPtr;

struct DeviceChunkDecoder::Cuda {
  kernels::DecodeSession session;  // used under the decoder's lock only
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

Result<std::shared_ptr<DeviceChunkDecoder>> DeviceChunkDecoder::create(int device,
                                                                       DeviceDecodes where) {
  std::shared_ptr<DeviceChunkDecoder> d(new DeviceChunkDecoder(device, where));
  if (where == DeviceDecodes::host_reference) return d;
  const kernels::DeviceInfo info = kernels::probe_devices();
  OC_EXPECT(info.count > 0, cuda, "no CUDA device for a scan on cuda:{}: {}", device,
            info.why_none);
  OC_EXPECT(device >= 0 && device < info.count, cuda, "no CUDA device cuda:{} ({} device(s))",
            device, info.count);
  OC_TRY(kernels::use_device(device));
  OC_ASSIGN_OR_RETURN(kernels::DecodeSession session, kernels::DecodeSession::create());
  d->cuda_ = std::make_unique<Cuda>();
  d->cuda_->session = std::move(session);
  return d;
}

DeviceChunkDecoder::DeviceChunkDecoder(int device, DeviceDecodes where)
    : device_(device), where_(where) {}

DeviceChunkDecoder::~DeviceChunkDecoder() = default;

DeviceScanStats DeviceChunkDecoder::stats() const {
  return {fused_chunks_.load(),   cpu_chunks_.load(),      placed_columns_.load(), launches_.load(),
          bytes_uploaded_.load(), bytes_delivered_.load(), decode_ns_.load()};
}

Result<ColumnPtr> DeviceChunkDecoder::decode_flat(const format::ArrayView& tree,
                                                  const format::DTypePtr& dtype,
                                                  uint64_t chunk_rows, format::RowWindow rows,
                                                  const std::vector<uint8_t>* keep,
                                                  format::StringLayout strings) {
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
  // Everything about the output is known on the host now: its rows, width and nulls (from the
  // plan's bitmap). The decode itself waits for finish_split, which launches the split's chunks
  // together; the column's buffers exist from here on and are filled by then.
  Pending p;
  p.plan = std::make_shared<kernels::FusedPlan>(std::move(plan).value());
  if (keep != nullptr) p.selection = selection_of(*keep);
  kernels::GatherParams& g = p.gather;
  g.first = rows.begin;
  g.n = keep != nullptr ? p.selection.size() : rows.size();
  g.width = p.plan->params.out_bytes();
  g.validity = p.plan->validity.empty() ? nullptr : p.plan->validity.data();
  g.selection = keep != nullptr ? p.selection.data() : nullptr;
  const uint64_t nulls = kernels::gather_null_count(g);
  auto out = std::make_shared<Column>();
  out->dtype = dtype;
  out->length = g.n;
  out->null_count = static_cast<int64_t>(nulls);
  const uint64_t value_bytes = saturating_mul(g.n, g.width),
                 bitmap_bytes = nulls != 0 ? (g.n + 7) / 8 : 0;
  std::lock_guard<std::mutex> lock(mu_);
  if (where_ == DeviceDecodes::host_reference) {
    out->buffers.push_back(Buffer::allocate_for_overwrite(value_bytes));
    if (nulls != 0) out->validity = Buffer::allocate(bitmap_bytes);
    g.out = out->buffers[0].mutable_data();
    g.out_validity = nulls != 0 ? out->validity.mutable_data() : nullptr;
  } else {
    OC_TRY(kernels::use_device(device_));
    kernels::Stream& stream = cuda_->session.stream_at(0);
    auto hold = std::make_shared<DeviceHold>();
    OC_ASSIGN_OR_RETURN(kernels::DeviceBuffer values,
                        kernels::DeviceBuffer::allocate(value_bytes, stream));
    OC_ASSIGN_OR_RETURN(kernels::DeviceBuffer bitmap,
                        kernels::DeviceBuffer::allocate(bitmap_bytes, stream));
    if (!p.selection.empty()) {
      OC_ASSIGN_OR_RETURN(p.selected, kernels::DeviceBuffer::allocate(
                                          p.selection.size() * sizeof(uint32_t), stream));
      OC_TRY(kernels::copy_to_device(p.selected.data(), p.selection.data(), p.selected.size(),
                                     stream));
    }
    g.out = values.as<uint8_t>();
    g.out_validity = nulls != 0 ? bitmap.as<uint8_t>() : nullptr;
    out->device = device_;
    out->buffers.push_back(Buffer::wrap(hold, values.as<uint8_t>(), values.size()));
    if (nulls != 0) out->validity = Buffer::wrap(hold, bitmap.as<uint8_t>(), bitmap.size());
    hold->buffers.push_back(std::move(values));
    hold->buffers.push_back(std::move(bitmap));
  }
  bytes_uploaded_ += p.plan->input_bytes() + p.selection.size() * sizeof(uint32_t);
  bytes_delivered_ += value_bytes + bitmap_bytes;
  pending_.push_back(std::move(p));
  return ColumnPtr(std::move(out));
}

Result<void> DeviceChunkDecoder::finish_split() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t start = format::monotonic_ns();
  struct Timed {  // adds the call's wall time to decode_ns_, however it returns
    std::atomic<uint64_t>& into;
    uint64_t start;
    ~Timed() { into += format::monotonic_ns() - start; }
  } timed{decode_ns_, start};
  std::vector<Pending> work = std::move(pending_);
  pending_.clear();
  if (work.empty()) {
    if (!uploads_waiting_) return {};
    uploads_waiting_ = false;
    return cuda_->session.synchronize();  // the split's placed columns, copied asynchronously
  }
  std::vector<const kernels::FusedPlan*> plans;
  for (const Pending& p : work) plans.push_back(p.plan.get());
  ++launches_;
  if (where_ == DeviceDecodes::host_reference) {
    OC_ASSIGN_OR_RETURN(std::vector<Buffer> decoded, kernels::run_batch_on_host(plans));
    for (size_t i = 0; i < work.size(); ++i) {
      work[i].gather.source = decoded[i].data();
      (void)kernels::gather_on_host(work[i].gather);
    }
    return {};
  }
  OC_TRY(kernels::use_device(device_));
  kernels::DecodeSession& session = cuda_->session;
  // The outputs and selections were allocated and uploaded on stream 0; the batch runs on the
  // session's next stream, after them.
  OC_TRY(session.stream_at(0).synchronize());
  OC_ASSIGN_OR_RETURN(kernels::DeviceBatch batch, session.decode_batch(plans));
  OC_ASSIGN_OR_RETURN(kernels::Stream * stream, session.stream_of(batch.queued_on));
  for (size_t i = 0; i < work.size(); ++i) {
    kernels::GatherParams g = work[i].gather;
    const kernels::DeviceColumn& col = batch.columns[i];
    g.source = col.values.as<uint8_t>();
    g.validity = col.validity.size() == 0 ? nullptr : col.validity.as<uint8_t>();
    g.selection = work[i].selected.size() == 0 ? nullptr : work[i].selected.as<uint32_t>();
    OC_TRY(kernels::gather_on_device(g, *stream));
  }
  OC_TRY(session.finish(batch));  // one wait for the split; a corrupt dict code is an error here
  if (uploads_waiting_) {
    uploads_waiting_ = false;
    OC_TRY(session.synchronize());  // the split's placed columns, copied on the other streams
  }
  return {};
}

Result<ColumnPtr> DeviceChunkDecoder::place(ColumnPtr decoded, const std::vector<uint8_t>* keep) {
  ColumnPtr col = std::move(decoded);
  if (keep != nullptr) {
    format::Mask mask{*keep, static_cast<uint64_t>(std::count_if(
                                 keep->begin(), keep->end(), [](uint8_t k) { return k != 0; }))};
    OC_ASSIGN_OR_RETURN(col, format::filter_rows(col, mask));
  }
  // String views point into host buffers: the device gets offsets.
  OC_ASSIGN_OR_RETURN(col, format::with_string_layout(col, format::StringLayout::offsets));
  ++placed_columns_;
  if (where_ == DeviceDecodes::host_reference) return col;
  std::lock_guard<std::mutex> lock(mu_);
  OC_TRY(kernels::use_device(device_));
  return upload(col);
}

namespace {

// Every buffer of @p c and its children, in pre-order: validity first, then the buffers.
void collect_buffers(const Column& c, std::vector<std::span<const uint8_t>>& out) {
  out.push_back(c.validity.span());
  for (const Buffer& b : c.buffers) out.push_back(b.span());
  for (const ColumnPtr& k : c.children) collect_buffers(*k, out);
}

// @p c with its buffers replaced, in collect_buffers' order, by device buffers taken from
// @p device (advancing @p next), all kept alive by @p hold.
ColumnPtr with_device_buffers(const Column& c, std::vector<kernels::DeviceBuffer>& device,
                              size_t& next, const std::shared_ptr<DeviceHold>& hold, int index) {
  auto out = std::make_shared<Column>(c);
  out->device = index;
  auto take = [&]() {
    kernels::DeviceBuffer& d = device[next++];
    Buffer b = d.size() == 0 ? Buffer() : Buffer::wrap(hold, d.as<uint8_t>(), d.size());
    hold->buffers.push_back(std::move(d));
    return b;
  };
  out->validity = take();
  for (Buffer& b : out->buffers) b = take();
  for (ColumnPtr& k : out->children) k = with_device_buffers(*k, device, next, hold, index);
  return out;
}

}  // namespace

Result<ColumnPtr> DeviceChunkDecoder::upload(const ColumnPtr& host) {
  OC_ASSIGN_OR_RETURN(ColumnPtr c, compacted(host));
  std::vector<std::span<const uint8_t>> parts;
  collect_buffers(*c, parts);
  // Staged into pinned memory and copied asynchronously; finish_split waits for the copies.
  OC_ASSIGN_OR_RETURN(std::vector<kernels::DeviceBuffer> device, cuda_->session.upload(parts));
  uploads_waiting_ = true;
  for (const auto& p : parts) bytes_uploaded_ += p.size();
  for (const auto& p : parts) bytes_delivered_ += p.size();
  size_t next = 0;
  return with_device_buffers(*c, device, next, std::make_shared<DeviceHold>(), device_);
}

}  // namespace oc::kernels
