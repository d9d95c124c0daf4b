// SPDX-License-Identifier: Apache-2.0
#include "net/http_response.hpp"

#include <llhttp.h>
#include <strings.h>

#include <charconv>

#include "config/defaults.hpp"

namespace oc::net {

struct ResponseParser::State {
  llhttp_t parser{};
  llhttp_settings_t settings{};
  ResponseHead head;
  std::string field, value;  // the header being assembled; llhttp may deliver it in pieces
  bool in_value = false;
  bool head_only = false;
  bool head_done = false, message_done = false;
  uint64_t header_bytes = 0;
  uint64_t max_header_bytes = 0;
  std::string error;
  const BodySink* sink = nullptr;

  static State& of(llhttp_t* p) { return *static_cast<State*>(p->data); }

  // Header bytes are counted as they arrive so a hostile peer cannot grow them without bound.
  int account(size_t n) {
    header_bytes += n;
    if (header_bytes > max_header_bytes) {
      error = fmt::format("response head exceeds {} bytes", max_header_bytes);
      return -1;
    }
    return 0;
  }
  void flush_header() {
    if (!field.empty() || in_value) head.headers.emplace_back(std::move(field), std::move(value));
    field.clear();
    value.clear();
    in_value = false;
  }
};

const std::string* ResponseHead::find(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), k.size()) == 0) return &v;
  }
  return nullptr;
}

ResponseParser::ResponseParser(bool head_only) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.head_only = head_only;
  s.max_header_bytes = defaults().http_max_header_bytes;
  llhttp_settings_init(&s.settings);
  s.settings.on_status = [](llhttp_t* p, const char*, size_t n) { return State::of(p).account(n); };
  s.settings.on_header_field = [](llhttp_t* p, const char* at, size_t n) {
    State& st = State::of(p);
    if (st.in_value) st.flush_header();
    st.field.append(at, n);
    return st.account(n);
  };
  s.settings.on_header_value = [](llhttp_t* p, const char* at, size_t n) {
    State& st = State::of(p);
    st.in_value = true;
    st.value.append(at, n);
    return st.account(n);
  };
  s.settings.on_headers_complete = [](llhttp_t* p) {
    State& st = State::of(p);
    st.flush_header();
    st.head.status = p->status_code;
    st.head.chunked = (p->flags & F_CHUNKED) != 0;
    st.head.keep_alive = llhttp_should_keep_alive(p) != 0;
    if (p->flags & F_CONTENT_LENGTH) st.head.content_length = p->content_length;
    st.head_done = true;
    // A HEAD response announces a length but carries no body (RFC 9110 §9.3.2); 1 tells llhttp.
    return st.head_only ? 1 : 0;
  };
  s.settings.on_body = [](llhttp_t* p, const char* at, size_t n) {
    State& st = State::of(p);
    if (st.sink && *st.sink) (*st.sink)({reinterpret_cast<const uint8_t*>(at), n});
    return 0;
  };
  s.settings.on_message_complete = [](llhttp_t* p) {
    State::of(p).message_done = true;
    return static_cast<int>(HPE_PAUSED);  // one message per parser; the caller decides what follows
  };
  llhttp_init(&s.parser, HTTP_RESPONSE, &s.settings);
  s.parser.data = &s;
}

ResponseParser::~ResponseParser() = default;

Result<size_t> ResponseParser::feed(std::span<const uint8_t> bytes, const BodySink& sink) {
  State& s = *state_;
  OC_EXPECT(!s.message_done, invalid, "response already complete");
  s.sink = &sink;
  const char* data = reinterpret_cast<const char*>(bytes.data());
  const llhttp_errno_t rc = llhttp_execute(&s.parser, data, bytes.size());
  s.sink = nullptr;
  if (rc == HPE_OK) return bytes.size();
  if (rc == HPE_PAUSED) {
    const char* stop = llhttp_get_error_pos(&s.parser);
    return static_cast<size_t>(stop - data);
  }
  return OC_ERROR(Errc::protocol, "malformed HTTP response: {}",
                  s.error.empty() ? llhttp_get_error_reason(&s.parser) : s.error);
}

Result<void> ResponseParser::finish() {
  State& s = *state_;
  if (s.message_done) return {};
  const llhttp_errno_t rc = llhttp_finish(&s.parser);
  if (rc == HPE_OK && s.message_done) return {};
  return OC_ERROR(Errc::protocol, "connection closed {} the response was complete",
                  s.head_done ? "before" : "before the response head; nothing");
}

bool ResponseParser::head_complete() const noexcept { return state_->head_done; }
bool ResponseParser::message_complete() const noexcept { return state_->message_done; }
const ResponseHead& ResponseParser::head() const noexcept { return state_->head; }

Result<ResponseHead> fuzz_parse_response(std::span<const uint8_t> bytes, size_t split) {
  ResponseParser p;
  split = std::min(split, bytes.size());
  uint64_t body = 0;
  const BodySink sink = [&](std::span<const uint8_t> b) { body += b.size(); };
  OC_ASSIGN_OR_RETURN(size_t first, p.feed(bytes.first(split), sink));
  if (first == split && !p.message_complete()) {
    OC_TRY(p.feed(bytes.subspan(split), sink));
  }
  OC_TRY(p.finish());
  return p.head();
}

}  // namespace oc::net
