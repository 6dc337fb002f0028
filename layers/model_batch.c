/* model_batch.c — the GPU model for serving: many sequences per step over a paged KV cache.
 * Run on 4 x H200 by test_serve_gpu_* and the serving runs (docs/perf/serve_qwen3_*.json).
 *
 * Weights, activations and the MoE blocks are one mk_model_gpu_t (mk_layers_create_ with
 * max_seq = max_tokens, the tokens of one pass; logits for max_seqs rows); its per-layer
 * contiguous caches kc / vc serve as the new tokens' K / V rows. The KV cache is paged, per
 * layer K and V [n_pages, block_size, kw_r] bf16 (kw_r = this rank's KV heads x head_dim); a
 * sequence's page table maps its position p to slot pages[p / bs] * bs + p % bs.
 *
 * A step (mk_model_batch_forward): the sequences are ordered decode first (one new token),
 * then the others (prefill or chunks), and cut into passes of at most max_tokens new tokens
 * (and gathered K/V rows); each pass: embed the concatenated tokens; per layer the blocks of
 * model_gpu.c (q/k/v projections, norms) with RoPE at each token's position (one launch for
 * q, one for k), the new K/V scattered into the pages, attention: mk_paged_decode over the
 * decode rows (one launch), flash attention (varlen, bottom-right causal) over the prefill rows
 * with each sequence's K/V gathered from its pages; then the O projection, the FFN / MoE block
 * over all rows; the final norm and the logits of each sequence's last token. Collective:
 * every rank the same calls.
 * Benchmarks (mk-bench layer --decode batch): create_random (random weights, every KV page
 * random), prepare (one pass's tables uploaded once), run_part (one block of one layer of that
 * pass, as mk_model_gpu_run_part). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/check.h"
#include "layers/layers_internal.h"

#define S_(g) ((mk_stream_t)(g)->stream)

struct mk_model_batch {
  mk_model_gpu_t *g;
  int max_tokens, max_seqs, n_pages, bs, max_seq_len, max_blocks;
  uint16_t **kp, **vp;    /* per layer [n_pages * bs, kw_r] */
  uint16_t *gk, *gv;      /* gathered K / V rows [max_tokens, kw_r] */
  int32_t *dints;         /* device copy of the pass's int tables */
  int32_t *hints;         /* host staging */
  size_t n_ints;
  void *ws;               /* mk_paged_decode workspace */
  size_t ws_bytes;
  int *order;
  /* the prepared pass (prepare): new tokens, sequences, decode ones, gathered rows, offsets
   * of the device tables in dints */
  int T, n, n_dec, G, maxq;
  ptrdiff_t o_sl, o_gs, o_cuq, o_cuk, o_last, o_pos;
  mk_paged_decode_args pd;
};

void mk_model_batch_destroy(mk_model_batch_t *b) {
  if (!b) return;
  if (b->ws) cudaFree(b->ws);
  mk_model_gpu_destroy(b->g); /* frees kp / vp / gk / gv / dints (tracked allocations) */
  free(b->kp), free(b->vp), free(b->hints), free(b->order);
  free(b);
}

