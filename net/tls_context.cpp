// SPDX-License-Identifier: Apache-2.0
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/stat.h>

#include <cstdlib>

#include "config/log.hpp"
#include "net/connection.hpp"
#include "net/tls.hpp"

namespace oc::net {

namespace {

// With read-ahead, OpenSSL asks its BIO for as much as its read buffer holds, so one ring receive
// brings up to this many full records instead of one receive per 16 KiB record (plus one per
// 5-byte header without read-ahead).
constexpr size_t kRecordsPerReceive = 4;

}  // namespace

namespace detail {

std::string openssl_errors() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "no OpenSSL error" : out;
}

}  // namespace detail

TlsConfig TlsConfig::from_env() {
  TlsConfig config;
  if (const char* bundle = std::getenv("AWS_CA_BUNDLE"); bundle != nullptr && *bundle != '\0') {
    config.ca_file = bundle;
  }
  return config;
}

struct TlsContext::State {
  TlsConfig config;
  SSL_CTX* ctx = nullptr;
};

TlsContext::~TlsContext() {
  if (state_) SSL_CTX_free(state_->ctx);
}

Result<std::shared_ptr<TlsContext>> TlsContext::create(const TlsConfig& config) {
  std::shared_ptr<TlsContext> out(new TlsContext());
  out->state_ = std::make_unique<State>(State{config, SSL_CTX_new(TLS_client_method())});
  SSL_CTX* ctx = out->state_->ctx;
  OC_EXPECT(ctx != nullptr, protocol, "SSL_CTX_new: {}", detail::openssl_errors());
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, config.verify_peer ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
  // OpenSSL does not look at a CA directory until a lookup, so check it here for a clear error.
  struct stat st {};
  OC_EXPECT(config.ca_dir.empty() || (stat(config.ca_dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)),
            invalid, "TLS: CA directory '{}' is not a readable directory", config.ca_dir);
  if (config.ca_file.empty() && config.ca_dir.empty()) {
    OC_EXPECT(SSL_CTX_set_default_verify_paths(ctx) == 1, invalid,
              "TLS: cannot load the default CA paths: {}", detail::openssl_errors());
  } else {
    const char* file = config.ca_file.empty() ? nullptr : config.ca_file.c_str();
    const char* dir = config.ca_dir.empty() ? nullptr : config.ca_dir.c_str();
    OC_EXPECT(SSL_CTX_load_verify_locations(ctx, file, dir) == 1, invalid,
              "TLS: cannot load CA file '{}': {}", config.ca_file, detail::openssl_errors());
  }
  // A peer that closes without close_notify reads as end of stream; HTTP framing (Content-Length,
  // chunked) is what detects a truncated response, as it must for plain TCP too.
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_read_ahead(ctx, 1);
  SSL_CTX_set_default_read_buffer_len(ctx, kRecordsPerReceive * SSL3_RT_MAX_PLAIN_LENGTH);
  return out;
}

void* TlsContext::native() const noexcept { return state_->ctx; }
const TlsConfig& TlsContext::config() const noexcept { return state_->config; }

}  // namespace oc::net
