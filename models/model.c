/* model.c — a model directory: config.json + checkpoint, mapped to logical weights through
 * the family's tensor-name map, and checked: every expected tensor present, with the
 * expected shape and a floating dtype, and no tensor the config does not explain.
 *
 * Name maps (L = layer, E = expert, <moe> = model.layers.L.mlp, or .block_sparse_moe for
 * mixtral checkpoints written before transformers 5):
 *   model.embed_tokens.weight [V,H]   model.norm.weight [H]   lm_head.weight [V,H] (unless tied)
 *   model.layers.L.{input_layernorm,post_attention_layernorm}.weight [H]
 *   model.layers.L.self_attn.{q,k,v,o}_proj.weight, .{q,k,v}_proj.bias (qwen2_moe),
 *     .{q,k}_norm.weight ([hd] qwen3_moe, [heads*hd] olmoe)
 *   <moe>.gate.weight [E,H] (router)
 *   experts, one of: <moe>.experts.E.{gate_proj,up_proj,down_proj}.weight (mixtral: w1, w3, w2)
 *                    <moe>.experts.gate_up_proj [E, 2I, H] (gate rows first), .down_proj [E, H, I]
 *   <moe>.shared_expert.{gate,up,down}_proj.weight, <moe>.shared_expert_gate.weight [1,H] (qwen2_moe)
 *   model.layers.L.mlp.{gate,up,down}_proj.weight (dense layers: mlp_only_layers, sparse step) */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "models/mk_models.h"

struct mk_model {
  mk_model_config_t cfg;
  mk_st_t *st;
  mk_weight *w;
  int nw, cap;
  int *global_idx;  /* [ROLE] */
  int *layer_idx;   /* [L][ROLE] */
  int *expert_idx;  /* [L][E][3] */
  unsigned char *used; /* per checkpoint tensor */
};

static const char *k_role_names[MK_W_ROLE_COUNT_] = {
    "embed", "final_norm", "lm_head", "attn_norm", "mlp_norm", "q_proj", "k_proj", "v_proj", "o_proj",
    "q_bias", "k_bias", "v_bias", "q_norm", "k_norm", "router", "expert_gate", "expert_up", "expert_down",
    "dense_gate", "dense_up", "dense_down", "shared_gate", "shared_up", "shared_down", "shared_expert_gate"};
const char *mk_weight_role_name(mk_weight_role r) { return (unsigned)r < MK_W_ROLE_COUNT_ ? k_role_names[r] : "?"; }

static int *slot(mk_model_t *m, mk_weight_role role, int layer, int expert) {
  if (layer < 0) return &m->global_idx[role];
  if (expert < 0) return &m->layer_idx[(size_t)layer * MK_W_ROLE_COUNT_ + role];
  return &m->expert_idx[((size_t)layer * m->cfg.n_experts + expert) * 3 + (role - MK_W_EXPERT_GATE)];
}

static void shape_str(char *buf, size_t n, int nd, const int64_t *s) {
  size_t o = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < nd && o < n; i++) o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? ", " : "", (long long)s[i]);
  if (o < n) snprintf(buf + o, n - o, "]");
}

/* Find and check a tensor of the expected shape; mark it used. */
static mk_status expect(mk_model_t *m, const char *name, int nd, const int64_t *shape, const mk_st_tensor **out) {
  const mk_st_tensor *t = mk_st_find(m->st, name);
  char want[96], got[96];
  shape_str(want, sizeof want, nd, shape);
  if (!t) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model: missing tensor '%s' (expected shape %s)", name, want);
  shape_str(got, sizeof got, t->ndim, t->shape);
  if (!mk_dtype_is_float(t->dtype))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model: tensor '%s' has dtype %s, not a floating dtype", name,
                  mk_dtype_name(t->dtype));
  int same = t->ndim == nd;
  for (int d = 0; same && d < nd; d++) same = t->shape[d] == shape[d];
  if (!same) {
    int transposed = nd >= 2 && t->ndim == nd && t->shape[nd - 1] == shape[nd - 2] && t->shape[nd - 2] == shape[nd - 1];
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "model: tensor '%s' has shape %s, expected %s%s", name, got,
                  want, transposed ? " (transposed)" : "");
  }
  m->used[t - mk_st_get(m->st, 0)] = 1;
  *out = t;
  return MK_STATUS_OK;
}

