// SPDX-License-Identifier: Apache-2.0
// The requests that run on the io pool: opening a file, listing a pattern, planning a scan. Each
// may wait on the network (S3, HTTP), so none runs on the loop thread; its reply is sent from
// the loop when it is done, and until then it counts against daemon_client_max_requests.
#include <algorithm>

#include "config/log.hpp"
#include "daemon/server.hpp"
#include "format/arrow_export.hpp"
#include "format/scan_request.hpp"
#include "format/segment_source.hpp"
#include "net/dataset.hpp"
#include "net/open_uri.hpp"
#include "net/rados_pushdown.hpp"
#include "net/s3_source.hpp"
#include "net/url.hpp"

namespace oc::daemon {
namespace {

// Names per Listed reply: a little under one packet.
constexpr size_t kListPartBytes = 48 << 10;

struct OpenedFile {
  std::shared_ptr<format::VortexFile> file;
  std::vector<uint64_t> units;  // begin, end pairs
};

struct PlannedWithSchema {
  format::PlannedScan planned;
  std::vector<SchemaNodeCopy> nodes;
};

}  // namespace

void Server::open_async(Session& s, uint64_t request, std::string uri, uint64_t unit_rows,
                        UniqueFd fd, bool public_only) {
  s.opening.insert(request);
  ++s.opens_running;
  ++s.jobs_running;
  auto descriptor = std::make_shared<UniqueFd>(std::move(fd));  // a std::function is copyable
  run_job<OpenedFile>(
      io_, s,
      [uri, unit_rows, descriptor, public_only, kept = kept_]() -> Result<OpenedFile> {
        OpenedFile out;
        if (uri.starts_with("rados://") && !descriptor->valid()) {
          // With the daemon's Ceph identity; its scans run in the OSDs where they can.
          OC_ASSIGN_OR_RETURN(net::RadosUri object, net::parse_rados_uri(uri));
          OC_ASSIGN_OR_RETURN(out.file, net::open_rados_file(object));
        } else {
          std::shared_ptr<format::SegmentSource> source;
          std::optional<KeptFileKey> key;
          if (descriptor->valid()) {
            // Checked before a kept file is looked for: only a descriptor open for reading
            // reaches what another client's reads left.
            OC_ASSIGN_OR_RETURN(struct stat st, format::readable_fd_status(descriptor->get(), uri));
            key = KeptFileKey::of(st, uri);
            out.file = kept->find(*key);
            if (!out.file) {
              OC_ASSIGN_OR_RETURN(source, format::open_local_fd(descriptor->release(), uri));
            }
          } else {
            // A HEAD (the object's version, and that it is there to read), then the footer
            // from the metadata cache when it holds this version's.
            OC_ASSIGN_OR_RETURN(net::ObjectRef ref, net::object_ref_from_uri(uri));
            ref.public_only = public_only;
            OC_ASSIGN_OR_RETURN(auto client, net::environment_client());
            OC_ASSIGN_OR_RETURN(out.file, net::open_object_file(std::move(client), std::move(ref)));
          }
          if (!out.file) {
            OC_ASSIGN_OR_RETURN(out.file, format::VortexFile::open(std::move(source)));
            if (key) kept->keep(*key, out.file, wall_clock_ns());
          }
        }
        // Units read the layout tree: file work, here off the loop thread.
        if (unit_rows > 0) {
          OC_ASSIGN_OR_RETURN(auto units, format::file_units(*out.file, 0, unit_rows));
          out.units.reserve(2 * units.size());
          for (const auto& u : units) out.units.insert(out.units.end(), {u.begin, u.end});
        }
        return out;
      },
      [this, request](Session* s, Result<OpenedFile> r) {
        if (!s) return;
        --s->opens_running;
        --s->jobs_running;
        auto pending = s->opening.find(request);
        if (pending == s->opening.end()) return;  // cancelled: no reply, the file is not kept
        s->opening.erase(pending);
        if (!r.ok()) {
          send_error(*s, request, r.error());
          return;
        }
        const uint64_t id = next_id_++;
        const uint64_t rows = r->file->row_count();
        s->files[id] = std::move(r->file);
        send_opened(*s, request, id, rows, r->units);
      });
}

void Server::send_opened(Session& s, uint64_t request, uint64_t file, uint64_t rows,
                         const std::vector<uint64_t>& units) {
  flatbuffers::FlatBufferBuilder fbb;
  auto reply = fbs::CreateOpenedDirect(fbb, request, file, rows, units.empty() ? nullptr : &units);
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Opened, reply.Union()));
  send(s, fbb);  // a million units travel as Parts
}

