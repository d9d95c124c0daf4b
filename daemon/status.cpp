// SPDX-License-Identifier: Apache-2.0
#include "daemon/status.hpp"

#include <fmt/format.h>

#include <array>
#include <variant>

#include "config/json.hpp"

namespace oc::daemon {
namespace {

// Every number of a Status, once: its JSON key, its Prometheus name and type, and its help.
struct Field {
  std::string_view json, metric, type, help;
  std::variant<uint64_t Status::*, uint32_t Status::*, double Status::*> member;
};

constexpr std::array kFields{
    Field{"uptime_ms", "", "", "", &Status::uptime_ms},
    Field{"clients", "clients", "gauge", "Connected clients.", &Status::clients},
    Field{"active_scans", "active_scans", "gauge", "Scans being served.", &Status::active_scans},
    Field{"batches_in_flight", "batches_in_flight", "gauge",
          "Batches leased to clients, not yet released.", &Status::batches_in_flight},
    Field{"bytes_delivered", "delivered_bytes_total", "counter",
          "Arrow buffer bytes sent in batches.", &Status::bytes_delivered},
    Field{"batches_delivered", "delivered_batches_total", "counter", "Batches sent.",
          &Status::batches_delivered},
    Field{"gbps_10s", "delivered_gigabytes_per_second", "gauge",
          "Delivery rate over the last 10 s, in GB/s (1e9 bytes).", &Status::gbps_10s},
    Field{"requests_in_flight", "requests_in_flight", "gauge",
          "Opens, listings, plans and decodes queued or running on the workers.",
          &Status::requests_in_flight},
    Field{"errors", "errors_total", "counter",
          "Error replies, refused connections and disconnects.", &Status::errors},
    Field{"bytes_copied", "copied_bytes_total", "counter", "Bytes copied into slabs, sent or not.",
          &Status::bytes_copied},
    Field{"bytes_copied_after_decode", "copied_after_decode_bytes_total", "counter",
          "Of the bytes copied into slabs, those decoders had written elsewhere (no room in "
          "the client's slabs); the rest are fetched bytes, copied once.",
          &Status::bytes_copied_after_decode},
    Field{"bytes_in_place", "in_place_bytes_total", "counter",
          "Bytes delivered from where they were decoded, in the client's slab.",
          &Status::bytes_in_place},
    Field{"copies_per_byte", "copies_per_byte", "gauge",
          "Bytes copied into slabs per byte delivered.", &Status::copies_per_byte},
    Field{"pool_bytes", "pool_bytes", "gauge", "Bytes of the slabs of every client.",
          &Status::pool_bytes},
    Field{"pool_limit_bytes", "pool_limit_bytes", "gauge", "daemon_pool_bytes.",
          &Status::pool_limit_bytes},
    Field{"worker_threads", "worker_threads", "gauge",
          "Threads that open files, plan scans and decode batches.", &Status::worker_threads},
    Field{"slabs_sent", "slabs_sent_total", "counter",
          "Slab descriptors sent to clients (each slab once).", &Status::slabs_sent},
    Field{"slabs", "slabs", "gauge", "Slabs that exist now, every client's.", &Status::slabs},
    Field{"descriptors", "descriptors", "gauge",
          "Descriptors held for clients: sockets, their files and slabs.", &Status::descriptors},
    Field{"descriptor_budget", "descriptor_budget", "gauge",
          "Descriptors clients may take: RLIMIT_NOFILE less daemon_fd_reserve.",
          &Status::descriptor_budget},
    Field{"connections_refused", "connections_refused_total", "counter",
          "Connections refused: not allowed, over a limit, or at the descriptor budget.",
          &Status::connections_refused},
    Field{"requests_refused", "requests_refused_total", "counter",
          "Requests answered with an Error for a limit or an access denial.",
          &Status::requests_refused},
    Field{"bytes_fetched", "fetched_bytes_total", "counter",
          "Segment bytes scans read from files and objects.", &Status::bytes_fetched},
    Field{"s3_requests", "s3_requests_total", "counter", "S3 requests (retries not counted).",
          &Status::s3_requests},
    Field{"s3_retries", "s3_retries_total", "counter", "S3 requests retried.", &Status::s3_retries},
    Field{"s3_failures", "s3_failures_total", "counter",
          "S3 requests that failed after their retries.", &Status::s3_failures},
    Field{"gpu_devices", "gpu_devices", "gauge",
          "CUDA devices onecopyd sees (0 without a GPU or CUDA build).", &Status::gpu_devices},
    Field{"gpu_memory_used_bytes", "gpu_memory_used_bytes", "gauge",
          "Device memory in use, by any process, all GPUs, when onecopyd started.",
          &Status::gpu_memory_used_bytes},
    Field{"gpu_memory_total_bytes", "gpu_memory_total_bytes", "gauge", "Device memory of all GPUs.",
          &Status::gpu_memory_total_bytes},
    Field{"cache_hits", "cache_hits_total", "counter",
          "Ranges the byte cache served from memory or disk.", &Status::cache_hits},
    Field{"cache_misses", "cache_misses_total", "counter",
          "Ranges the byte cache fetched from storage.", &Status::cache_misses},
    Field{"cache_bytes_from_memory", "cache_memory_read_bytes_total", "counter",
          "Bytes the byte cache served from memory.", &Status::cache_bytes_from_memory},
    Field{"cache_bytes_from_disk", "cache_disk_read_bytes_total", "counter",
          "Bytes the byte cache served from its disk tier.", &Status::cache_bytes_from_disk},
    Field{"cache_bytes_from_store", "cache_store_read_bytes_total", "counter",
          "Bytes the byte cache fetched from storage for its readers.",
          &Status::cache_bytes_from_store},
    Field{"cache_evictions", "cache_evictions_total", "counter",
          "Entries evicted from either tier of the byte cache.", &Status::cache_evictions},
    Field{"cache_memory_bytes", "cache_memory_bytes", "gauge",
          "Bytes the byte cache holds in memory.", &Status::cache_memory_bytes},
    Field{"cache_memory_limit_bytes", "cache_memory_limit_bytes", "gauge",
          "The memory tier's limit (cache_memory_bytes).", &Status::cache_memory_limit_bytes},
    Field{"cache_disk_bytes", "cache_disk_bytes", "gauge", "Bytes the byte cache holds on disk.",
          &Status::cache_disk_bytes},
    Field{"cache_disk_limit_bytes", "cache_disk_limit_bytes", "gauge",
          "The disk tier's limit (cache_disk_bytes).", &Status::cache_disk_limit_bytes},
    Field{"cache_disk_on", "cache_disk_on", "gauge",
          "1 while the disk tier is in use, 0 when off or turned off by an error.",
          &Status::cache_disk_on},
    Field{"cache_disk_errors", "cache_disk_errors_total", "counter",
          "Write and read errors of the disk tier.", &Status::cache_disk_errors},
    Field{"cache_disk_dropped", "cache_disk_dropped_total", "counter",
          "Cache files removed for failing their checks.", &Status::cache_disk_dropped},
    Field{"metadata_cache_hits", "metadata_cache_hits_total", "counter",
          "Opens served from the metadata cache.", &Status::metadata_cache_hits},
    Field{"metadata_cache_misses", "metadata_cache_misses_total", "counter",
          "Opens that read a footer from storage.", &Status::metadata_cache_misses},
    Field{"metadata_cache_bytes", "metadata_cache_bytes", "gauge",
          "Footer bytes the metadata cache holds.", &Status::metadata_cache_bytes},
    Field{"manifest_fallbacks", "manifest_fallbacks_total", "counter",
          "Files of a dataset index that a manifest did not describe, read from their own footers.",
          &Status::manifest_fallbacks},
    Field{"kept_files", "kept_files", "gauge",
          "Local files kept open for the next Open of them (daemon_kept_files).",
          &Status::kept_files},
    Field{"kept_file_hits", "kept_file_hits_total", "counter", "Opens served from a kept file.",
          &Status::kept_file_hits},
};

std::string value_of(const Status& s, const Field& f) {
  return std::visit([&](auto member) { return fmt::format("{}", s.*member); }, f.member);
}

}  // namespace

void build_status_reply(flatbuffers::FlatBufferBuilder& fbb, const Status& s) {
  std::vector<flatbuffers::Offset<fbs::ScanStatus>> scans;
  for (const ScanStatus& c : s.scans) {
    const format::ScanProfile& p = c.profile;
    scans.push_back(fbs::CreateScanStatusDirect(fbb, c.scan, c.pid, c.uid, c.uri.c_str(),
                                                c.state.c_str(), p.rows, p.batches, c.bytes,
                                                p.bytes_read, p.storage_ns, p.decode_ns, p.copy_ns,
                                                p.consumer_wait_ns, p.pool_wait_ns, p.wall_ns));
  }
  std::vector<flatbuffers::Offset<fbs::DeviceStatus>> devices;
  for (const DeviceStatus& d : s.devices) {
    devices.push_back(fbs::CreateDeviceStatusDirect(
        fbb, d.device, d.share.c_str(), d.memory_held_bytes, d.batches_in_flight, d.bytes_decoded,
        d.bytes_uploaded, d.decode_ns));
  }
  auto reply = fbs::CreateStatusReplyDirect(
      fbb, s.version.c_str(), s.uptime_ms, s.clients, s.active_scans, s.batches_in_flight,
      s.bytes_delivered, s.errors, s.pool_bytes, s.pool_limit_bytes, s.batches_delivered,
      s.gbps_10s, s.requests_in_flight, s.bytes_copied, s.copies_per_byte, s.worker_threads,
      s.slabs_sent, s.gpu_devices, s.gpu_memory_used_bytes, s.gpu_memory_total_bytes,
      s.bytes_fetched, s.s3_requests, s.s3_retries, s.s3_failures, s.slabs, s.descriptors,
      s.descriptor_budget, s.connections_refused, s.requests_refused, &scans,
      s.bytes_copied_after_decode, s.bytes_in_place, &devices, s.cache_hits, s.cache_misses,
      s.cache_bytes_from_memory, s.cache_bytes_from_disk, s.cache_bytes_from_store,
      s.cache_evictions, s.cache_memory_bytes, s.cache_memory_limit_bytes, s.cache_disk_bytes,
      s.cache_disk_limit_bytes, s.cache_disk_on, s.cache_disk_errors, s.cache_disk_dropped,
      s.metadata_cache_hits, s.metadata_cache_misses, s.metadata_cache_bytes, s.manifest_fallbacks,
      s.kept_files, s.kept_file_hits);
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::StatusReply, reply.Union()));
}

