// SPDX-License-Identifier: Apache-2.0
#include "net/sigv4.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cctype>

#include "config/strings.hpp"

namespace oc::net {
namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";

std::string hex(const unsigned char* p, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[p[i] >> 4];
    out[2 * i + 1] = kDigits[p[i] & 15];
  }
  return out;
}

std::string hmac(std::string_view key, std::string_view msg) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

// Canonical header values: leading and trailing spaces removed, inner runs collapsed to one.
std::string trim_value(std::string_view v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

}  // namespace

std::string sha256_hex(std::span<const uint8_t> bytes) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), out, &len, EVP_sha256(), nullptr);
  return hex(out, len);
}

std::string uri_encode(std::string_view s, bool keep_slash) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::string canonical_query(const std::vector<std::pair<std::string, std::string>>& query) {
  std::vector<std::pair<std::string, std::string>> encoded;
  for (const auto& [k, v] : query) encoded.emplace_back(uri_encode(k, false), uri_encode(v, false));
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [k, v] : encoded) {
    if (!out.empty()) out += '&';
    out += k + "=" + v;
  }
  return out;
}

Result<Signature> sign_v4(const SigningInput& in, const Credentials& creds) {
  OC_EXPECT(in.amz_date.size() == 16 && in.amz_date[8] == 'T' && in.amz_date[15] == 'Z', invalid,
            "x-amz-date must look like 20130524T000000Z, got '{}'", in.amz_date);
  const std::string_view date = in.amz_date.substr(0, 8);

  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& [k, v] : in.headers) headers.emplace_back(lower(k), trim_value(v));
  std::sort(headers.begin(), headers.end());
  OC_EXPECT(
      std::any_of(headers.begin(), headers.end(), [](const auto& h) { return h.first == "host"; }),
      invalid, "a signed request needs a host header");

  Signature s;
  std::string canonical_headers;
  for (const auto& [k, v] : headers) {
    canonical_headers += k + ":" + v + "\n";
    if (!s.signed_headers.empty()) s.signed_headers += ';';
    s.signed_headers += k;
  }
  s.canonical_request =
      fmt::format("{}\n{}\n{}\n{}\n{}\n{}", in.method, uri_encode(in.path, true),
                  canonical_query(in.query), canonical_headers, s.signed_headers, in.payload_hash);
  const std::string scope = fmt::format("{}/{}/{}/aws4_request", date, in.region, in.service);
  s.string_to_sign =
      fmt::format("{}\n{}\n{}\n{}", kAlgorithm, in.amz_date, scope,
                  sha256_hex({reinterpret_cast<const uint8_t*>(s.canonical_request.data()),
                              s.canonical_request.size()}));

  const std::string k_date = hmac("AWS4" + creds.secret_key, date);
  const std::string k_region = hmac(k_date, in.region);
  const std::string k_service = hmac(k_region, in.service);
  const std::string k_signing = hmac(k_service, "aws4_request");
  const std::string sig = hmac(k_signing, s.string_to_sign);
  s.signature = hex(reinterpret_cast<const unsigned char*>(sig.data()), sig.size());
  s.authorization = fmt::format("{} Credential={}/{}, SignedHeaders={}, Signature={}", kAlgorithm,
                                creds.access_key, scope, s.signed_headers, s.signature);
  return s;
}

}  // namespace oc::net
