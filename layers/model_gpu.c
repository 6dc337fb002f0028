/* model_gpu.c — the whole model on N GPUs, fused or unfused path (mk_layers.h): per layer RMSNorm -> attention
 * (column-parallel q/k/v over this rank's heads, bias, q/k norm, RoPE, causal attention over
 * the contiguous KV cache, row-parallel o + NCCL all-reduce over the TP group) -> residual ->
 * RMSNorm -> MoE (fp32 router, top-k, the MoE block's unfused EP path; Qwen2 shared expert
 * as a TP MLP scaled by its sigmoid gate) or dense MLP -> residual; final norm, fp32 logits.
 * Every rank holds every token (attention TP groups compute the same tokens); for the experts
 * the TP group splits them (moe_split: each rank dispatches 1/tp of them, an all-gather over
 * the TP group follows), so every rank ends with the same logits. The fused path swaps
 * the row-parallel GEMM + all-reduce for mk_gemm_ar, the MoE block's path for FUSED (decode-sized
 * calls on a second, decode-sized handle) and the NCCL all-gather for mk_gather_rows.
 * Sequence parallel (prefill; sp_on): between the TP linears each rank of a TP group
 * holds only its n / tp rows of the residual stream. The norms, residuals, router and MoE block
 * run on those rows; the column-parallel q/k/v (gate/up) projections start with an all-gather of
 * the normed rows, the row-parallel O (down) projections end with a reduce-scatter instead of an
 * all-reduce (same bytes as the all-reduce together, and the MoE block's all-gather is gone);
 * the forward all-gathers x once after the last layer. Fused: mk_ag_gemm over the TP group (the
 * normed rows written straight into its gathered buffer; k, v and up read that buffer) and
 * mk_gemm_rs; unfused: NCCL all-gather / reduce-scatter and cuBLASLt. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/check.h"
#include "layers/layers_internal.h"

#define S_(g) ((mk_stream_t)(g)->stream)

static mk_status gemm(mk_model_gpu_t *g, const uint16_t *a, const uint16_t *w, uint16_t *c, int64_t m, int64_t n,
                      int64_t k) {
  return mk_cublaslt_gemm_bf16(g->lt, a, w, c, m, n, k, MK_GEMM_B_NK, S_(g));
}

/* Sum of a row-parallel partial result over the TP group, in place. */
static mk_status tp_sum(mk_model_gpu_t *g, void *buf, size_t count, mk_dtype t) {
  if (!g->tp_nccl) return MK_STATUS_OK;
  return mk_nccl_all_reduce(g->tp_nccl, buf, buf, count, t, S_(g));
}

/* Default unfused: the fused path failed its 2 nodes x 2 tests in the last GPU run (99383e8). */
MK_PARAM_STR(path, "PATH", "unfused")

mk_status mk_path_parse(const char *name, mk_path *out) {
  if (name && !strcmp(name, "fused")) return *out = MK_PATH_FUSED, MK_STATUS_OK;
  if (name && !strcmp(name, "unfused")) return *out = MK_PATH_UNFUSED, MK_STATUS_OK;
  MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "path '%s': want fused or unfused", name ? name : "(null)");
}
const char *mk_path_name(mk_path p) { return p == MK_PATH_FUSED ? "fused" : p == MK_PATH_UNFUSED ? "unfused" : "?"; }
mk_path mk_path_default(void) {
  mk_path p = MK_PATH_UNFUSED;
  if (mk_path_parse(mk_param_path(), &p)) MK_WARN(MK_SUBSYS_MODEL, "MK_PATH: using unfused");
  return p;
}

/* Row-parallel linear out[n, N] = sum over the TP group of a[n, K] @ w[N, K]^T. Unfused:
 * cuBLASLt + NCCL all-reduce; fused: one mk_gemm_ar over the TP group (g->fused is the group's). */
static mk_status row_linear(mk_model_gpu_t *g, const uint16_t *a, const uint16_t *w, uint16_t *out, int64_t n,
                            int64_t N, int64_t K) {
  if (g->path == MK_PATH_UNFUSED || !g->fused) {
    MK_CHECK(gemm(g, a, w, out, n, N, K));
    return tp_sum(g, out, (size_t)(n * N), MK_DTYPE_BF16);
  }
  mk_fused_args f = {.A = a, .B = w, .C = out, .m = n, .n = N, .k = K,
                     .b_layout = MK_GEMM_B_NK};
  return mk_gemm_ar(g->fused, &f, S_(g));
}

/* Causal attention of the n new queries over the KV cache [0, pos0 + n): flash attention
 * (bottom-right causal mask over one sequence) for head dims 64 and 128, else the generic
 * KV-cache kernel. */
static mk_status attend(mk_model_gpu_t *g, gpu_layer *L, int n, int pos0) {
  const int hd = g->cfg.head_dim;
  const float scale = 1.0f / sqrtf((float)hd);
  if (hd != 64 && hd != 128)
    return mk_attn_cache_fwd(g->q, L->kc, L->vc, g->o, n, pos0, g->nh_r, g->nkv_r, hd, scale, S_(g));
  /* one sequence: no cu_seqlens (they were a pageable host-to-device copy in the stream before every call) */
  mk_attn_fwd_args a = {.q = g->q, .k = L->kc, .v = L->vc, .o = g->o, .lse = NULL, .cu_seqlens_q = NULL,
                        .cu_seqlens_k = NULL, .batch = 1, .max_seqlen_q = n, .max_seqlen_k = pos0 + n,
                        .total_q = n, .hq = g->nh_r, .hkv = g->nkv_r, .d = hd, .mask = MK_ATTN_MASK_CAUSAL,
                        .softmax_scale = scale, .workspace = g->attn_ws, .workspace_bytes = g->attn_ws_bytes};
  return mk_flash_attn_fwd(&a, S_(g));
}

/* reduce 0: without the TP reduction of the O projection (the block's compute alone). */
/* In-place all-gather over the TP group: rank r's count elements at buf + r count -> every
 * rank's buf[tp count]; mine = buf + tp_rank count. */
static mk_status tp_gather_t(mk_model_gpu_t *g, void *mine, size_t count, mk_dtype t, size_t esize) {
  if (!g->tp_nccl) return MK_STATUS_OK;
  return mk_nccl_all_gather(g->tp_nccl, mine, (char *)mine - (size_t)g->tp_rank * count * esize, count, t, S_(g));
}
static mk_status tp_gather(mk_model_gpu_t *g, uint16_t *mine, size_t count) {
  return tp_gather_t(g, mine, count, MK_DTYPE_BF16, 2);
}

