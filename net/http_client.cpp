// SPDX-License-Identifier: Apache-2.0
#include "net/http_client.hpp"

#include <fmt/format.h>
#include <strings.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include "config/defaults.hpp"
#include "net/reactor.hpp"

namespace oc::net {
namespace {

// The head is read in small pieces: S3 response heads are well under 1 KiB, and every body byte
// that arrives together with the head must be copied out of the scratch buffer afterwards.
constexpr size_t kHeadReadBytes = 4096;
// How long a PUT with `Expect: 100-continue` waits for the interim response before sending the
// body anyway (curl waits 1 s; RFC 9110 §10.1.1 allows not waiting indefinitely).
constexpr std::chrono::milliseconds kContinueWait{1000};

// The head goes into an inline buffer that holds any S3 request without a heap allocation.
using HeadBuffer = fmt::basic_memory_buffer<char, 2048>;

void format_head(HeadBuffer& out, const HttpRequest& r, bool with_body) {
  auto it = std::back_inserter(out);
  fmt::format_to(it, "{} {} HTTP/1.1\r\nHost: {}\r\n", r.method, r.target, r.host);
  for (const auto& [name, value] : r.headers) fmt::format_to(it, "{}: {}\r\n", name, value);
  if (with_body) fmt::format_to(it, "Content-Length: {}\r\n", r.body.size());
  if (r.expect_continue) fmt::format_to(it, "Expect: 100-continue\r\n");
  fmt::format_to(it, "\r\n");
}

bool is_success(int status) { return status >= 200 && status < 300; }

// Reads and parses one response. Body bytes that the parser hands out are either inside the
// destination already (in-place chunk de-framing: moved down over the framing), or in the
// scratch buffer (copied into the destination and counted), or headed for `text`.
class ResponseReader {
 public:
  ResponseReader(Connection& conn, std::span<std::byte> dest, const HttpTimeouts& t,
                 ExchangeProgress& progress, const ExchangeOptions& o, Deadline end)
      : conn_(conn), dest_(dest), t_(t), p_(progress), o_(o), end_(end) {
    parser_.emplace(o.head_only);
  }

  // Reads the head (and whatever body arrives with it) with the first-byte deadline. Interim
  // (1xx) responses are skipped unless @p stop_at_interim: a client must tolerate unexpected
  // ones (RFC 9110 §15.2), and some servers send "100 Continue" twice.
  Result<void> read_head(Deadline first_deadline, bool stop_at_interim = false) {
    for (;;) {
      OC_TRY(read_one_head(first_deadline));
      if (stop_at_interim || !interim()) return {};
      std::string rest = std::move(pending_);
      pending_.clear();
      parser_.emplace(o_.head_only);
      p_.head_complete = false;
      if (!rest.empty()) {
        OC_TRY(feed(std::as_writable_bytes(std::span(rest.data(), rest.size())), false));
      }
    }
  }

  bool interim() const { return head().status >= 100 && head().status < 200; }

  Result<void> read_one_head(Deadline first_deadline) {
    while (!parser_->head_complete()) {
      const Deadline d = p_.first_byte ? Clock::now() + t_.stall : first_deadline;
      OC_ASSIGN_OR_RETURN(size_t n, receive(scratch(), d));
      if (n == 0) {
        OC_TRY(parser_->finish());
        return OC_ERROR(Errc::protocol, "connection closed before the response head");
      }
      OC_TRY(feed(scratch().first(n), /*in_dest=*/false));
    }
    return {};
  }

  // Reads the rest of the body after `read_head`.
  Result<void> read_body() {
    const ResponseHead& h = parser_->head();
    if (multipart_) return read_multipart_body(*h.content_length);
    if (parser_->message_complete()) return {};
    if (to_dest() && h.content_length && !h.chunked) return read_sized_body(*h.content_length);
    while (!parser_->message_complete()) {
      std::span<std::byte> into = scratch();
      bool in_dest = false;
      // Chunked framing lands in the free tail of the destination and is de-framed in place;
      // only when that tail is nearly full does a read go through the scratch buffer.
      if (to_dest() && dest_.size() - p_.body_bytes >= kHeadReadBytes) {
        into = dest_.subspan(p_.body_bytes);
        in_dest = true;
      }
      OC_ASSIGN_OR_RETURN(size_t n, receive(into, Clock::now() + t_.stall));
      if (n == 0) return parser_->finish();
      OC_TRY(feed(into.first(n), in_dest));
    }
    return {};
  }

