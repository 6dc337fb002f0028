/* bench_attn.c — `mk-bench attn`: flash attention forward (prefill) and paged decode attention.
 *   --mode prefill: B sequences of S tokens, hq query heads, hkv KV heads, head dim d, causal
 *                   and non-causal; TFLOP/s counts 4*B*hq*S*S*d FLOPs, half of it when causal.
 *                   --q Q: only the last Q tokens of each sequence are queries (a chunk of a
 *                   prefill, or a decode step of Q tokens, against a cache of S keys; causal
 *                   bottom-right), 4*B*hq*Q*S*d FLOPs (less Q*Q/2 causal); rows "fused" (the
 *                   split along the keys chosen automatically, a workspace given) and
 *                   "fused_nosplit" (num_splits 1) beside "fused_wgmma" and "fused_mma".
 *   --mode decode:  B sequences of ctx cached tokens in a paged cache with shuffled blocks;
 *                   GB/s counts K and V read once plus q and o. Row "hbm_read": the
 *                   GPU's HBM read bandwidth over the same K/V buffers (bench_mem.h), the
 *                   yardstick the decode kernel's GB/s is printed against.
 * Every row's rel_err is the relative Frobenius error of O over sampled rows against the CPU
 * reference (double accumulation; mk_attn_ref_row): prefill samples (row, head) pairs,
 * decode samples whole sequences (all heads). Path "fused" is mkernel's default kernel (Hopper: wgmma,
 * warp-specialised), "fused_wgmma" the wgmma kernel without warp specialisation, "fused_mma" the mma.sync one;
 * the PyTorch SDPA rows come from tools/bench/sdpa_ref.py
 * in the same schema (path "torch_sdpa"). */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/mk_kernels.h"
#include "bench_mem.h"
#include "mk_bench.h"

enum { k_max_list = 16, k_prefill_samples = 96, k_decode_samples = 8 };

typedef struct attn_opts {
  int prefill, decode;
  int64_t seqs[k_max_list];
  int nseq;
  int causal[2], ncausal;
  int64_t batch, hq, hkv, d, dec_batch, ctx, block;
  int64_t qrows; /* --q: query rows per sequence (0: all S) */
} attn_opts;

static void usage(FILE *out) {
  fprintf(out,
          "usage: mk-bench attn [--mode prefill|decode|all] [flags]\n"
          "prefill:\n"
          "  --seq LIST        sequence lengths (default 2048,8192,32768)\n"
          "  --q N             prefill: only the last N tokens of each sequence query (default: all)\n"
          "  --causal LIST     0 and/or 1 (default 0,1)\n"
          "  --batch N         sequences (default 1)\n"
          "decode:\n"
          "  --decode-batch N  sequences (default 64)\n"
          "  --ctx N           cached tokens per sequence (default 8192)\n"
          "  --block N         tokens per cache block (default 16)\n"
          "both:\n"
          "  --hq N --hkv N    query and KV heads (default 32, 8)\n"
          "  --d N             head dim, 64 or 128 (default 128)\n"
          "(one input set per shape: --rotate does not apply)\n");
  mk_bench_print_common_help(out);
}

/* ---- prefill ------------------------------------------------------------------------------ */
typedef struct prefill_run {
  mk_attn_fwd_args a;
} prefill_run;

static mk_status prefill_call(void *user, int iter, void *stream) {
  (void)iter;
  return mk_flash_attn_fwd(&((prefill_run *)user)->a, (mk_stream_t)stream);
}

/* O rel error over sampled (row, head) pairs; *lse_err = max |lse - ref| over them. Each
 * sequence has sq query rows and s keys. */
