/* ref_model.c — the fp32 reference forward of a whole model: embedding, per layer
 * (RMSNorm, attention with RoPE and a KV cache, RMSNorm, MoE or dense SwiGLU MLP, residuals),
 * final norm and lm_head (tied or not); greedy generation. The oracle for GPU kernels.
 * mk_ref_create_bf16: the same forward rounded as the GPU model rounds (mk_models.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "models/mk_models.h"
#include "models/reference/ref_internal.h"

typedef struct ref_layer {
  float *attn_norm, *mlp_norm;
  mk_ref_attn_weights aw;
  mk_ref_moe_weights mw;
  float **gate, **up, **down;            /* per expert */
  float *dense_g, *dense_u, *dense_d;    /* dense-MLP layer */
  float *kc, *vc;                        /* [max_seq, nKV*hd] */
} ref_layer;

struct mk_ref {
  mk_model_config_t cfg;
  float *embed, *final_norm, *lm_head;
  ref_layer *layers;
  void **allocs;
  int nallocs, cap;
  int max_seq, pos;
  int bf16; /* mk_ref_create_bf16 */
  int32_t *routes;       /* [n_layers][max_seq][top_k] (mk_ref_routes) */
  const int32_t *forced; /* mk_ref_force_routes */
  float *margin; /* [max_seq]: the smallest relative top-k router margin of each position (mk_ref_route_margin) */
};

static void *track(mk_ref_t *r, void *p) {
  if (!p) return NULL;
  if (r->nallocs == r->cap) {
    int cap = r->cap ? 2 * r->cap : 256;
    void **n = realloc(r->allocs, (size_t)cap * sizeof *n);
    if (!n) {
      free(p);
      return NULL;
    }
    r->allocs = n, r->cap = cap;
  }
  return r->allocs[r->nallocs++] = p;
}

/* The fp32 copy of a weight; *ok = 0 on failure. A missing optional weight gives NULL. In
 * bf16 mode the matrices are rounded to bf16 (the GPU model holds them so); norm weights and
 * biases stay fp32 (so does the GPU). */
static float *load(mk_ref_t *r, const mk_model_t *m, mk_weight_role role, int layer, int expert, int *ok) {
  const mk_weight *w = mk_model_weight(m, role, layer, expert);
  if (!w) return NULL;
  float *p = track(r, malloc(sizeof(float) * (size_t)(w->rows * w->cols)));
  if (!p || mk_model_read_f32(m, w, 0, w->rows, p)) *ok = 0;
  const int vec = role == MK_W_ATTN_NORM || role == MK_W_MLP_NORM || role == MK_W_FINAL_NORM || role == MK_W_Q_NORM ||
                  role == MK_W_K_NORM || role == MK_W_Q_BIAS || role == MK_W_K_BIAS || role == MK_W_V_BIAS;
  if (p && *ok && r->bf16 && !vec) mk_ref_round_bf16_(p, w->rows * w->cols);
  return p;
}