  bool leftover() const { return leftover_; }
  const ResponseHead& head() const { return parser_->head(); }
  std::string& text() { return text_; }

 private:
  bool to_dest() const { return !dest_.empty() && is_success(parser_->head().status); }

  // Every receive also honours the deadline of the whole exchange.
  Result<size_t> receive(std::span<std::byte> into, Deadline d) {
    OC_ASSIGN_OR_RETURN(size_t n, conn_.recv(into, std::min(d, end_)));
    ++p_.receive_calls;
    if (n > 0 && !p_.first_byte) {
      p_.first_byte = true;
      p_.time_to_first_byte = Clock::now() - sent_at_;
    }
    return n;
  }

  // Body pieces that arrive in the same read as the end of the head are held back (they point
  // into `bytes`, which stays valid for this call) until the head has been vetted.
  Result<void> feed(std::span<std::byte> bytes, bool in_dest) {
    std::optional<Error> sink_error;
    std::vector<std::span<const uint8_t>> held;
    const BodySink sink = [&](std::span<const uint8_t> b) {
      if (sink_error) return;
      if (!p_.head_complete) {
        held.push_back(b);
        return;
      }
      if (auto r = place(b, in_dest); !r.ok()) sink_error = std::move(r).error();
    };
    auto bytes_u8 =
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    const bool head_was_complete = p_.head_complete;
    OC_ASSIGN_OR_RETURN(size_t used, parser_->feed(bytes_u8, sink));
    if (sink_error) return std::move(*sink_error);
    if (!head_was_complete && parser_->head_complete()) {
      p_.head_complete = true;
      OC_TRY(vet_head());
      for (auto b : held) OC_TRY(place(b, in_dest));
    }
    if (used < bytes.size()) {
      if (interim()) {
        pending_.append(reinterpret_cast<const char*>(bytes.data()) + used, bytes.size() - used);
      } else {
        leftover_ = true;
      }
    }
    return {};
  }

  Result<void> vet_head() {
    if (!o_.parts.empty() && is_success(parser_->head().status)) return vet_multipart_head();
    if (!to_dest()) return {};
    const ResponseHead& h = parser_->head();
    OC_EXPECT(!h.content_length || *h.content_length <= dest_.size(), protocol,
              "Content-Length {} exceeds the {}-byte destination", *h.content_length, dest_.size());
    return o_.check ? o_.check(h) : Result<void>{};
  }

  // A server that ignores the ranges answers 200 with the whole object, or merges them into
  // one 206 range: either is found here, before a byte lands anywhere.
  Result<void> vet_multipart_head() {
    const ResponseHead& h = parser_->head();
    const std::string* type = h.find("content-type");
    std::optional<std::string> boundary =
        h.status == 206 && type != nullptr ? byteranges_boundary(*type) : std::nullopt;
    OC_EXPECT(boundary, unsupported,
              "the server answered a {}-range request with HTTP {} {}, not multipart/byteranges",
              o_.parts.size(), h.status, type != nullptr ? *type : "(no Content-Type)");
    OC_EXPECT(h.content_length && !h.chunked, unsupported,
              "multipart/byteranges answer without a Content-Length");
    if (o_.check) OC_TRY(o_.check(h));
    boundary_ = std::move(*boundary);
    multipart_ = true;
    return {};
  }

  Result<void> read_multipart_body(uint64_t length) {
    DeframeCounters c;
    const ReceiveFn from_wire = [&](std::span<std::byte> into) {
      return receive(into, Clock::now() + t_.stall);
    };
    auto r = deframe_byteranges(boundary_, o_.parts, spill_, length, from_wire, c);
    p_.body_bytes += c.placed;
    p_.copied_bytes += c.copied;
    return r;
  }