static mk_status add(mk_model_t *m, mk_weight_role role, int layer, int expert, const mk_st_tensor *t, uint64_t off,
                     int64_t rows, int64_t cols) {
  if (m->nw == m->cap) {
    int cap = m->cap ? m->cap * 2 : 256;
    mk_weight *n = realloc(m->w, (size_t)cap * sizeof *n);
    if (!n) return MK_STATUS_OUT_OF_MEMORY;
    m->w = n;
    m->cap = cap;
  }
  m->w[m->nw] = (mk_weight){role, layer, expert, rows, cols, off, t};
  *slot(m, role, layer, expert) = m->nw++;
  return MK_STATUS_OK;
}

/* A whole 2-D (or 1-D: cols = 1) tensor as one weight. */
static mk_status plain(mk_model_t *m, mk_weight_role role, int layer, int expert, const char *name, int64_t rows,
                       int64_t cols) {
  const mk_st_tensor *t;
  int64_t shape[2] = {rows, cols};
  MK_CHECK(expect(m, name, cols ? 2 : 1, shape, &t));
  return add(m, role, layer, expert, t, 0, rows, cols ? cols : 1);
}

#define NAME(...) (snprintf(nm, sizeof nm, __VA_ARGS__), nm)

static mk_status map_layer(mk_model_t *m, int l) {
  const mk_model_config_t *c = &m->cfg;
  char nm[256], moe[128];
  int64_t H = c->hidden, hd = c->head_dim, q = (int64_t)c->n_heads * hd, kv = (int64_t)c->n_kv_heads * hd;
  int64_t E = c->n_experts, I = c->moe_inter;
  MK_CHECK(plain(m, MK_W_ATTN_NORM, l, -1, NAME("model.layers.%d.input_layernorm.weight", l), H, 0));
  MK_CHECK(plain(m, MK_W_MLP_NORM, l, -1, NAME("model.layers.%d.post_attention_layernorm.weight", l), H, 0));
  MK_CHECK(plain(m, MK_W_Q, l, -1, NAME("model.layers.%d.self_attn.q_proj.weight", l), q, H));
  MK_CHECK(plain(m, MK_W_K, l, -1, NAME("model.layers.%d.self_attn.k_proj.weight", l), kv, H));
  MK_CHECK(plain(m, MK_W_V, l, -1, NAME("model.layers.%d.self_attn.v_proj.weight", l), kv, H));
  MK_CHECK(plain(m, MK_W_O, l, -1, NAME("model.layers.%d.self_attn.o_proj.weight", l), H, q));
  if (c->qkv_bias) {
    MK_CHECK(plain(m, MK_W_Q_BIAS, l, -1, NAME("model.layers.%d.self_attn.q_proj.bias", l), q, 0));
    MK_CHECK(plain(m, MK_W_K_BIAS, l, -1, NAME("model.layers.%d.self_attn.k_proj.bias", l), kv, 0));
    MK_CHECK(plain(m, MK_W_V_BIAS, l, -1, NAME("model.layers.%d.self_attn.v_proj.bias", l), kv, 0));
  }
  if (c->qk_norm) {
    int full = c->qk_norm == MK_QK_NORM_FULL;
    MK_CHECK(plain(m, MK_W_Q_NORM, l, -1, NAME("model.layers.%d.self_attn.q_norm.weight", l), full ? q : hd, 0));
    MK_CHECK(plain(m, MK_W_K_NORM, l, -1, NAME("model.layers.%d.self_attn.k_norm.weight", l), full ? kv : hd, 0));
  }
  if (!c->is_moe[l]) {
    int64_t D = c->dense_inter;
    MK_CHECK(plain(m, MK_W_DENSE_GATE, l, -1, NAME("model.layers.%d.mlp.gate_proj.weight", l), D, H));
    MK_CHECK(plain(m, MK_W_DENSE_UP, l, -1, NAME("model.layers.%d.mlp.up_proj.weight", l), D, H));
    MK_CHECK(plain(m, MK_W_DENSE_DOWN, l, -1, NAME("model.layers.%d.mlp.down_proj.weight", l), H, D));
    return MK_STATUS_OK;
  }
  snprintf(moe, sizeof moe, "model.layers.%d.mlp", l);
  if (c->family == MK_FAMILY_MIXTRAL && !mk_st_find(m->st, NAME("%s.gate.weight", moe)))
    snprintf(moe, sizeof moe, "model.layers.%d.block_sparse_moe", l);
  MK_CHECK(plain(m, MK_W_ROUTER, l, -1, NAME("%s.gate.weight", moe), E, H));
  if (mk_st_find(m->st, NAME("%s.experts.gate_up_proj", moe))) {
    const mk_st_tensor *gu, *dn;
    int64_t s_gu[3] = {E, 2 * I, H}, s_dn[3] = {E, H, I};
    MK_CHECK(expect(m, NAME("%s.experts.gate_up_proj", moe), 3, s_gu, &gu));
    MK_CHECK(expect(m, NAME("%s.experts.down_proj", moe), 3, s_dn, &dn));
    for (int e = 0; e < E; e++) {
      uint64_t base = (uint64_t)e * 2 * I * H;
      MK_CHECK(add(m, MK_W_EXPERT_GATE, l, e, gu, base, I, H));
      MK_CHECK(add(m, MK_W_EXPERT_UP, l, e, gu, base + (uint64_t)I * H, I, H));
      MK_CHECK(add(m, MK_W_EXPERT_DOWN, l, e, dn, (uint64_t)e * H * I, H, I));
    }
  } else {
    int mx = c->family == MK_FAMILY_MIXTRAL;
    for (int e = 0; e < E; e++) {
      MK_CHECK(plain(m, MK_W_EXPERT_GATE, l, e, NAME("%s.experts.%d.%s.weight", moe, e, mx ? "w1" : "gate_proj"), I, H));
      MK_CHECK(plain(m, MK_W_EXPERT_UP, l, e, NAME("%s.experts.%d.%s.weight", moe, e, mx ? "w3" : "up_proj"), I, H));
      MK_CHECK(plain(m, MK_W_EXPERT_DOWN, l, e, NAME("%s.experts.%d.%s.weight", moe, e, mx ? "w2" : "down_proj"), H, I));
    }
  }
  if (c->shared_inter) {
    int64_t S = c->shared_inter;
    MK_CHECK(plain(m, MK_W_SHARED_GATE, l, -1, NAME("%s.shared_expert.gate_proj.weight", moe), S, H));
    MK_CHECK(plain(m, MK_W_SHARED_UP, l, -1, NAME("%s.shared_expert.up_proj.weight", moe), S, H));
    MK_CHECK(plain(m, MK_W_SHARED_DOWN, l, -1, NAME("%s.shared_expert.down_proj.weight", moe), H, S));
    MK_CHECK(plain(m, MK_W_SHARED_EXPERT_GATE, l, -1, NAME("%s.shared_expert_gate.weight", moe), 1, H));
  }
  return MK_STATUS_OK;
}