/* ---- sequence parallel between the TP linears (see the top of the file) ---------------------- */
/* -1: from MK_LAYER_SP_MIN tokens; 0: off; 1: every call whose tokens divide by tp. */
MK_PARAM_INT(layer_sp, "LAYER_SP", -1, -1, 1)
MK_PARAM_INT(layer_sp_min, "LAYER_SP_MIN", 1024, 1, 1 << 30)

/* 1 when a call of n tokens runs sequence parallel (same on every rank). */
static int sp_on(const mk_model_gpu_t *g, int n) {
  const int tp = g->lay.tp;
  if (!g->sp_ok || tp < 2 || !g->tp_nccl || n % tp) return 0;
  const int64_t p = mk_param_layer_sp();
  return p == 1 || (p == -1 && n >= mk_param_layer_sp_min());
}
static int sp_r0(const mk_model_gpu_t *g, int n) { return g->tp_rank * (n / g->lay.tp); }
static int sp_fused(const mk_model_gpu_t *g) { return g->path == MK_PATH_FUSED && g->fused_sp; }
int mk_model_gpu_sp_mode(const mk_model_gpu_t *g, int n) {
  return !g || !sp_on(g, n) ? 0 : sp_fused(g) ? 2 : 1;
}

/* In-place NCCL reduce-scatter of out [n, N] over the TP group: this rank's rows at out + r0 N. */
static mk_status sp_reduce_scatter(mk_model_gpu_t *g, uint16_t *out, int n, int64_t N) {
  return mk_nccl_reduce_scatter(g->tp_nccl, out, out + (size_t)sp_r0(g, n) * N, (size_t)(n / g->lay.tp) * N,
                                MK_DTYPE_BF16, S_(g));
}

/* Where this rank's normed rows [r0, r0 + n / tp) go: into the AG+GEMM's gathered buffer
 * (fused: nothing is copied locally), else hb's rows. */
static uint16_t *sp_shard(mk_model_gpu_t *g, int n) {
  const int H = g->cfg.hidden;
  uint16_t *s = sp_fused(g) ? mk_ag_gemm_shard(g->fused, n, H) : NULL;
  return s ? s : g->hb + (size_t)sp_r0(g, n) * H;
}

/* Column-parallel GEMMs of the gathered rows: the shard (sp_shard) gathered over the TP group,
 * then c[i][n, ncol[i]] = gathered @ w[i]^T. Fused, shard in the op's buffer: the first GEMM is
 * one mk_ag_gemm and the others read its gathered buffer (no peer stores into it before this
 * rank enters its next AG call); else an NCCL all-gather into hb and cuBLASLt. comm 0: the GEMMs
 * alone, on hb (the compute-alone parts). */
static mk_status sp_column(mk_model_gpu_t *g, int n, uint16_t *shard, int cnt, const uint16_t *const *w,
                           uint16_t *const *c, const int64_t *ncol, int comm) {
  const int H = g->cfg.hidden;
  const uint16_t *all = g->hb;
  int i = 0;
  if (comm && sp_fused(g) && shard == mk_ag_gemm_shard(g->fused, n, H)) {
    mk_fused_args f = {.A = shard, .B = w[0], .C = c[0], .m = n, .n = ncol[0], .k = H, .b_layout = MK_GEMM_B_NK};
    MK_CHECK(mk_ag_gemm(g->fused, &f, S_(g)));
    all = shard - (size_t)sp_r0(g, n) * H;
    i = 1;
  } else if (comm) {
    MK_CHECK(tp_gather(g, shard, (size_t)(n / g->lay.tp) * H));
  }
  for (; i < cnt; i++) MK_CHECK(gemm(g, all, w[i], c[i], n, ncol[i], H));
  return MK_STATUS_OK;
}

/* Row-parallel linear, reduce-scattered: rows [r0, r0 + n / tp) of the sum over the TP group of
 * a[n, K] @ w[N, K]^T into out + r0 N. Fused: mk_gemm_rs; else cuBLASLt into out and an NCCL
 * reduce-scatter in place. comm 0: the GEMM alone. */
static mk_status sp_row(mk_model_gpu_t *g, const uint16_t *a, const uint16_t *w, uint16_t *out, int n, int64_t N,
                        int64_t K, int comm) {
  if (comm && sp_fused(g)) {
    mk_fused_args f = {.A = a, .B = w, .C = out + (size_t)sp_r0(g, n) * N, .m = n, .n = N, .k = K,
                       .b_layout = MK_GEMM_B_NK};
    return mk_gemm_rs(g->fused, &f, S_(g));
  }
  MK_CHECK(gemm(g, a, w, out, n, N, K));
  return comm ? sp_reduce_scatter(g, out, n, N) : MK_STATUS_OK;
}

/* The SP communication alone (NCCL, the compute-alone parts' complement): the all-gather of the
 * normed rows and the reduce-scatter of out [n, H]. */
static mk_status sp_comm(mk_model_gpu_t *g, int n, uint16_t *out) {
  const int H = g->cfg.hidden;
  MK_CHECK(tp_gather(g, g->hb + (size_t)sp_r0(g, n) * H, (size_t)(n / g->lay.tp) * H));
  return sp_reduce_scatter(g, out, n, H);
}

/* The attention block's first part: norm, q/k/v projections (q -> g->q; k, v -> [n, kw_r] at
 * k and v), bias, q/k norm; no RoPE. Sequence parallel (sp_on): the norm of this rank's
 * rows, gathered (comm 0: not gathered, the compute alone). */
