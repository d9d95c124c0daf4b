// SPDX-License-Identifier: Apache-2.0
// onecopy-gpu-bench: the numbers scripts/gpu_check.sh prints, measured in one run on device 0.
//
//   onecopy-gpu-bench [--quick] [--file F.vortex [--plan-only]] [--cpu-threads N]
//
// 1. Ceilings: a device-to-device copy and a pinned host-to-device copy, each the median of
//    kRepeats, after a warm-up.
// 2. Kernels: one fused launch per synthetic case (random packed words are valid bitpacked
//    data at any width; dict codes are drawn below the dictionary's length), the median time,
//    reported as output bytes per second next to the copy's bytes copied per second.
// 3. End to end (--file): every flat segment of the file whose tree fuses, read into pinned host
//    memory first; timed from the first host-to-device copy to the last decoded value on the
//    device, work spread over a pool of streams; against the pinned copy rate of the same
//    compressed bytes and against onecopy's CPU decoders on --cpu-threads threads. Two paths:
//    per plan (one copy of the packed bytes and one launch per chunk) and batched
//    (DecodeSession::decode_batch: one copy of the staged inputs and one launch per batch of
//    consecutive chunks; see `batches_of` for the two batch sizes measured).
// --plan-only runs the host half of 3 without a device: plans every flat array, checks each
// plan's host run against the CPU decoders and each batch's host run (run_batch_on_host, the
// same batches) against the plans' own, byte for byte; times the CPU decoders. Otherwise it
// exits 77 without a CUDA device, like the GPU tests. Untested on GPU hardware so far.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "config/defaults.hpp"
#include "format/array_tree.hpp"
#include "format/proto/bitpacked.pb.h"
#include "format/proto/dict.pb.h"
#include "format/proto/scalar.pb.h"
#include "format/reader.hpp"
#include "format/string_views.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/device.hpp"
#include "kernels/filter.hpp"
#include "kernels/fsst.hpp"
#include "kernels/fused_decode.cuh"
#include "kernels/fused_decode.hpp"

