/* model_load.c — each rank's shard of the model on its GPU: attention weights sliced by heads
 * (rows of q/k/v, columns of o), dense and shared-expert MLPs sliced by width, this rank's
 * experts whole, the rest (embedding, norms, router, lm_head) replicated. Only the bytes of
 * each slice are read from the safetensors (mk_model_read_f32 / mk_st_read_f32 boxes). */
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/check.h"
#include "layers/layers_internal.h"

void *mk_layers_dalloc_(mk_model_gpu_t *g, size_t bytes) {
  if (g->nallocs == g->cap) {
    int cap = g->cap ? 2 * g->cap : 256;
    void **n = realloc(g->allocs, (size_t)cap * sizeof *n);
    if (!n) return NULL;
    g->allocs = n, g->cap = cap;
  }
  void *p = NULL;
  if (cudaMalloc(&p, bytes ? bytes : 16) != cudaSuccess) return NULL;
  if (cudaMemset(p, 0, bytes ? bytes : 16) != cudaSuccess) {
    cudaFree(p);
    return NULL;
  }
  return g->allocs[g->nallocs++] = p;
}

/* rows [r0, r1) x cols [c0, c1) of a weight as fp32 (only those bytes are read). */
static mk_status read_box(const mk_model_t *m, const mk_weight *w, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                          float *dst) {
  if (c0 == 0 && c1 == w->cols) return mk_model_read_f32(m, w, r0, r1, dst);
  if (w->tensor->ndim != 2 || w->elem_offset != 0)
    MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_MODEL, "layers: %s of layer %d: a column slice of a packed tensor",
                  mk_weight_role_name(w->role), w->layer);
  int64_t b[2] = {r0, c0}, e[2] = {r1, c1};
  return mk_st_read_f32(mk_model_checkpoint(m), w->tensor, b, e, dst);
}

/* Copy a box of weight (role, layer, expert) to dst on the device, bf16 or fp32. A missing
 * weight leaves *found = 0 (optional weights); r1/c1 < 0 mean the whole extent. */
static mk_status put(const mk_model_t *m, mk_weight_role role, int layer, int expert, int64_t r0, int64_t r1, int64_t c0,
                     int64_t c1, int bf16, void *dst, int *found) {
  const mk_weight *w = mk_model_weight(m, role, layer, expert);
  if (found) *found = w != NULL;
  if (!w) {
    if (found) return MK_STATUS_OK;
    MK_ERR_RETURN(MK_STATUS_FORMAT_ERROR, MK_SUBSYS_MODEL, "layers: the model has no %s for layer %d expert %d",
                  mk_weight_role_name(role), layer, expert);
  }
  if (r1 < 0) r1 = w->rows;
  if (c1 < 0) c1 = w->cols;
  if (r0 < 0 || r1 > w->rows || c0 < 0 || c1 > w->cols || r0 >= r1 || c0 >= c1)
    MK_ERR_RETURN(MK_STATUS_INTERNAL, MK_SUBSYS_MODEL, "layers: box outside %s [%lld, %lld]", mk_weight_role_name(role),
                  (long long)w->rows, (long long)w->cols);
  size_t n = (size_t)((r1 - r0) * (c1 - c0));
  float *f = malloc(n * sizeof(float));
  uint16_t *h = bf16 ? malloc(n * 2) : NULL;
  mk_status st = MK_STATUS_OK;
  if (!f || (bf16 && !h)) {
    st = MK_STATUS_OUT_OF_MEMORY;
    goto fail;
  }
  MK_CHECK_GOTO(read_box(m, w, r0, r1, c0, c1, f), st, fail);
  if (bf16)
    for (size_t i = 0; i < n; i++) h[i] = mk_bf16_from_float(f[i]);
  MK_CUDA_CHECK_GOTO(cudaMemcpy(dst, bf16 ? (void *)h : (void *)f, n * (bf16 ? 2 : 4), cudaMemcpyHostToDevice), st, fail);
fail:
  free(f), free(h);
  return st;
}

#define DALLOC(ptr, bytes)                                                   \
  do {                                                                       \
    if (!((ptr) = mk_layers_dalloc_(g, (bytes)))) return MK_STATUS_OUT_OF_MEMORY; \
  } while (0)

mk_status mk_layers_qkv_alloc_(mk_model_gpu_t *g, gpu_layer *L) {
  const size_t H = (size_t)g->cfg.hidden;
  DALLOC(L->wq, (g->qw_r + 2 * (size_t)g->kw_r) * H * 2);
  L->wk = L->wq + g->qw_r * H, L->wv = L->wk + g->kw_r * H;
  return MK_STATUS_OK;
}

/* An optional vector slice [r0, r0 + n) as fp32; NULL if the model has none. */
static mk_status put_vec(mk_model_gpu_t *g, const mk_model_t *m, mk_weight_role role, int layer, int64_t r0, int64_t n,
                         float **out) {
  *out = NULL;
  if (!mk_model_weight(m, role, layer, -1)) return MK_STATUS_OK;
  DALLOC(*out, (size_t)n * 4);
  return put(m, role, layer, -1, r0, r0 + n, 0, -1, 0, *out, NULL);
}

static mk_status load_mlp(mk_model_gpu_t *g, const mk_model_t *m, int l, mk_weight_role gate, int inter, gpu_mlp *out) {
  const int64_t H = g->cfg.hidden, Ir = inter / g->lay.tp, r0 = (int64_t)g->tp_rank * Ir;
  out->inter_r = (int)Ir;
  DALLOC(out->gate, (size_t)(Ir * H) * 2);
  DALLOC(out->up, (size_t)(Ir * H) * 2);
  DALLOC(out->down, (size_t)(Ir * H) * 2);
  MK_CHECK(put(m, gate, l, -1, r0, r0 + Ir, 0, -1, 1, out->gate, NULL));
  MK_CHECK(put(m, gate + 1, l, -1, r0, r0 + Ir, 0, -1, 1, out->up, NULL));       /* *_UP follows *_GATE */
  MK_CHECK(put(m, gate + 2, l, -1, 0, -1, r0, r0 + Ir, 1, out->down, NULL));     /* *_DOWN follows *_UP */
  return MK_STATUS_OK;
}