// Listing an S3 prefix or a pool is network work. Only s3:// and rados:// patterns get here (the
// client expands local ones), already checked against the grants; the result is filtered by
// them too.
void Server::list_async(Session& s, uint64_t request, std::string pattern) {
  ++s.jobs_running;
  run_job<std::vector<std::string>>(
      io_, s,
      [pattern, max = cfg_.daemon_list_max_entries, policy = policy_,
       peer = s.peer]() -> Result<std::vector<std::string>> {
        OC_ASSIGN_OR_RETURN(auto uris, net::expand_uri(pattern, max));
        std::erase_if(uris, [&](const std::string& uri) {
          if (uri.starts_with("rados://")) {
            auto object = net::parse_rados_uri(uri);
            return !object.ok() || !policy.may_read_rados(peer, object->pool, object->object);
          }
          auto parsed = net::parse_s3_uri(uri);
          return !parsed.ok() || !policy.may_read_key(peer, parsed->bucket, parsed->key);
        });
        OC_EXPECT(!uris.empty(), not_found, "no Vortex files match {}", pattern);
        return uris;
      },
      [this, request, pattern](Session* s, Result<std::vector<std::string>> uris) {
        if (!s) return;
        --s->jobs_running;
        if (!uris.ok()) {
          send_error(*s, request, uris.error());
          return;
        }
        s->listed_pattern = pattern;
        s->listed = std::move(*uris);
        if (auto r = send_listed(*s, request, 0); !r.ok()) send_error(*s, request, r.error());
      });
}

// A dataset's index: one listing, the manifest, and the footers neither the metadata cache nor
// the manifest has, read many at a time (net/dataset.cpp). Files the client is not granted are
// left out before any cache is asked.
void Server::dataset_async(Session& s, uint64_t request, std::string pattern, uint64_t unit_rows,
                           bool footers) {
  ++s.jobs_running;
  run_job<net::DatasetIndex>(
      io_, s,
      [pattern, unit_rows, footers, max = cfg_.daemon_list_max_entries, policy = policy_,
       peer = s.peer]() -> Result<net::DatasetIndex> {
        net::DatasetOptions o;
        o.unit_rows = unit_rows;
        o.footers = footers;
        o.max_entries = max;
        o.may_read = [&](std::string_view bucket, std::string_view key) {
          return policy.may_read_key(peer, bucket, key);
        };
        return net::index_dataset(pattern, o);
      },
      [this, request](Session* s, Result<net::DatasetIndex> index) {
        if (!s) return;
        --s->jobs_running;
        if (!index.ok()) {
          send_error(*s, request, index.error());
          return;
        }
        counters_.manifest_fallbacks += index->fallbacks;
        flatbuffers::FlatBufferBuilder fbb;
        std::vector<flatbuffers::Offset<fbs::DatasetFile>> files;
        files.reserve(index->files.size());
        for (const net::DatasetFile& f : index->files) {
          const auto footer =
              f.footer.empty() ? 0 : fbb.CreateVector(f.footer.data(), f.footer.size());
          files.push_back(fbs::CreateDatasetFile(
              fbb, fbb.CreateString(f.uri), fbb.CreateString(f.etag), f.size, f.rows,
              f.units.empty() ? 0 : fbb.CreateVector(f.units), f.footer_offset, footer));
        }
        auto reply = fbs::CreateDatasetIndex(fbb, request, fbb.CreateVector(files),
                                             fbb.CreateString(index->manifest), index->from_cache,
                                             index->from_manifest, index->fallbacks);
        fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::DatasetIndex, reply.Union()));
        send(*s, fbb);  // thousands of files travel as Parts
      });
}