mk_status mk_model_open(const char *dir, mk_model_t **out) {
  *out = NULL;
  mk_status st;
  char path[PATH_MAX];
  mk_model_t *m = calloc(1, sizeof *m);
  if (!m) return MK_STATUS_OUT_OF_MEMORY;
  snprintf(path, sizeof path, "%s/config.json", dir);
  MK_CHECK_GOTO(mk_model_config_load(path, &m->cfg), st, fail);
  MK_CHECK_GOTO(mk_st_open(dir, &m->st), st, fail);
  const mk_model_config_t *c = &m->cfg;
  m->global_idx = malloc(MK_W_ROLE_COUNT_ * sizeof(int));
  m->layer_idx = malloc((size_t)c->n_layers * MK_W_ROLE_COUNT_ * sizeof(int));
  m->expert_idx = malloc((size_t)c->n_layers * c->n_experts * 3 * sizeof(int));
  m->used = calloc((size_t)mk_st_count(m->st) + 1, 1);
  if (!m->global_idx || !m->layer_idx || !m->expert_idx || !m->used) {
    st = MK_STATUS_OUT_OF_MEMORY;
    goto fail;
  }
  memset(m->global_idx, -1, MK_W_ROLE_COUNT_ * sizeof(int));
  memset(m->layer_idx, -1, (size_t)c->n_layers * MK_W_ROLE_COUNT_ * sizeof(int));
  memset(m->expert_idx, -1, (size_t)c->n_layers * c->n_experts * 3 * sizeof(int));
  MK_CHECK_GOTO(plain(m, MK_W_EMBED, -1, -1, "model.embed_tokens.weight", c->vocab, c->hidden), st, fail);
  MK_CHECK_GOTO(plain(m, MK_W_FINAL_NORM, -1, -1, "model.norm.weight", c->hidden, 0), st, fail);
  const mk_st_tensor *lm = mk_st_find(m->st, "lm_head.weight");
  if (!c->tie_word_embeddings || lm) /* a tied model may still carry a copy: checked, unused */
    MK_CHECK_GOTO(plain(m, MK_W_LM_HEAD, -1, -1, "lm_head.weight", c->vocab, c->hidden), st, fail);
  if (c->tie_word_embeddings) m->global_idx[MK_W_LM_HEAD] = -1;
  for (int l = 0; l < c->n_layers; l++) MK_CHECK_GOTO(map_layer(m, l), st, fail);
  for (int i = 0; i < mk_st_count(m->st); i++) {
    const char *n = mk_st_get(m->st, i)->name;
    static const char inv[] = "rotary_emb.inv_freq"; /* buffers of older checkpoints */
    size_t len = strlen(n);
    if (m->used[i] || (len >= sizeof inv - 1 && !strcmp(n + len - (sizeof inv - 1), inv))) continue;
    MK_WARN(MK_SUBSYS_MODEL, "model %s: unexpected tensor '%s' (not part of a %s model with this config)", dir, n,
            mk_model_family_name(c->family));
    st = MK_STATUS_INVALID_ARGUMENT;
    goto fail;
  }
  *out = m;
  return MK_STATUS_OK;
fail:
  mk_model_close(m);
  return st;
}

