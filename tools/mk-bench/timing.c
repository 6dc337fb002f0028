/* timing.c — time a call (or up to four, in turns) with CUDA events after warm-up (one call per
 * event pair, or --batch N back-to-back calls, reported per call); median/p10/p90
 * over iterations, and the host's time to issue a call (host_ms). With --graph every call is
 * replayed from a CUDA graph captured after the warm-up (one per callable and input set), except the
 * callables of mk_bench_opts.graph_eager.
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
  out->median_ms = out->p10_ms = out->p90_ms = out->host_ms = NAN;
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

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* --graph: one graph per callable and input set, each capturing one call (after the warm-up,
 * so lazily allocated workspaces exist). */
static mk_status capture_all(int nf, int rot, const mk_bench_fn *fns, void *const *users, void *stream,
                             unsigned eager, cudaGraphExec_t *ex) {
  cudaStream_t s = (cudaStream_t)stream;
  for (int f = 0; f < nf; f++)
    for (int r = 0; r < rot && !((eager >> f) & 1); r++) {
      cudaGraph_t g = NULL;
      MK_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      mk_status st = fns[f](users[f], r, stream);
      cudaError_t e = cudaStreamEndCapture(s, &g);
      if (st != MK_STATUS_OK || e != cudaSuccess) {
        if (g) cudaGraphDestroy(g);
        (void)cudaGetLastError();
        MK_ERR_RETURN(st ? st : MK_STATUS_CUDA_ERROR, MK_SUBSYS_KERNEL,
                      "mk-bench --graph: this op's call cannot be captured in a CUDA graph (%s)",
                      st ? mk_status_str(st) : cudaGetErrorString(e));
      }
      e = cudaGraphInstantiate(&ex[f * rot + r], g, 0);
      cudaGraphDestroy(g);
      if (e != cudaSuccess)
        MK_ERR_RETURN(MK_STATUS_CUDA_ERROR, MK_SUBSYS_KERNEL, "mk-bench --graph: cudaGraphInstantiate: %s",
                      cudaGetErrorString(e));
    }
  return MK_STATUS_OK;
}

/* Times nf (1 .. MK_BENCH_MAX_FNS) callables; with several, their calls take turns (warm-up too), so all
 * see the same clocks under the power cap. */