static mk_status create(const mk_model_t *m, int max_seq, int bf16, mk_ref_t **out) {
  *out = NULL;
  if (!m || max_seq < 1) return MK_STATUS_INVALID_ARGUMENT;
  mk_ref_t *r = calloc(1, sizeof *r);
  if (!r) return MK_STATUS_OUT_OF_MEMORY;
  const mk_model_config_t *c = mk_model_config(m);
  r->cfg = *c;
  r->max_seq = max_seq;
  r->bf16 = bf16;
  r->routes = track(r, malloc(sizeof(int32_t) * (size_t)c->n_layers * max_seq * c->top_k));
  r->margin = track(r, malloc(sizeof(float) * (size_t)max_seq));
  int ok = r->margin != NULL && r->routes != NULL, E = c->n_experts;
  if (ok) memset(r->routes, 0xff, sizeof(int32_t) * (size_t)c->n_layers * max_seq * c->top_k);
  r->layers = track(r, calloc((size_t)c->n_layers, sizeof *r->layers));
  if (!r->layers) ok = 0;
  r->embed = load(r, m, MK_W_EMBED, -1, -1, &ok);
  r->final_norm = load(r, m, MK_W_FINAL_NORM, -1, -1, &ok);
  r->lm_head = c->tie_word_embeddings ? r->embed : load(r, m, MK_W_LM_HEAD, -1, -1, &ok);
  size_t kvw = (size_t)c->n_kv_heads * c->head_dim;
  for (int l = 0; ok && l < c->n_layers; l++) {
    ref_layer *L = &r->layers[l];
    L->attn_norm = load(r, m, MK_W_ATTN_NORM, l, -1, &ok);
    L->mlp_norm = load(r, m, MK_W_MLP_NORM, l, -1, &ok);
    L->aw = (mk_ref_attn_weights){.hidden = c->hidden, .n_heads = c->n_heads, .n_kv_heads = c->n_kv_heads,
                                  .head_dim = c->head_dim, .qk_norm = c->qk_norm, .rms_eps = c->rms_eps,
                                  .rope_theta = c->rope_theta, .bf16_acts = bf16};
    L->aw.wq = load(r, m, MK_W_Q, l, -1, &ok);
    L->aw.wk = load(r, m, MK_W_K, l, -1, &ok);
    L->aw.wv = load(r, m, MK_W_V, l, -1, &ok);
    L->aw.wo = load(r, m, MK_W_O, l, -1, &ok);
    L->aw.bq = load(r, m, MK_W_Q_BIAS, l, -1, &ok);
    L->aw.bk = load(r, m, MK_W_K_BIAS, l, -1, &ok);
    L->aw.bv = load(r, m, MK_W_V_BIAS, l, -1, &ok);
    L->aw.q_norm = load(r, m, MK_W_Q_NORM, l, -1, &ok);
    L->aw.k_norm = load(r, m, MK_W_K_NORM, l, -1, &ok);
    L->kc = track(r, malloc(sizeof(float) * kvw * (size_t)max_seq));
    L->vc = track(r, malloc(sizeof(float) * kvw * (size_t)max_seq));
    if (!L->kc || !L->vc) ok = 0;
    if (!c->is_moe[l]) {
      L->dense_g = load(r, m, MK_W_DENSE_GATE, l, -1, &ok);
      L->dense_u = load(r, m, MK_W_DENSE_UP, l, -1, &ok);
      L->dense_d = load(r, m, MK_W_DENSE_DOWN, l, -1, &ok);
      continue;
    }
    L->gate = track(r, calloc((size_t)E, sizeof(float *)));
    L->up = track(r, calloc((size_t)E, sizeof(float *)));
    L->down = track(r, calloc((size_t)E, sizeof(float *)));
    if (!L->gate || !L->up || !L->down) {
      ok = 0;
      break;
    }
    for (int e = 0; ok && e < E; e++) {
      L->gate[e] = load(r, m, MK_W_EXPERT_GATE, l, e, &ok);
      L->up[e] = load(r, m, MK_W_EXPERT_UP, l, e, &ok);
      L->down[e] = load(r, m, MK_W_EXPERT_DOWN, l, e, &ok);
    }
    mk_ref_moe_weights *w = &L->mw;
    *w = (mk_ref_moe_weights){.hidden = c->hidden, .n_experts = E, .top_k = c->top_k, .inter = c->moe_inter,
                              .norm_topk_prob = c->norm_topk_prob, .bf16_acts = bf16};
    w->router = load(r, m, MK_W_ROUTER, l, -1, &ok);
    w->gate = (const float *const *)L->gate, w->up = (const float *const *)L->up, w->down = (const float *const *)L->down;
    w->shared_inter = c->shared_inter;
    w->shared_gate = load(r, m, MK_W_SHARED_GATE, l, -1, &ok);
    w->shared_up = load(r, m, MK_W_SHARED_UP, l, -1, &ok);
    w->shared_down = load(r, m, MK_W_SHARED_DOWN, l, -1, &ok);
    w->shared_expert_gate = load(r, m, MK_W_SHARED_EXPERT_GATE, l, -1, &ok);
  }
  if (!ok) {
    mk_ref_destroy(r);
    MK_ERR_RETURN(MK_STATUS_OUT_OF_MEMORY, MK_SUBSYS_MODEL, "reference: cannot hold the model's weights in fp32");
  }
  *out = r;
  return MK_STATUS_OK;
}