/* m NULL: random weights and a random KV cache from seed (mk_model_batch_create_random). */
static mk_status batch_create(const mk_model_t *m, const mk_model_config_t *c, uint64_t seed, mk_comm_t *comm,
                              const mk_layout_t *layout, const mk_model_batch_config *bc, mk_model_batch_t **out) {
  *out = NULL;
  if (!c || !comm || !layout || !bc || bc->max_seqs < 1 || bc->max_seq_len < 1 || bc->max_tokens < bc->max_seq_len ||
      bc->max_seqs > bc->max_tokens || bc->n_pages < 1 || bc->block_size < 1)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model_batch: bad config (max_tokens must be >= "
                  "max_seq_len: one sequence's whole prompt runs in one pass)");
  if (c->head_dim != 64 && c->head_dim != 128)
    MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_MODEL, "model_batch: head_dim %d (the paged path needs 64 or 128)",
                  c->head_dim);
  mk_model_batch_t *b = calloc(1, sizeof *b);
  if (!b) return MK_STATUS_OUT_OF_MEMORY;
  mk_status st = MK_STATUS_OK;
  b->max_tokens = bc->max_tokens, b->max_seqs = bc->max_seqs, b->n_pages = bc->n_pages, b->bs = bc->block_size;
  b->max_seq_len = bc->max_seq_len, b->max_blocks = (bc->max_seq_len + bc->block_size - 1) / bc->block_size;
  MK_CHECK_GOTO(mk_layers_create_(m, c, seed, comm, layout, bc->max_tokens, bc->max_seqs, 0, &b->g), st, fail);
  mk_model_gpu_t *g = b->g;
  if (c->n_heads / c->n_kv_heads > 16) {
    st = MK_STATUS_UNSUPPORTED;
    MK_WARN(MK_SUBSYS_MODEL, "model_batch: %d query heads per KV head (paged decode takes <= 16)",
            c->n_heads / c->n_kv_heads);
    goto fail;
  }
  const size_t slots = (size_t)b->n_pages * b->bs, kw = (size_t)g->kw_r;
  b->kp = calloc((size_t)c->n_layers, sizeof *b->kp);
  b->vp = calloc((size_t)c->n_layers, sizeof *b->vp);
  /* ints of one pass: ids, slots of the new tokens [T]; gather slots [T]; block table
   * [S, max_blocks]; context lens [S]; cu_q, cu_k [S + 1] each; last rows [S]; positions [T] */
  b->n_ints = 4 * (size_t)b->max_tokens + (size_t)b->max_seqs * (b->max_blocks + 4) + 2;
  b->hints = malloc(sizeof(int32_t) * b->n_ints);
  b->order = malloc(sizeof(int) * (size_t)b->max_seqs);
  if (!b->kp || !b->vp || !b->hints || !b->order) {
    st = MK_STATUS_OUT_OF_MEMORY;
    goto fail;
  }
  for (int l = 0; l < c->n_layers; l++)
    if (!(b->kp[l] = mk_layers_dalloc_(g, slots * kw * 2)) || !(b->vp[l] = mk_layers_dalloc_(g, slots * kw * 2))) {
      MK_WARN(MK_SUBSYS_MODEL, "model_batch: cannot allocate the KV cache (%d pages x %d tokens x %d layers)",
              b->n_pages, b->bs, c->n_layers);
      st = MK_STATUS_OUT_OF_MEMORY;
      goto fail;
    }
  for (int l = 0; !m && l < c->n_layers; l++) { /* a random KV cache: every page of every layer */
    MK_CHECK_GOTO(mk_fill_uniform_bf16(b->kp[l], slots * kw, seed + 1000 + 2 * (uint64_t)l, -1.0f, 1.0f, S_(g)), st,
                  fail);
    MK_CHECK_GOTO(mk_fill_uniform_bf16(b->vp[l], slots * kw, seed + 1001 + 2 * (uint64_t)l, -1.0f, 1.0f, S_(g)), st,
                  fail);
  }
  if (!(b->gk = mk_layers_dalloc_(g, (size_t)b->max_tokens * kw * 2)) ||
      !(b->gv = mk_layers_dalloc_(g, (size_t)b->max_tokens * kw * 2)) ||
      !(b->dints = mk_layers_dalloc_(g, sizeof(int32_t) * b->n_ints))) {
    st = MK_STATUS_OUT_OF_MEMORY;
    goto fail;
  }
  MK_CUDA_CHECK_GOTO(cudaStreamSynchronize(g->stream), st, fail);
  *out = b;
  return MK_STATUS_OK;
fail:
  mk_model_batch_destroy(b);
  return st;
}

mk_status mk_model_batch_create(const mk_model_t *m, mk_comm_t *comm, const mk_layout_t *layout,
                                const mk_model_batch_config *bc, mk_model_batch_t **out) {
  if (!m) {
    *out = NULL;
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model_batch: no model");
  }
  return batch_create(m, mk_model_config(m), 0, comm, layout, bc, out);
}

mk_status mk_model_batch_create_random(const mk_model_config_t *c, mk_comm_t *comm, const mk_layout_t *layout,
                                       const mk_model_batch_config *bc, uint64_t seed, mk_model_batch_t **out) {
  return batch_create(NULL, c, seed, comm, layout, bc, out);
}

mk_status mk_model_batch_set_path(mk_model_batch_t *b, mk_path p) { return mk_model_gpu_set_path(b ? b->g : NULL, p); }

/* Prepare one pass over seqs[order[0..n)] (decode ones first: n_dec of them): the host tables
 * to the device (stream-ordered), the decode workspace, b's pass state. */