namespace {

using namespace oc;
using format::ArrayView;
using format::Buffer;
using format::DType;
using format::DTypePtr;
using format::PType;

constexpr int kRepeats = 20;
constexpr int kEndToEndRepeats = 5;
constexpr size_t kStreams = 4;
// The smaller of the two batch sizes measured end to end: 27 batches at SF1 (104 MB to upload),
// six or seven per stream, so one batch's copy overlaps another's decode.
constexpr uint64_t kSmallBatchBytes = uint64_t{4} << 20;
// What a batch's arena adds to a plan's input bytes: each of its parts (about ten), its error
// word and its parameters start at a 256-byte boundary (kernels/fused_decode.cpp).
constexpr uint64_t kStagedOverheadPerPlan = 16 * 256;

struct Options {
  bool quick = false;
  bool plan_only = false;
  std::string file;
  unsigned cpu_threads = std::max(1u, std::thread::hardware_concurrency());
};

// Median of @p repeats timings of @p work (queued on @p stream), in seconds, after one warm-up.
template <class F>
Result<double> median_seconds(cudaStream_t stream, int repeats, F&& work) {
  cudaEvent_t start = nullptr, stop = nullptr;
  OC_TRY(kernels::cuda_check(cudaEventCreate(&start), "cudaEventCreate"));
  OC_TRY(kernels::cuda_check(cudaEventCreate(&stop), "cudaEventCreate"));
  auto run = [&]() -> Result<double> {
    OC_TRY(work());
    OC_TRY(kernels::cuda_check(cudaStreamSynchronize(stream), "warm-up"));
    std::vector<double> times;
    for (int i = 0; i < repeats; ++i) {
      OC_TRY(kernels::cuda_check(cudaEventRecord(start, stream), "cudaEventRecord"));
      OC_TRY(work());
      OC_TRY(kernels::cuda_check(cudaEventRecord(stop, stream), "cudaEventRecord"));
      OC_TRY(kernels::cuda_check(cudaEventSynchronize(stop), "cudaEventSynchronize"));
      float ms = 0;
      OC_TRY(kernels::cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime"));
      times.push_back(ms / 1e3);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  };
  auto r = run();
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return r;
}

double gbps(double bytes, double seconds) { return bytes / seconds / 1e9; }

struct Ceilings {
  double d2d_copied_gbps = 0;  // bytes copied per second (the output-bytes measure)
  double h2d_gbps = 0;
};

Result<Ceilings> measure_ceilings(size_t bytes, kernels::Stream& stream) {
  Ceilings c;
  OC_ASSIGN_OR_RETURN(auto a, kernels::DeviceBuffer::allocate(bytes, stream));
  OC_ASSIGN_OR_RETURN(auto b, kernels::DeviceBuffer::allocate(bytes, stream));
  OC_ASSIGN_OR_RETURN(auto pinned, kernels::PinnedBuffer::allocate(bytes));
  std::memset(pinned.data(), 0x5a, bytes);
  OC_TRY(kernels::cuda_check(
      cudaMemcpyAsync(a.data(), pinned.data(), bytes, cudaMemcpyHostToDevice, stream.handle()),
      "fill"));
  OC_ASSIGN_OR_RETURN(
      double d2d, median_seconds(stream.handle(), kRepeats, [&]() -> Result<void> {
        return kernels::cuda_check(
            cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice, stream.handle()),
            "D2D copy");
      }));
  OC_ASSIGN_OR_RETURN(double h2d, median_seconds(stream.handle(), kRepeats, [&]() -> Result<void> {
                        return kernels::cuda_check(
                            cudaMemcpyAsync(a.data(), pinned.data(), bytes, cudaMemcpyHostToDevice,
                                            stream.handle()),
                            "H2D copy");
                      }));
  OC_TRY(stream.synchronize());
  c.d2d_copied_gbps = gbps(static_cast<double>(bytes), d2d);
  c.h2d_gbps = gbps(static_cast<double>(bytes), h2d);
  return c;
}

// ---- synthetic kernel cases ----------------------------------------------------------------

Buffer random_bytes(size_t n, std::mt19937_64& rng) {
  Buffer b = Buffer::allocate_for_overwrite((n + 7) / 8 * 8);
  auto* w = b.mutable_as<uint64_t>();
  for (size_t i = 0; i < b.size() / 8; ++i) w[i] = rng();
  return b.slice(0, n);
}

ArrayView make_node(std::string id, std::string meta, std::vector<Buffer> buffers,
                    std::vector<ArrayView> children) {
  ArrayView v;
  v.encoding = std::move(id);
  v.metadata.assign(meta.begin(), meta.end());
  v.buffers = std::move(buffers);
  v.children = std::move(children);
  return v;
}

// A bitpacked node of @p len random values at @p width; every 1000th row patched when asked.
ArrayView bitpacked(uint64_t len, size_t value_bytes, unsigned width, bool patched,
                    std::mt19937_64& rng) {
  pb::BitPackedMetadata m;
  m.set_bit_width(width);
  std::vector<ArrayView> children;
  if (patched) {
    std::vector<uint64_t> rows;
    for (uint64_t r = 0; r < len; r += 1000) rows.push_back(r);
    m.mutable_patches()->set_len(rows.size());
    m.mutable_patches()->set_indices_ptype(static_cast<uint32_t>(PType::u64));
    Buffer idx = Buffer::copy_of({reinterpret_cast<const uint8_t*>(rows.data()), rows.size() * 8});
    children = {
        make_node("vortex.primitive", {}, {idx}, {}),
        make_node("vortex.primitive", {}, {random_bytes(rows.size() * value_bytes, rng)}, {})};
  }
  const uint64_t blocks = (len + 1023) / 1024;
  return make_node("fastlanes.bitpacked", m.SerializeAsString(),
                   {random_bytes(blocks * 128 * width, rng)}, std::move(children));
}

std::string reference(uint64_t v) {
  pb::ScalarValue s;
  s.set_uint64_value(v);
  return s.SerializeAsString();
}

std::string dict_meta(uint32_t values_len, PType codes) {
  pb::DictMetadata m;
  m.set_values_len(values_len);
  m.set_codes_ptype(static_cast<uint32_t>(codes));
  return m.SerializeAsString();
}

struct KernelCase {
  std::string name;
  ArrayView node;
  DTypePtr dtype;
};

std::vector<KernelCase> kernel_cases(uint64_t len, std::mt19937_64& rng) {
  auto prim = [](PType p) { return DType::make_primitive(p, false); };
  std::vector<KernelCase> c;
  c.push_back({"bitunpack u8 w3", bitpacked(len, 1, 3, false, rng), prim(PType::u8)});
  c.push_back({"bitunpack u16 w9", bitpacked(len, 2, 9, false, rng), prim(PType::u16)});
  c.push_back({"bitunpack u32 w13", bitpacked(len, 4, 13, false, rng), prim(PType::u32)});
  c.push_back(
      {"bitunpack u32 w13 +0.1% patches", bitpacked(len, 4, 13, true, rng), prim(PType::u32)});
  c.push_back({"bitunpack u64 w40", bitpacked(len, 8, 40, false, rng), prim(PType::u64)});
  c.push_back({"for u32 > primitive",
               make_node("fastlanes.for", reference(12345), {},
                         {make_node("vortex.primitive", {}, {random_bytes(len * 4, rng)}, {})}),
               prim(PType::u32)});
  c.push_back(
      {"for u32 > bitunpack w13",
       make_node("fastlanes.for", reference(12345), {}, {bitpacked(len, 4, 13, false, rng)}),
       prim(PType::u32)});
  c.push_back({"zigzag i64 > bitunpack w20",
               make_node("vortex.zigzag", {}, {}, {bitpacked(len, 8, 20, false, rng)}),
               prim(PType::i64)});
  // Codes below 4096: u16 codes masked to 12 bits.
  Buffer codes = random_bytes(len * 2, rng);
  for (uint64_t i = 0; i < len; ++i) codes.mutable_as<uint16_t>()[i] &= 0x0fff;
  c.push_back({"dict f64 > primitive u16 (4096 values)",
               make_node("vortex.dict", dict_meta(4096, PType::u16), {},
                         {make_node("vortex.primitive", {}, {codes}, {}),
                          make_node("vortex.primitive", {}, {random_bytes(4096 * 8, rng)}, {})}),
               prim(PType::f64)});
  c.push_back(
      {"dict f64 > for u16 > bitunpack w12",
       make_node("vortex.dict", dict_meta(4096, PType::u16), {},
                 {make_node("fastlanes.for", reference(0), {}, {bitpacked(len, 2, 12, false, rng)}),
                  make_node("vortex.primitive", {}, {random_bytes(4096 * 8, rng)}, {})}),
       prim(PType::f64)});
  return c;
}

Result<void> run_kernel_table(uint64_t len, const Ceilings& ceil, kernels::Stream& stream) {
  std::mt19937_64 rng(42);
  std::printf("\n%-40s %12s %10s %10s\n", "kernel (fused launch)", "output GB/s", "% of D2D",
              "in+out GB/s");
  std::printf("%-40s %12.1f %10s %10.1f\n", "D2D copy (cudaMemcpyAsync)", ceil.d2d_copied_gbps,
              "100%", 2 * ceil.d2d_copied_gbps);
  for (auto& kc : kernel_cases(len, rng)) {
    format::DecodeContext ctx;
    OC_ASSIGN_OR_RETURN(auto plan, kernels::build_fused_plan(kc.node, kc.dtype, len, ctx));
    OC_ASSIGN_OR_RETURN(auto col, kernels::decode_on_device(plan, stream));
    OC_ASSIGN_OR_RETURN(double t, median_seconds(stream.handle(), kRepeats, [&]() -> Result<void> {
                          return kernels::cuda_check(
                              kernels::detail::launch_fused_decode(col.params, stream.handle()),
                              kc.name.c_str());
                        }));
    OC_TRY(col.finish(stream));
    const double out = static_cast<double>(plan.output_bytes());
    const double in = static_cast<double>(plan.input_bytes());
    std::printf("%-40s %12.1f %9.0f%% %10.1f\n", kc.name.c_str(), gbps(out, t),
                100 * gbps(out, t) / ceil.d2d_copied_gbps, gbps(in + out, t));
  }
  // The filter over decoded i32 values (half selected): output = the column read, per second.
  format::DecodeContext ctx;
  ArrayView prim = make_node("vortex.primitive", {}, {random_bytes(len * 4, rng)}, {});
  OC_ASSIGN_OR_RETURN(auto plan, kernels::build_fused_plan(
                                     prim, DType::make_primitive(PType::i32, false), len, ctx));
  OC_ASSIGN_OR_RETURN(auto col, kernels::decode_on_device(plan, stream));
  const kernels::Predicate p{kernels::CompareOp::lt, kernels::ValueKind::signed_int, 4, 0};
  OC_ASSIGN_OR_RETURN(double t, median_seconds(stream.handle(), kRepeats, [&]() -> Result<void> {
                        OC_ASSIGN_OR_RETURN(auto f, kernels::filter_on_device(
                                                        p, col.values.data(),
                                                        col.validity.as<uint8_t>(), len, stream));
                        return {};  // f's buffers are freed in stream order
                      }));
  OC_TRY(col.finish(stream));
  std::printf("%-40s %12.1f %9.0f%% %10s\n", "filter i32 < 0 + CUB compaction (input)",
              gbps(len * 4.0, t), 100 * gbps(len * 4.0, t) / ceil.d2d_copied_gbps, "-");
  return {};
}

// ---- end to end over a file ------------------------------------------------------------------

struct FlatArray {
  std::string column;
  ArrayView tree;
  DTypePtr dtype;
  uint64_t rows = 0;
};

// Collects the flat segments of @p l (type @p t) under struct, chunked, zoned and stats layouts.
void collect(const format::LayoutPtr& l, const DTypePtr& t, const std::string& column,
             std::vector<std::pair<std::string, std::pair<format::LayoutPtr, DTypePtr>>>& out) {
  if (l->encoding == "vortex.flat") {
    out.push_back({column, {l, t}});
  } else if (l->encoding == "vortex.chunked") {
    for (const auto& c : l->children) collect(c, t, column, out);
  } else if (l->encoding == "vortex.zoned" || l->encoding == "vortex.stats") {
    collect(l->children[0], t, column, out);
  } else if (l->encoding == "vortex.struct" && t->kind == format::TypeKind::struct_) {
    const size_t skip = l->children.size() - t->children.size();  // a validity child first, if any
    for (size_t i = 0; i < t->children.size(); ++i)
      collect(l->children[skip + i], t->children[i], t->names[i], out);
  } else {
    std::printf("  (column %s: layout %s not walked)\n", column.c_str(), l->encoding.c_str());
  }
}

// Every fusable flat segment of a file, planned; the segments live in one host region.
struct FilePlans {
  std::vector<FlatArray> fsst;  // vortex.fsst roots: the GPU FSST decode, checked by --plan-only
  std::vector<FlatArray> fused;
  std::vector<kernels::FusedPlan> plans;
  uint64_t compressed = 0, decoded = 0, rows = 0;
};

// The batched path's batches: consecutive plans in file order (column by column, chunk by chunk)
// while their staged inputs fit @p cap bytes; a plan larger than @p cap is a batch of its own.
// Two caps are measured: the session's staging buffer (gpu_staging_bytes, 64 MiB by default:
// the fewest launches, each upload from the stream's own pinned buffer) and kSmallBatchBytes
// (enough batches for the streams to overlap copies with decodes). Row chunks are no unit here:
// each column of a Vortex file has its own chunk boundaries.
struct Batching {
  std::string label;  // "<= 64 MiB"
  std::vector<std::vector<const kernels::FusedPlan*>> batches;
};

Batching batches_of(const std::vector<kernels::FusedPlan>& plans, uint64_t cap) {
  Batching b;
  b.label = "<= " + std::to_string(cap >> 20) + " MiB";
  uint64_t staged = 0;
  for (const auto& plan : plans) {
    const uint64_t bytes = plan.input_bytes() + kStagedOverheadPerPlan;
    if (b.batches.empty() || staged + bytes > cap) {
      b.batches.emplace_back();
      staged = 0;
    }
    b.batches.back().push_back(&plan);
    staged += bytes;
  }
  return b;
}

std::vector<Batching> batchings(const std::vector<kernels::FusedPlan>& plans) {
  return {batches_of(plans, oc::defaults().gpu_staging_bytes), batches_of(plans, kSmallBatchBytes)};
}

// Reads the flat segments of @p path into @p region (pinned when a device exists, from
// @p allocate), parses and plans each, and prints the arrays that do not fuse, with the reason.
template <class Allocate>
Result<FilePlans> plan_file(const std::string& path, Allocate&& allocate) {
  OC_ASSIGN_OR_RETURN(auto file, format::VortexFile::open_path(path));
  std::vector<std::pair<std::string, std::pair<format::LayoutPtr, DTypePtr>>> flats;
  collect(file->footer().layout, file->dtype(), "", flats);
  std::vector<format::ByteRange> ranges;
  for (const auto& f : flats)
    ranges.push_back(file->footer().segments[f.second.first->segments[0]].range());
  OC_ASSIGN_OR_RETURN(auto segments, file->source().read(ranges));
  size_t total = 0;
  for (const auto& s : segments) total += (s.size() + 255) / 256 * 256;
  OC_ASSIGN_OR_RETURN(uint8_t * region, allocate(total));
  FilePlans out;
  std::vector<std::string> skipped;
  size_t at = 0;
  for (size_t i = 0; i < flats.size(); ++i) {
    std::memcpy(region + at, segments[i].data(), segments[i].size());
    Buffer seg = Buffer::wrap(nullptr, region + at, segments[i].size());
    at += (segments[i].size() + 255) / 256 * 256;
    OC_ASSIGN_OR_RETURN(auto tree, format::parse_array_tree(seg, file->footer().array_specs));
    const uint64_t rows = flats[i].second.first->row_count;
    format::DecodeContext ctx;
    auto plan = kernels::build_fused_plan(tree, flats[i].second.second, rows, ctx);
    if (!plan.ok()) {
      skipped.push_back(flats[i].first + ": " + plan.error().message());
      if (tree.encoding == "vortex.fsst")
        out.fsst.push_back({flats[i].first, std::move(tree), flats[i].second.second, rows});
      continue;
    }
    out.compressed += plan->input_bytes();
    out.decoded += plan->output_bytes();
    out.rows += rows;
    out.fused.push_back({flats[i].first + " (" + plan->description + ")", std::move(tree),
                         flats[i].second.second, rows});
    out.plans.push_back(std::move(*plan));
  }
  std::sort(skipped.begin(), skipped.end());
  skipped.erase(std::unique(skipped.begin(), skipped.end()), skipped.end());
  for (const auto& s : skipped) std::printf("  not fused: %s\n", s.c_str());
  std::vector<std::string> chains;
  for (const auto& f : out.fused) chains.push_back(f.column);
  std::sort(chains.begin(), chains.end());
  chains.erase(std::unique(chains.begin(), chains.end()), chains.end());
  for (const auto& c : chains) std::printf("  fused: %s\n", c.c_str());
  std::printf("%s: %zu of %zu flat arrays fuse, %llu rows, %.1f MB to upload -> %.1f MB decoded\n",
              path.c_str(), out.plans.size(), flats.size(),
              static_cast<unsigned long long>(out.rows), out.compressed / 1e6, out.decoded / 1e6);
  OC_EXPECT(!out.plans.empty(), unsupported, "no flat segment of {} fuses", path);
  return out;
}

// The fused arrays through onecopy's CPU decoders on @p threads threads; returns seconds.
Result<double> cpu_decode_seconds(const FilePlans& fp, unsigned threads) {
  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < threads; ++w) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < fp.fused.size(); i = next++) {
        format::DecodeContext ctx;
        if (!ctx.decode(fp.fused[i].tree, fp.fused[i].dtype, fp.fused[i].rows).ok()) failed = true;
      }
    });
  }
  for (auto& th : pool) th.join();
  OC_EXPECT(!failed, corrupt, "a CPU decode failed");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// --plan-only: the host half without a device (what gpu_check.sh --dry-run runs here).