Status status_from_reply(const fbs::StatusReply& r) {
  Status s;
  s.version = r.version() ? r.version()->str() : "";
  s.uptime_ms = r.uptime_ms();
  s.clients = r.clients();
  s.active_scans = r.active_scans();
  s.batches_in_flight = r.batches_in_flight();
  s.bytes_delivered = r.bytes_delivered();
  s.errors = r.errors();
  s.pool_bytes = r.pool_bytes();
  s.pool_limit_bytes = r.pool_limit_bytes();
  s.batches_delivered = r.batches_delivered();
  s.gbps_10s = r.gbps_10s();
  s.requests_in_flight = r.requests_in_flight();
  s.bytes_copied = r.bytes_copied();
  s.copies_per_byte = r.copies_per_byte();
  s.bytes_copied_after_decode = r.bytes_copied_after_decode();
  s.bytes_in_place = r.bytes_in_place();
  s.worker_threads = r.worker_threads();
  s.slabs_sent = r.slabs_sent();
  s.gpu_devices = r.gpu_devices();
  s.gpu_memory_used_bytes = r.gpu_memory_used_bytes();
  s.gpu_memory_total_bytes = r.gpu_memory_total_bytes();
  s.bytes_fetched = r.bytes_fetched();
  s.s3_requests = r.s3_requests();
  s.s3_retries = r.s3_retries();
  s.s3_failures = r.s3_failures();
  s.slabs = r.slabs();
  s.descriptors = r.descriptors();
  s.descriptor_budget = r.descriptor_budget();
  s.connections_refused = r.connections_refused();
  s.requests_refused = r.requests_refused();
  s.cache_hits = r.cache_hits();
  s.cache_misses = r.cache_misses();
  s.cache_bytes_from_memory = r.cache_bytes_from_memory();
  s.cache_bytes_from_disk = r.cache_bytes_from_disk();
  s.cache_bytes_from_store = r.cache_bytes_from_store();
  s.cache_evictions = r.cache_evictions();
  s.cache_memory_bytes = r.cache_memory_bytes();
  s.cache_memory_limit_bytes = r.cache_memory_limit_bytes();
  s.cache_disk_bytes = r.cache_disk_bytes();
  s.cache_disk_limit_bytes = r.cache_disk_limit_bytes();
  s.cache_disk_on = r.cache_disk_on();
  s.cache_disk_errors = r.cache_disk_errors();
  s.cache_disk_dropped = r.cache_disk_dropped();
  s.metadata_cache_hits = r.metadata_cache_hits();
  s.metadata_cache_misses = r.metadata_cache_misses();
  s.metadata_cache_bytes = r.metadata_cache_bytes();
  s.manifest_fallbacks = r.manifest_fallbacks();
  s.kept_files = r.kept_files();
  s.kept_file_hits = r.kept_file_hits();
  if (r.devices()) {
    for (const fbs::DeviceStatus* d : *r.devices()) {
      s.devices.push_back({d->device(), d->share() ? d->share()->str() : "", d->memory_held_bytes(),
                           d->batches_in_flight(), d->bytes_decoded(), d->bytes_uploaded(),
                           d->decode_ns()});
    }
  }
  if (r.scans()) {
    for (const fbs::ScanStatus* c : *r.scans()) {
      ScanStatus out;
      out.scan = c->scan();
      out.pid = c->pid();
      out.uid = c->uid();
      out.uri = c->uri() ? c->uri()->str() : "";
      out.state = c->state() ? c->state()->str() : "";
      out.bytes = c->bytes();
      format::ScanProfile& p = out.profile;
      p.rows = c->rows();
      p.batches = c->batches();
      p.bytes_read = c->bytes_read();
      p.storage_ns = c->storage_ns();
      p.decode_ns = c->decode_ns();
      p.copy_ns = c->copy_ns();
      p.consumer_wait_ns = c->consumer_wait_ns();
      p.pool_wait_ns = c->pool_wait_ns();
      p.wall_ns = c->wall_ns();
      p.complete = out.state != "running";
      s.scans.push_back(std::move(out));
    }
  }
  return s;
}