  Result<void> place(std::span<const uint8_t> b, bool in_dest) {
    if (multipart_) {
      // What came with the head: at most one head read, deframed by read_multipart_body.
      spill_.append(reinterpret_cast<const char*>(b.data()), b.size());
      return {};
    }
    if (!to_dest()) {
      OC_EXPECT(text_.size() + b.size() <= o_.max_text, protocol, "response body exceeds {} bytes",
                o_.max_text);
      text_.append(reinterpret_cast<const char*>(b.data()), b.size());
      return {};
    }
    OC_EXPECT(p_.body_bytes + b.size() <= dest_.size(), protocol,
              "response body exceeds the {}-byte destination", dest_.size());
    std::byte* at = dest_.data() + p_.body_bytes;
    if (reinterpret_cast<const std::byte*>(b.data()) != at) {
      std::memmove(at, b.data(), b.size());
      if (!in_dest) p_.copied_bytes += b.size();
    }
    p_.body_bytes += b.size();
    return {};
  }

  // The common S3 case: a known length goes straight into its slot, one receive at a time.
  Result<void> read_sized_body(uint64_t length) {
    while (p_.body_bytes < length) {
      OC_ASSIGN_OR_RETURN(size_t n, receive(dest_.subspan(p_.body_bytes, length - p_.body_bytes),
                                            Clock::now() + t_.stall));
      OC_EXPECT(n > 0, protocol, "connection closed after {} of {} body bytes", p_.body_bytes,
                length);
      p_.body_bytes += n;
    }
    return {};
  }