static mk_status prepare(mk_model_batch_t *b, const mk_model_batch_seq *seqs, const int *order, int n, int n_dec) {
  mk_model_gpu_t *g = b->g;
  const int hd = g->cfg.head_dim, MB = b->max_blocks, bs = b->bs;
  int T = 0, G = 0, maxq = 0, maxk = 0;
  for (int i = 0; i < n; i++) {
    const mk_model_batch_seq *q = &seqs[order[i]];
    T += q->n_tokens;
    if (i >= n_dec) G += q->pos + q->n_tokens;
  }
  /* host tables: ids [T] | slots [T] | gather [G] | block table [n_dec, MB] | ctx [n_dec] |
   * cu_q [np + 1] | cu_k [np + 1] | last [n] | positions [T] */
  int32_t *ids = b->hints, *sl = ids + T, *gs = sl + T, *bt = gs + G, *ctx = bt + (size_t)n_dec * MB, *cuq = ctx + n_dec;
  const int np = n - n_dec;
  int32_t *cuk = cuq + np + 1, *last = cuk + np + 1, *ps = last + n;
  const size_t used = (size_t)(ps + T - b->hints);
  int t = 0, gk = 0;
  cuq[0] = cuk[0] = 0;
  for (int i = 0; i < n; i++) {
    const mk_model_batch_seq *q = &seqs[order[i]];
    for (int j = 0; j < q->n_tokens; j++, t++) {
      const int p = q->pos + j;
      ids[t] = q->tokens[j], ps[t] = p;
      sl[t] = q->pages[p / bs] * bs + p % bs;
    }
    last[i] = t - 1;
    if (i < n_dec) {
      memset(bt + (size_t)i * MB, 0, sizeof(int32_t) * MB);
      memcpy(bt + (size_t)i * MB, q->pages, sizeof(int32_t) * (size_t)q->n_pages);
      ctx[i] = q->pos + 1;
      if (q->pos + 1 > maxk) maxk = q->pos + 1;
    } else {
      const int k = i - n_dec, len = q->pos + q->n_tokens;
      for (int p = 0; p < len; p++) gs[gk++] = q->pages[p / bs] * bs + p % bs;
      cuq[k + 1] = cuq[k] + q->n_tokens, cuk[k + 1] = cuk[k] + len;
      if (q->n_tokens > maxq) maxq = q->n_tokens;
    }
  }
  int32_t *d = b->dints;
  b->T = T, b->n = n, b->n_dec = n_dec, b->G = G, b->maxq = maxq;
  b->o_sl = sl - ids, b->o_gs = gs - ids, b->o_cuq = cuq - ids, b->o_cuk = cuk - ids;
  b->o_last = last - ids, b->o_pos = ps - ids;
  MK_CUDA_CHECK(cudaMemcpyAsync(d, b->hints, sizeof(int32_t) * used, cudaMemcpyHostToDevice, g->stream));
  b->pd = (mk_paged_decode_args){.q = g->q, .block_table = d + (bt - ids), .context_lens = d + (ctx - ids), .o = g->o,
                                 .batch = n_dec, .hq = g->nh_r, .hkv = g->nkv_r, .d = hd, .block_size = bs,
                                 .max_blocks_per_seq = MB, .max_context_len = maxk, .num_blocks = b->n_pages,
                                 .softmax_scale = 1.0f / sqrtf((float)hd)};
  if (n_dec) {
    size_t need = 0;
    MK_CHECK(mk_paged_decode_workspace_size(&b->pd, &need));
    if (need > b->ws_bytes) {
      if (b->ws) cudaFree(b->ws);
      b->ws = NULL, b->ws_bytes = 0;
      MK_CUDA_CHECK(cudaMalloc(&b->ws, need));
      b->ws_bytes = need;
    }
    b->pd.workspace = b->ws;
  }
  return MK_STATUS_OK;
}

/* The attention block of layer l over the prepared pass (reduce 0: without the O projection's
 * TP reduction): q/k/v, RoPE at each token's position, the new K/V into the pages, paged
 * decode over the decode rows, varlen flash attention over the others, O projection, residual. */