mk_status mk_ref_create(const mk_model_t *m, int max_seq, mk_ref_t **out) { return create(m, max_seq, 0, out); }
mk_status mk_ref_create_bf16(const mk_model_t *m, int max_seq, mk_ref_t **out) { return create(m, max_seq, 1, out); }

mk_status mk_ref_create_shared(const mk_ref_t *base, int max_seq, mk_ref_t **out) {
  *out = NULL;
  if (!base || max_seq < 1) return MK_STATUS_INVALID_ARGUMENT;
  mk_ref_t *r = calloc(1, sizeof *r);
  if (!r) return MK_STATUS_OUT_OF_MEMORY;
  *r = (mk_ref_t){.cfg = base->cfg, .embed = base->embed, .final_norm = base->final_norm,
                  .lm_head = base->lm_head, .max_seq = max_seq, .bf16 = base->bf16};
  const mk_model_config_t *c = &base->cfg;
  size_t kvw = (size_t)c->n_kv_heads * c->head_dim;
  int ok = (r->layers = track(r, malloc((size_t)c->n_layers * sizeof *r->layers))) != NULL &&
           (r->margin = track(r, malloc(sizeof(float) * (size_t)max_seq))) != NULL &&
           (r->routes = track(r, malloc(sizeof(int32_t) * (size_t)c->n_layers * max_seq * c->top_k))) != NULL;
  if (ok) memset(r->routes, 0xff, sizeof(int32_t) * (size_t)c->n_layers * max_seq * c->top_k);
  for (int l = 0; ok && l < c->n_layers; l++) {
    r->layers[l] = base->layers[l]; /* weight pointers are borrowed from base */
    r->layers[l].kc = track(r, malloc(sizeof(float) * kvw * (size_t)max_seq));
    r->layers[l].vc = track(r, malloc(sizeof(float) * kvw * (size_t)max_seq));
    ok = r->layers[l].kc && r->layers[l].vc;
  }
  if (!ok) {
    mk_ref_destroy(r);
    MK_ERR_RETURN(MK_STATUS_OUT_OF_MEMORY, MK_SUBSYS_MODEL, "reference: cannot allocate a KV cache of %d positions", max_seq);
  }
  *out = r;
  return MK_STATUS_OK;
}

int mk_ref_max_seq(const mk_ref_t *r) { return r->max_seq; }

void mk_ref_destroy(mk_ref_t *r) {
  if (!r) return;
  for (int i = 0; i < r->nallocs; i++) free(r->allocs[i]);
  free(r->allocs);
  free(r);
}

void mk_ref_reset(mk_ref_t *r) { r->pos = 0; }

float mk_ref_route_margin(const mk_ref_t *r, int pos) {
  return r && r->margin && pos >= 0 && pos < r->pos ? r->margin[pos] : NAN;
}

int mk_ref_position(const mk_ref_t *r) { return r->pos; }
const int32_t *mk_ref_routes(const mk_ref_t *r) { return r ? r->routes : NULL; }
void mk_ref_force_routes(mk_ref_t *r, const int32_t *routes) {
  if (r) r->forced = routes;
}
int mk_ref_route_differs(const int32_t *a, const int32_t *b, int top_k) {
  for (int i = 0; i < top_k; i++) {
    int found = 0;
    for (int j = 0; j < top_k; j++) found |= a[i] == b[j];
    if (!found) return 1;
  }
  return 0;
}