Result<void> Server::send_listed(Session& s, uint64_t request, uint64_t offset) {
  OC_EXPECT(offset <= s.listed.size(), protocol, "List offset {} is past the {} names", offset,
            s.listed.size());
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<flatbuffers::String>> names;
  size_t i = offset;
  for (size_t bytes = 0; i < s.listed.size() && bytes < kListPartBytes; ++i) {
    names.push_back(fbb.CreateString(s.listed[i]));
    bytes += s.listed[i].size() + 8;
  }
  auto reply = fbs::CreateListed(fbb, request, fbb.CreateVector(names), i < s.listed.size());
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Listed, reply.Union()));
  send(s, fbb);
  return {};
}

// Planning binds the filter and prunes with zone maps, which may fetch them from S3, and a
// sharded plan reads the layout: worker work, like Open. The job keeps the file (a Close may
// come meanwhile) and the request, parsed on receipt.
void Server::plan_async(Session& s, uint64_t request, std::shared_ptr<format::VortexFile> file,
                        format::ScanRequest scan, std::shared_ptr<format::ChunkDecoder> decoder) {
  ++s.planning;
  ++s.jobs_running;
  const int32_t device = scan.device;
  run_job<PlannedWithSchema>(
      io_, s,
      [scan = std::move(scan), file, unit_rows = cfg_.shard_unit_rows,
       decoder = std::move(decoder)]() -> Result<PlannedWithSchema> {
        PlannedWithSchema out;
        // One split at a time, as the client's lease limits pace them: splits decoded ahead
        // would wait in the client's slabs, and those that found no room there be copied after
        // decode. The decode pool still decodes a split's columns side by side, and other
        // clients' scans.
        OC_ASSIGN_OR_RETURN(out.planned, format::plan(file, scan,
                                                      {.default_unit_rows = unit_rows,
                                                       .splits_in_flight = 1,
                                                       .device_decoder = decoder}));
        ArrowSchema schema{};
        OC_TRY(format::export_schema(*out.planned.scan->dtype(), "", out.planned.scan->strings(),
                                     &schema));
        auto walk = [&](auto& self, const ArrowSchema& n) -> void {
          out.nodes.push_back(
              {n.format, n.name ? n.name : "", n.flags, static_cast<uint32_t>(n.n_children)});
          for (int64_t i = 0; i < n.n_children; ++i) self(self, *n.children[i]);
        };
        walk(walk, schema);
        schema.release(&schema);
        return out;
      },
      [this, request, file, device](Session* s, Result<PlannedWithSchema> planned) {
        if (!s) return;
        --s->planning;
        --s->jobs_running;
        if (!planned.ok()) {
          send_error(*s, request, planned.error());
          return;
        }
        flatbuffers::FlatBufferBuilder fbb;
        std::vector<flatbuffers::Offset<fbs::SchemaNode>> offsets;
        for (const auto& n : planned->nodes) {
          offsets.push_back(fbs::CreateSchemaNodeDirect(fbb, n.format.c_str(), n.name.c_str(),
                                                        n.flags, n.n_children));
        }
        auto scan = std::make_shared<ActiveScan>();
        scan->id = next_id_++;
        scan->device = device;
        scan->file = file;
        scan->scan = std::move(planned->planned.scan);
        auto reply =
            fbs::CreateScanBeginDirect(fbb, request, scan->id, &offsets, planned->planned.units);
        fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::ScanBegin, reply.Union()));
        send(*s, fbb);  // a 5,000-column schema travels as Parts
        s->scans.push_back(std::move(scan));
        mark(*s);
      });
}

}  // namespace oc::daemon
