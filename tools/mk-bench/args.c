/* args.c — mk-bench's common flags (--warmup, --iters, --rotate, --flush-l2, --path, --json,
 * --csv, --samples, --seed, --autotune, --interleave, --graph) and strict number parsing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mk_bench.h"

void mk_bench_opts_default(mk_bench_opts *o) {
  memset(o, 0, sizeof *o);
  o->warmup = 10;
  o->iters = 50;
  o->rotate = 1;
  o->batch = 1;
  o->paths = MK_BENCH_PATH_FUSED | MK_BENCH_PATH_UNFUSED;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  o->seed = (((uint64_t)ts.tv_sec << 20) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 40)) & INT64_MAX;
  if (!o->seed) o->seed = 1;
}

int mk_bench_parse_i64(const char *flag, const char *text, int64_t lo, int64_t hi, int64_t *out) {
  if (!text) {
    fprintf(stderr, "mk-bench: %s needs a value\n", flag);
    return -1;
  }
  errno = 0;
  char *end = NULL;
  long long v = strtoll(text, &end, 10);
  if (end == text || *end || errno == ERANGE) {
    fprintf(stderr, "mk-bench: %s '%s' is not an integer\n", flag, text);
    return -1;
  }
  if (v < lo || v > hi) {
    fprintf(stderr, "mk-bench: %s %lld is out of range [%lld, %lld]\n", flag, v, (long long)lo, (long long)hi);
    return -1;
  }
  *out = v;
  return 0;
}

static int parse_paths(const char *text, unsigned *out) {
  if (!text || !*text) {
    fprintf(stderr, "mk-bench: --path needs a value: fused, unfused or fused,unfused\n");
    return -1;
  }
  unsigned m = 0;
  char buf[64];
  if (strlen(text) >= sizeof buf) {
    fprintf(stderr, "mk-bench: --path '%s' is too long\n", text);
    return -1;
  }
  strcpy(buf, text);
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (!strcmp(t, "fused"))
      m |= MK_BENCH_PATH_FUSED;
    else if (!strcmp(t, "unfused"))
      m |= MK_BENCH_PATH_UNFUSED;
    else {
      fprintf(stderr, "mk-bench: --path: unknown path '%s' (fused, unfused)\n", t);
      return -1;
    }
  }
  if (!m) {
    fprintf(stderr, "mk-bench: --path '%s' names no path\n", text);
    return -1;
  }
  *out = m;
  return 0;
}

int mk_bench_parse_common(mk_bench_opts *o, int argc, char **argv, int i) {
  const char *f = argv[i];
  const char *val = i + 1 < argc ? argv[i + 1] : NULL;
  int64_t v = 0;
  if (!strcmp(f, "--flush-l2")) {
    o->flush_l2 = 1;
    return 1;
  }
  if (!strcmp(f, "--autotune")) {
    o->autotune = 1;
    return 1;
  }
  if (!strcmp(f, "--interleave")) {
    o->interleave = 1;
    return 1;
  }
  if (!strcmp(f, "--graph")) {
    o->graph = 1;
    return 1;
  }
  if (!strcmp(f, "--warmup")) {
    if (mk_bench_parse_i64(f, val, 0, 100000, &v)) return -1;
    o->warmup = (int)v;
    return 2;
  }
  if (!strcmp(f, "--iters")) {
    if (mk_bench_parse_i64(f, val, 1, 1000000, &v)) return -1;
    o->iters = (int)v;
    return 2;
  }
  if (!strcmp(f, "--batch")) {
    if (mk_bench_parse_i64(f, val, 1, 1000, &v)) return -1;
    o->batch = (int)v;
    return 2;
  }
  if (!strcmp(f, "--rotate")) {
    if (mk_bench_parse_i64(f, val, 1, 64, &v)) return -1;
    o->rotate = (int)v;
    return 2;
  }
  if (!strcmp(f, "--seed")) {
    if (mk_bench_parse_i64(f, val, 1, INT64_MAX, &v)) return -1;
    o->seed = (uint64_t)v;
    return 2;
  }
  if (!strcmp(f, "--path")) return parse_paths(val, &o->paths) ? -1 : 2;
  if (!strcmp(f, "--json") || !strcmp(f, "--csv") || !strcmp(f, "--samples")) {
    if (!val || !*val || val[0] == '-') {
      fprintf(stderr, "mk-bench: %s needs a file name\n", f);
      return -1;
    }
    if (f[2] == 'j')
      o->json_path = val;
    else if (f[2] == 'c')
      o->csv_path = val;
    else
      o->samples_path = val;
    return 2;
  }
  return 0;
}

void mk_bench_print_common_help(FILE *out) {
  fprintf(out,
          "common flags:\n"
          "  --path fused,unfused   which paths to run (default both)\n"
          "  --warmup N             untimed calls first (default 10)\n"
          "  --iters N              timed calls; median, p10, p90 reported (default 50)\n"
          "  --rotate N             cycle through N input sets (default 1)\n"
          "  --batch N              each timed sample is N back-to-back calls between one pair of\n"
          "                         events, reported per call (default 1: one call per pair)\n"
          "  --flush-l2             overwrite a 2xL2 buffer before every timed call\n"
          "  --seed N               seed of the random inputs (default: fresh, printed)\n"
          "  --json FILE, --csv FILE  write results with gpu, commit and date\n"
          "  --samples FILE         append every timed call: batch,iter,unix_s,ms (batch = n-th\n"
          "                         timing in this process, iter in call order, unix_s at the batch's end;\n"
          "                         ops over several ranks: FILE.rankN for rank N)\n"
          "  --autotune             search the SM role split (ops that have one)\n"
          "  --interleave           time fused and unfused calls alternately, so both see the same\n"
          "                         clocks under the GPU's power cap (gemm)\n"
          "  --graph                capture each call (one graph per input set) in a CUDA graph and\n"
          "                         time its replays: device time without the host's per-call work\n"
          "                         (ops whose calls are capturable; JSON rows also give host_ms)\n");
}

int mk_bench_parse_list(const char *flag, const char *text, int64_t lo, int64_t hi, int max, int64_t *out, int *n) {
  char buf[256];
  if (!text || strlen(text) >= sizeof buf) {
    fprintf(stderr, "mk-bench: %s needs a comma list of integers\n", flag);
    return -1;
  }
  strcpy(buf, text);
  *n = 0;
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (*n == max) {
      fprintf(stderr, "mk-bench: %s takes at most %d values\n", flag, max);
      return -1;
    }
    if (mk_bench_parse_i64(flag, t, lo, hi, &out[(*n)++])) return -1;
  }
  if (!*n) {
    fprintf(stderr, "mk-bench: %s names no value\n", flag);
    return -1;
  }
  return 0;
}

int mk_bench_multi_rank(const char *op, int argc, int min_ranks, mk_world *wd) {
  int ndev = 0;
  if (mk_world_from_env(wd) != MK_STATUS_OK || wd->size < min_ranks) {
    fprintf(argc == 1 ? stdout : stderr,
            "mk-bench %s: %sneeds at least %d ranks: run it under mk-launch -n N (N >= %d)\n", op,
            argc == 1 ? "skipped: " : "", min_ranks, min_ranks);
    return argc == 1 ? 0 : 2;
  }
  if (mk_device_count(&ndev) != MK_STATUS_OK) {
    fprintf(stderr, "mk-bench %s: needs GPUs: %s\n", op, mk_device_absent_reason());
    return 1;
  }
  return -1;
}