  Connection& conn_;
  std::span<std::byte> dest_;
  const HttpTimeouts& t_;
  ExchangeProgress& p_;
  const ExchangeOptions& o_;
  std::optional<ResponseParser> parser_;  // replaced after each interim response
  std::string pending_;                   // bytes that followed an interim response
  std::string text_;
  bool leftover_ = false;
  Clock::time_point sent_at_ = Clock::now();  // readers are made right after the request is sent
  Deadline end_;                              // of the whole exchange
  bool multipart_ = false;                    // a multi-range answer, deframed into o_.parts
  std::string boundary_;
  std::string spill_;  // multipart body bytes that came with the head
  // Head reads land here. One per reader, not per thread: a reactor thread runs many exchanges,
  // each suspended in the middle of its own.
  std::array<std::byte, kHeadReadBytes> scratch_;
  std::span<std::byte> scratch() { return scratch_; }
};

Result<void> send(Connection& conn, std::span<const iovec> pieces, const HttpTimeouts& t,
                  Deadline end) {
  return conn.send_all(pieces, std::min(Clock::now() + t.stall, end));
}

iovec iov(const void* p, size_t n) { return {const_cast<void*>(p), n}; }

}  // namespace

HttpTimeouts HttpTimeouts::from_defaults() {
  const Defaults& d = defaults();
  return {std::chrono::milliseconds(d.http_connect_timeout_ms),
          std::chrono::milliseconds(d.http_first_byte_timeout_ms),
          std::chrono::milliseconds(d.http_stall_timeout_ms),
          std::chrono::milliseconds(d.http_request_timeout_ms)};
}

Result<HttpResponse> exchange(Connection& conn, const HttpRequest& request,
                              std::span<std::byte> dest, const HttpTimeouts& timeouts,
                              ExchangeProgress& progress, const ExchangeOptions& options) {
  const bool with_body =
      !request.body.empty() || request.method == "PUT" || request.method == "POST";
  HeadBuffer head;
  format_head(head, request, with_body);
  const Deadline end = timeouts.total.count() > 0 ? Clock::now() + timeouts.total : Deadline::max();

  bool body_withheld = false;
  if (request.expect_continue && !request.body.empty()) {
    const std::array pieces{iov(head.data(), head.size())};
    OC_TRY(send(conn, pieces, timeouts, end));
    body_withheld = true;
  } else {
    const std::array pieces{iov(head.data(), head.size()),
                            iov(request.body.data(), request.body.size())};
    OC_TRY(send(conn, std::span(pieces).first(request.body.empty() ? 1 : 2), timeouts, end));
  }
  progress.request_sent = true;

  auto reader = std::make_unique<ResponseReader>(conn, dest, timeouts, progress, options, end);
  if (body_withheld) {
    HttpTimeouts wait = timeouts;
    wait.first_byte = std::min(timeouts.first_byte, kContinueWait);
    auto interim = reader->read_head(Clock::now() + wait.first_byte, /*stop_at_interim=*/true);
    const bool timed_out =
        !interim.ok() && interim.error().code() == Errc::timeout && !progress.first_byte;
    if (!interim.ok() && !timed_out) return std::move(interim).error();
    if (timed_out || reader->head().status == 100) {
      const bool leftover = !timed_out && reader->leftover();
      OC_EXPECT(!leftover, protocol, "bytes after 100 Continue before the body was sent");
      const std::array pieces{iov(request.body.data(), request.body.size())};
      OC_TRY(send(conn, pieces, timeouts, end));
      progress.first_byte = false;
      progress.head_complete = false;
      reader = std::make_unique<ResponseReader>(conn, dest, timeouts, progress, options, end);
    } else {
      // A final answer before the body (say 403): the body was never sent, so the server may
      // still be waiting for it; this connection cannot carry another request.
      OC_TRY(reader->read_body());
      HttpResponse out{reader->head(), std::move(reader->text()), false};
      return out;
    }
  }

  OC_TRY(reader->read_head(Clock::now() + timeouts.first_byte));
  OC_TRY(reader->read_body());
  HttpResponse out{reader->head(), std::move(reader->text()), false};
  out.reusable = out.head.keep_alive && !reader->leftover();
  return out;
}

// ---- pool
// ----------------------------------------------------------------------------------------

ConnectionPool::ConnectionPool(std::shared_ptr<TlsContext> tls, uint32_t cap_per_endpoint)
    : tls_(std::move(tls)), cap_(std::max<uint32_t>(1, cap_per_endpoint)) {}

ConnectionPool::~ConnectionPool() = default;

Result<ConnectionPool::Lease> ConnectionPool::acquire(const EndpointKey& key, Deadline deadline) {
  {
    std::unique_lock lock(mu_);
    Slot& slot = slots_[key];
    for (;;) {
      if (!slot.idle.empty()) {
        Lease lease{std::move(slot.idle.back()), true};
        slot.idle.pop_back();
        return lease;
      }
      if (slot.open < cap_) break;
      OC_EXPECT(Clock::now() < deadline, timeout, "all {} connections to {}:{} stayed busy", cap_,
                key.host, key.port);
      // A fiber waiting here suspends; it must not block the reactor that runs the holders.
      Waiter w;
      slot.waiters.push_back(&w);
      lock.unlock();
      w.wait_until(deadline);
      lock.lock();
      std::erase(slot.waiters, &w);
    }
    ++slot.open;
    ++opened_;
  }
  OC_EXPECT(!key.tls || tls_, invalid, "https endpoint {}:{} without a TLS context", key.host,
            key.port);
  ConnectOptions options{key.host, key.port, key.tls ? tls_ : nullptr, deadline, key.public_only};
  auto conn = Connection::open(options);
  if (!conn.ok()) {
    std::lock_guard lock(mu_);
    Slot& slot = slots_[key];
    --slot.open;
    wake_all(slot);
    return std::move(conn).error();
  }
  return Lease{std::move(conn).value(), false};
}

void ConnectionPool::release(const EndpointKey& key, std::unique_ptr<Connection> conn,
                             bool reusable) {
  std::unique_ptr<Connection> closing;
  std::lock_guard lock(mu_);
  Slot& slot = slots_[key];
  if (reusable && conn) {
    slot.idle.push_back(std::move(conn));
  } else {
    closing = std::move(conn);
    --slot.open;
  }
  wake_all(slot);
}

// Every waiter re-checks the slot: one woken waiter that has already given up must not swallow
// the only wake-up.
void ConnectionPool::wake_all(Slot& slot) {
  for (Waiter* w : slot.waiters) w->notify();
  slot.waiters.clear();
}

uint64_t ConnectionPool::connections_opened() const {
  std::lock_guard lock(mu_);
  return opened_;
}

}  // namespace oc::net
