/* timing.c — time a call with CUDA events after warm-up; median/p10/p90 over iterations.
 * The optional L2 flush (a memset of 2x the L2 size) runs outside the timed events. */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/check.h"
#include "mk_bench.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double percentile(const double *sorted, int n, double q) {
  if (n == 1) return sorted[0];
  double pos = q * (n - 1);
  int lo = (int)pos;
  if (lo >= n - 1) return sorted[n - 1];
  double frac = pos - lo;
  return sorted[lo] + (sorted[lo + 1] - sorted[lo]) * frac;
}

void mk_bench_stats_from(const double *ms, int n, mk_bench_stats *out) {
  out->median_ms = out->p10_ms = out->p90_ms = NAN;
  if (n <= 0) return;
  double *s = malloc(sizeof(double) * (size_t)n);
  if (!s) return;
  memcpy(s, ms, sizeof(double) * (size_t)n);
  qsort(s, (size_t)n, sizeof(double), cmp_double);
  out->median_ms = percentile(s, n, 0.5);
  out->p10_ms = percentile(s, n, 0.1);
  out->p90_ms = percentile(s, n, 0.9);
  free(s);
}

mk_status mk_bench_time(const mk_bench_opts *o, mk_bench_fn fn, void *user, void *stream, mk_bench_stats *out) {
  mk_status st = MK_STATUS_OK;
  cudaStream_t s = (cudaStream_t)stream;
  int n = o->iters, rot = o->rotate > 0 ? o->rotate : 1;
  cudaEvent_t *ev = calloc((size_t)n * 2, sizeof *ev);
  double *ms = calloc((size_t)n, sizeof *ms);
  void *flush = NULL;
  size_t flush_bytes = 0;
  if (!ev || !ms) {
    st = MK_STATUS_OUT_OF_MEMORY;
    goto fail;
  }
  if (o->flush_l2) {
    int dev = 0, l2 = 0;
    MK_CUDA_CHECK_GOTO(cudaGetDevice(&dev), st, fail);
    MK_CUDA_CHECK_GOTO(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev), st, fail);
    flush_bytes = (size_t)l2 * 2;
    MK_CUDA_CHECK_GOTO(cudaMalloc(&flush, flush_bytes), st, fail);
  }
  for (int i = 0; i < 2 * n; i++) MK_CUDA_CHECK_GOTO(cudaEventCreate(&ev[i]), st, fail);
  for (int i = 0; i < o->warmup; i++) MK_CHECK_GOTO(fn(user, i % rot, stream), st, fail);
  for (int i = 0; i < n; i++) {
    if (flush) MK_CUDA_CHECK_GOTO(cudaMemsetAsync(flush, i & 0xff, flush_bytes, s), st, fail);
    MK_CUDA_CHECK_GOTO(cudaEventRecord(ev[2 * i], s), st, fail);
    MK_CHECK_GOTO(fn(user, (o->warmup + i) % rot, stream), st, fail);
    MK_CUDA_CHECK_GOTO(cudaEventRecord(ev[2 * i + 1], s), st, fail);
  }
  MK_CUDA_CHECK_GOTO(cudaStreamSynchronize(s), st, fail);
  for (int i = 0; i < n; i++) {
    float t = 0;
    MK_CUDA_CHECK_GOTO(cudaEventElapsedTime(&t, ev[2 * i], ev[2 * i + 1]), st, fail);
    ms[i] = t;
  }
  mk_bench_stats_from(ms, n, out);
  if (o->samples_path) { /* per-call times, for distributions (bimodal timings) */
    static int batch = 0;
    FILE *f = fopen(o->samples_path, "a");
    if (!f) {
      fprintf(stderr, "mk-bench: cannot append to --samples %s\n", o->samples_path);
      st = MK_STATUS_SYSTEM_ERROR;
      goto fail;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    for (int i = 0; i < n; i++)
      fprintf(f, "%d,%d,%.3f,%.6f\n", batch, i, (double)ts.tv_sec + ts.tv_nsec * 1e-9, ms[i]);
    fclose(f);
    batch++;
  }
fail:
  if (ev)
    for (int i = 0; i < 2 * n; i++)
      if (ev[i]) cudaEventDestroy(ev[i]);
  if (flush) cudaFree(flush);
  free(ev);
  free(ms);
  return st;
}