void mk_model_close(mk_model_t *m) {
  if (!m) return;
  mk_st_close(m->st);
  free(m->w);
  free(m->global_idx);
  free(m->layer_idx);
  free(m->expert_idx);
  free(m->used);
  free(m);
}

const mk_model_config_t *mk_model_config(const mk_model_t *m) { return &m->cfg; }
const mk_st_t *mk_model_checkpoint(const mk_model_t *m) { return m->st; }

const mk_weight *mk_model_weight(const mk_model_t *m, mk_weight_role role, int layer, int expert) {
  const mk_model_config_t *c = &m->cfg;
  if ((unsigned)role >= MK_W_ROLE_COUNT_ || layer >= c->n_layers || expert >= c->n_experts) return NULL;
  int is_exp = role >= MK_W_EXPERT_GATE && role <= MK_W_EXPERT_DOWN;
  if ((layer < 0) != (role <= MK_W_LM_HEAD) || (is_exp != (expert >= 0))) return NULL;
  int i = *slot((mk_model_t *)m, role, layer, expert);
  return i < 0 ? NULL : &m->w[i];
}

int mk_model_weight_count(const mk_model_t *m) { return m ? m->nw : 0; }
const mk_weight *mk_model_weight_at(const mk_model_t *m, int i) { return m && i >= 0 && i < m->nw ? &m->w[i] : NULL; }

mk_status mk_model_read_f32(const mk_model_t *m, const mk_weight *w, int64_t r0, int64_t r1, float *dst) {
  if (!w || r0 < 0 || r0 > r1 || r1 > w->rows) return MK_STATUS_INVALID_ARGUMENT;
  size_t es = mk_dtype_size(w->tensor->dtype);
  const uint8_t *p = (const uint8_t *)mk_st_data(m->st, w->tensor) + (w->elem_offset + (uint64_t)r0 * w->cols) * es;
  mk_dtype_to_f32(w->tensor->dtype, p, dst, (size_t)((r1 - r0) * w->cols));
  return MK_STATUS_OK;
}