Result<void> run_plan_only(const Options& o) {
  std::vector<uint8_t> region;
  OC_ASSIGN_OR_RETURN(auto fp, plan_file(o.file, [&](size_t n) -> Result<uint8_t*> {
                        region.resize(n);
                        return region.data();
                      }));
  OC_ASSIGN_OR_RETURN(double cpu_t, cpu_decode_seconds(fp, o.cpu_threads));
  std::printf("CPU: onecopy decoders, %u threads: %.2f ms, %.1f GB/s decoded\n", o.cpu_threads,
              cpu_t * 1e3, gbps(static_cast<double>(fp.decoded), cpu_t));
  // The plans against the CPU decoders, through the kernel's stage code on the host.
  std::vector<Buffer> host_runs;
  for (size_t i = 0; i < fp.plans.size(); ++i) {
    OC_ASSIGN_OR_RETURN(auto got, kernels::run_plan_on_host(fp.plans[i]));
    format::DecodeContext ctx;
    OC_ASSIGN_OR_RETURN(auto want,
                        ctx.decode(fp.fused[i].tree, fp.fused[i].dtype, fp.fused[i].rows));
    const size_t w = format::fixed_width_of(*want->dtype);
    bool same = got.size() == want->length * w;
    const uint8_t* base = want->buffers[0].data() + want->offset * w;
    for (uint64_t r = 0; same && r < want->length; ++r) {  // a null row's value is undefined
      same = !want->is_valid(r) || std::memcmp(got.data() + r * w, base + r * w, w) == 0;
    }
    OC_EXPECT(same, corrupt, "host run of the plan for {} differs from the CPU decoder",
              fp.fused[i].column);
    host_runs.push_back(std::move(got));
  }
  std::printf("host runs of all %zu plans equal the CPU decoders\n", fp.plans.size());
  // The device run's batches through the batch mapping on the host: every plan's bytes equal
  // its own host run's, null rows included (both run the same tile body).
  for (const auto& b : batchings(fp.plans)) {
    size_t checked = 0;
    for (const auto& batch : b.batches) {
      OC_ASSIGN_OR_RETURN(auto outs, kernels::run_batch_on_host(batch));
      OC_EXPECT(outs.size() == batch.size(), invalid,
                "run_batch_on_host returned {} buffers for {} plans", outs.size(), batch.size());
      for (size_t k = 0; k < batch.size(); ++k) {
        const auto i = static_cast<size_t>(batch[k] - fp.plans.data());
        const Buffer& want = host_runs[i];
        OC_EXPECT(outs[k].size() == want.size() &&
                      std::memcmp(outs[k].data(), want.data(), want.size()) == 0,
                  corrupt,
                  "batched host run of the plan for {} (batches {}) differs from its own host run",
                  fp.fused[i].column, b.label);
        ++checked;
      }
    }
    std::printf(
        "batched host runs, batches %s (%zu in all): %zu of %zu plans equal their own host runs, "
        "byte for byte\n",
        b.label.c_str(), b.batches.size(), checked, fp.plans.size());
    OC_EXPECT(checked == fp.plans.size(), invalid, "batches {} cover {} of {} plans", b.label,
              checked, fp.plans.size());
  }
  // FSST arrays through the GPU FSST decode's plan and row function on the host.
  for (const auto& f : fp.fsst) {
    format::DecodeContext ctx;
    OC_ASSIGN_OR_RETURN(auto plan, kernels::build_fsst_plan(f.tree, f.dtype, f.rows, ctx));
    OC_ASSIGN_OR_RETURN(auto got, kernels::run_fsst_on_host(plan));
    OC_ASSIGN_OR_RETURN(auto decoded, ctx.decode(f.tree, f.dtype, f.rows));
    OC_ASSIGN_OR_RETURN(auto want,
                        format::string_offsets(decoded));  // decoders write views by default
    const int32_t* o = want->offsets();
    bool same = plan.offsets.size() == want->length + 1;
    for (uint64_t r = 0; same && r < want->length; ++r) {
      const auto n = static_cast<size_t>(o[r + 1] - o[r]);
      same = !want->is_valid(r) ||
             (static_cast<size_t>(plan.offsets[r + 1] - plan.offsets[r]) == n &&
              std::memcmp(got.data() + plan.offsets[r], want->buffers[1].data() + o[r], n) == 0);
    }
    OC_EXPECT(same, corrupt, "host run of the FSST plan for {} differs from the CPU decoder",
              f.column);
  }
  std::printf("host runs of all %zu FSST arrays equal the CPU decoder\n", fp.fsst.size());
  return {};
}