static double prefill_check(const mk_attn_fwd_args *dev, int64_t sq, int64_t s, double *lse_err) {
  const int64_t total = (int64_t)dev->total_q, nq = total * dev->hq * dev->d;
  const int64_t nk = (int64_t)dev->batch * s * dev->hkv * dev->d;
  uint16_t *q = malloc((size_t)nq * 2), *k = malloc((size_t)nk * 2), *v = malloc((size_t)nk * 2);
  uint16_t *o = malloc((size_t)nq * 2);
  float *lse = malloc((size_t)(total * dev->hq) * 4), ref[256], ref_lse;
  int32_t *cu = malloc(sizeof(int32_t) * (size_t)(dev->batch + 1)), *cuq = malloc(sizeof(int32_t) * (size_t)(dev->batch + 1));
  double num = 0, den = 0;
  *lse_err = INFINITY;
  if (!q || !k || !v || !o || !lse || !cu || !cuq ||
      cudaMemcpy(q, dev->q, (size_t)nq * 2, cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(k, dev->k, (size_t)nk * 2, cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(v, dev->v, (size_t)nk * 2, cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(o, dev->o, (size_t)nq * 2, cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(lse, dev->lse, (size_t)(total * dev->hq) * 4, cudaMemcpyDeviceToHost) != cudaSuccess) {
    num = INFINITY, den = 1;
    goto done;
  }
  for (int b = 0; b <= dev->batch; b++) cu[b] = (int32_t)(b * s), cuq[b] = (int32_t)(b * sq);
  mk_attn_fwd_args h = *dev;
  h.q = q, h.k = k, h.v = v, h.cu_seqlens_q = cuq, h.cu_seqlens_k = cu;
  *lse_err = 0;
  for (int i = 0; i < k_prefill_samples; i++) {
    /* Spread over the sequence, the first and last rows included. */
    const int b = i % dev->batch, head = (i * 5) % dev->hq;
    const int row = i == 0 ? 0 : i == 1 ? (int)sq - 1 : (int)((mk_rng_hash(7, (uint64_t)i) >> 33) % (uint64_t)sq);
    mk_attn_ref_row(&h, b, head, row, ref, &ref_lse);
    const int64_t qi = (int64_t)b * sq + row;
    for (int x = 0; x < dev->d; x++) {
      const double got = mk_bf16_to_float(o[(qi * dev->hq + head) * dev->d + x]);
      if (!isfinite(got)) num = INFINITY;
      num += (got - ref[x]) * (got - ref[x]);
      den += (double)ref[x] * ref[x];
    }
    const double e = fabs((double)lse[(int64_t)head * total + qi] - ref_lse);
    if (!(e <= *lse_err)) *lse_err = isnan(e) ? INFINITY : e;
  }
done:
  free(q), free(k), free(v), free(o), free(lse), free(cu), free(cuq);
  return den > 0 ? sqrt(num / den) : INFINITY;
}

static int run_prefill(const attn_opts *ao, const mk_bench_opts *o, mk_bench_report *r, cudaStream_t stream) {
  int rc = 0;
  for (int si = 0; si < ao->nseq; si++) {
    const int64_t s = ao->seqs[si], sq = ao->qrows && ao->qrows < s ? ao->qrows : s, total = ao->batch * s;
    const int64_t total_q = ao->batch * sq;
    if (total > INT32_MAX) {
      mk_bench_report_fail(r, "attn prefill: batch x seq %lld does not fit int32 offsets", (long long)total);
      return 1;
    }
    const size_t nq = (size_t)(total_q * ao->hq * ao->d), nk = (size_t)(total * ao->hkv * ao->d);
    prefill_run run;
    memset(&run, 0, sizeof run);
    mk_attn_fwd_args *a = &run.a;
    uint16_t *q = NULL, *k = NULL, *v = NULL, *out = NULL;
    float *lse = NULL;
    void *ws = NULL;
    size_t ws_bytes = 0;
    int32_t *cu = NULL, *hcu = malloc(sizeof(int32_t) * (size_t)(2 * ao->batch + 2));
    if (!hcu || cudaMalloc((void **)&q, nq * 2) || cudaMalloc((void **)&k, nk * 2) ||
        cudaMalloc((void **)&v, nk * 2) || cudaMalloc((void **)&out, nq * 2) ||
        cudaMalloc((void **)&lse, (size_t)(total_q * ao->hq) * 4) ||
        cudaMalloc((void **)&cu, sizeof(int32_t) * (size_t)(2 * ao->batch + 2))) {
      mk_bench_report_fail(r, "attn prefill s=%lld: out of device memory", (long long)s);
      rc = 1;
      goto next;
    }
    for (int64_t b = 0; b <= ao->batch; b++) hcu[b] = (int32_t)(b * sq), hcu[ao->batch + 1 + b] = (int32_t)(b * s);
    if (cudaMemcpy(cu, hcu, sizeof(int32_t) * (size_t)(2 * ao->batch + 2), cudaMemcpyHostToDevice) ||
        mk_fill_uniform_bf16(q, nq, o->seed, -2.f, 2.f, stream) ||
        mk_fill_uniform_bf16(k, nk, o->seed + 1, -2.f, 2.f, stream) ||
        mk_fill_uniform_bf16(v, nk, o->seed + 2, -1.f, 1.f, stream)) {
      mk_bench_report_fail(r, "attn prefill s=%lld: input setup failed", (long long)s);
      rc = 1;
      goto next;
    }
    a->q = q, a->k = k, a->v = v, a->o = out, a->lse = lse, a->cu_seqlens_q = cu, a->cu_seqlens_k = cu + ao->batch + 1;
    a->batch = (int)ao->batch, a->max_seqlen_q = (int)sq, a->max_seqlen_k = (int)s, a->total_q = (int)total_q;
    a->hq = (int)ao->hq, a->hkv = (int)ao->hkv, a->d = (int)ao->d, a->softmax_scale = 1.0f / sqrtf((float)ao->d);
    if (mk_flash_attn_fwd_workspace_size(a, &ws_bytes) || (ws_bytes && cudaMalloc(&ws, ws_bytes))) {
      mk_bench_report_fail(r, "attn prefill s=%lld: the split's workspace (%zu bytes) failed", (long long)s, ws_bytes);
      rc = 1;
      goto next;
    }
    /* the default kernel (split as chosen), the other two, and with --q the default kernel unsplit */
    static const struct {
      mk_attn_impl impl;
      int splits;
      const char *path;
    } vars[] = {{MK_ATTN_IMPL_AUTO, 0, "fused"},
                {MK_ATTN_IMPL_WGMMA, 0, "fused_wgmma"},
                {MK_ATTN_IMPL_MMA, 0, "fused_mma"},
                {MK_ATTN_IMPL_AUTO, 1, "fused_nosplit"}};
    const int nvar = sq < s ? 4 : 3;
    for (int ci = 0; ci < ao->ncausal * nvar; ci++) {
      const int causal = ao->causal[ci / nvar], var = ci % nvar;
      a->mask = causal ? MK_ATTN_MASK_CAUSAL : MK_ATTN_MASK_NONE;
      a->impl = vars[var].impl;
      a->workspace = ws, a->workspace_bytes = ws_bytes, a->num_splits = vars[var].splits;
      mk_bench_row row;
      mk_bench_row_init(&row, "attn_prefill", vars[var].path);
      snprintf(row.shape, sizeof row.shape,
               "{\"b\":%lld,\"s\":%lld,\"q\":%lld,\"hq\":%lld,\"hkv\":%lld,\"d\":%lld,\"causal\":%d}", (long long)ao->batch,
               (long long)s, (long long)sq, (long long)ao->hq, (long long)ao->hkv, (long long)ao->d, causal);
      if (cudaMemsetAsync(out, 0xff, nq * 2, stream) || cudaMemsetAsync(lse, 0xff, (size_t)(total_q * ao->hq) * 4, stream)) {
        mk_bench_report_fail(r, "attn prefill %s %s: poisoning the outputs failed", row.path, row.shape);
        rc = 1;
        continue;
      }
      if (mk_bench_time(o, prefill_call, &run, stream, &row.t) != MK_STATUS_OK) {
        mk_bench_report_fail(r, "attn prefill %s %s: the kernel failed", row.path, row.shape);
        rc = 1;
        continue;
      }
      const double pairs = (double)sq * s - (causal ? (double)sq * sq / 2 : 0.0);
      const double flops = 4.0 * ao->batch * ao->hq * pairs * ao->d;
      row.tflops = flops / (row.t.median_ms * 1e-3) / 1e12;
      double lse_err = 0;
      row.rel_err = prefill_check(a, sq, s, &lse_err);
      printf("attn_prefill %s %s: rel_err over %d sampled (row, head) pairs vs the CPU reference; "
             "lse max abs err %.2e\n", row.path, row.shape, k_prefill_samples, lse_err);
      if (!(row.rel_err <= 1e-2) || !(lse_err <= 1e-3))
        mk_bench_report_fail(r, "attn prefill %s %s: rel_err %.3e, lse err %.3e", row.path, row.shape, row.rel_err,
                             lse_err);
      mk_bench_report_add(r, &row);
    }
  next:
    cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(out), cudaFree(lse), cudaFree(cu), cudaFree(ws);
    free(hcu);
  }
  return rc;
}

/* ---- decode ------------------------------------------------------------------------------- */
static mk_status decode_call(void *user, int iter, void *stream) {
  (void)iter;
  return mk_paged_decode((const mk_paged_decode_args *)user, (mk_stream_t)stream);
}

typedef struct hbm_args {
  const void *k, *v;
  size_t bytes; /* each */
  void *sink;
} hbm_args;
static mk_status hbm_call(void *user, int iter, void *stream) {
  (void)iter;
  const hbm_args *h = (const hbm_args *)user;
  return mk_bench_hbm_read(h->k, h->bytes, h->v, h->bytes, h->sink, stream);
}

/* O rel error over k_decode_samples whole sequences (all heads). */
static double decode_check(const mk_paged_decode_args *a, const int32_t *table) {
  const int64_t row = (int64_t)a->hkv * a->d, ctx = a->max_context_len;
  const size_t block_elems = (size_t)a->block_size * (size_t)row;
  uint16_t *gk = malloc((size_t)(ctx * row) * 2), *gv = malloc((size_t)(ctx * row) * 2);
  uint16_t *q = malloc((size_t)a->hq * a->d * 2), *o = malloc((size_t)a->hq * a->d * 2);
  float ref[256], ref_lse;
  double num = 0, den = 0;
  if (!gk || !gv || !q || !o) goto fail;
  for (int i = 0; i < k_decode_samples && i < a->batch; i++) {
    const int b = (int)((int64_t)i * a->batch / k_decode_samples);
    const int nb = (int)((ctx + a->block_size - 1) / a->block_size);
    for (int j = 0; j < nb; j++) {
      const size_t src = (size_t)table[(size_t)b * a->max_blocks_per_seq + j] * block_elems;
      const size_t n = j == nb - 1 ? (size_t)(ctx * row) - (size_t)j * block_elems : block_elems;
      if (cudaMemcpy(gk + (size_t)j * block_elems, a->k_cache + src, n * 2, cudaMemcpyDeviceToHost) ||
          cudaMemcpy(gv + (size_t)j * block_elems, a->v_cache + src, n * 2, cudaMemcpyDeviceToHost))
        goto fail;
    }
    if (cudaMemcpy(q, a->q + (size_t)b * a->hq * a->d, (size_t)a->hq * a->d * 2, cudaMemcpyDeviceToHost) ||
        cudaMemcpy(o, a->o + (size_t)b * a->hq * a->d, (size_t)a->hq * a->d * 2, cudaMemcpyDeviceToHost))
      goto fail;
    const int32_t cu_q[2] = {0, 1}, cu_k[2] = {0, (int32_t)ctx};
    mk_attn_fwd_args h;
    memset(&h, 0, sizeof h);
    h.q = q, h.k = gk, h.v = gv, h.cu_seqlens_q = cu_q, h.cu_seqlens_k = cu_k, h.batch = 1;
    h.hq = a->hq, h.hkv = a->hkv, h.d = a->d, h.mask = MK_ATTN_MASK_NONE, h.softmax_scale = a->softmax_scale;
    for (int head = 0; head < a->hq; head++) {
      mk_attn_ref_row(&h, 0, head, 0, ref, &ref_lse);
      for (int x = 0; x < a->d; x++) {
        const double got = mk_bf16_to_float(o[(size_t)head * a->d + x]);
        if (!isfinite(got)) num = INFINITY;
        num += (got - ref[x]) * (got - ref[x]);
        den += (double)ref[x] * ref[x];
      }
    }
  }
  free(gk), free(gv), free(q), free(o);
  return den > 0 ? sqrt(num / den) : INFINITY;
fail:
  free(gk), free(gv), free(q), free(o);
  return INFINITY;
}

static int run_decode(const attn_opts *ao, const mk_bench_opts *o, mk_bench_report *r, cudaStream_t stream) {
  const int64_t nb_seq = (ao->ctx + ao->block - 1) / ao->block, num_blocks = ao->dec_batch * nb_seq;
  const size_t cache = (size_t)(num_blocks * ao->block * ao->hkv * ao->d), nq = (size_t)(ao->dec_batch * ao->hq * ao->d);
  if (num_blocks > INT32_MAX) {
    mk_bench_report_fail(r, "attn decode: %lld cache blocks do not fit int32 ids", (long long)num_blocks);
    return 1;
  }
  mk_paged_decode_args a;
  memset(&a, 0, sizeof a);
  int rc = 0;
  uint16_t *q = NULL, *kc = NULL, *vc = NULL, *out = NULL;
  int32_t *table = NULL, *lens = NULL, *htable = malloc(sizeof(int32_t) * (size_t)num_blocks);
  int32_t *hlens = malloc(sizeof(int32_t) * (size_t)ao->dec_batch);
  void *ws = NULL;
  mk_bench_row row;
  mk_bench_row_init(&row, "attn_decode", "fused");
  snprintf(row.shape, sizeof row.shape, "{\"b\":%lld,\"ctx\":%lld,\"hq\":%lld,\"hkv\":%lld,\"d\":%lld,\"block\":%lld}",
           (long long)ao->dec_batch, (long long)ao->ctx, (long long)ao->hq, (long long)ao->hkv, (long long)ao->d,
           (long long)ao->block);
  if (!htable || !hlens || cudaMalloc((void **)&q, nq * 2) || cudaMalloc((void **)&kc, cache * 2) ||
      cudaMalloc((void **)&vc, cache * 2) || cudaMalloc((void **)&out, nq * 2) ||
      cudaMalloc((void **)&table, sizeof(int32_t) * (size_t)num_blocks) ||
      cudaMalloc((void **)&lens, sizeof(int32_t) * (size_t)ao->dec_batch)) {
    mk_bench_report_fail(r, "attn decode %s: out of memory", row.shape);
    rc = 1;
    goto done;
  }
  /* Blocks in a shuffled order, as an allocator that has run for a while would hand them out. */
  for (int64_t i = 0; i < num_blocks; i++) htable[i] = (int32_t)i;
  for (int64_t i = num_blocks - 1; i > 0; i--) {
    const int64_t j = (int64_t)(mk_rng_hash(o->seed, (uint64_t)i) % (uint64_t)(i + 1));
    const int32_t t = htable[i];
    htable[i] = htable[j];
    htable[j] = t;
  }
  for (int64_t b = 0; b < ao->dec_batch; b++) hlens[b] = (int32_t)ao->ctx;
  a.q = q, a.k_cache = kc, a.v_cache = vc, a.block_table = table, a.context_lens = lens, a.o = out;
  a.batch = (int)ao->dec_batch, a.hq = (int)ao->hq, a.hkv = (int)ao->hkv, a.d = (int)ao->d;
  a.block_size = (int)ao->block, a.max_blocks_per_seq = (int)nb_seq, a.max_context_len = (int)ao->ctx;
  a.num_blocks = (int)num_blocks, a.softmax_scale = 1.0f / sqrtf((float)ao->d);
  size_t ws_bytes = 0;
  if (cudaMemcpy(table, htable, sizeof(int32_t) * (size_t)num_blocks, cudaMemcpyHostToDevice) ||
      cudaMemcpy(lens, hlens, sizeof(int32_t) * (size_t)ao->dec_batch, cudaMemcpyHostToDevice) ||
      mk_fill_uniform_bf16(q, nq, o->seed, -2.f, 2.f, stream) ||
      mk_fill_uniform_bf16(kc, cache, o->seed + 1, -2.f, 2.f, stream) ||
      mk_fill_uniform_bf16(vc, cache, o->seed + 2, -1.f, 1.f, stream) ||
      mk_paged_decode_workspace_size(&a, &ws_bytes) || (ws_bytes && cudaMalloc(&ws, ws_bytes))) {
    mk_bench_report_fail(r, "attn decode %s: input setup failed", row.shape);
    rc = 1;
    goto done;
  }
  a.workspace = ws;
  if (mk_bench_time(o, decode_call, &a, stream, &row.t) != MK_STATUS_OK) {
    mk_bench_report_fail(r, "attn decode %s: the kernel failed", row.shape);
    rc = 1;
    goto done;
  }
  const double bytes = 2.0 * ao->dec_batch * ao->ctx * ao->hkv * ao->d * 2 + 2.0 * nq * 2;
  row.gbps = bytes / (row.t.median_ms * 1e-3) / 1e9;
  row.rel_err = decode_check(&a, htable);
  printf("attn_decode %s: rel_err over %d sampled sequences (all heads) vs the CPU reference; workspace %zu B\n",
         row.shape, k_decode_samples, ws_bytes);
  if (!(row.rel_err <= 1e-2)) mk_bench_report_fail(r, "attn decode %s: rel_err %.3e", row.shape, row.rel_err);
  mk_bench_report_add(r, &row);
  /* The yardstick: this GPU's HBM read bandwidth over the same K and V buffers (row
   * "hbm_read"); the decode kernel's share of it is printed. */
  mk_bench_row hb;
  mk_bench_row_init(&hb, "attn_decode", "hbm_read");
  snprintf(hb.shape, sizeof hb.shape, "%s", row.shape);
  hbm_args ha = {kc, vc, cache * 2, ws ? ws : out};
  if (mk_bench_time(o, hbm_call, &ha, stream, &hb.t) != MK_STATUS_OK) {
    mk_bench_report_fail(r, "attn decode %s: the HBM read kernel failed", row.shape);
    rc = 1;
    goto done;
  }
  hb.gbps = 2.0 * (double)cache * 2 / (hb.t.median_ms * 1e-3) / 1e9;
  mk_bench_report_add(r, &hb);
  printf("attn_decode %s: %.1f GB/s = %.1f %% of the HBM read bandwidth measured here (%.1f GB/s)\n", row.shape,
         row.gbps, 100.0 * row.gbps / hb.gbps, hb.gbps);
done:
  cudaFree(q), cudaFree(kc), cudaFree(vc), cudaFree(out), cudaFree(table), cudaFree(lens), cudaFree(ws);
  free(htable), free(hlens);
  return rc;
}

int mk_bench_attn(int argc, char **argv) {
  mk_bench_opts o;
  mk_bench_opts_default(&o);
  attn_opts ao = {1, 1, {2048, 8192, 32768}, 3, {0, 1}, 2, 1, 32, 8, 128, 64, 8192, 16, 0};
  for (int i = 1; i < argc; i++) {
    /* --batch is this benchmark's sequence count, not the common flag of the same name */
    int used = strcmp(argv[i], "--batch") ? mk_bench_parse_common(&o, argc, argv, i) : 0;
    if (used < 0) return 2;
    if (used) {
      i += used - 1;
      continue;
    }
    const char *f = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    int64_t list[k_max_list];
    int n = 0;
    if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(f, "--mode")) {
      if (!val || (strcmp(val, "prefill") && strcmp(val, "decode") && strcmp(val, "all"))) {
        fprintf(stderr, "mk-bench: --mode needs prefill, decode or all\n");
        return 2;
      }
      ao.prefill = strcmp(val, "decode") != 0;
      ao.decode = strcmp(val, "prefill") != 0;
    } else if (!strcmp(f, "--seq")) {
      if (mk_bench_parse_list(f, val, 1, 1 << 20, k_max_list, ao.seqs, &ao.nseq)) return 2;
    } else if (!strcmp(f, "--causal")) {
      if (mk_bench_parse_list(f, val, 0, 1, 2, list, &n)) return 2;
      ao.ncausal = n;
      for (int j = 0; j < n; j++) ao.causal[j] = (int)list[j];
    } else if (!strcmp(f, "--batch") || !strcmp(f, "--hq") || !strcmp(f, "--hkv") || !strcmp(f, "--d") ||
               !strcmp(f, "--decode-batch") || !strcmp(f, "--ctx") || !strcmp(f, "--block") || !strcmp(f, "--q")) {
      int64_t x = 0;
      if (mk_bench_parse_i64(f, val, 1, 1 << 24, &x)) return 2;
      int64_t *dst = !strcmp(f, "--batch") ? &ao.batch : !strcmp(f, "--hq") ? &ao.hq : !strcmp(f, "--hkv") ? &ao.hkv
                     : !strcmp(f, "--d") ? &ao.d : !strcmp(f, "--decode-batch") ? &ao.dec_batch
                     : !strcmp(f, "--ctx") ? &ao.ctx : !strcmp(f, "--q") ? &ao.qrows : &ao.block;
      *dst = x;
    } else {
      fprintf(stderr, "mk-bench attn: unknown flag '%s' (see mk-bench attn --help)\n", f);
      return 2;
    }
    i++;
  }
  if ((ao.d != 64 && ao.d != 128) || ao.hq % ao.hkv) {
    fprintf(stderr, "mk-bench attn: --d must be 64 or 128 and --hq a multiple of --hkv\n");
    return 2;
  }
  int gpus = 0;
  if (mk_device_count(&gpus) != MK_STATUS_OK || gpus < 1) {
    printf("mk-bench attn: no GPU (%s); nothing to run\n", mk_device_absent_reason());
    return 0;
  }
  printf("mk-bench attn: seed %llu\n", (unsigned long long)o.seed);
  mk_bench_report *r = NULL;
  if (mk_bench_report_create(&o, &r)) return 1;
  cudaStream_t stream = NULL;
  int rc = 0;
  if (cudaStreamCreate(&stream) != cudaSuccess) {
    mk_bench_report_fail(r, "attn: cudaStreamCreate failed");
    return mk_bench_report_finish(r);
  }
  if (ao.prefill) rc |= run_prefill(&ao, &o, r, stream);
  if (ao.decode) rc |= run_decode(&ao, &o, r, stream);
  cudaStreamDestroy(stream);
  return mk_bench_report_finish(r) | rc;
}