static mk_status time_fns(const mk_bench_opts *o, int nf, const mk_bench_fn *fns, void *const *users, void *stream,
                          mk_bench_stats *outs) {
  mk_status st = MK_STATUS_OK;
  cudaStream_t s = (cudaStream_t)stream;
  int n = o->iters, rot = o->rotate > 0 ? o->rotate : 1, nb = o->batch > 0 ? o->batch : 1;
  cudaEvent_t *ev = calloc((size_t)n * 2 * nf, sizeof *ev);
  double *ms = calloc((size_t)n * nf, sizeof *ms);
  void *flush = NULL;
  size_t flush_bytes = 0;
  cudaGraphExec_t ex[MK_BENCH_MAX_FNS * 64] = {0};
  double host[MK_BENCH_MAX_FNS] = {0};
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
  for (int i = 0; i < 2 * n * nf; i++) MK_CUDA_CHECK_GOTO(cudaEventCreate(&ev[i]), st, fail);
  /* Call c of the sequence (warm-up first) reads input set c % rot: consecutive calls never
   * share a set, so neither path finds the other's inputs in L2 (with rot >= 2). */
  for (int i = 0; i < o->warmup; i++)
    for (int f = 0; f < nf; f++) MK_CHECK_GOTO(fns[f](users[f], (i * nf + f) % rot, stream), st, fail);
  if (o->graph) {
    MK_CUDA_CHECK_GOTO(cudaStreamSynchronize(s), st, fail);
    MK_CHECK_GOTO(capture_all(nf, rot, fns, users, stream, o->graph_eager, ex), st, fail);
    for (int i = 0; i < rot; i++) /* each graph once before timing (first launch uploads it) */
      for (int f = 0; f < nf; f++)
        if (ex[f * rot + i]) MK_CUDA_CHECK_GOTO(cudaGraphLaunch(ex[f * rot + i], s), st, fail);
  }
  for (int i = 0; i < n; i++) {
    for (int f = 0; f < nf; f++) {
      cudaEvent_t *e = ev + 2 * ((size_t)f * n + i);
      if (flush) MK_CUDA_CHECK_GOTO(cudaMemsetAsync(flush, i & 0xff, flush_bytes, s), st, fail);
      if (o->pre) MK_CHECK_GOTO(o->pre(o->pre_ctx, stream), st, fail);
      MK_CUDA_CHECK_GOTO(cudaEventRecord(e[0], s), st, fail);
      const double h0 = now_ms();
      for (int b = 0; b < nb; b++) { /* --batch: back to back, nothing between the calls */
        const int set = ((o->warmup + i * nb + b) * nf + f) % rot;
        if (ex[f * rot + set]) MK_CUDA_CHECK_GOTO(cudaGraphLaunch(ex[f * rot + set], s), st, fail);
        else MK_CHECK_GOTO(fns[f](users[f], set, stream), st, fail);
      }
      host[f] += (now_ms() - h0) / nb;
      MK_CUDA_CHECK_GOTO(cudaEventRecord(e[1], s), st, fail);
    }
  }
  MK_CUDA_CHECK_GOTO(cudaStreamSynchronize(s), st, fail);
  for (int i = 0; i < n * nf; i++) {
    float t = 0;
    MK_CUDA_CHECK_GOTO(cudaEventElapsedTime(&t, ev[2 * i], ev[2 * i + 1]), st, fail);
    ms[i] = t / nb;
  }
  for (int f = 0; f < nf; f++) {
    mk_bench_stats_from(ms + (size_t)f * n, n, &outs[f]);
    outs[f].host_ms = host[f] / n;
  }
  if (o->samples_path) { /* per-call times, for distributions (bimodal timings) */
    static int batch = 0;
    char path[1024]; /* several ranks: each its own file, FILE.rankN (as MK_TRACE's) */
    if (o->nranks > 1) snprintf(path, sizeof path, "%s.rank%d", o->samples_path, o->rank);
    else snprintf(path, sizeof path, "%s", o->samples_path);
    FILE *fp = fopen(path, "a");
    if (!fp) {
      fprintf(stderr, "mk-bench: cannot append to --samples %s\n", path);
      st = MK_STATUS_SYSTEM_ERROR;
      goto fail;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    for (int f = 0; f < nf; f++, batch++)
      for (int i = 0; i < n; i++)
        fprintf(fp, "%d,%d,%.3f,%.6f\n", batch, i, (double)ts.tv_sec + ts.tv_nsec * 1e-9, ms[(size_t)f * n + i]);
    fclose(fp);
  }
fail:
  for (int i = 0; i < MK_BENCH_MAX_FNS * 64; i++)
    if (ex[i]) cudaGraphExecDestroy(ex[i]);
  if (ev)
    for (int i = 0; i < 2 * n * nf; i++)
      if (ev[i]) cudaEventDestroy(ev[i]);
  if (flush) cudaFree(flush);
  free(ev);
  free(ms);
  return st;
}

mk_status mk_bench_time(const mk_bench_opts *o, mk_bench_fn fn, void *user, void *stream, mk_bench_stats *out) {
  return time_fns(o, 1, &fn, &user, stream, out);
}

mk_status mk_bench_time_n(const mk_bench_opts *o, int nf, const mk_bench_fn *fns, void *const *users, void *stream,
                          mk_bench_stats *outs) {
  if (nf < 1 || nf > MK_BENCH_MAX_FNS)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_BENCH, "mk-bench: %d callables to time in turn (1..%d)", nf,
                  MK_BENCH_MAX_FNS);
  return time_fns(o, nf, fns, users, stream, outs);
}
