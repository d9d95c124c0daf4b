// SPDX-License-Identifier: Apache-2.0
#include "tests/net/tls_fixture.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

namespace oc::net::test {
namespace {

struct Issued {
  EVP_PKEY* key;
  X509* cert;
};

void add_ext(X509* cert, X509V3_CTX* ctx, int nid, const char* value) {
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, ctx, nid, value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A P-256 key and a certificate for it: a self-signed CA when @p issuer is null, else a server
// certificate with @p san signed by @p issuer.
Issued issue(const char* cn, const Issued* issuer, const char* san) {
  static long serial = 1;
  Issued out{EVP_EC_gen("P-256"), X509_new()};
  X509* x = out.cert;
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 86400);
  X509_set_pubkey(x, out.key);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
  X509* signer = issuer != nullptr ? issuer->cert : x;
  X509_set_issuer_name(x, X509_get_subject_name(signer));
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, signer, x, nullptr, nullptr, 0);
  if (issuer == nullptr) {
    add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign");
    add_ext(x, &ctx, NID_subject_key_identifier, "hash");
  } else {
    add_ext(x, &ctx, NID_basic_constraints, "CA:FALSE");
    add_ext(x, &ctx, NID_subject_alt_name, san);
    add_ext(x, &ctx, NID_ext_key_usage, "serverAuth");
  }
  X509_sign(x, issuer != nullptr ? issuer->key : out.key, EVP_sha256());
  return out;
}

// Writes the PEM files and frees @p id.
void write_pem(const Issued& id, const std::string& cert_path, const std::string* key_path) {
  FILE* f = std::fopen(cert_path.c_str(), "w");
  PEM_write_X509(f, id.cert);
  std::fclose(f);
  if (key_path != nullptr) {
    f = std::fopen(key_path->c_str(), "w");
    PEM_write_PrivateKey(f, id.key, nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(f);
  }
  X509_free(id.cert);
  EVP_PKEY_free(id.key);
}

TestPki make_pki() {
  char dir_template[] = "/tmp/onecopy-tls-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  TestPki p;
  p.ca_file = dir + "/ca.pem";
  p.server_cert = dir + "/server.pem";
  p.server_key = dir + "/server.key";
  p.mismatch_cert = dir + "/mismatch.pem";
  p.mismatch_key = dir + "/mismatch.key";
  p.unknown_ca_file = dir + "/unknown-ca.pem";
  p.untrusted_cert = dir + "/untrusted.pem";
  p.untrusted_key = dir + "/untrusted.key";
  const Issued ca = issue("onecopy test CA", nullptr, nullptr);
  const Issued unknown = issue("onecopy unknown CA", nullptr, nullptr);
  const char* san = "DNS:localhost,IP:127.0.0.1";
  write_pem(issue("localhost", &ca, san), p.server_cert, &p.server_key);
  write_pem(issue("other.example", &ca, "DNS:other.example"), p.mismatch_cert, &p.mismatch_key);
  write_pem(issue("localhost", &unknown, san), p.untrusted_cert, &p.untrusted_key);
  write_pem(ca, p.ca_file, nullptr);
  write_pem(unknown, p.unknown_ca_file, nullptr);
  return p;
}

}  // namespace

const TestPki& test_pki() {
  static const TestPki pki = make_pki();
  return pki;
}

TlsServer::TlsServer(const TlsServerOptions& o, std::function<void(SSL*)> serve)
    : ctx_([&o] {
        std::shared_ptr<SSL_CTX> shared(SSL_CTX_new(TLS_server_method()), &SSL_CTX_free);
        SSL_CTX* ctx = shared.get();
        SSL_CTX_use_certificate_file(ctx, o.cert.c_str(), SSL_FILETYPE_PEM);
        SSL_CTX_use_PrivateKey_file(ctx, o.key.c_str(), SSL_FILETYPE_PEM);
        if (o.min_version != 0) SSL_CTX_set_min_proto_version(ctx, o.min_version);
        if (o.max_version != 0) SSL_CTX_set_max_proto_version(ctx, o.max_version);
        return shared;
      }()),
      sni_(std::make_shared<std::string>()),
      server_([ctx = ctx_, sni = sni_, serve = std::move(serve)](int fd) {
        SSL* ssl = SSL_new(ctx.get());
        SSL_set_fd(ssl, fd);
        if (SSL_accept(ssl) == 1) {
          if (const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name)) *sni = name;
          serve(ssl);
          SSL_shutdown(ssl);
        }
        SSL_free(ssl);
        ERR_clear_error();
      }) {}

TlsServer::~TlsServer() = default;

void ssl_write_pattern(SSL* ssl, size_t bytes) {
  std::vector<std::byte> chunk(size_t{1} << 20);
  for (size_t off = 0; off < bytes; off += chunk.size()) {
    const size_t n = std::min(chunk.size(), bytes - off);
    fill_pattern({chunk.data(), n}, off);
    size_t put = 0;
    if (SSL_write_ex(ssl, chunk.data(), n, &put) != 1) return;
  }
}

}  // namespace oc::net::test