mk_status mk_layers_attn_qkv_(mk_model_gpu_t *g, gpu_layer *L, int n, uint16_t *k, uint16_t *v, int comm) {
  const mk_model_config_t *c = &g->cfg;
  const int H = c->hidden, hd = c->head_dim;
  if (sp_on(g, n)) {
    uint16_t *shard = comm ? sp_shard(g, n) : g->hb + (size_t)sp_r0(g, n) * H;
    const uint16_t *const w[3] = {L->wq, L->wk, L->wv};
    uint16_t *const out[3] = {g->q, k, v};
    const int64_t ncol[3] = {g->qw_r, g->kw_r, g->kw_r};
    MK_CHECK(mk_rmsnorm_f32(g->x + (size_t)sp_r0(g, n) * H, L->attn_norm, n / g->lay.tp, H, c->rms_eps, shard, NULL,
                            S_(g)));
    MK_CHECK(sp_column(g, n, shard, 3, w, out, ncol, comm));
  } else {
    MK_CHECK(mk_rmsnorm_f32(g->x, L->attn_norm, n, H, c->rms_eps, g->hb, NULL, S_(g)));
    MK_CHECK(gemm(g, g->hb, L->wq, g->q, n, g->qw_r, H));
    MK_CHECK(gemm(g, g->hb, L->wk, k, n, g->kw_r, H));
    MK_CHECK(gemm(g, g->hb, L->wv, v, n, g->kw_r, H));
  }
  if (L->bq) MK_CHECK(mk_bias_add_bf16(g->q, n, g->qw_r, L->bq, S_(g)));
  if (L->bk) MK_CHECK(mk_bias_add_bf16(k, n, g->kw_r, L->bk, S_(g)));
  if (L->bv) MK_CHECK(mk_bias_add_bf16(v, n, g->kw_r, L->bv, S_(g)));
  if (c->qk_norm == MK_QK_NORM_HEAD) {
    MK_CHECK(mk_rmsnorm_bf16(g->q, (int64_t)n * g->nh_r, hd, L->q_norm, NULL, hd, c->rms_eps, S_(g)));
    MK_CHECK(mk_rmsnorm_bf16(k, (int64_t)n * g->nkv_r, hd, L->k_norm, NULL, hd, c->rms_eps, S_(g)));
  } else if (c->qk_norm == MK_QK_NORM_FULL && !g->tp_nccl) {
    MK_CHECK(mk_rmsnorm_bf16(g->q, n, g->qw_r, L->q_norm, NULL, g->qw_r, c->rms_eps, S_(g)));
    MK_CHECK(mk_rmsnorm_bf16(k, n, g->kw_r, L->k_norm, NULL, g->kw_r, c->rms_eps, S_(g)));
  } else if (c->qk_norm == MK_QK_NORM_FULL) { /* the norm spans every rank's heads: sum the squares */
    float *sq = g->sumsq, *sk = g->sumsq + n;
    MK_CHECK(mk_rowsumsq_bf16(g->q, n, g->qw_r, sq, S_(g)));
    MK_CHECK(mk_rowsumsq_bf16(k, n, g->kw_r, sk, S_(g)));
    MK_CHECK(tp_sum(g, g->sumsq, 2 * (size_t)n, MK_DTYPE_F32));
    MK_CHECK(mk_rmsnorm_bf16(g->q, n, g->qw_r, L->q_norm, sq, c->n_heads * hd, c->rms_eps, S_(g)));
    MK_CHECK(mk_rmsnorm_bf16(k, n, g->kw_r, L->k_norm, sk, c->n_kv_heads * hd, c->rms_eps, S_(g)));
  }
  return MK_STATUS_OK;
}

/* The attention block's last part: O projection of g->o (reduce 0: without the TP reduction)
 * and the residual. */
mk_status mk_layers_attn_out_(mk_model_gpu_t *g, gpu_layer *L, int n, int reduce) {
  const int H = g->cfg.hidden;
  if (sp_on(g, n)) { /* this rank's rows, reduce-scattered */
    const size_t r0 = (size_t)sp_r0(g, n) * H;
    MK_CHECK(sp_row(g, g->o, L->wo, g->y, n, H, g->qw_r, reduce));
    return mk_residual_add(g->x + r0, g->y + r0, NULL, n / g->lay.tp, H, S_(g));
  }
  if (reduce) MK_CHECK(row_linear(g, g->o, L->wo, g->y, n, H, g->qw_r));
  else MK_CHECK(gemm(g, g->o, L->wo, g->y, n, H, g->qw_r));
  return mk_residual_add(g->x, g->y, NULL, n, H, S_(g));
}

/* 1 (default): the fused path, where not sequence parallel, projects q, k and v with one GEMM over the
 * layer's [wq; wk; wv] and follows it with one kernel for the bias, the per-head q/k norm, RoPE and the
 * copies into q and the KV cache (mk_qkv_post_bf16); 0: as the unfused path, three GEMMs and the separate
 * kernels (up to seven). A q/k norm over the full width (MK_QK_NORM_FULL) always takes the separate path. */
MK_PARAM_INT(layer_qkv, "LAYER_QKV", 1, 0, 1)

static int qkv_merged(const mk_model_gpu_t *g, int n) {
  return g->path == MK_PATH_FUSED && !sp_on(g, n) && g->cfg.qk_norm != MK_QK_NORM_FULL && g->cfg.head_dim <= 256 &&
         mk_param_layer_qkv();
}

static mk_status attn_block(mk_model_gpu_t *g, gpu_layer *L, int n, int reduce) {
  const mk_model_config_t *c = &g->cfg;
  const int hd = c->head_dim, pos0 = g->pos;
  uint16_t *k = L->kc + (size_t)pos0 * g->kw_r, *v = L->vc + (size_t)pos0 * g->kw_r;
  if (qkv_merged(g, n)) {
    const int head = c->qk_norm == MK_QK_NORM_HEAD;
    MK_CHECK(mk_rmsnorm_f32(g->x, L->attn_norm, n, c->hidden, c->rms_eps, g->hb, NULL, S_(g)));
    MK_CHECK(gemm(g, g->hb, L->wq, g->qkv, n, g->qw_r + 2 * g->kw_r, c->hidden));
    MK_CHECK(mk_qkv_post_bf16(g->qkv, n, g->nh_r, g->nkv_r, hd, L->bq, L->bk, L->bv, head ? L->q_norm : NULL,
                              head ? L->k_norm : NULL, c->rms_eps, pos0, c->rope_theta, g->q, k, v, S_(g)));
  } else {
    MK_CHECK(mk_layers_attn_qkv_(g, L, n, k, v, reduce));
    MK_CHECK(mk_rope_neox_bf16(g->q, n, g->nh_r, hd, pos0, c->rope_theta, S_(g)));
    MK_CHECK(mk_rope_neox_bf16(k, n, g->nkv_r, hd, pos0, c->rope_theta, S_(g)));
  }
  MK_CHECK(attend(g, L, n, pos0));
  return mk_layers_attn_out_(g, L, n, reduce);
}

/* SwiGLU MLP on g->hb, column/row parallel, summed over the TP group -> out [n, H]. Sequence
 * parallel: on the gathered rows of shard (sp_shard), this rank's rows of out reduce-scattered
 * (comm 0: neither, the compute alone). */
