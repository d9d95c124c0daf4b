// SPDX-License-Identifier: Apache-2.0
// onecopy-gpu-ipc: the device check's hand-off step (scripts/gpu_check.sh). A scan of one file
// into GPU memory three ways, every value checked against the plain CPU scan:
//   1. in process (client/device_scan.hpp), timed per batch;
//   2. through onecopyd at --socket (Scan.device, daemon/PROTOCOL.md "Device batches"): the
//      daemon decodes on the GPU into its device slabs and this process maps them (CUDA VMM
//      descriptors, or IPC handles), timed per batch the same way;
//   3. through onecopyd again, as the two shards of a shuffled world of 2 (what a sharded
//      Client.scan(device=) and onecopy.torch.Dataset(device=) ask for), each against the CPU
//      scan of the same units;
// and prints the hand-off's added time per batch: (2 - 1) / 1. The same file, columns, filter,
// batch size and device for both; each timed from the request of a batch to its arrival (the
// batch complete), its check excluded.
// Exits 77 (SKIP) without a CUDA device.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "client/remote/client.hpp"
#include "config/defaults.hpp"
#include "format/column.hpp"
#include "format/decode.hpp"
#include "format/reader.hpp"
#include "format/scan_profile.hpp"
#include "format/scan_request.hpp"
#include "format/shard.hpp"
#include "kernels/device.hpp"
#include "kernels/device_memory.hpp"
#include "kernels/device_scan.hpp"
#include "kernels/device_stream.hpp"

using namespace oc;