static mk_status attn_layer(mk_model_batch_t *b, int l, int reduce) {
  mk_model_gpu_t *g = b->g;
  const mk_model_config_t *c = &g->cfg;
  const int hd = c->head_dim, T = b->T, n_dec = b->n_dec, np = b->n - b->n_dec;
  const int64_t n_slots = (int64_t)b->n_pages * b->bs;
  const int32_t *d = b->dints;
  gpu_layer *L = &g->layers[l];
  uint16_t *kn = L->kc, *vn = L->vc; /* the new tokens' K / V rows [T, kw_r] */
  MK_CHECK(mk_layers_attn_qkv_(g, L, T, kn, vn, 1));
  /* RoPE at each token's own position (one launch each for q and k) */
  MK_CHECK(mk_rope_neox_pos_bf16(g->q, T, g->nh_r, hd, d + b->o_pos, c->rope_theta, S_(g)));
  MK_CHECK(mk_rope_neox_pos_bf16(kn, T, g->nkv_r, hd, d + b->o_pos, c->rope_theta, S_(g)));
  MK_CHECK(mk_kv_scatter_bf16(kn, d + b->o_sl, T, g->kw_r, b->kp[l], n_slots, S_(g)));
  MK_CHECK(mk_kv_scatter_bf16(vn, d + b->o_sl, T, g->kw_r, b->vp[l], n_slots, S_(g)));
  if (n_dec) {
    b->pd.k_cache = b->kp[l], b->pd.v_cache = b->vp[l];
    MK_CHECK(mk_paged_decode(&b->pd, S_(g)));
  }
  if (np) {
    MK_CHECK(mk_kv_gather_bf16(b->kp[l], n_slots, d + b->o_gs, b->G, g->kw_r, b->gk, S_(g)));
    MK_CHECK(mk_kv_gather_bf16(b->vp[l], n_slots, d + b->o_gs, b->G, g->kw_r, b->gv, S_(g)));
    mk_attn_fwd_args a = {.q = g->q + (size_t)n_dec * g->qw_r, .k = b->gk, .v = b->gv,
                          .o = g->o + (size_t)n_dec * g->qw_r, .cu_seqlens_q = d + b->o_cuq,
                          .cu_seqlens_k = d + b->o_cuk, .batch = np, .max_seqlen_q = b->maxq, .max_seqlen_k = b->G,
                          .total_q = T - n_dec, .hq = g->nh_r, .hkv = g->nkv_r, .d = hd,
                          .mask = MK_ATTN_MASK_CAUSAL, .softmax_scale = b->pd.softmax_scale,
                          .workspace = g->attn_ws, .workspace_bytes = g->attn_ws_bytes};
    MK_CHECK(mk_flash_attn_fwd(&a, S_(g)));
  }
  return mk_layers_attn_out_(g, L, T, reduce);
}

/* One pass over seqs[order[0..n)] (decode ones first: n_dec of them). */
static mk_status pass(mk_model_batch_t *b, const mk_model_batch_seq *seqs, const int *order, int n, int n_dec,
                      float *logits) {
  mk_model_gpu_t *g = b->g;
  const mk_model_config_t *c = &g->cfg;
  const int H = c->hidden, V = c->vocab;
  MK_CHECK(prepare(b, seqs, order, n, n_dec));
  const int32_t *last = b->hints + b->o_last; /* host copy */
  MK_CHECK(mk_embed_gather(b->dints, b->T, g->embed, V, H, g->x, S_(g)));
  for (int l = 0; l < c->n_layers; l++) {
    MK_CHECK(attn_layer(b, l, 1));
    MK_CHECK(mk_layers_ffn_(g, &g->layers[l], b->T));
  }
  for (int i = 0; i < n; i++) /* each sequence's last row -> row i (last[i] >= i, increasing: no row is read after it is overwritten) */
    if (last[i] != i)
      MK_CUDA_CHECK(cudaMemcpyAsync(g->x + (size_t)i * H, g->x + (size_t)last[i] * H, sizeof(float) * H,
                                    cudaMemcpyDeviceToDevice, g->stream));
  MK_CHECK(mk_rmsnorm_f32(g->x, g->final_norm, n, H, c->rms_eps, NULL, g->hf, S_(g)));
  MK_CHECK(mk_linear_f32out(g->hf, n, H, g->lm_head, V, g->logits, S_(g)));
  /* row i -> the caller's row order[i], straight into its buffer (page-locked when the GPU
   * backend gave the engine one): one copy per run of consecutive rows, so a step of decode
   * rows only is one 64 x V copy (before: a pageable staging copy, then a host memcpy) */
  for (int i = 0, j; i < n; i = j) {
    for (j = i + 1; j < n && order[j] == order[j - 1] + 1; j++) {}
    MK_CUDA_CHECK(cudaMemcpyAsync(logits + (size_t)order[i] * V, g->logits + (size_t)i * V, sizeof(float) * V * (size_t)(j - i),
                                  cudaMemcpyDeviceToHost, g->stream));
  }
  MK_CUDA_CHECK(cudaStreamSynchronize(g->stream));
  return mk_comm_check(g->comm);
}

/* Checks every sequence (everything the kernels trust) and orders them in b->order, decode
 * ones first; *n_dec: how many decode ones. */