static mk_status mlp(mk_model_gpu_t *g, const gpu_mlp *p, int n, uint16_t *out, uint16_t *shard, int comm) {
  const int H = g->cfg.hidden;
  if (sp_on(g, n)) {
    const uint16_t *const w[2] = {p->gate, p->up};
    uint16_t *const c[2] = {g->g, g->u};
    const int64_t ncol[2] = {p->inter_r, p->inter_r};
    MK_CHECK(sp_column(g, n, shard, 2, w, c, ncol, comm));
    MK_CHECK(mk_swiglu_bf16(g->g, g->u, g->g, (int64_t)n * p->inter_r, S_(g)));
    return sp_row(g, g->g, p->down, out, n, H, p->inter_r, comm);
  }
  MK_CHECK(gemm(g, g->hb, p->gate, g->g, n, p->inter_r, H));
  MK_CHECK(gemm(g, g->hb, p->up, g->u, n, p->inter_r, H));
  MK_CHECK(mk_swiglu_bf16(g->g, g->u, g->g, (int64_t)n * p->inter_r, S_(g)));
  return row_linear(g, g->g, p->down, out, n, H, p->inter_r);
}

/* 1 (default): the fused path's all-gather of the MoE output on the SMs (mk_gather_rows) also adds it to the
 * residual stream once every slice is in (mk_gather_rows_add); 0: a separate residual kernel. */
MK_PARAM_INT(layer_gather_add, "LAYER_GATHER_ADD", 1, 0, 1)

/* The TP group splits the tokens for the experts: TP rank r dispatches rows [r c, r c + c) of
 * hb (c = ceil(n / tp), the last ranks fewer or none), its MoE output lands at rows [r c, ...)
 * of y, and an all-gather over the TP group (NCCL, in place, padded slices of c rows; y holds
 * max_seq + tp rows) gives every rank y [n, H]. Each token's result does not depend on which
 * rank dispatched it, so the split changes no value. Then x += y (the residual). */
static mk_status moe_split(mk_model_gpu_t *g, gpu_layer *L, int n) {
  const int H = g->cfg.hidden, k = g->cfg.top_k, tp = g->lay.tp, cw = (n + tp - 1) / tp;
  const int r0 = g->tp_rank * cw < n ? g->tp_rank * cw : n, cnt = (r0 + cw < n ? r0 + cw : n) - r0;
  const int fused = g->path == MK_PATH_FUSED;
  uint16_t *mine = g->y + (size_t)g->tp_rank * cw * H;
  /* n is the same on every rank, so every rank picks the same handle (the calls are collective) */
  mk_moe_t *h = L->moe_dec && mk_layers_moe_use_dec_(g->moe_dec_cap, fused, n, tp) ? L->moe_dec : L->moe;
  if (fused && h == L->moe_dec && mk_moe_shares_out(h)) /* the TP group is the EP group: GEMM2 stores every row */
    return mk_moe_forward_all(h, g->hb, n, cw, g->topk_ids, g->topk_w, g->y, g->x, S_(g)); /* into every rank */
  MK_CHECK(mk_moe_forward(h, fused ? MK_MOE_FUSED : MK_MOE_UNFUSED, g->hb + (size_t)r0 * H, cnt,
                          g->topk_ids + (size_t)r0 * k, g->topk_w + (size_t)r0 * k, mine, S_(g)));
  /* fused, slices up to 1 MiB (decode; above, NCCL's bandwidth, not measured against this): the
   * slices pushed to the TP peers on the SMs. y is not stored into again by a peer before this
   * rank's next MoE call has exchanged its counts (a barrier over every rank). */
  if (fused && g->gather && (uint64_t)cw * H * 2 <= (1u << 20)) {
    if (mk_param_layer_gather_add()) /* the residual in the gather's kernel, once every slice is in */
      return mk_gather_rows_add(g->gather, g->y, (uint64_t)cw * H * 2, g->x, H, n, S_(g));
    MK_CHECK(mk_gather_rows(g->gather, g->y, (uint64_t)cw * H * 2, S_(g)));
  } else {
    MK_CHECK(tp_gather(g, mine, (size_t)cw * H));
  }
  return mk_residual_add(g->x, g->y, NULL, n, H, S_(g));
}

/* The MoE block sequence parallel: norm, router and experts on this rank's rows, which were the
 * TP group's split for the experts anyway, so no all-gather of the block's output follows; the
 * shared expert (a TP MLP) on the gathered rows. comm 0 (FFN_COMPUTE): the norm, router and, for
 * the shared expert or a dense MLP, the GEMMs alone; the MoE block itself is not run. */
static mk_status ffn_sp(mk_model_gpu_t *g, gpu_layer *L, int n, int comm) {
  const mk_model_config_t *c = &g->cfg;
  const int H = c->hidden, E = c->n_experts, k = c->top_k, cnt = n / g->lay.tp;
  const size_t r0 = (size_t)sp_r0(g, n);
  float *xs = g->x + r0 * H;
  uint16_t *shard = comm ? sp_shard(g, n) : g->hb + r0 * H;
  MK_CHECK(mk_rmsnorm_f32(xs, L->mlp_norm, cnt, H, c->rms_eps, shard, g->hf + r0 * H, S_(g)));
  if (!L->is_moe) {
    MK_CHECK(mlp(g, &L->dense, n, g->y, shard, comm));
    return comm ? mk_residual_add(xs, g->y + r0 * H, NULL, cnt, H, S_(g)) : MK_STATUS_OK;
  }
  MK_CHECK(mk_linear_f32out(g->hf + r0 * H, cnt, H, L->router, E, g->router_logits + r0 * E, S_(g)));
  if (L->seg) MK_CHECK(mk_linear_f32out(g->hf + r0 * H, cnt, H, L->seg, 1, g->shared_logit + r0, S_(g)));
  MK_CHECK(mk_moe_route(g->router_logits + r0 * E, cnt, E, k, c->norm_topk_prob, L->seg ? g->shared_logit + r0 : NULL,
                        g->topk_ids + r0 * k, g->topk_w + r0 * k, L->seg ? g->shared_w + r0 : NULL, NULL, S_(g)));
  if (comm) {
    const int fused = g->path == MK_PATH_FUSED;
    mk_moe_t *h = L->moe_dec && mk_layers_moe_use_dec_(g->moe_dec_cap, fused, n, g->lay.tp) ? L->moe_dec : L->moe;
    MK_CHECK(mk_moe_forward(h, fused ? MK_MOE_FUSED : MK_MOE_UNFUSED, shard, cnt, g->topk_ids + r0 * k,
                            g->topk_w + r0 * k, g->y + r0 * H, S_(g)));
    MK_CHECK(mk_residual_add(xs, g->y + r0 * H, NULL, cnt, H, S_(g)));
  }
  if (!L->seg) return MK_STATUS_OK;
  MK_CHECK(mlp(g, &L->shared, n, g->y2, shard, comm));
  return comm ? mk_residual_add(xs, g->y2 + r0 * H, g->shared_w + r0, cnt, H, S_(g)) : MK_STATUS_OK;
}