// Median of kEndToEndRepeats runs of @p items work items, item i queued by @p queue(i, stream)
// on streams[i % streams.size()]; timed from an event on streams[0] before the first item to the
// point where every stream has run its last.
template <class Queue>
Result<double> time_over_streams(std::vector<kernels::Stream>& streams, size_t items,
                                 Queue&& queue) {
  std::vector<cudaEvent_t> events(streams.size() + 1,
                                  nullptr);  // start, one per other stream, done
  auto run = [&]() -> Result<double> {
    for (auto& e : events) OC_TRY(kernels::cuda_check(cudaEventCreate(&e), "cudaEventCreate"));
    std::vector<double> times;
    for (int rep = 0; rep < kEndToEndRepeats; ++rep) {
      OC_TRY(
          kernels::cuda_check(cudaEventRecord(events[0], streams[0].handle()), "cudaEventRecord"));
      for (size_t s = 1; s < streams.size(); ++s) {
        OC_TRY(kernels::cuda_check(cudaStreamWaitEvent(streams[s].handle(), events[0]),
                                   "cudaStreamWaitEvent"));
      }
      for (size_t i = 0; i < items; ++i) OC_TRY(queue(i, streams[i % streams.size()].handle()));
      for (size_t s = 1; s < streams.size(); ++s) {
        OC_TRY(kernels::cuda_check(cudaEventRecord(events[s], streams[s].handle()),
                                   "cudaEventRecord"));
        OC_TRY(kernels::cuda_check(cudaStreamWaitEvent(streams[0].handle(), events[s]),
                                   "cudaStreamWaitEvent"));
      }
      cudaEvent_t done = events[streams.size()];
      OC_TRY(kernels::cuda_check(cudaEventRecord(done, streams[0].handle()), "cudaEventRecord"));
      OC_TRY(kernels::cuda_check(cudaEventSynchronize(done), "cudaEventSynchronize"));
      float ms = 0;
      OC_TRY(
          kernels::cuda_check(cudaEventElapsedTime(&ms, events[0], done), "cudaEventElapsedTime"));
      times.push_back(ms / 1e3);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  };
  auto r = run();
  for (auto& s : streams) (void)s.synchronize();  // nothing in flight once the events go
  for (auto e : events) {
    if (e != nullptr) cudaEventDestroy(e);
  }
  return r;
}

struct PathTime {
  std::string name;   // "per plan", "batched <= 64 MiB"
  std::string label;  // the table's row
  double seconds = 0;
  uint64_t uploaded = 0;  // bytes each timed run copies to the device
};

// The batched path over @p b: each batch staged, uploaded and decoded once by a DecodeSession
// (outside the timing), then timed like the per-plan path, on the same streams: per batch, one
// copy of its staged inputs from pinned memory and one launch. The per-plan path's timed runs
// copy only the packed bytes, this one the whole arena (dictionaries, patches, bitmaps and the
// plans' parameters too): what decode_batch copies.
Result<PathTime> time_batched(const Batching& b, std::vector<kernels::Stream>& streams) {
  // Staging of one byte per stream: every batch pins its own buffer (DeviceBatch::staging),
  // which holds exactly its upload's bytes until `finish`, so the timed runs can copy them again.
  OC_ASSIGN_OR_RETURN(auto session,
                      kernels::DecodeSession::create({static_cast<uint32_t>(kStreams), 1}));
  std::vector<kernels::DeviceBatch> queued;
  PathTime t;
  char label[96];
  std::snprintf(label, sizeof label, "GPU batched %s: %zu launches (%zu streams)", b.label.c_str(),
                b.batches.size(), kStreams);
  t.name = "batched " + b.label;
  t.label = label;
  for (const auto& batch : b.batches) {
    OC_ASSIGN_OR_RETURN(auto db, session.decode_batch(batch));
    OC_EXPECT(db.staging.size() == db.inputs.size(), invalid,
              "batch staged in {} pinned bytes for a {}-byte upload", db.staging.size(),
              db.inputs.size());
    t.uploaded += db.inputs.size();
    queued.push_back(std::move(db));
  }
  OC_TRY(session.synchronize());
  auto timed =
      time_over_streams(streams, queued.size(), [&](size_t i, cudaStream_t st) -> Result<void> {
        auto& db = queued[i];
        OC_TRY(kernels::cuda_check(cudaMemcpyAsync(db.inputs.data(), db.staging.data(),
                                                   db.inputs.size(), cudaMemcpyHostToDevice, st),
                                   "H2D batch"));
        return kernels::cuda_check(kernels::detail::launch_fused_batch(db.params, st),
                                   "fused batch decode");
      });
  for (auto& db : queued) OC_TRY(session.finish(db));
  OC_ASSIGN_OR_RETURN(t.seconds, std::move(timed));
  return t;
}

Result<void> run_end_to_end(const Options& o, const Ceilings& ceil) {
  kernels::PinnedBuffer pinned;
  OC_ASSIGN_OR_RETURN(auto fp, plan_file(o.file, [&](size_t n) -> Result<uint8_t*> {
                        OC_ASSIGN_OR_RETURN(pinned, kernels::PinnedBuffer::allocate(n));
                        return pinned.data();
                      }));
  auto& plans = fp.plans;
  const uint64_t compressed = fp.compressed, decoded = fp.decoded, rows = fp.rows;

  // Device side: every decode's inputs and outputs allocated up front, outside the timing.
  std::vector<kernels::Stream> streams;
  for (size_t s = 0; s < kStreams; ++s) {
    OC_ASSIGN_OR_RETURN(auto st, kernels::Stream::create());
    streams.push_back(std::move(st));
  }
  std::vector<kernels::DeviceColumn> cols;
  PathTime per_plan;
  for (size_t i = 0; i < plans.size(); ++i) {
    OC_ASSIGN_OR_RETURN(auto col, kernels::decode_on_device(plans[i], streams[i % kStreams]));
    cols.push_back(std::move(col));
    per_plan.uploaded += plans[i].packed.size();
  }
  for (auto& s : streams) OC_TRY(s.synchronize());
  // The timed run: per chunk, its packed bytes straight from the pinned file copy, then the launch.
  char label[96];
  std::snprintf(label, sizeof label, "GPU per plan: %zu launches (%zu streams)", plans.size(),
                kStreams);
  per_plan.name = "per plan";
  per_plan.label = label;
  auto timed =
      time_over_streams(streams, plans.size(), [&](size_t i, cudaStream_t st) -> Result<void> {
        if (!plans[i]
                 .packed.empty()) {  // sequence, constant and run-end sources upload nothing here
          OC_TRY(kernels::cuda_check(
              cudaMemcpyAsync(const_cast<void*>(cols[i].params.packed), plans[i].packed.data(),
                              plans[i].packed.size(), cudaMemcpyHostToDevice, st),
              "H2D chunk"));
        }
        return kernels::cuda_check(kernels::detail::launch_fused_decode(cols[i].params, st),
                                   "fused decode");
      });
  for (size_t i = 0; i < cols.size(); ++i) OC_TRY(cols[i].finish(streams[i % kStreams]));
  cols.clear();
  OC_ASSIGN_OR_RETURN(per_plan.seconds, std::move(timed));
  std::vector<PathTime> paths{per_plan};
  for (const auto& b : batchings(plans)) {
    OC_ASSIGN_OR_RETURN(auto t, time_batched(b, streams));
    paths.push_back(std::move(t));
  }

  OC_ASSIGN_OR_RETURN(double cpu_t, cpu_decode_seconds(fp, o.cpu_threads));

  const double h2d_floor = static_cast<double>(compressed) / (ceil.h2d_gbps * 1e9);
  std::printf(
      "\nend to end, %s: %zu fused chunks, %llu rows, %.1f MB compressed -> %.1f MB decoded\n",
      o.file.c_str(), plans.size(), static_cast<unsigned long long>(rows), compressed / 1e6,
      decoded / 1e6);
  std::printf("%-48s %10s %12s %10s %12s\n", "path", "time ms", "decoded GB/s", "x floor",
              "uploaded MB");
  for (const auto& p : paths) {
    std::printf("%-48s %10.2f %12.1f %10.2f %12.1f\n", p.label.c_str(), p.seconds * 1e3,
                gbps(static_cast<double>(decoded), p.seconds), p.seconds / h2d_floor,
                p.uploaded / 1e6);
  }
  std::printf("%-48s %10.2f %12s %10.2f %12.1f\n", "H2D of the compressed bytes alone (floor)",
              h2d_floor * 1e3, "-", 1.0, compressed / 1e6);
  char cpu_label[64];
  std::snprintf(cpu_label, sizeof cpu_label, "CPU: onecopy decoders, %u threads", o.cpu_threads);
  std::printf("%-48s %10.2f %12.1f %10.2f %12s\n", cpu_label, cpu_t * 1e3,
              gbps(static_cast<double>(decoded), cpu_t), cpu_t / h2d_floor, "-");
  std::printf("e2e vs H2D floor (time / floor's time, target <= 1.0):");
  for (size_t i = 0; i < paths.size(); ++i) {
    std::printf("%s %s %.2fx", i == 0 ? "" : ";", paths[i].name.c_str(),
                paths[i].seconds / h2d_floor);
  }
  std::printf("\n");
  // FSST arrays (l_comment): plans on the host first, then the device decode timed on its own,
  // host staging of the code bytes included (they are not in the pinned file copy).
  if (!fp.fsst.empty()) {
    std::vector<kernels::FsstPlan> fsst_plans;
    uint64_t fsst_bytes = 0, fsst_codes = 0;
    for (const auto& f : fp.fsst) {
      format::DecodeContext ctx;
      OC_ASSIGN_OR_RETURN(auto plan, kernels::build_fsst_plan(f.tree, f.dtype, f.rows, ctx));
      fsst_bytes += static_cast<uint64_t>(plan.offsets.back());
      fsst_codes += plan.codes.size();
      fsst_plans.push_back(std::move(plan));
    }
    std::vector<kernels::DeviceFsst> outs;
    const auto f0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < fsst_plans.size(); ++i) {
      OC_ASSIGN_OR_RETURN(auto d,
                          kernels::decode_fsst_on_device(fsst_plans[i], streams[i % kStreams]));
      outs.push_back(std::move(d));
    }
    for (size_t i = 0; i < outs.size(); ++i) OC_TRY(outs[i].finish(streams[i % kStreams]));
    const double fsst_t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - f0).count();
    std::printf("%-48s %10.2f %12.1f   (%zu arrays, %.1f MB codes -> %.1f MB)\n",
                "GPU: FSST, staging included", fsst_t * 1e3,
                gbps(static_cast<double>(fsst_bytes), fsst_t), fsst_plans.size(), fsst_codes / 1e6,
                fsst_bytes / 1e6);
  }
  return {};
}

