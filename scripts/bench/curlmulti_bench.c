// curlmulti_bench: the KvikIO design as a baseline. libcurl multi, one thread driving
// curl_multi_perform()/curl_multi_poll(), N easy handles (= connections, reused from the
// multi handle's cache), each ranged GET's write callback memcpy()s libcurl's pieces (16 KiB
// default buffer) into its slot of one destination buffer. Options and output: common.h.
// Build: cc -O2 -o curlmulti_bench curlmulti_bench.c -lcurl
#include "common.h"

#include <curl/curl.h>

typedef struct { char *dst; long long len, got; int overflow; const job_t *job; } slot_t;

static size_t on_data(char *p, size_t sz, size_t nm, void *ud) {
  slot_t *s = ud;
  size_t n = sz * nm;
  if (s->got + (long long)n > s->len) { s->overflow = 1; return CURL_WRITEFUNC_ERROR; }
  memcpy(s->dst + s->got, p, n);
  s->got += (long long)n;
  return n;
}

int main(int argc, char **argv) {
  opts_t o;
  parse_opts(&o, argc, argv);
  char *dest = alloc_dest(o.dest_bytes);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  stamp_t t0 = stamp();
  CURLM *m = curl_multi_init();
  CURL **eh = calloc((size_t)o.conns, sizeof *eh);
  slot_t *sl = calloc((size_t)o.conns, sizeof *sl);
  long long next = 0, bytes = 0, done = 0;
  char rng[64];
  for (int i = 0; i < o.conns; i++) {
    CURL *e = eh[i] = curl_easy_init();
    curl_easy_setopt(e, CURLOPT_URL, o.url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &sl[i]);
    curl_easy_setopt(e, CURLOPT_PRIVATE, &sl[i]);
    if (o.ca_file) curl_easy_setopt(e, CURLOPT_CAINFO, o.ca_file);
  }
#define ASSIGN(i)                                                                             \
  do {                                                                                        \
    const job_t *j_ = &o.jobs[next++];                                                        \
    sl[i] = (slot_t){dest + j_->dst, j_->len, 0, 0, j_};                                      \
    if (j_->ranged) snprintf(rng, sizeof rng, "%lld-%lld", j_->off, j_->off + j_->len - 1);   \
    curl_easy_setopt(eh[i], CURLOPT_RANGE, j_->ranged ? rng : NULL);                          \
    curl_multi_add_handle(m, eh[i]);                                                          \
  } while (0)
  for (int i = 0; i < o.conns; i++) ASSIGN(i);
  int running = 1;
  while (running) {
    if (curl_multi_perform(m, &running)) { fprintf(stderr, "curl_multi_perform failed\n"); return 1; }
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(m, &left))) {
      if (msg->msg != CURLMSG_DONE) continue;
      slot_t *s;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
      long code = 0;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
      if (msg->data.result != CURLE_OK || code != (s->job->ranged ? 206 : 200) || s->got != s->len || s->overflow) {
        fprintf(stderr, "curlmulti_bench: GET @%lld: %s, HTTP %ld, %lld of %lld bytes\n", s->job->off,
                curl_easy_strerror(msg->data.result), code, s->got, s->len);
        return 1;
      }
      bytes += s->got; done++;
      curl_multi_remove_handle(m, msg->easy_handle);
      if (next < o.njobs) { ASSIGN((int)(s - sl)); running = 1; }
    }
    if (running) curl_multi_poll(m, NULL, 0, 1000, NULL);
  }
  for (int i = 0; i < o.conns; i++) { curl_multi_remove_handle(m, eh[i]); curl_easy_cleanup(eh[i]); }
  curl_multi_cleanup(m);
  stamp_t t1 = stamp();
  if (bytes != o.dest_bytes || done != o.njobs) { fprintf(stderr, "curlmulti_bench: byte count mismatch\n"); return 1; }
  report(bytes, t0, t1);
  return 0;
}
