// Shared by the network baseline clients in scripts/bench/ (built by scripts/bench_net.sh with
// cc, not meson): command line, the list of ranged GETs (jobs), timing and the result line.
//
//   --url http(s)://127.0.0.1:PORT/bucket/key  --size OBJECT_BYTES  --connections N
//   [--ranges R --range-bytes B]   R ranges of B bytes at random offsets (seeded), range i
//                                  lands in slot i of the destination buffer (R*B bytes)
//   [--chunk B]                    full-object mode with N > 1: ranged GETs of B (16 MiB)
//   [--ca-file F] [--seed S]
// Full-object mode with 1 connection is one GET without Range. Prints one line:
//   bytes=<n> wall_s=<x> user_s=<u> sys_s=<s>
// user/sys: getrusage(RUSAGE_SELF) over the timed region (connects, TLS handshakes and all
// GETs; not the allocation and page-touching of the destination buffer).
#pragma once
#define _GNU_SOURCE
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

typedef struct {
  long long off, len, dst;
  int ranged;
} job_t;

typedef struct {
  const char *url, *ca_file;
  char scheme[8], host[256], path[2048];
  int port, tls, conns;
  long long size, range_bytes, chunk, nranges;
  unsigned long long seed;
  job_t* jobs;
  long long njobs, dest_bytes;
} opts_t;

static long long parse_bytes(const char* a) {
  char* e;
  long long v = strtoll(a, &e, 10);
  if (*e == 'K' || *e == 'k')
    v <<= 10;
  else if (*e == 'M' || *e == 'm')
    v <<= 20;
  else if (*e == 'G' || *e == 'g')
    v <<= 30;
  return v;
}

static void usage(const char* argv0) {
  fprintf(stderr,
          "usage: %s --url URL --size BYTES [--connections N] [--ranges R --range-bytes B] "
          "[--chunk B] [--ca-file F] [--seed S]\n",
          argv0);
  exit(2);
}

static void parse_opts(opts_t* o, int argc, char** argv) {
  memset(o, 0, sizeof *o);
  o->conns = 1;
  o->chunk = 16 << 20;
  o->range_bytes = 16 << 20;
  o->seed = 42;
  static struct option lo[] = {
      {"url", 1, 0, 'u'},     {"size", 1, 0, 's'},        {"connections", 1, 0, 'c'},
      {"ranges", 1, 0, 'r'},  {"range-bytes", 1, 0, 'b'}, {"chunk", 1, 0, 'k'},
      {"ca-file", 1, 0, 'a'}, {"seed", 1, 0, 'S'},        {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) switch (c) {
      case 'u':
        o->url = optarg;
        break;
      case 's':
        o->size = parse_bytes(optarg);
        break;
      case 'c':
        o->conns = atoi(optarg);
        break;
      case 'r':
        o->nranges = atoll(optarg);
        break;
      case 'b':
        o->range_bytes = parse_bytes(optarg);
        break;
      case 'k':
        o->chunk = parse_bytes(optarg);
        break;
      case 'a':
        o->ca_file = optarg;
        break;
      case 'S':
        o->seed = strtoull(optarg, NULL, 10);
        break;
      default:
        usage(argv[0]);
    }
  if (!o->url || o->size <= 0 || o->conns < 1) usage(argv[0]);
  if (sscanf(o->url, "%7[^:]://%255[^:/]:%d%2047s", o->scheme, o->host, &o->port, o->path) != 4) {
    fprintf(stderr, "URL must be http(s)://HOST:PORT/PATH\n");
    exit(2);
  }
  o->tls = !strcmp(o->scheme, "https");
  if (o->nranges > 0) {  // random ranges, each into its own slot
    if (o->range_bytes > o->size) {
      fprintf(stderr, "range-bytes > size\n");
      exit(2);
    }
    o->njobs = o->nranges;
    o->jobs = calloc((size_t)o->njobs, sizeof(job_t));
    unsigned long long x = o->seed * 0x9E3779B97F4A7C15ull + 1;
    for (long long i = 0; i < o->njobs; i++) {
      x ^= x >> 12;
      x ^= x << 25;
      x ^= x >> 27;  // xorshift64*
      unsigned long long r = x * 0x2545F4914F6CDD1Dull;
      o->jobs[i] = (job_t){(long long)(r % (unsigned long long)(o->size - o->range_bytes + 1)),
                           o->range_bytes, i * o->range_bytes, 1};
    }
    o->dest_bytes = o->nranges * o->range_bytes;
  } else if (o->conns == 1) {
    o->njobs = 1;
    o->jobs = calloc(1, sizeof(job_t));
    o->jobs[0] = (job_t){0, o->size, 0, 0};
    o->dest_bytes = o->size;
  } else {
    o->njobs = (o->size + o->chunk - 1) / o->chunk;
    o->jobs = calloc((size_t)o->njobs, sizeof(job_t));
    for (long long i = 0; i < o->njobs; i++) {
      long long off = i * o->chunk, len = o->size - off < o->chunk ? o->size - off : o->chunk;
      o->jobs[i] = (job_t){off, len, off, 1};
    }
    o->dest_bytes = o->size;
  }
  if (o->conns > o->njobs) o->conns = (int)o->njobs;
}

static char* alloc_dest(long long n) {
  char* p = mmap(NULL, (size_t)n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    perror("mmap");
    exit(1);
  }
  memset(p, 0x5a, (size_t)n);  // fault every page in before the timed region
  return p;
}

typedef struct {
  double wall, user, sys;
} stamp_t;
static stamp_t stamp(void) {
  struct timespec t;
  struct rusage ru;
  clock_gettime(CLOCK_MONOTONIC, &t);
  getrusage(RUSAGE_SELF, &ru);
  return (stamp_t){t.tv_sec + t.tv_nsec * 1e-9, ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6,
                   ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6};
}
static void report(long long bytes, stamp_t a, stamp_t b) {
  printf("bytes=%lld wall_s=%.4f user_s=%.4f sys_s=%.4f\n", bytes, b.wall - a.wall, b.user - a.user,
         b.sys - a.sys);
}