/* The MoE layer after its routing (hb, topk_ids, topk_w, shared_w set): the experts, the shared expert, the
 * residuals. */
static mk_status ffn_moe_rest(mk_model_gpu_t *g, gpu_layer *L, int n) {
  const int H = g->cfg.hidden;
  MK_CHECK(moe_split(g, L, n)); /* x += y included */
  if (!L->seg) return MK_STATUS_OK;
  MK_CHECK(mlp(g, &L->shared, n, g->y2, g->hb, 1));
  return mk_residual_add(g->x, g->y2, g->shared_w, n, H, S_(g));
}

/* 1 (default): the fused path's MoE layers, at up to MK_LAYER_ROUTE_MAX tokens (decode), take the norm, the router
 * (and the shared expert's gate) and the routing in one kernel (mk_moe_norm_route: the same bits as the three);
 * 0: the separate kernels, as the unfused path. */
MK_PARAM_INT(layer_route, "LAYER_ROUTE", 1, 0, 1)
MK_PARAM_INT(layer_route_max, "LAYER_ROUTE_MAX", 256, 1, 1 << 20)

mk_status mk_layers_ffn_(mk_model_gpu_t *g, gpu_layer *L, int n) {
  const mk_model_config_t *c = &g->cfg;
  const int H = c->hidden, E = c->n_experts;
  if (sp_on(g, n)) return ffn_sp(g, L, n, 1);
  if (L->is_moe && g->path == MK_PATH_FUSED && mk_param_layer_route() && n <= mk_param_layer_route_max() &&
      mk_moe_norm_route_fits(H, E, c->top_k)) {
    MK_CHECK(mk_moe_norm_route(g->x, L->mlp_norm, n, H, c->rms_eps, L->router, E, L->seg, c->top_k,
                               c->norm_topk_prob, g->hb, g->topk_ids, g->topk_w, L->seg ? g->shared_w : NULL, S_(g)));
    return ffn_moe_rest(g, L, n);
  }
  MK_CHECK(mk_rmsnorm_f32(g->x, L->mlp_norm, n, H, c->rms_eps, g->hb, g->hf, S_(g)));
  if (!L->is_moe) {
    MK_CHECK(mlp(g, &L->dense, n, g->y, g->hb, 1));
    return mk_residual_add(g->x, g->y, NULL, n, H, S_(g));
  }
  MK_CHECK(mk_linear_f32out(g->hf, n, H, L->router, E, g->router_logits, S_(g)));
  if (L->seg) MK_CHECK(mk_linear_f32out(g->hf, n, H, L->seg, 1, g->shared_logit, S_(g)));
  MK_CHECK(mk_moe_route(g->router_logits, n, E, c->top_k, c->norm_topk_prob, L->seg ? g->shared_logit : NULL,
                        g->topk_ids, g->topk_w, L->seg ? g->shared_w : NULL, NULL, S_(g)));
  return ffn_moe_rest(g, L, n);
}


mk_status mk_model_gpu_run_part(mk_model_gpu_t *g, int layer, mk_layer_part part, int n, int pos) {
  if (!g || layer < 0 || layer >= g->cfg.n_layers || n < 1 || pos < 0 || n > g->max_seq - pos ||
      (unsigned)part > MK_PART_FFN_COMM)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model_gpu: run_part: bad layer %d, part %d, %d tokens "
                  "at %d (max_seq %d)", layer, (int)part, n, pos, g ? g->max_seq : 0);
  gpu_layer *L = &g->layers[layer];
  const mk_model_config_t *c = &g->cfg;
  const int H = c->hidden, saved = g->pos;
  mk_status st = MK_STATUS_OK;
  g->pos = pos;
  switch (part) {
  case MK_PART_ATTN: st = attn_block(g, L, n, 1); break;
  case MK_PART_FFN: st = mk_layers_ffn_(g, L, n); break;
  case MK_PART_ATTN_COMPUTE: st = attn_block(g, L, n, 0); break;
  case MK_PART_ATTN_COMM:
    st = sp_on(g, n) ? sp_comm(g, n, g->y) : tp_sum(g, g->y, (size_t)n * H, MK_DTYPE_BF16);
    break;
  case MK_PART_FFN_COMPUTE:
  case MK_PART_FFN_COMM: {
    const int compute = part == MK_PART_FFN_COMPUTE;
    const gpu_mlp *p = L->is_moe ? (L->seg ? &L->shared : NULL) : &L->dense;
    if (sp_on(g, n)) { /* no all-gather of the MoE output; the TP MLP's gather and reduce-scatter */
      if (compute) st = ffn_sp(g, L, n, 0);
      if (!st && L->is_moe) st = mk_moe_time_parts(L->moe, compute, S_(g));
      if (!st && !compute && p) st = sp_comm(g, n, L->is_moe ? g->y2 : g->y);
      break;
    }
    if (compute) st = mk_rmsnorm_f32(g->x, L->mlp_norm, n, H, c->rms_eps, g->hb, g->hf, S_(g));
    if (!st && compute && L->is_moe) st = mk_linear_f32out(g->hf, n, H, L->router, c->n_experts, g->router_logits, S_(g));
    if (!st && compute && L->is_moe)
      st = mk_moe_route(g->router_logits, n, c->n_experts, c->top_k, c->norm_topk_prob, NULL, g->topk_ids, g->topk_w,
                        NULL, NULL, S_(g));
    if (!st && L->is_moe) st = mk_moe_time_parts(L->moe, compute, S_(g));
    if (!st && L->is_moe && !compute) st = tp_gather(g, g->y + (size_t)g->tp_rank * ((n + g->lay.tp - 1) / g->lay.tp) * H,
                                                     (size_t)((n + g->lay.tp - 1) / g->lay.tp) * H);
    if (!st && p && compute) {
      st = gemm(g, g->hb, p->gate, g->g, n, p->inter_r, H);
      if (!st) st = gemm(g, g->hb, p->up, g->u, n, p->inter_r, H);
      if (!st) st = mk_swiglu_bf16(g->g, g->u, g->g, (int64_t)n * p->inter_r, S_(g));
      if (!st) st = gemm(g, g->g, p->down, g->y2, n, H, p->inter_r);
    } else if (!st && p) {
      st = tp_sum(g, g->y2, (size_t)n * H, MK_DTYPE_BF16);
    }
    break;
  }
  }
  g->pos = saved;
  return st;
}