std::string status_json(const Status& s) {
  std::string out = "{\"version\": " + json_string(s.version);
  for (const Field& f : kFields) out += fmt::format(", \"{}\": {}", f.json, value_of(s, f));
  const auto sec = [](uint64_t ns) { return static_cast<double>(ns) / 1e9; };
  const auto gbps = [](uint64_t bytes, uint64_t ns) {
    return ns == 0 ? 0.0 : static_cast<double>(bytes) / ns;
  };
  out += ", \"devices\": [";
  for (size_t i = 0; i < s.devices.size(); ++i) {
    const DeviceStatus& d = s.devices[i];
    out += fmt::format(
        "{}{{\"device\": {}, \"share\": {}, \"memory_held_bytes\": {}, \"batches_in_flight\": {}, "
        "\"bytes_decoded\": {}, \"bytes_uploaded\": {}, \"decode_s\": {:.6f}, \"decode_gbps\": "
        "{:.3f}, "
        "\"h2d_gbps\": {:.3f}}}",
        i ? ", " : "", d.device, json_string(d.share), d.memory_held_bytes, d.batches_in_flight,
        d.bytes_decoded, d.bytes_uploaded, sec(d.decode_ns), gbps(d.bytes_decoded, d.decode_ns),
        gbps(d.bytes_uploaded, d.decode_ns));
  }
  out += "]";
  out += ", \"scans\": [";
  for (size_t i = 0; i < s.scans.size(); ++i) {
    const ScanStatus& c = s.scans[i];
    const format::ScanProfile& p = c.profile;
    out += fmt::format(
        "{}{{\"scan\": {}, \"pid\": {}, \"uid\": {}, \"uri\": {}, \"state\": {}, "
        "\"rows\": {}, \"batches\": {}, \"bytes\": {}, \"bytes_read\": {}, "
        "\"storage_s\": {:.6f}, \"decode_s\": {:.6f}, \"copy_s\": {:.6f}, "
        "\"consumer_wait_s\": {:.6f}, \"pool_wait_s\": {:.6f}, \"wall_s\": {:.6f}, "
        "\"bottleneck\": \"{}\"}}",
        i ? ", " : "", c.scan, c.pid, c.uid, json_string(c.uri), json_string(c.state), p.rows,
        p.batches, c.bytes, p.bytes_read, sec(p.storage_ns), sec(p.decode_ns), sec(p.copy_ns),
        sec(p.consumer_wait_ns), sec(p.pool_wait_ns), sec(p.wall_ns), format::bottleneck(p));
  }
  return out + "]}";
}