mk_status mk_layers_load_(mk_model_gpu_t *g, const mk_model_t *m) {
  const mk_model_config_t *c = &g->cfg;
  const int64_t H = c->hidden, V = c->vocab, hd = c->head_dim, S = g->max_seq;
  DALLOC(g->embed, (size_t)(V * H) * 2);
  MK_CHECK(put(m, MK_W_EMBED, -1, -1, 0, -1, 0, -1, 1, g->embed, NULL));
  if (c->tie_word_embeddings) {
    g->lm_head = g->embed;
  } else {
    DALLOC(g->lm_head, (size_t)(V * H) * 2);
    MK_CHECK(put(m, MK_W_LM_HEAD, -1, -1, 0, -1, 0, -1, 1, g->lm_head, NULL));
  }
  MK_CHECK(put_vec(g, m, MK_W_FINAL_NORM, -1, 0, H, &g->final_norm));
  if (!(g->layers = calloc((size_t)c->n_layers, sizeof *g->layers))) return MK_STATUS_OUT_OF_MEMORY;
  const int64_t q0 = (int64_t)g->tp_rank * g->qw_r, k0 = (int64_t)g->tp_rank * g->kw_r;
  for (int l = 0; l < c->n_layers; l++) {
    gpu_layer *L = &g->layers[l];
    MK_CHECK(put_vec(g, m, MK_W_ATTN_NORM, l, 0, H, &L->attn_norm));
    MK_CHECK(put_vec(g, m, MK_W_MLP_NORM, l, 0, H, &L->mlp_norm));
    MK_CHECK(mk_layers_qkv_alloc_(g, L));
    DALLOC(L->wo, (size_t)(g->qw_r * H) * 2);
    MK_CHECK(put(m, MK_W_Q, l, -1, q0, q0 + g->qw_r, 0, -1, 1, L->wq, NULL));
    MK_CHECK(put(m, MK_W_K, l, -1, k0, k0 + g->kw_r, 0, -1, 1, L->wk, NULL));
    MK_CHECK(put(m, MK_W_V, l, -1, k0, k0 + g->kw_r, 0, -1, 1, L->wv, NULL));
    MK_CHECK(put(m, MK_W_O, l, -1, 0, -1, q0, q0 + g->qw_r, 1, L->wo, NULL));
    MK_CHECK(put_vec(g, m, MK_W_Q_BIAS, l, q0, g->qw_r, &L->bq));
    MK_CHECK(put_vec(g, m, MK_W_K_BIAS, l, k0, g->kw_r, &L->bk));
    MK_CHECK(put_vec(g, m, MK_W_V_BIAS, l, k0, g->kw_r, &L->bv));
    if (c->qk_norm == MK_QK_NORM_HEAD) {
      MK_CHECK(put_vec(g, m, MK_W_Q_NORM, l, 0, hd, &L->q_norm));
      MK_CHECK(put_vec(g, m, MK_W_K_NORM, l, 0, hd, &L->k_norm));
    } else if (c->qk_norm == MK_QK_NORM_FULL) {
      MK_CHECK(put_vec(g, m, MK_W_Q_NORM, l, q0, g->qw_r, &L->q_norm));
      MK_CHECK(put_vec(g, m, MK_W_K_NORM, l, k0, g->kw_r, &L->k_norm));
    }
    DALLOC(L->kc, (size_t)(S * g->kw_r) * 2);
    DALLOC(L->vc, (size_t)(S * g->kw_r) * 2);
    L->is_moe = c->is_moe[l];
    if (!L->is_moe) {
      MK_CHECK(load_mlp(g, m, l, MK_W_DENSE_GATE, c->dense_inter, &L->dense));
      continue;
    }
    const int64_t E = c->n_experts, I = c->moe_inter;
    int first, count;
    mk_shard_experts((int)E, g->lay.ep, g->rank % g->lay.ep, &first, &count);
    DALLOC(L->router, (size_t)(E * H) * 2);
    MK_CHECK(put(m, MK_W_ROUTER, l, -1, 0, -1, 0, -1, 1, L->router, NULL));
    DALLOC(L->w1, (size_t)(count * 2 * I * H) * 2);
    DALLOC(L->w2, (size_t)(count * H * I) * 2);
    for (int e = 0; e < count; e++) {
      uint16_t *w1 = L->w1 + (size_t)e * 2 * I * H;
      MK_CHECK(put(m, MK_W_EXPERT_GATE, l, first + e, 0, -1, 0, -1, 1, w1, NULL));
      MK_CHECK(put(m, MK_W_EXPERT_UP, l, first + e, 0, -1, 0, -1, 1, w1 + (size_t)I * H, NULL));
      MK_CHECK(put(m, MK_W_EXPERT_DOWN, l, first + e, 0, -1, 0, -1, 1, L->w2 + (size_t)e * H * I, NULL));
    }
    if (c->shared_inter) {
      MK_CHECK(load_mlp(g, m, l, MK_W_SHARED_GATE, c->shared_inter, &L->shared));
      DALLOC(L->seg, (size_t)H * 2);
      MK_CHECK(put(m, MK_W_SHARED_EXPERT_GATE, l, -1, 0, -1, 0, -1, 1, L->seg, NULL));
    }
  }
  return MK_STATUS_OK;
}