mk_status mk_ref_forward(mk_ref_t *r, const int32_t *ids, int n, float *logits) {
  const mk_model_config_t *c = &r->cfg;
  if (!ids || n < 1) return MK_STATUS_INVALID_ARGUMENT;
  if (n > r->max_seq - r->pos)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "reference: %d tokens at position %d exceed the KV cache (%d)",
                  n, r->pos, r->max_seq);
  for (int t = 0; t < n; t++)
    if (ids[t] < 0 || ids[t] >= c->vocab)
      MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "reference: token id %d is outside the vocabulary (%d)",
                    (int)ids[t], c->vocab);
  size_t H = (size_t)c->hidden;
  float *x = malloc(sizeof(float) * n * H), *h = malloc(sizeof(float) * n * H), *a = malloc(sizeof(float) * n * H);
  mk_status st = MK_STATUS_OK;
  if (!x || !h || !a) {
    st = MK_STATUS_OUT_OF_MEMORY;
    goto fail;
  }
  for (int t = 0; t < n; t++) memcpy(x + t * H, r->embed + (size_t)ids[t] * H, sizeof(float) * H);
  for (int t = 0; t < n; t++) r->margin[r->pos + t] = INFINITY;
  for (int l = 0; l < c->n_layers; l++) {
    ref_layer *L = &r->layers[l];
    mk_ref_rmsnorm_(x, L->attn_norm, n, (int64_t)H, c->rms_eps, h);
    if (r->bf16) mk_ref_round_bf16_(h, (int64_t)(n * H)); /* GPU: hb */
    MK_CHECK_GOTO(mk_ref_attention_block(&L->aw, h, n, r->pos, L->kc, L->vc, a), st, fail);
    for (size_t i = 0; i < n * H; i++) x[i] += a[i];
    mk_ref_rmsnorm_(x, L->mlp_norm, n, (int64_t)H, c->rms_eps, h);
    const size_t ro = ((size_t)l * r->max_seq + r->pos) * c->top_k; /* this call's rows of routes */
    if (c->is_moe[l])
      MK_CHECK_GOTO(mk_ref_moe_block_(&L->mw, h, n, a, r->routes + ro, NULL, r->margin + r->pos,
                                      r->forced ? r->forced + ro : NULL), st, fail);
    else {
      if (r->bf16) mk_ref_round_bf16_(h, (int64_t)(n * H));
      MK_CHECK_GOTO(mk_ref_dense_mlp_(h, n, (int64_t)H, c->dense_inter, L->dense_g, L->dense_u, L->dense_d, a, r->bf16),
                    st, fail);
    }
    for (size_t i = 0; i < n * H; i++) x[i] += a[i];
  }
  mk_ref_rmsnorm_(x, r->final_norm, n, (int64_t)H, c->rms_eps, h);
  if (logits) mk_ref_linear_(h, n, (int64_t)H, r->lm_head, NULL, c->vocab, logits);
  r->pos += n;
fail:
  free(x), free(h), free(a);
  return st;
}

static int32_t argmax(const float *v, int n) {
  int32_t b = 0;
  for (int i = 1; i < n; i++)
    if (v[i] > v[b]) b = i;
  return b;
}

mk_status mk_ref_generate(mk_ref_t *r, const int32_t *prompt, int n_prompt, int max_new, int32_t *out_ids,
                          float *logits_out) {
  if (!prompt || n_prompt < 1 || max_new < 1 || !out_ids) return MK_STATUS_INVALID_ARGUMENT;
  int V = r->cfg.vocab;
  mk_ref_reset(r);
  float *lg = malloc(sizeof(float) * (size_t)n_prompt * V);
  if (!lg) return MK_STATUS_OUT_OF_MEMORY;
  mk_status st = mk_ref_forward(r, prompt, n_prompt, lg);
  if (st == MK_STATUS_OK) {
    if (logits_out) memcpy(logits_out, lg, sizeof(float) * (size_t)n_prompt * V);
    int32_t next = argmax(lg + (size_t)(n_prompt - 1) * V, V);
    for (int i = 0; i < max_new; i++) {
      out_ids[i] = next;
      if (i == max_new - 1) break;
      if ((st = mk_ref_forward(r, &next, 1, lg))) break;
      if (logits_out) memcpy(logits_out + (size_t)(n_prompt + i) * V, lg, sizeof(float) * V);
      next = argmax(lg, V);
    }
  }
  free(lg);
  return st;
}