Result<void> run(const Options& o) {
  OC_ASSIGN_OR_RETURN(auto stream, kernels::Stream::create());
  const size_t copy_bytes = o.quick ? (size_t{256} << 20) : (size_t{1} << 30);
  OC_ASSIGN_OR_RETURN(auto ceil, measure_ceilings(copy_bytes, stream));
  std::printf("D2D copy: %.1f GB/s copied (%.1f GB/s read + written); pinned H2D: %.1f GB/s\n",
              ceil.d2d_copied_gbps, 2 * ceil.d2d_copied_gbps, ceil.h2d_gbps);
  OC_TRY(run_kernel_table(o.quick ? (uint64_t{1} << 22) : (uint64_t{1} << 26), ceil, stream));
  if (!o.file.empty()) OC_TRY(run_end_to_end(o, ceil));
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick")
      o.quick = true;
    else if (a == "--plan-only")
      o.plan_only = true;
    else if (a == "--file" && i + 1 < argc)
      o.file = argv[++i];
    else if (a == "--cpu-threads" && i + 1 < argc)
      o.cpu_threads = static_cast<unsigned>(std::stoul(argv[++i]));
    else {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--file F.vortex [--plan-only]] [--cpu-threads N]\n",
                   argv[0]);
      return 2;
    }
  }
  // ONECOPY_GPU_STAGING_BYTES sets the larger batch size (batches_of).
  if (auto r = load_defaults_from_env(); !r.ok()) {
    std::fprintf(stderr, "onecopy-gpu-bench: %s\n", r.error().to_string().c_str());
    return 2;
  }
  if (o.plan_only) {
    auto r = o.file.empty() ? Result<void>(OC_ERROR(Errc::invalid, "--plan-only needs --file"))
                            : run_plan_only(o);
    if (!r.ok()) std::fprintf(stderr, "onecopy-gpu-bench: %s\n", r.error().to_string().c_str());
    return r.ok() ? 0 : 1;
  }
  const auto info = kernels::probe_devices();
  if (info.count == 0) {
    std::printf("SKIP: no CUDA device: %s\n", info.why_none.c_str());
    return 77;
  }
  std::printf("device 0: %s (sm_%d%d)\n", info.name.c_str(), info.compute_major,
              info.compute_minor);
  auto r = run(o);
  if (!r.ok()) {
    std::fprintf(stderr, "onecopy-gpu-bench: %s\n", r.error().to_string().c_str());
    return 1;
  }
  return 0;
}