namespace {

struct Options {
  std::string socket, file, filter;
  uint64_t batch_rows = 65536;
};

// The batches a plain scan delivers, strings as offsets, one per batch of the device scans:
// of the file, or of @p units (format/shard.hpp) when given.
Result<std::vector<format::ColumnPtr>> cpu_batches(
    const std::shared_ptr<format::VortexFile>& f, const Options& o,
    const std::vector<format::Unit>* units = nullptr) {
  format::ScanOptions opts;
  opts.filter = o.filter;
  opts.batch_rows = o.batch_rows;
  opts.strings = format::StringLayout::offsets;
  std::unique_ptr<format::Scan> scan;
  if (units != nullptr) {
    OC_ASSIGN_OR_RETURN(scan, format::scan_units(f, opts, *units, {}));
  } else {
    OC_ASSIGN_OR_RETURN(scan, f->scan(opts));
  }
  std::vector<format::ColumnPtr> out;
  while (true) {
    OC_ASSIGN_OR_RETURN(auto b, scan->next());
    if (!b) return out;
    out.push_back(*b);
  }
}

// The bytes of device (or host) buffer @p b, on the host.
Result<std::vector<uint8_t>> host_bytes(const uint8_t* data, size_t size) {
  std::vector<uint8_t> out(size);
  if (size > 0) OC_TRY(kernels::copy_and_wait(out.data(), data, size));
  return out;
}

// Whether the Arrow array @p a (device buffers; of the format the CPU column @p want has)
// holds @p want's rows: validity, and each valid row's value (fixed width) or bytes (offsets).
Result<void> check_array(const ArrowArray& a, const format::Column& want, const std::string& name) {
  OC_EXPECT(static_cast<uint64_t>(a.length) == want.length, corrupt, "{}: {} rows, expected {}",
            name, a.length, want.length);
  const auto* bufs = reinterpret_cast<const uint8_t* const*>(a.buffers);
  const uint64_t n = want.length, off = static_cast<uint64_t>(a.offset);
  std::vector<uint8_t> validity;
  if (bufs[0] != nullptr) {
    OC_ASSIGN_OR_RETURN(validity, host_bytes(bufs[0], (off + n + 7) / 8));
  }
  auto valid = [&](uint64_t i) {
    return validity.empty() || ((validity[(off + i) >> 3] >> ((off + i) & 7)) & 1);
  };
  for (uint64_t i = 0; i < n; ++i) {
    OC_EXPECT(valid(i) == want.is_valid(i), corrupt, "{}: validity of row {}", name, i);
  }
  const format::DType& t = want.dtype->storage();
  if (t.kind == format::TypeKind::utf8 || t.kind == format::TypeKind::binary) {
    OC_ASSIGN_OR_RETURN(auto offsets_raw, host_bytes(bufs[1], (off + n + 1) * sizeof(int32_t)));
    const auto* offsets = reinterpret_cast<const int32_t*>(offsets_raw.data()) + off;
    OC_ASSIGN_OR_RETURN(auto data, host_bytes(bufs[2], static_cast<size_t>(offsets[n])));
    for (uint64_t i = 0; i < n; ++i) {
      if (!valid(i)) continue;
      const int32_t* w = want.offsets();
      const std::string_view got(reinterpret_cast<const char*>(data.data()) + offsets[i],
                                 static_cast<size_t>(offsets[i + 1] - offsets[i]));
      const std::string_view expected(reinterpret_cast<const char*>(want.buffers[1].data()) + w[i],
                                      static_cast<size_t>(w[i + 1] - w[i]));
      OC_EXPECT(got == expected, corrupt, "{}: row {}", name, i);
    }
    return {};
  }
  const size_t width = format::fixed_width_of(*want.dtype);
  OC_EXPECT(width > 0, unsupported, "{}: {} is not checked here", name, want.dtype->to_string());
  OC_ASSIGN_OR_RETURN(auto values, host_bytes(bufs[1], (off + n) * width));
  const uint8_t* expected = want.buffers[0].data() + want.offset * width;
  for (uint64_t i = 0; i < n; ++i) {
    if (!valid(i)) continue;
    OC_EXPECT(std::memcmp(values.data() + (off + i) * width, expected + i * width, width) == 0,
              corrupt, "{}: value of row {}", name, i);
  }
  return {};
}

// Reads @p stream to its end, checking each batch against @p want; @return ns per batch.
Result<double> drain(ArrowDeviceArrayStream& stream, const std::vector<format::ColumnPtr>& want,
                     const char* how) {
  ArrowSchema schema{};
  OC_EXPECT(stream.get_schema(&stream, &schema) == 0, io, "{}: no schema", how);
  std::vector<std::string> names;
  for (int64_t i = 0; i < schema.n_children; ++i) names.emplace_back(schema.children[i]->name);
  schema.release(&schema);
  uint64_t waited = 0, batches = 0, rows = 0;
  while (true) {
    ArrowDeviceArray a{};
    const uint64_t asked = format::monotonic_ns();
    const int rc = stream.get_next(&stream, &a);
    waited += format::monotonic_ns() - asked;
    OC_EXPECT(rc == 0, io, "{}: {}", how, stream.get_last_error(&stream));
    if (a.array.release == nullptr) break;
    OC_EXPECT(batches < want.size(), corrupt, "{}: more batches than the CPU scan's {}", how,
              want.size());
    OC_EXPECT(a.device_type == ARROW_DEVICE_CUDA, corrupt, "{}: a batch on device type {}", how,
              a.device_type);
    const format::Column& w = *want[batches];
    for (size_t c = 0; c < names.size(); ++c) {
      auto checked =
          check_array(*a.array.children[c], *w.children[c], std::string(how) + " " + names[c]);
      if (!checked.ok()) {
        a.array.release(&a.array);
        return checked.error();
      }
    }
    rows += static_cast<uint64_t>(a.array.length);
    ++batches;
    a.array.release(&a.array);
  }
  OC_EXPECT(batches == want.size(), corrupt, "{}: {} batches, the CPU scan {}", how, batches,
            want.size());
  std::printf("%s: %llu batches, %llu rows, every value equal to the CPU scan; %.3f ms a batch\n",
              how, static_cast<unsigned long long>(batches), static_cast<unsigned long long>(rows),
              batches ? waited / 1e6 / batches : 0.0);
  return batches ? static_cast<double>(waited) / batches : 0.0;
}

Result<void> run(const Options& o) {
  OC_ASSIGN_OR_RETURN(auto file, format::VortexFile::open_path(o.file));
  OC_ASSIGN_OR_RETURN(auto want, cpu_batches(file, o));
  // In process.
  OC_ASSIGN_OR_RETURN(auto decoder,
                      kernels::DeviceChunkDecoder::create(0, kernels::DeviceDecodes::cuda));
  // One request, in process and through onecopyd.
  format::ScanRequest request;
  request.filter = o.filter;
  request.batch_rows = o.batch_rows;
  request.device = 0;
  OC_ASSIGN_OR_RETURN(auto planned, format::plan(file, request, {.device_decoder = decoder}));
  ArrowDeviceArrayStream local{};
  kernels::export_device_stream(std::move(planned.scan), ARROW_DEVICE_CUDA, 0, &local);
  auto in_process = drain(local, want, "in process");
  local.release(&local);
  OC_TRY(in_process);
  // Through onecopyd.
  ArrowArrayStream inner{};
  OC_TRY(client::remote_scan(o.socket, o.file, request, 0, &inner));
  ArrowDeviceArrayStream through{};
  kernels::wrap_device_stream(&inner, ARROW_DEVICE_CUDA, 0, &through);
  auto via_daemon = drain(through, want, "through onecopyd");
  through.release(&through);
  OC_TRY(via_daemon);
  const double added = *in_process > 0 ? (*via_daemon - *in_process) / *in_process * 100 : 0;
  std::printf(
      "IPC hand-off: %.3f ms a batch through onecopyd vs %.3f ms in process: %+.1f%% a batch "
      "(target: under 5%%)\n",
      *via_daemon / 1e6, *in_process / 1e6, added);
  std::fflush(stdout);  // kept if a timeout ends the shards below
  // Two shards of a shuffled world of 2, through onecopyd (after the figure above, which a
  // timeout here does not lose).
  constexpr uint64_t kUnitRows = 200'000;
  OC_ASSIGN_OR_RETURN(auto units, format::file_units(*file, 0, kUnitRows));
  for (uint32_t rank = 0; rank < 2; ++rank) {
    const format::ShardSpec spec{
        .rank = rank, .world_size = 2, .shuffle = true, .seed = 7, .epoch = 1};
    const std::vector<format::Unit> mine = format::shard_units(units, spec);
    OC_ASSIGN_OR_RETURN(auto shard_want, cpu_batches(file, o, &mine));
    format::ScanRequest sharded = request;
    sharded.selection = format::ShardSelection{spec, kUnitRows};
    ArrowArrayStream shard_inner{};
    OC_TRY(client::remote_scan(o.socket, o.file, sharded, 0, &shard_inner));
    ArrowDeviceArrayStream shard_stream{};
    kernels::wrap_device_stream(&shard_inner, ARROW_DEVICE_CUDA, 0, &shard_stream);
    const std::string how = "shard " + std::to_string(rank) + " of 2 through onecopyd";
    auto drained = drain(shard_stream, shard_want, how.c_str());
    shard_stream.release(&shard_stream);
    OC_TRY(drained);
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--socket")
      o.socket = argv[i + 1];
    else if (a == "--file")
      o.file = argv[i + 1];
    else if (a == "--filter")
      o.filter = argv[i + 1];
    else if (a == "--batch-rows")
      o.batch_rows = std::stoull(argv[i + 1]);
    else
      o.file.clear();
  }
  if (o.socket.empty() || o.file.empty() || argc % 2 == 0) {
    std::fprintf(stderr, "usage: %s --socket S --file F.vortex [--filter SQL] [--batch-rows N]\n",
                 argv[0]);
    return 2;
  }
  if (auto r = load_defaults_from_env(); !r.ok()) {
    std::fprintf(stderr, "onecopy-gpu-ipc: %s\n", r.error().to_string().c_str());
    return 2;
  }
  format::register_default_encodings();
  const auto info = kernels::probe_devices();
  if (info.count == 0) {
    std::printf("SKIP: no CUDA device: %s\n", info.why_none.c_str());
    return 77;
  }
  auto r = run(o);
  if (!r.ok()) {
    std::fprintf(stderr, "onecopy-gpu-ipc: %s\n", r.error().to_string().c_str());
    return 1;
  }
  return 0;
}
