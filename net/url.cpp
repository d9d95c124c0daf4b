// SPDX-License-Identifier: Apache-2.0
#include "net/url.hpp"

#include <arpa/inet.h>

#include <cctype>
#include <charconv>

#include "config/strings.hpp"

namespace oc::net {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The path and query go onto the request line verbatim, so anything that could split or end
// that line (spaces, CR, LF, other controls) must already be percent-encoded.
bool printable(std::string_view s) {
  for (unsigned char c : s) {
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  return true;
}

bool host_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

Result<void> parse_authority(std::string_view authority, std::string_view text, Url& url) {
  OC_EXPECT(authority.find('@') == std::string_view::npos, invalid,
            "URL '{}': user info before '@' is not supported; pass credentials separately", text);
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    OC_EXPECT(close != std::string_view::npos, invalid, "URL '{}': unterminated IPv6 literal",
              text);
    const std::string_view inner = authority.substr(1, close - 1);
    OC_EXPECT(!inner.empty() && inner.find(':') != std::string_view::npos &&
                  inner.find_first_not_of("0123456789abcdefABCDEF:.") == std::string_view::npos,
              invalid, "URL '{}': malformed IPv6 literal", text);
    url.host = lower(authority.substr(0, close + 1));
    const std::string_view rest = authority.substr(close + 1);
    OC_EXPECT(rest.empty() || rest.front() == ':', invalid,
              "URL '{}': unexpected text after the IPv6 literal", text);
    if (!rest.empty()) port_text = rest.substr(1), url.explicit_port = true;
  } else {
    const size_t colon = authority.find(':');
    url.host = lower(authority.substr(0, colon));
    if (colon != std::string_view::npos)
      port_text = authority.substr(colon + 1), url.explicit_port = true;
    OC_EXPECT(!url.host.empty(), invalid, "URL '{}' has no host", text);
    for (char c : url.host) {
      OC_EXPECT(host_name_char(c), invalid, "URL '{}': invalid character in host", text);
    }
  }
  url.port = url.tls() ? 443 : 80;
  if (url.explicit_port) {
    unsigned port = 0;
    auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    OC_EXPECT(ec == std::errc() && p == port_text.data() + port_text.size() && !port_text.empty() &&
                  port >= 1 && port <= 65535,
              invalid, "URL '{}': port must be a number in 1..65535", text);
    url.port = static_cast<uint16_t>(port);
  }
  return {};
}

Result<void> parse_query(std::string_view raw, std::string_view text, Url& url) {
  while (!raw.empty()) {
    const size_t amp = raw.find('&');
    const std::string_view pair = raw.substr(0, amp);
    raw = amp == std::string_view::npos ? std::string_view{} : raw.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    auto name = percent_decode(pair.substr(0, eq));
    auto value =
        percent_decode(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1));
    if (!name.ok())
      return std::move(name.error()).with_context(fmt::format("in the query of URL '{}'", text));
    if (!value.ok())
      return std::move(value.error()).with_context(fmt::format("in the query of URL '{}'", text));
    url.query.emplace_back(std::move(*name), std::move(*value));
  }
  return {};
}

}  // namespace

std::string Url::request_target() const {
  return raw_query.empty() ? path : path + "?" + raw_query;
}

std::string Url::host_header() const {
  return explicit_port && port != (tls() ? 443 : 80) ? fmt::format("{}:{}", host, port) : host;
}

Result<Url> parse_url(std::string_view text) {
  Url url;
  url.original = std::string(text);
  // Messages name the URL without what may be secret in it.
  const std::string shown = redact_url(text);
  const size_t sep = text.find("://");
  OC_EXPECT(sep != std::string_view::npos, invalid,
            "'{}' is not a URL (expected http:// or https://)", shown);
  url.scheme = lower(text.substr(0, sep));
  OC_EXPECT(url.scheme == "http" || url.scheme == "https", invalid,
            "URL '{}': scheme must be http or https", shown);
  std::string_view rest = text.substr(sep + 3);
  rest = rest.substr(0, rest.find('#'));
  const size_t authority_end = rest.find_first_of("/?");
  OC_TRY(parse_authority(rest.substr(0, authority_end), shown, url));
  rest = authority_end == std::string_view::npos ? std::string_view{} : rest.substr(authority_end);
  const size_t q = rest.find('?');
  const std::string_view path = rest.substr(0, q);
  url.path.assign(path.empty() ? std::string_view("/") : path);
  if (q != std::string_view::npos) url.raw_query = std::string(rest.substr(q + 1));
  OC_EXPECT(printable(url.path) && printable(url.raw_query), invalid,
            "URL '{}': spaces and control characters must be percent-encoded", shown);
  OC_TRY(parse_query(url.raw_query, shown, url));
  return url;
}