void *mk_model_gpu_stream(const mk_model_gpu_t *g) { return g ? g->stream : NULL; }

mk_status mk_model_gpu_forward(mk_model_gpu_t *g, const int32_t *ids, int n, float *logits) {
  if (!g || !ids || n < 1) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model_gpu: no tokens");
  const mk_model_config_t *c = &g->cfg;
  if (n > g->max_seq - g->pos)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model_gpu: %d tokens at position %d exceed the KV cache (%d)",
                  n, g->pos, g->max_seq);
  for (int t = 0; t < n; t++)
    if (ids[t] < 0 || ids[t] >= c->vocab)
      MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model_gpu: token id %d is outside the vocabulary (%d)",
                    (int)ids[t], c->vocab);
  MK_CUDA_CHECK(cudaMemcpyAsync(g->ids, ids, sizeof(int32_t) * (size_t)n, cudaMemcpyHostToDevice, g->stream));
  MK_CHECK(mk_embed_gather(g->ids, n, g->embed, c->vocab, c->hidden, g->x, S_(g)));
  const int sp = sp_on(g, n);
  const size_t cnt = sp ? (size_t)(n / g->lay.tp) : 0, r0 = sp ? (size_t)sp_r0(g, n) : 0;
  for (int l = 0; l < c->n_layers; l++) {
    MK_CHECK(attn_block(g, &g->layers[l], n, 1));
    MK_CHECK(mk_layers_ffn_(g, &g->layers[l], n));
    if (g->routes && g->layers[l].is_moe && sp) /* the other ranks' rows of the top-k ids */
      MK_CHECK(tp_gather_t(g, g->topk_ids + r0 * c->top_k, cnt * c->top_k, MK_DTYPE_I32, 4));
    if (g->routes && g->layers[l].is_moe) /* this layer's top-k ids, before the next layer's routing */
      MK_CUDA_CHECK(cudaMemcpyAsync(g->routes + ((size_t)l * g->max_seq + g->pos) * c->top_k, g->topk_ids,
                                    sizeof(int32_t) * (size_t)n * c->top_k, cudaMemcpyDeviceToHost, g->stream));
  }
  if (sp) MK_CHECK(tp_gather_t(g, g->x + r0 * c->hidden, cnt * c->hidden, MK_DTYPE_F32, 4)); /* every row again */
  MK_CHECK(mk_rmsnorm_f32(g->x, g->final_norm, n, c->hidden, c->rms_eps, NULL, g->hf, S_(g)));
  MK_CHECK(mk_linear_f32out(g->hf, n, c->hidden, g->lm_head, c->vocab, g->logits, S_(g)));
  if (logits)
    MK_CUDA_CHECK(cudaMemcpyAsync(logits, g->logits, sizeof(float) * (size_t)n * c->vocab, cudaMemcpyDeviceToHost,
                                  g->stream));
  MK_CUDA_CHECK(cudaStreamSynchronize(g->stream));
  MK_CHECK(mk_comm_check(g->comm)); /* a fused op's TIMEOUT / REMOTE_ERROR */
  g->pos += n;
  return MK_STATUS_OK;
}

static int32_t argmax(const float *v, int n) { /* as the reference: first of the largest */
  int32_t b = 0;
  for (int i = 1; i < n; i++)
    if (v[i] > v[b]) b = i;
  return b;
}

mk_status mk_model_gpu_generate(mk_model_gpu_t *g, const int32_t *prompt, int n_prompt, int max_new, int32_t *out_ids,
                                float *logits_out) {
  if (!g || !prompt || n_prompt < 1 || max_new < 1 || !out_ids)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model_gpu: bad generate arguments");
  const int V = g->cfg.vocab;
  mk_model_gpu_reset(g);
  float *lg = malloc(sizeof(float) * (size_t)n_prompt * V);
  if (!lg) return MK_STATUS_OUT_OF_MEMORY;
  mk_status st = mk_model_gpu_forward(g, prompt, n_prompt, lg);
  int32_t next = 0;
  if (st == MK_STATUS_OK) {
    if (logits_out) memcpy(logits_out, lg, sizeof(float) * (size_t)n_prompt * V);
    next = argmax(lg + (size_t)(n_prompt - 1) * V, V);
  }
  for (int i = 0; st == MK_STATUS_OK && i < max_new; i++) {
    if ((st = mk_comm_bcast(g->comm, &next, sizeof next, 0))) break; /* every rank follows rank 0 */
    out_ids[i] = next;
    if (i == max_new - 1) break;
    if ((st = mk_model_gpu_forward(g, &next, 1, lg))) break;
    if (logits_out) memcpy(logits_out + (size_t)(n_prompt + i) * V, lg, sizeof(float) * V);
    next = argmax(lg, V);
  }
  free(lg);
  return st;
}

void mk_model_gpu_record_routes(mk_model_gpu_t *g, int32_t *routes) {
  if (g) g->routes = routes;
}

void mk_model_gpu_reset(mk_model_gpu_t *g) {
  if (g) g->pos = 0;
}
int mk_model_gpu_position(const mk_model_gpu_t *g) { return g ? g->pos : 0; }

mk_status mk_model_gpu_set_path(mk_model_gpu_t *g, mk_path p) {
  if (!g || (p != MK_PATH_FUSED && p != MK_PATH_UNFUSED))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model_gpu: bad path %d", (int)p);
  g->path = p;
  return MK_STATUS_OK;
}
mk_path mk_model_gpu_path(const mk_model_gpu_t *g) { return g ? g->path : MK_PATH_UNFUSED; }

