/* bench_ring_attn.c — `mk-bench ring_attn`, under mk-launch (e.g. `mk-launch -n 4 -- mk-bench
 * ring_attn`): sequence-parallel attention, S rows of Q/K/V per rank (zigzag when causal).
 *   fused     mk_ring_attn_fwd: one persistent launch, K/V travel while the flash loop runs
 *   unfused   NCCL all-gather of K and V (+ the causal reorder), then the flash kernel
 * Both rows carry the overlap bound: compute_ms = the flash kernel on one GPU with all K/V
 * local (the unfused path's attention alone), comm_ms = the all-gather alone, bound_ms = their
 * max. Times are the max over ranks of each rank's median (p10, p90). TFLOP/s per GPU:
 * 4 hq S (W S) d per rank, half when causal. rel_err: O over sampled (row, head) pairs of this
 * rank against the CPU reference over the whole sequence (every rank checks its own rows; the
 * table shows rank 0's, a failure on any rank fails the run). */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/mk_comm.h"
#include "core/check.h"
#include "core/rng.h"
#include "kernels/mk_kernels.h"
#include "mk_bench.h"

enum { k_max_seqs = 8, k_samples = 32 };

typedef struct ring_bench {
  mk_ring_attn_t *ra;
  mk_nccl_t *nccl;
  mk_ring_attn_args a;
  int parts; /* 0: fused; else the unfused parts */
} ring_bench;

static mk_status ring_call(void *user, int iter, void *stream) {
  ring_bench *b = user;
  (void)iter;
  if (!b->parts) return mk_ring_attn_fwd(b->ra, &b->a, (mk_stream_t)stream);
  return mk_ring_attn_unfused(b->ra, b->nccl, &b->a, b->parts, (mk_stream_t)stream);
}

/* Rank j's shard tensor t (0 q, 1 k, 2 v), element i: the host twin of mk_fill_uniform_bf16. */
static uint64_t shard_seed(uint64_t seed, int j, int t) { return seed + 16ull * (uint64_t)j + (uint64_t)t; }
static uint16_t shard_at(uint64_t seed, int j, int t, size_t i) {
  return mk_rng_bf16_bits(mk_rng_uniform(shard_seed(seed, j, t), i, t == 2 ? -1.f : -2.f, t == 2 ? 2.f : 4.f));
}

/* O rel error over sampled (row, head) pairs of this rank's shard. */
static double ring_check(const mk_ring_attn_args *a, int rank, int w, int hkv, int d, uint64_t seed) {
  const int64_t n = (int64_t)w * a->s, krow = (int64_t)hkv * d, qrow = (int64_t)a->hq * d;
  uint16_t *k = malloc((size_t)(n * krow) * 2), *v = malloc((size_t)(n * krow) * 2);
  uint16_t *q = malloc((size_t)qrow * 2), *o = malloc((size_t)(a->s * qrow) * 2);
  double num = 0, den = 0;
  if (!k || !v || !q || !o || cudaMemcpy(o, a->o, (size_t)(a->s * qrow) * 2, cudaMemcpyDeviceToHost) != cudaSuccess) {
    num = INFINITY, den = 1;
    goto done;
  }
  for (int j = 0; j < w; j++) /* the whole sequence, in sequence order */
    for (int i = 0; i < a->s; i++) {
      const int64_t pos = mk_ring_attn_position(j, w, a->s, a->causal, i);
      for (int64_t x = 0; x < krow; x++) {
        k[pos * krow + x] = shard_at(seed, j, 1, (size_t)(i * krow + x));
        v[pos * krow + x] = shard_at(seed, j, 2, (size_t)(i * krow + x));
      }
    }
  for (int smp = 0; smp < k_samples; smp++) {
    const int i = smp == 0 ? 0 : smp == 1 ? a->s - 1 : (int)((mk_rng_hash(11, (uint64_t)smp) >> 33) % (uint64_t)a->s);
    const int h = (smp * 7) % a->hq;
    const int64_t pos = mk_ring_attn_position(rank, w, a->s, a->causal, i);
    for (int64_t x = 0; x < qrow; x++) q[x] = shard_at(seed, rank, 0, (size_t)(i * qrow + x));
    /* One query row over the keys it sees: [0, pos] causal, all otherwise. */
    const int32_t cu_q[2] = {0, 1}, cu_k[2] = {0, (int32_t)(a->causal ? pos + 1 : n)};
    mk_attn_fwd_args r;
    memset(&r, 0, sizeof r);
    r.q = q, r.k = k, r.v = v, r.cu_seqlens_q = cu_q, r.cu_seqlens_k = cu_k, r.batch = 1, r.hq = a->hq, r.hkv = hkv;
    r.d = d, r.mask = MK_ATTN_MASK_NONE, r.softmax_scale = a->softmax_scale;
    float ref[256], lse;
    mk_attn_ref_row(&r, 0, h, 0, ref, &lse);
    for (int x = 0; x < d; x++) {
      const double got = mk_bf16_to_float(o[(i * qrow) + (int64_t)h * d + x]);
      if (!isfinite(got)) num = INFINITY;
      num += (got - ref[x]) * (got - ref[x]);
      den += (double)ref[x] * ref[x];
    }
  }
done:
  free(k), free(v), free(q), free(o);
  return den > 0 ? sqrt(num / den) : INFINITY;
}