std::string status_prometheus(const Status& s) {
  // Labels carry the version, as Prometheus' own *_build_info metrics do.
  std::string out = fmt::format(
      "# HELP onecopy_build_info onecopyd's version.\n# TYPE onecopy_build_info gauge\n"
      "onecopy_build_info{{version=\"{}\"}} 1\n"
      "# HELP onecopy_uptime_seconds Seconds since onecopyd started.\n"
      "# TYPE onecopy_uptime_seconds gauge\nonecopy_uptime_seconds {}\n",
      s.version, static_cast<double>(s.uptime_ms) / 1e3);
  for (const Field& f : kFields) {
    if (f.metric.empty()) continue;
    out += fmt::format("# HELP onecopy_{0} {1}\n# TYPE onecopy_{0} {2}\nonecopy_{0} {3}\n",
                       f.metric, f.help, f.type, value_of(s, f));
  }
  if (!s.devices.empty()) {
    struct DeviceMetric {
      const char* name;
      const char* help;
      const char* type;
      uint64_t DeviceStatus::*member;
    };
    static constexpr DeviceMetric kDeviceMetrics[] = {
        {"device_memory_held_bytes", "Device slab bytes held for clients, per CUDA device.",
         "gauge", &DeviceStatus::memory_held_bytes},
        {"device_batches_in_flight", "Device batches leased to clients, per CUDA device.", "gauge",
         &DeviceStatus::batches_in_flight},
        {"device_bytes_decoded_total", "Bytes of batch columns decoded on each CUDA device.",
         "counter", &DeviceStatus::bytes_decoded},
        {"device_bytes_uploaded_total", "Bytes sent to each CUDA device for decoding.", "counter",
         &DeviceStatus::bytes_uploaded},
        {"device_decode_nanoseconds_total",
         "Wall time decode sessions waited for each CUDA device.", "counter",
         &DeviceStatus::decode_ns},
    };
    for (const DeviceMetric& m : kDeviceMetrics) {
      out +=
          fmt::format("# HELP onecopy_{0} {1}\n# TYPE onecopy_{0} {2}\n", m.name, m.help, m.type);
      for (const DeviceStatus& d : s.devices) {
        out += fmt::format("onecopy_{}{{device=\"{}\"}} {}\n", m.name, d.device, d.*m.member);
      }
    }
  }
  return out;
}

}  // namespace oc::daemon