void mk_model_gpu_destroy(mk_model_gpu_t *g) {
  if (!g) return;
  if (g->layers)
    for (int l = 0; l < g->cfg.n_layers; l++) { /* moe_dec first: it shares moe's interleaved w1 */
      mk_moe_destroy(g->layers[l].moe_dec);
      mk_moe_destroy(g->layers[l].moe);
    }
  free(g->layers);
  mk_fused_destroy(g->fused);
  mk_gather_destroy(g->gather);
  mk_nccl_destroy(g->tp_nccl);
  mk_cublaslt_destroy(g->lt);
  for (int i = 0; i < g->nallocs; i++) cudaFree(g->allocs[i]);
  free(g->allocs);
  if (g->stream) cudaStreamDestroy(g->stream);
  free(g);
}

#define DALLOC(ptr, bytes)                                                   \
  do {                                                                       \
    if (!((ptr) = mk_layers_dalloc_(g, (bytes)))) {                          \
      st = MK_STATUS_OUT_OF_MEMORY;                                          \
      goto fail;                                                             \
    }                                                                        \
  } while (0)
/* Symmetric heap (collective: the same sequence on every rank; never returned). */
#define HALLOC(ptr, bytes)                                                   \
  do {                                                                       \
    uint64_t off_;                                                           \
    MK_CHECK_GOTO(mk_comm_heap_alloc(comm, (bytes), &off_), st, fail);       \
    (ptr) = mk_comm_heap_ptr(comm, off_);                                    \
  } while (0)

/* Tokens per rank of each MoE layer's second, decode-sized handle (fused path only; 0 = none; -1, the
 * default: ceil(64 / tp), a decode batch of 64 over the TP group, so that W x max_tokens <= 64 at
 * TP = EP takes the MoE's decode path without the count exchange, MK_MOE_LL):
 * the handle made for max_seq tokens runs its decode calls with the schedule AUTO picks for
 * max_seq (serial, split-K off from 1024 on), the second one with the bench's decode choices
 * (overlapped, split-K where mk_moe_pick_split_k says). Same value on every rank. docs/perf/NOTES.md,
 * layer, "MoE block at decode": measured at 8d89cd6, Mixtral decode MoE block 0.420 -> 0.337 ms. */
MK_PARAM_INT(moe_decode_tokens, "MOE_DECODE_TOKENS", -1, -1, 1 << 20)
/* Fused path, decode-sized MoE handle, TP group = EP group (every rank): 1 (default) the MoE op gives every rank
 * every token's output and adds it to the residual stream (mk_moe_forward_all: GEMM2 stores each expert row into
 * every rank), with no all-gather after it; 0: each rank's tokens, then the all-gather (mk_gather_rows_add). */
MK_PARAM_INT(layer_moe_all, "LAYER_MOE_ALL", 1, 0, 1)
/* Fused path, tp > 1: the MoE block's TP all-gather on the SMs (mk_gather_rows) or, 0, NCCL
 * (8d89cd6: 0.005 ms less on the Mixtral decode MoE block, even on Qwen3's). */
MK_PARAM_INT(tp_gather_sm, "TP_GATHER_SM", 1, 0, 1)