/* Times one path on every rank; *t = the max over ranks of each statistic. */
static mk_status time_path(mk_comm_t *c, const mk_bench_opts *o, ring_bench *b, void *stream, mk_bench_stats *t) {
  const int w = mk_comm_world(c)->size;
  mk_bench_stats mine, *all = calloc((size_t)w, sizeof *all);
  mk_status st = all ? MK_STATUS_OK : MK_STATUS_OUT_OF_MEMORY;
  if (st == MK_STATUS_OK) st = mk_comm_barrier(c);
  if (st == MK_STATUS_OK) st = mk_bench_time(o, ring_call, b, stream, &mine);
  if (st == MK_STATUS_OK && cudaStreamSynchronize((cudaStream_t)stream) != cudaSuccess) st = MK_STATUS_CUDA_ERROR;
  if (st == MK_STATUS_OK) st = mk_comm_check(c);
  /* Every rank joins the all-gather, also after a failure (a zero time marks it). */
  if (st != MK_STATUS_OK) memset(&mine, 0, sizeof mine);
  mk_status gst = all ? mk_comm_allgather(c, &mine, all, sizeof mine) : MK_STATUS_OUT_OF_MEMORY;
  if (st == MK_STATUS_OK) st = gst;
  *t = mine;
  for (int r = 0; all && r < w; r++) {
    if (all[r].median_ms <= 0) st = st == MK_STATUS_OK ? MK_STATUS_REMOTE_ERROR : st;
    t->median_ms = fmax(t->median_ms, all[r].median_ms);
    t->p10_ms = fmax(t->p10_ms, all[r].p10_ms);
    t->p90_ms = fmax(t->p90_ms, all[r].p90_ms);
  }
  free(all);
  return st;
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: mk-launch -n W [--nodes K] -- mk-bench ring_attn [flags]\n"
          "  --seq LIST        rows per rank (default 2048,8192)\n"
          "  --causal LIST     0 and/or 1 (default 0,1); causal uses the zigzag layout\n"
          "  --hq N --hkv N    query and KV heads (default 32, 8)\n"
          "  --d N             head dim, 64 or 128 (default 128)\n"
          "(one input set per shape: --rotate does not apply)\n");
  mk_bench_print_common_help(out);
}