static mk_status check_order(mk_model_batch_t *b, const mk_model_batch_seq *seqs, int n, int *n_dec) {
  if (!b || (n && !seqs) || n < 0 || n > b->max_seqs)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model_batch: %d sequences (max %d)", n, b ? b->max_seqs : 0);
  const int V = b->g->cfg.vocab;
  for (int i = 0; i < n; i++) {
    const mk_model_batch_seq *q = &seqs[i];
    int bad = q->n_tokens < 1 || q->pos < 0 || q->pos + q->n_tokens > b->max_seq_len ||
              q->n_pages < (q->pos + q->n_tokens + b->bs - 1) / b->bs || q->n_pages > b->max_blocks;
    for (int j = 0; !bad && j < q->n_pages; j++) bad = q->pages[j] < 0 || q->pages[j] >= b->n_pages;
    for (int j = 0; !bad && j < q->n_tokens; j++) bad = q->tokens[j] < 0 || q->tokens[j] >= V;
    if (bad)
      MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model_batch: sequence %d: %d tokens at %d, %d pages "
                    "(of %d; max length %d, vocab %d): out of range", i, q->n_tokens, q->pos, q->n_pages, b->n_pages,
                    b->max_seq_len, V);
  }
  int k = 0;
  for (int i = 0; i < n; i++)
    if (seqs[i].n_tokens == 1) b->order[k++] = i;
  *n_dec = k;
  for (int i = 0; i < n; i++)
    if (seqs[i].n_tokens != 1) b->order[k++] = i;
  return MK_STATUS_OK;
}

mk_status mk_model_batch_forward(mk_model_batch_t *b, const mk_model_batch_seq *seqs, int n, float *logits) {
  int n_dec_all = 0;
  if (n && !logits) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model_batch: no logits buffer");
  MK_CHECK(check_order(b, seqs, n, &n_dec_all));
  b->n = 0; /* a forward replaces a prepared pass (mk_model_batch_prepare) */
  /* passes: consecutive runs of the order within max_tokens new tokens and gathered rows */
  for (int s = 0; s < n;) {
    int e = s, T = 0, G = 0;
    while (e < n) {
      const mk_model_batch_seq *q = &seqs[b->order[e]];
      const int g2 = e >= n_dec_all ? q->pos + q->n_tokens : 0;
      if (e > s && (T + q->n_tokens > b->max_tokens || G + g2 > b->max_tokens)) break;
      T += q->n_tokens, G += g2, e++;
    }
    const int n_dec = s < n_dec_all ? (e < n_dec_all ? e : n_dec_all) - s : 0;
    MK_CHECK(pass(b, seqs, b->order + s, e - s, n_dec, logits));
    s = e;
  }
  b->n = 0;
  return MK_STATUS_OK;
}

mk_status mk_model_batch_prepare(mk_model_batch_t *b, const mk_model_batch_seq *seqs, int n) {
  int n_dec = 0, T = 0, G = 0;
  if (n < 1) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model_batch: prepare: no sequences");
  MK_CHECK(check_order(b, seqs, n, &n_dec));
  for (int i = 0; i < n; i++) T += seqs[i].n_tokens, G += seqs[i].n_tokens == 1 ? 0 : seqs[i].pos + seqs[i].n_tokens;
  if (T > b->max_tokens || G > b->max_tokens)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model_batch: prepare: %d new tokens and %d gathered "
                  "K/V rows do not fit one pass (max_tokens %d)", T, G, b->max_tokens);
  b->n = 0;
  MK_CHECK(prepare(b, seqs, b->order, n, n_dec));
  MK_CUDA_CHECK(cudaStreamSynchronize(b->g->stream));
  return MK_STATUS_OK;
}

mk_status mk_model_batch_run_part(mk_model_batch_t *b, int layer, mk_layer_part part) {
  if (!b || b->n < 1 || layer < 0 || layer >= b->g->cfg.n_layers || (unsigned)part > MK_PART_FFN_COMM)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model_batch: run_part: layer %d, part %d%s", layer,
                  (int)part, b && b->n < 1 ? ": no prepared pass (mk_model_batch_prepare)" : "");
  if (part == MK_PART_ATTN || part == MK_PART_ATTN_COMPUTE) return attn_layer(b, layer, part == MK_PART_ATTN);
  return mk_model_gpu_run_part(b->g, layer, part, b->T, 0); /* no KV cache: the position does not matter */
}

mk_status mk_model_batch_reset_residual(mk_model_batch_t *b) {
  if (!b || b->n < 1)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model_batch: reset_residual: %s",
                  b ? "no prepared pass (mk_model_batch_prepare)" : "no instance");
  return mk_model_gpu_reset_residual(b->g, b->T);
}

void *mk_model_batch_stream(const mk_model_batch_t *b) { return b ? mk_model_gpu_stream(b->g) : NULL; }