/* m NULL: random weights from seed (mk_model_gpu_create_random); logit_rows: rows of g->logits. */
mk_status mk_layers_create_(const mk_model_t *m, const mk_model_config_t *c, uint64_t seed, mk_comm_t *comm,
                           const mk_layout_t *layout, int max_seq, int logit_rows, int sp_ok, mk_model_gpu_t **out) {
  *out = NULL;
  if (!c || !comm || !layout || max_seq < 1 || logit_rows < 1 || logit_rows > max_seq)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model_gpu: bad create arguments");
  const mk_world *w = mk_comm_world(comm);
  mk_layout_t chk;
  MK_CHECK(mk_layers_layout_choose(c, w, layout->tp, &chk));
  if (layout->world != w->size || layout->ep != w->size)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL,
                  "model_gpu: layout world %d / ep %d must equal the %d ranks (EP spans every rank)", layout->world,
                  layout->ep, w->size);
  mk_model_gpu_t *g = calloc(1, sizeof *g);
  if (!g) return MK_STATUS_OUT_OF_MEMORY;
  mk_status st = MK_STATUS_OK;
  g->path = mk_path_default();
  g->cfg = *c, g->lay = chk, g->comm = comm, g->rank = w->rank, g->tp_rank = w->rank % chk.tp, g->max_seq = max_seq;
  g->sp_ok = sp_ok && mk_param_layer_sp() != 0;
  g->nh_r = c->n_heads / chk.tp, g->nkv_r = c->n_kv_heads / chk.tp;
  g->qw_r = g->nh_r * c->head_dim, g->kw_r = g->nkv_r * c->head_dim;
  MK_CUDA_CHECK_GOTO(cudaSetDevice(mk_comm_device(comm)), st, fail);
  MK_CUDA_CHECK_GOTO(cudaStreamCreateWithFlags((cudaStream_t *)&g->stream, cudaStreamNonBlocking), st, fail);
  MK_CHECK_GOTO(mk_cublaslt_create(&g->lt), st, fail);
  /* TP groups: consecutive ranks (tp rank = rank % tp), inside one node group (tp | local_size). */
  if (chk.tp > 1) MK_CHECK_GOTO(mk_nccl_create_group(comm, w->rank / chk.tp, &g->tp_nccl), st, fail);
  if (m) MK_CHECK_GOTO(mk_layers_load_(g, m), st, fail);
  else MK_CHECK_GOTO(mk_layers_random_(g, seed), st, fail);
  const size_t S = (size_t)max_seq, H = (size_t)c->hidden;
  size_t wide = (size_t)(c->dense_inter > c->shared_inter ? c->dense_inter : c->shared_inter) / chk.tp;
  DALLOC(g->ids, S * 4);
  if (c->head_dim == 64 || c->head_dim == 128) {
    /* The split's largest automatic choice: with up to 128 query rows (one CTA's) it takes as
     * many splits as leave one wave; more rows take fewer splits of the same bytes or more. A
     * call that would take more splits than this holds takes fewer. */
    const int nq = max_seq < 128 ? max_seq : 128;
    mk_attn_fwd_args wa = {.batch = 1, .max_seqlen_q = nq, .max_seqlen_k = max_seq, .total_q = nq, .hq = g->nh_r,
                           .hkv = g->nkv_r, .d = c->head_dim, .mask = MK_ATTN_MASK_CAUSAL, .softmax_scale = 1.f};
    MK_CHECK_GOTO(mk_flash_attn_fwd_workspace_size(&wa, &g->attn_ws_bytes), st, fail);
    if (g->attn_ws_bytes) DALLOC(g->attn_ws, g->attn_ws_bytes);
  }
  DALLOC(g->topk_ids, S * (size_t)c->top_k * 4);
  DALLOC(g->x, S * H * 4);
  DALLOC(g->hf, S * H * 4);
  DALLOC(g->router_logits, S * (size_t)c->n_experts * 4);
  DALLOC(g->topk_w, S * (size_t)c->top_k * 4);
  DALLOC(g->shared_logit, S * 4);
  DALLOC(g->shared_w, S * 4);
  DALLOC(g->sumsq, 2 * S * 4);
  DALLOC(g->logits, (size_t)logit_rows * (size_t)c->vocab * 4);
  DALLOC(g->q, S * (size_t)g->qw_r * 2);
  DALLOC(g->qkv, S * (size_t)(g->qw_r + 2 * g->kw_r) * 2);
  DALLOC(g->u, S * (wide ? wide : 8) * 2);
  HALLOC(g->hb, S * H * 2);
  HALLOC(g->o, S * (size_t)g->qw_r * 2);
  HALLOC(g->y, (S + (size_t)chk.tp) * H * 2); /* + tp rows: moe_split's padded slices */
  HALLOC(g->y2, S * H * 2);
  HALLOC(g->g, S * (wide ? wide : 8) * 2);
  if (chk.tp > 1) { /* GEMM+AR for the row-parallel projections (K = this rank's slice width) */
    const size_t maxk = wide > (size_t)g->qw_r ? wide : (size_t)g->qw_r;
    unsigned ops = 1u << MK_FUSED_GEMM_AR;
    size_t fn = H, fk = maxk;
    /* sequence parallel: AG+GEMM (N = q or gate/up width, K = H) and GEMM+RS too */
    g->fused_sp = g->sp_ok;
    if (g->fused_sp) {
      ops |= 1u << MK_FUSED_AG_GEMM | 1u << MK_FUSED_GEMM_RS;
      fn = fk = maxk > H ? maxk : H;
    }
    const int tp0 = w->rank / chk.tp * chk.tp; /* the TP group: ranks tp0 .. tp0 + tp - 1 */
    /* over this rank's TP group alone (collective: every rank creates its group's handle) */
    MK_CHECK_GOTO(mk_fused_create_group(comm, tp0, chk.tp, ops, max_seq, (int64_t)fn, (int64_t)fk, &g->fused), st,
                  fail);
    if (mk_param_tp_gather_sm()) /* collective: heap counters */
      MK_CHECK_GOTO(mk_gather_create(comm, tp0, chk.tp, &g->gather), st, fail);
  }
  if (!m) { /* a state; mk_model_gpu_reset_residual puts rows of it back */
    g->x_seed = seed + 17, g->x_random = 1;
    MK_CHECK_GOTO(mk_fill_uniform_f32(g->x, S * H, g->x_seed, -1.0f, 1.0f, S_(g)), st, fail);
  }
  g->moe_dec_cap = mk_layers_moe_dec_cap_(max_seq, (int)mk_param_moe_decode_tokens(), chk.tp);
  for (int l = 0; l < c->n_layers; l++) { /* collective, same order on every rank */
    gpu_layer *L = &g->layers[l];
    if (!L->is_moe) continue;
    mk_moe_args a = {.hidden = c->hidden, .inter = c->moe_inter, .n_experts = c->n_experts, .top_k = c->top_k,
                     .max_tokens = max_seq, .w1 = L->w1, .w2 = L->w2};
    MK_CHECK_GOTO(mk_moe_create(comm, &a, &L->moe), st, fail);
    if (g->moe_dec_cap) { /* fused only, GEMM1's interleaved weights shared with L->moe */
      mk_moe_args ad = a;
      ad.max_tokens = g->moe_dec_cap, ad.fused_only = 1, ad.w1_from = L->moe;
      ad.share_out = chk.tp == w->size && mk_param_layer_moe_all(); /* the TP group is the MoE's (every rank) */
      MK_CHECK_GOTO(mk_moe_create(comm, &ad, &L->moe_dec), st, fail);
    }
  }
  /* NCCL connects a communicator lazily, at its first collective of a kind: do that now, not
   * behind a fused kernel that is in flight and waiting on peers. (The fused path's 2 nodes x 2
   * timeouts of run 99383e8 had two other causes, fixed at eeb9db0 and 6ab8609: kernels loaded
   * lazily while a fused op waited on the loopback proxy, and proxied counters of a second
   * handle on one comm; DESIGN.md, comm.) */
  if (g->tp_nccl) {
    MK_CHECK_GOTO(tp_sum(g, g->y, 8, MK_DTYPE_BF16), st, fail);
    MK_CHECK_GOTO(tp_gather(g, g->y + (size_t)g->tp_rank * 8, 8), st, fail);
  }
  MK_CUDA_CHECK_GOTO(cudaDeviceSynchronize(), st, fail);
  MK_INFO(MK_SUBSYS_MODEL, "model_gpu: rank %d of %d, tp %d (tp rank %d), ep %d, max_seq %d, %s path", w->rank,
          w->size, chk.tp, g->tp_rank, chk.ep, max_seq, mk_path_name(g->path));
  *out = g;
  return MK_STATUS_OK;
fail:
  mk_model_gpu_destroy(g);
  return st;
}

mk_status mk_model_gpu_create(const mk_model_t *m, mk_comm_t *comm, const mk_layout_t *layout, int max_seq,
                              mk_model_gpu_t **out) {
  if (!m) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model_gpu: no model");
  return mk_layers_create_(m, mk_model_config(m), 0, comm, layout, max_seq, max_seq, 1, out);
}

mk_status mk_model_gpu_create_random(const mk_model_config_t *c, mk_comm_t *comm, const mk_layout_t *layout,
                                     int max_seq, uint64_t seed, mk_model_gpu_t **out) {
  return mk_layers_create_(NULL, c, seed, comm, layout, max_seq, max_seq, 1, out);
}

mk_status mk_model_gpu_reset_residual(mk_model_gpu_t *g, int n) {
  if (!g || !g->x_random || n < 0 || n > g->max_seq)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model_gpu: reset_residual: %s",
                  !g ? "no instance" : !g->x_random ? "only an instance with random weights has a state to go back to"
                                                    : "rows outside [0, max_seq]");
  /* counter-based fill: the first n rows of the fill made at create */
  return mk_fill_uniform_f32(g->x, (size_t)n * g->cfg.hidden, g->x_seed, -1.0f, 1.0f, S_(g));
}
