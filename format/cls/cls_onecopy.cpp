// SPDX-License-Identifier: Apache-2.0
// libcls_onecopy.so: the RADOS object class `onecopy`, loaded by ceph-osd (Ceph 16.2) from its
// `osd class dir`. One read-only method, `scan`: a FlatBuffers ScanRequest in, the Arrow IPC
// stream of the rows it asks for out (format/pushdown.hpp holds the method's body and errno
// contract). Written against the C object-class ABI the OSD binary exports, declared here by
// hand: no Ceph header is needed to build it.
//
// The class runs inside the OSD process, so it must never take the OSD down or hold its memory:
// every call catches everything, decodes on the op thread alone, one split at a time, with the
// OSD's own caps (cls_max_* knobs), and logs through cls_log only (spdlog is switched off). The
// link exports __cls_init alone and binds our symbols to ourselves (cls_onecopy.map,
// -Bsymbolic), so the OSD's symbols and ours never interpose.
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "config/defaults.hpp"
#include "config/log.hpp"
#include "format/cls/object_source.hpp"
#include "format/pushdown.hpp"

// ---- the object-class C ABI (ceph-osd resolves these when it dlopen()s the class) -------------
extern "C" {
using cls_handle_t = void*;
using cls_method_handle_t = void*;
using cls_method_context_t = void*;
using cls_method_call_t = int (*)(cls_method_context_t ctx, char* in, int in_len, char** out,
                                  int* out_len);
int cls_register(const char* name, cls_handle_t* handle);
int cls_register_method(cls_handle_t klass, const char* method, int flags, cls_method_call_t call,
                        cls_method_handle_t* handle);
// Reads [ofs, ofs + len) of the call's object into a malloc'ed copy the caller frees with
// cls_free; fewer bytes where the object ends; len 0 reads to the end. Returns the length or
// -errno.
int cls_read(cls_method_context_t ctx, int ofs, int len, char** out, int* out_len);
void* cls_alloc(size_t size);
void cls_free(void* p);
int cls_log(int level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// The one symbol the OSD looks up (dlsym) after loading the file; everything else is hidden.
__attribute__((visibility("default"))) void __cls_init();
}

namespace {

using oc::Errc;
using oc::Error;
using oc::Result;
using oc::format::Buffer;

constexpr int kMethodRead = 0x1;  // CLS_METHOD_RD: the method only reads its object
constexpr int kLogError = 0;      // cls_log levels follow the OSD's debug levels: 0 always shows
constexpr int kLogCall = 10;

cls_handle_t g_class;
cls_method_handle_t g_scan;

// cls_read takes int offsets and lengths: objects end below 2 GiB (osd_max_object_size is
// 128 MiB by default), and the size check reads one byte past the end.
Result<Buffer> read_object(cls_method_context_t ctx, uint64_t offset, uint64_t length) {
  OC_EXPECT(length <= INT_MAX && offset <= INT_MAX - length, unsupported,
            "object range [{}, +{}) is past what cls_read reaches (2 GiB)", offset, length);
  char* data = nullptr;
  int got = 0;
  const int r = cls_read(ctx, static_cast<int>(offset), static_cast<int>(length), &data, &got);
  if (r < 0) {
    return Error(Errc::io, fmt::format("cls_read [{}, +{})", offset, length), __FILE__, __LINE__,
                 -r);
  }
  // The OSD's copy becomes the buffer (no second copy); cls_free gives it back. shared_ptr
  // calls the deleter itself should its own allocation fail.
  std::shared_ptr<const void> owner(data, [](const void* p) { cls_free(const_cast<void*>(p)); });
  OC_EXPECT(got >= 0 && static_cast<uint64_t>(got) <= length, io,
            "cls_read [{}, +{}) returned {} bytes", offset, length, got);
  return Buffer::wrap(std::move(owner), reinterpret_cast<const uint8_t*>(data),
                      static_cast<size_t>(got));
}

Result<std::string> scan(cls_method_context_t ctx, std::span<const uint8_t> in) {
  OC_ASSIGN_OR_RETURN(
      auto request, oc::format::decode_pushdown_request(in, oc::defaults().cls_max_request_bytes));
  OC_ASSIGN_OR_RETURN(auto object, oc::format::open_object_source(
                                       [ctx](uint64_t offset, uint64_t length) {
                                         return read_object(ctx, offset, length);
                                       },
                                       request.file_size, "object"));
  return oc::format::run_pushdown_scan(*object, request, oc::defaults().cls_max_result_bytes);
}

// Hands @p result to the OSD in memory from cls_alloc, which the OSD frees.
int reply(const std::string& result, char** out, int* out_len) {
  char* o = static_cast<char*>(cls_alloc(result.empty() ? 1 : result.size()));
  if (o == nullptr) return -ENOMEM;
  std::memcpy(o, result.data(), result.size());
  *out = o;
  *out_len = static_cast<int>(result.size());  // the cls_max_result_bytes cap is below 2 GiB
  return 0;
}

int scan_method(cls_method_context_t ctx, char* in, int in_len, char** out, int* out_len) {
  try {
    if (in_len < 0) in_len = 0;
    Result<std::string> r =
        scan(ctx, {reinterpret_cast<const uint8_t*>(in), static_cast<size_t>(in_len)});
    if (!r.ok()) {
      const int e = oc::format::pushdown_errno(r.error());
      cls_log(kLogError, "onecopy.scan: %s (returning %d)", r.error().describe().c_str(), e);
      return e;
    }
    cls_log(kLogCall, "onecopy.scan: %zu bytes of Arrow IPC", r->size());
    return reply(*r, out, out_len);
  } catch (...) {
    // Only an allocation can still fail here (run_pushdown_scan catches everything below it).
    cls_log(kLogError, "onecopy.scan: out of memory");
    return -ENOMEM;
  }
}

// The OSD process's knobs: the built-in table, then its ONECOPY_* environment, then the caps an
// object class lives under. A bad variable must not keep the class from loading: it is logged
// and the built-in table kept.
void apply_osd_defaults() {
  oc::Defaults d = oc::builtin_defaults();
  auto env = oc::defaults_from_env([](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  });
  if (env.ok()) {
    d = *env;
  } else {
    cls_log(kLogError, "onecopy: ignoring the ONECOPY_* environment: %s",
            env.error().describe().c_str());
  }
  d.max_decoded_bytes = d.cls_max_decoded_bytes;
  d.scan_decode_threads = 1;  // the op thread alone: no decode pool in the OSD
  d.log_level = "off";
  oc::set_defaults(d);
  (void)oc::log::init(d.log_level);  // nothing of ours on the OSD's stderr
}

}  // namespace

extern "C" void __cls_init() {
  try {
    apply_osd_defaults();
    cls_register("onecopy", &g_class);
    cls_register_method(g_class, "scan", kMethodRead, scan_method, &g_scan);
  } catch (...) {
    cls_log(kLogError, "onecopy: class not registered (out of memory)");
  }
}
