// SPDX-License-Identifier: Apache-2.0
// onecopy-test-client: the client library as a plain C++ program, for the daemon tests that run
// a client as another user (setpriv: no Python venv needed) or with SIGPIPE at its default.
//
//   onecopy-test-client SOCKET scan URI [--slow | --keep]
//                                                   prints "rows N"; --slow reads batches of
//                                                   1000 rows, printing "batch" and waiting
//                                                   200 ms after each; --keep reads batches of
//                                                   1000 rows, keeps them all to the end and
//                                                   prints "rows N sum S" (S: the sum of the
//                                                   first column, an int64)
//   onecopy-test-client SOCKET list PATTERN        prints one name a line
//   onecopy-test-client SOCKET status -            prints the daemon's status as JSON
// Failures print "error CODE: MESSAGE" and exit 1.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "client/remote/client.hpp"

namespace {

int fail(const oc::Error& e) {
  std::printf("error %s\n", e.to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: %s SOCKET scan URI [--slow | --keep] | SOCKET list PATTERN | "
                 "SOCKET status -\n",
                 argv[0]);
    return 2;
  }
  const std::string socket = argv[1], verb = argv[2], what = argv[3];
  const bool slow = argc > 4 && std::string(argv[4]) == "--slow";
  const bool keep = argc > 4 && std::string(argv[4]) == "--keep";
  if (verb == "status") {
    auto status = oc::client::query_status(socket);
    if (!status.ok()) return fail(status.error());
    std::printf("%s\n", oc::daemon::status_json(*status).c_str());
    return 0;
  }
  if (verb == "list") {
    auto names = oc::client::remote_list(socket, what);
    if (!names.ok()) return fail(names.error());
    for (const auto& n : *names) std::printf("%s\n", n.c_str());
    return 0;
  }
  ArrowArrayStream stream{};
  oc::format::ScanRequest request;
  if (slow || keep) request.batch_rows = 1000;
  std::vector<ArrowArray> kept;  // --keep: every batch, released at the end
  auto cursor = oc::client::remote_scan(socket, what, request, 0, &stream);
  if (!cursor.ok()) return fail(cursor.error());
  uint64_t rows = 0;
  int rc = 0;
  while (true) {
    ArrowArray batch{};
    if (stream.get_next(&stream, &batch) != 0) {
      rc = fail((*cursor)->error().value_or(oc::Error(oc::Errc::io, "get_next failed")));
      break;
    }
    if (batch.release == nullptr) break;
    rows += static_cast<uint64_t>(batch.length);
    if (keep) {
      kept.push_back(batch);
      continue;
    }
    batch.release(&batch);  // sends Release
    if (slow) {
      std::printf("batch\n");
      std::fflush(stdout);
      ::usleep(200'000);
    }
  }
  stream.release(&stream);
  int64_t sum = 0;
  for (ArrowArray& b : kept) {
    // A struct batch: the first child's values buffer, from its offset.
    const ArrowArray* c = b.children[0];
    const auto* v = static_cast<const int64_t*>(c->buffers[1]);
    for (int64_t i = 0; i < c->length; ++i) sum += v[c->offset + i];
    b.release(&b);
  }
  if (rc == 0 && keep) {
    std::printf("rows %llu sum %lld\n", static_cast<unsigned long long>(rows),
                static_cast<long long>(sum));
  } else if (rc == 0) {
    std::printf("rows %llu\n", static_cast<unsigned long long>(rows));
  }
  return rc;
}