int mk_bench_ring_attn(int argc, char **argv) {
  mk_bench_opts o;
  mk_bench_opts_default(&o);
  int64_t seqs[k_max_seqs] = {2048, 8192}, hq = 32, hkv = 8, d = 128;
  int nseq = 2, causal[2] = {0, 1}, ncausal = 2;
  for (int i = 1; i < argc; i++) {
    int used = mk_bench_parse_common(&o, argc, argv, i);
    if (used < 0) return 2;
    if (used) {
      i += used - 1;
      continue;
    }
    const char *f = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(f, "--seq")) {
      if (mk_bench_parse_list(f, val, 1, 1 << 20, k_max_seqs, seqs, &nseq)) return 2;
    } else if (!strcmp(f, "--causal")) {
      int64_t list[2];
      if (mk_bench_parse_list(f, val, 0, 1, 2, list, &ncausal)) return 2;
      for (int j = 0; j < ncausal; j++) causal[j] = (int)list[j];
    } else if (!strcmp(f, "--hq") || !strcmp(f, "--hkv") || !strcmp(f, "--d")) {
      int64_t x = 0;
      if (mk_bench_parse_i64(f, val, 1, 65535, &x)) return 2;
      *(!strcmp(f, "--hq") ? &hq : !strcmp(f, "--hkv") ? &hkv : &d) = x;
    } else {
      fprintf(stderr, "mk-bench ring_attn: unknown flag '%s' (see mk-bench ring_attn --help)\n", f);
      return 2;
    }
    i++;
  }
  if ((d != 64 && d != 128) || hq % hkv) {
    fprintf(stderr, "mk-bench ring_attn: --d must be 64 or 128 and --hq a multiple of --hkv\n");
    return 2;
  }
  mk_world wd;
  /* One rank when asked for by a flag: the fused kernel's attention over the own shard alone, against the flash
   * kernel (the main job, with no flags, keeps to several). */
  const int early = mk_bench_multi_rank("ring_attn", argc, argc > 1 ? 1 : 2, &wd);
  if (early >= 0) return early;
  int64_t max_s = 0;
  for (int i = 0; i < nseq; i++) max_s = seqs[i] > max_s ? seqs[i] : max_s;
  mk_comm_t *c = NULL;
  mk_bench_report *r = NULL;
  cudaStream_t stream = NULL;
  ring_bench b;
  memset(&b, 0, sizeof b);
  uint16_t *q = NULL, *out = NULL, *k, *v;
  int rc = 1;
  mk_status st;
  MK_CHECK_GOTO(mk_comm_create(&c), st, fail);
  MK_CHECK_GOTO(mk_comm_bcast(c, &o.seed, sizeof o.seed, 0), st, fail);
  o.rank = wd.rank, o.nranks = wd.size;
  if (o.rank == 0) printf("mk-bench ring_attn: %d ranks, %d node group(s), seed %llu\n", wd.size, wd.nnodes,
                          (unsigned long long)o.seed);
  st = mk_nccl_create(c, &b.nccl);
  if (st != MK_STATUS_OK && st != MK_STATUS_UNSUPPORTED) goto fail;
  if (!b.nccl && o.rank == 0) printf("mk-bench ring_attn: NCCL not built: no unfused rows, no bound\n");
  MK_CHECK_GOTO(mk_ring_attn_create(c, (int)max_s, (int)hkv, (int)d, &b.ra), st, fail);
  MK_CHECK_GOTO(mk_ring_attn_kv(b.ra, &k, &v), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&q, (size_t)(max_s * hq * d) * 2), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&out, (size_t)(max_s * hq * d) * 2), st, fail);
  MK_CUDA_CHECK_GOTO(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), st, fail);
  MK_CHECK_GOTO(mk_bench_report_create(&o, &r), st, fail);
  for (int si = 0; si < nseq; si++)
    for (int ci = 0; ci < ncausal; ci++) {
      const int s = (int)seqs[si], me = wd.rank;
      const size_t nq = (size_t)s * hq * d, nk = (size_t)s * hkv * d;
      b.a = (mk_ring_attn_args){q, out, NULL, s, (int)hq, causal[ci], 1.0f / sqrtf((float)d)};
      MK_CHECK_GOTO(mk_fill_uniform_bf16(q, nq, shard_seed(o.seed, me, 0), -2.f, 2.f, stream), st, fail);
      MK_CHECK_GOTO(mk_fill_uniform_bf16(k, nk, shard_seed(o.seed, me, 1), -2.f, 2.f, stream), st, fail);
      MK_CHECK_GOTO(mk_fill_uniform_bf16(v, nk, shard_seed(o.seed, me, 2), -1.f, 1.f, stream), st, fail);
      char shape[256];
      snprintf(shape, sizeof shape, "{\"s_per_rank\":%d,\"hq\":%lld,\"hkv\":%lld,\"d\":%lld,\"causal\":%d}", s,
               (long long)hq, (long long)hkv, (long long)d, causal[ci]);
      mk_bench_stats tc = {NAN, NAN, NAN, NAN}, tg = {NAN, NAN, NAN, NAN};
      if (b.nccl) { /* the bound: the gather alone, then the attention alone on the gathered K/V */
        b.parts = MK_RING_ATTN_GATHER;
        if (time_path(c, &o, &b, stream, &tg)) mk_bench_report_fail(r, "ring_attn %s: the all-gather failed", shape);
        b.parts = MK_RING_ATTN_ATTEND;
        if (time_path(c, &o, &b, stream, &tc))
          mk_bench_report_fail(r, "ring_attn %s: the local attention failed", shape);
      }
      for (int p = 0; p < 2; p++) {
        if (!(o.paths & (p ? MK_BENCH_PATH_UNFUSED : MK_BENCH_PATH_FUSED)) || (p && !b.nccl)) continue;
        mk_bench_row row;
        mk_bench_row_init(&row, "ring_attn", p ? "unfused" : "fused");
        memcpy(row.shape, shape, sizeof shape);
        row.ranks = wd.size, row.nodes = wd.nnodes;
        b.parts = p ? MK_RING_ATTN_GATHER | MK_RING_ATTN_ATTEND : 0;
        MK_CUDA_CHECK_GOTO(cudaMemsetAsync(out, 0xff, nq * 2, stream), st, fail);
        if (time_path(c, &o, &b, stream, &row.t)) {
          mk_bench_report_fail(r, "ring_attn %s %s: the call failed (rank %d)", row.path, shape, me);
          continue;
        }
        const double flops = 4.0 * hq * s * ((double)wd.size * s) * d * (causal[ci] ? 0.5 : 1.0);
        row.tflops = flops / (row.t.median_ms * 1e-3) / 1e12;
        row.compute_ms = tc.median_ms, row.comm_ms = tg.median_ms, row.bound_ms = fmax(tc.median_ms, tg.median_ms);
        row.rel_err = ring_check(&b.a, me, wd.size, (int)hkv, (int)d, o.seed);
        if (!(row.rel_err <= 1e-2))
          mk_bench_report_fail(r, "ring_attn %s %s: rank %d rel_err %.3e", row.path, shape, me, row.rel_err);
        mk_bench_report_add(r, &row);
      }
    }
  MK_CHECK_GOTO(mk_comm_barrier(c), st, fail);
  rc = mk_bench_report_finish(r);
  r = NULL;
fail:
  if (r) {
    mk_bench_report_fail(r, "rank %d: setup or timing failed: %s", wd.rank, mk_status_name(st));
    mk_bench_report_finish(r);
    rc = 1;
  }
  if (stream) cudaStreamDestroy(stream);
  cudaFree(q), cudaFree(out);
  mk_ring_attn_destroy(b.ra);
  mk_nccl_destroy(b.nccl);
  mk_comm_destroy(c);
  return rc;
}
