// floor_bench: the one-copy floor. HTTP/1.1 GETs over keep-alive connections (one thread
// each), every body byte received straight into its final place in one destination buffer:
// recv(fd, dest + ...) for http://, SSL_read(ssl, dest + ...) for https:// (OpenSSL, the CA
// from --ca-file verified). No bounce buffer; only the body bytes that arrive together with
// the response header are memcpy'd. Options and output: see common.h.
// Build: cc -O2 -pthread -o floor_bench floor_bench.c -lssl -lcrypto
#include "common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdatomic.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

static opts_t o;
static char *dest;
static SSL_CTX *ctx;
static atomic_llong next_job, bytes_done;
enum { HDR = 64 << 10 };

typedef struct { int fd; SSL *ssl; char buf[HDR]; size_t have, pos; } conn_t;

static void fail(const char *m) { fprintf(stderr, "floor_bench: %s\n", m); ERR_print_errors_fp(stderr); exit(1); }

static ssize_t c_read(conn_t *c, void *p, size_t n) {
  if (c->ssl) {
    int r = SSL_read(c->ssl, p, (int)(n > (1u << 30) ? 1u << 30 : n));
    if (r <= 0) return SSL_get_error(c->ssl, r) == SSL_ERROR_ZERO_RETURN ? 0 : -1;
    return r;
  }
  ssize_t r;
  do r = recv(c->fd, p, n, 0); while (r < 0 && errno == EINTR);
  return r;
}

static void c_write(conn_t *c, const char *p, size_t n) {
  while (n) {
    ssize_t r = c->ssl ? SSL_write(c->ssl, p, (int)n) : send(c->fd, p, n, MSG_NOSIGNAL);
    if (r <= 0) fail("send failed");
    p += r; n -= (size_t)r;
  }
}

static void c_open(conn_t *c) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o.port)};
  if (inet_pton(AF_INET, o.host, &a.sin_addr) != 1) fail("host must be an IPv4 address");
  c->fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(c->fd, (struct sockaddr *)&a, sizeof a) < 0) fail("connect failed");
  c->ssl = NULL; c->have = c->pos = 0;
  if (o.tls) {
    c->ssl = SSL_new(ctx);
    SSL_set_fd(c->ssl, c->fd);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), o.host);
    if (SSL_connect(c->ssl) != 1) fail("TLS handshake failed");
  }
}

static void c_close(conn_t *c) {
  if (c->ssl) { SSL_shutdown(c->ssl); SSL_free(c->ssl); }
  close(c->fd);
}

static void get(conn_t *c, const job_t *j) {
  char req[4096];
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: onecopy-floor\r\n", o.path, o.host, o.port);
  if (j->ranged) n += snprintf(req + n, sizeof req - (size_t)n, "Range: bytes=%lld-%lld\r\n", j->off, j->off + j->len - 1);
  n += snprintf(req + n, sizeof req - (size_t)n, "\r\n");
  c_write(c, req, (size_t)n);
  size_t got = 0;
  char *end = NULL;
  while (!end) {
    ssize_t r = c_read(c, c->buf + got, HDR - 1 - got);
    if (r <= 0) fail("connection closed in the response header");
    got += (size_t)r; c->buf[got] = 0;
    end = strstr(c->buf, "\r\n\r\n");
    if (!end && got >= HDR - 1) fail("response header too large");
  }
  int status = atoi(c->buf + 9);
  long long clen = -1;
  for (char *l = strstr(c->buf, "\r\n"); l && l < end; l = strstr(l + 2, "\r\n"))
    if (!strncasecmp(l + 2, "Content-Length:", 15)) clen = atoll(l + 17);
  if (status != (j->ranged ? 206 : 200) || clen != j->len) {
    fprintf(stderr, "floor_bench: HTTP %d, Content-Length %lld, wanted %lld\n", status, clen, j->len);
    exit(1);
  }
  size_t pre = got - (size_t)(end + 4 - c->buf);
  if ((long long)pre > clen) fail("more bytes than the body");
  char *d = dest + j->dst;
  memcpy(d, end + 4, pre);
  long long left = clen - (long long)pre;
  d += pre;
  while (left > 0) {
    ssize_t r = c_read(c, d, (size_t)left);
    if (r <= 0) fail("short body");
    d += r; left -= r;
  }
  atomic_fetch_add(&bytes_done, clen);
}

static void *worker(void *arg) {
  (void)arg;
  conn_t *c = malloc(sizeof *c);
  c_open(c);
  for (long long i; (i = atomic_fetch_add(&next_job, 1)) < o.njobs;) get(c, &o.jobs[i]);
  c_close(c);
  free(c);
  return NULL;
}

int main(int argc, char **argv) {
  parse_opts(&o, argc, argv);
  dest = alloc_dest(o.dest_bytes);
  if (o.tls) {
    ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (o.ca_file ? SSL_CTX_load_verify_locations(ctx, o.ca_file, NULL) != 1 : SSL_CTX_set_default_verify_paths(ctx) != 1)
      fail("cannot load the CA file");
  }
  stamp_t t0 = stamp();
  pthread_t th[256];
  int n = o.conns > 256 ? 256 : o.conns;
  for (int i = 0; i < n; i++) pthread_create(&th[i], NULL, worker, NULL);
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  stamp_t t1 = stamp();
  if (atomic_load(&bytes_done) != o.dest_bytes) fail("byte count mismatch");
  report(atomic_load(&bytes_done), t0, t1);
  return 0;
}
