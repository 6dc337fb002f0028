/* model_random.c — a rank's shard with random weights drawn on the GPU (no checkpoint): the
 * same buffers as model_load.c, uniform in +-1/sqrt(fan_in) (norm weights 1, biases small),
 * for layer benchmarks at full size (mk-bench layer). Every rank draws its own slices. */
#include <math.h>
#include <stdlib.h>

#include "core/check.h"
#include "layers/layers_internal.h"

#define S_(g) ((mk_stream_t)(g)->stream)
#define DALLOC(ptr, bytes)                                                        \
  do {                                                                            \
    if (!((ptr) = mk_layers_dalloc_(g, (bytes)))) return MK_STATUS_OUT_OF_MEMORY; \
  } while (0)

typedef struct rnd {
  mk_model_gpu_t *g;
  uint64_t seed;
} rnd;

static mk_status w_fill(rnd *r, uint16_t *out, size_t n, int64_t fan_in) {
  const float s = 1.0f / sqrtf((float)fan_in);
  return mk_fill_uniform_bf16(out, n, r->seed++, -s, s, S_(r->g));
}
static mk_status w_bf16(rnd *r, uint16_t **out, size_t n, int64_t fan_in) {
  mk_model_gpu_t *g = r->g;
  DALLOC(*out, n * 2);
  return w_fill(r, *out, n, fan_in);
}
static mk_status v_f32(rnd *r, float **out, size_t n, float lo, float hi) {
  mk_model_gpu_t *g = r->g;
  DALLOC(*out, n * 4);
  return mk_fill_uniform_f32(*out, n, r->seed++, lo, hi, S_(g));
}

static mk_status mlp(rnd *r, int inter, gpu_mlp *out) {
  const int64_t H = r->g->cfg.hidden, Ir = inter / r->g->lay.tp;
  out->inter_r = (int)Ir;
  MK_CHECK(w_bf16(r, &out->gate, (size_t)(Ir * H), H));
  MK_CHECK(w_bf16(r, &out->up, (size_t)(Ir * H), H));
  return w_bf16(r, &out->down, (size_t)(Ir * H), Ir);
}

mk_status mk_layers_random_(mk_model_gpu_t *g, uint64_t seed) {
  const mk_model_config_t *c = &g->cfg;
  const int64_t H = c->hidden, V = c->vocab, hd = c->head_dim, S = g->max_seq;
  rnd r = {g, seed * 1000003ull + (uint64_t)g->rank * 7919ull};
  MK_CHECK(w_bf16(&r, &g->embed, (size_t)(V * H), 1));
  if (c->tie_word_embeddings) g->lm_head = g->embed;
  else MK_CHECK(w_bf16(&r, &g->lm_head, (size_t)(V * H), H));
  MK_CHECK(v_f32(&r, &g->final_norm, (size_t)H, 1, 1));
  if (!(g->layers = calloc((size_t)c->n_layers, sizeof *g->layers))) return MK_STATUS_OUT_OF_MEMORY;
  for (int l = 0; l < c->n_layers; l++) {
    gpu_layer *L = &g->layers[l];
    MK_CHECK(v_f32(&r, &L->attn_norm, (size_t)H, 1, 1));
    MK_CHECK(v_f32(&r, &L->mlp_norm, (size_t)H, 1, 1));
    MK_CHECK(mk_layers_qkv_alloc_(g, L));
    MK_CHECK(w_fill(&r, L->wq, (size_t)(g->qw_r * H), H));
    MK_CHECK(w_fill(&r, L->wk, (size_t)(g->kw_r * H), H));
    MK_CHECK(w_fill(&r, L->wv, (size_t)(g->kw_r * H), H));
    MK_CHECK(w_bf16(&r, &L->wo, (size_t)(g->qw_r * H), (int64_t)c->n_heads * hd));
    if (c->qkv_bias) {
      MK_CHECK(v_f32(&r, &L->bq, (size_t)g->qw_r, -0.01f, 0.01f));
      MK_CHECK(v_f32(&r, &L->bk, (size_t)g->kw_r, -0.01f, 0.01f));
      MK_CHECK(v_f32(&r, &L->bv, (size_t)g->kw_r, -0.01f, 0.01f));
    }
    if (c->qk_norm == MK_QK_NORM_HEAD) {
      MK_CHECK(v_f32(&r, &L->q_norm, (size_t)hd, 1, 1));
      MK_CHECK(v_f32(&r, &L->k_norm, (size_t)hd, 1, 1));
    } else if (c->qk_norm == MK_QK_NORM_FULL) {
      MK_CHECK(v_f32(&r, &L->q_norm, (size_t)g->qw_r, 1, 1));
      MK_CHECK(v_f32(&r, &L->k_norm, (size_t)g->kw_r, 1, 1));
    }
    DALLOC(L->kc, (size_t)(S * g->kw_r) * 2);
    DALLOC(L->vc, (size_t)(S * g->kw_r) * 2);
    L->is_moe = c->is_moe[l];
    if (!L->is_moe) {
      MK_CHECK(mlp(&r, c->dense_inter, &L->dense));
      continue;
    }
    const int64_t E = c->n_experts, I = c->moe_inter, El = E / g->lay.ep;
    MK_CHECK(w_bf16(&r, &L->router, (size_t)(E * H), H));
    MK_CHECK(w_bf16(&r, &L->w1, (size_t)(El * 2 * I * H), H));
    MK_CHECK(w_bf16(&r, &L->w2, (size_t)(El * H * I), I));
    if (c->shared_inter) {
      MK_CHECK(mlp(&r, c->shared_inter, &L->shared));
      MK_CHECK(w_bf16(&r, &L->seg, (size_t)H, H));
    }
  }
  return MK_STATUS_OK;
}