std::string redact_url(std::string_view url) {
  const size_t sep = url.find("://");
  std::string out;
  std::string_view rest = url;
  if (sep != std::string_view::npos) {
    const size_t auth_end = url.find_first_of("/?#", sep + 3);
    const std::string_view authority = url.substr(
        sep + 3, auth_end == std::string_view::npos ? std::string_view::npos : auth_end - sep - 3);
    const size_t at = authority.rfind('@');
    out = std::string(url.substr(0, sep + 3));
    if (at != std::string_view::npos) out += "…@";
    out += authority.substr(at == std::string_view::npos ? 0 : at + 1);
    rest = auth_end == std::string_view::npos ? std::string_view{} : url.substr(auth_end);
  }
  const size_t q = rest.find('?');
  out += rest.substr(0, q);
  if (q != std::string_view::npos) out += "?…";
  return out;
}

Result<S3Uri> parse_s3_uri(std::string_view text) {
  constexpr std::string_view kScheme = "s3://";
  OC_EXPECT(text.size() > kScheme.size() && lower(text.substr(0, kScheme.size())) == kScheme,
            invalid, "'{}' is not an s3://bucket/key URI", text);
  const std::string_view rest = text.substr(kScheme.size());
  const size_t slash = rest.find('/');
  S3Uri uri{std::string(rest.substr(0, slash)),
            slash == std::string_view::npos ? std::string{} : std::string(rest.substr(slash + 1))};
  auto ok = check_bucket_name(uri.bucket);
  if (!ok.ok()) return std::move(ok.error()).with_context(fmt::format("in '{}'", text));
  return uri;
}

Result<void> check_bucket_name(std::string_view b) {
  OC_EXPECT(b.size() >= 3 && b.size() <= 63, invalid, "bucket name '{}' must be 3 to 63 characters",
            b);
  for (char c : b) {
    OC_EXPECT(std::islower(static_cast<unsigned char>(c)) ||
                  std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-',
              invalid, "bucket name '{}' may hold only a-z, 0-9, '.' and '-'", b);
  }
  OC_EXPECT(std::isalnum(static_cast<unsigned char>(b.front())) &&
                std::isalnum(static_cast<unsigned char>(b.back())),
            invalid, "bucket name '{}' must start and end with a letter or digit", b);
  OC_EXPECT(b.find("..") == std::string_view::npos, invalid, "bucket name '{}' contains '..'", b);
  OC_EXPECT(!is_ip_literal(b), invalid, "bucket name '{}' is shaped like an IP address", b);
  return {};
}

Result<std::string> percent_decode(std::string_view s, bool plus_as_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      const bool room = i + 2 < s.size();
      const int hi = room ? hex_value(s[i + 1]) : -1;
      const int lo = room ? hex_value(s[i + 2]) : -1;
      OC_EXPECT(hi >= 0 && lo >= 0, invalid, "bad percent escape at offset {} of '{}'", i, s);
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += plus_as_space && s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

bool is_ip_literal(std::string_view host) noexcept {
  if (!host.empty() && host.front() == '[') return true;
  if (host.size() > 15) return false;
  char buf[16] = {};
  host.copy(buf, host.size());
  in_addr addr{};
  return inet_pton(AF_INET, buf, &addr) == 1;
}

void fuzz_parse_url(std::span<const uint8_t> bytes) {
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (auto url = parse_url(text); url.ok()) {
    (void)url->request_target();
    (void)url->host_header();
  }
  (void)parse_s3_uri(text);
  (void)percent_decode(text, true);
}

}  // namespace oc::net
