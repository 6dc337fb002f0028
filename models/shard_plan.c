/* shard_plan.c — which box of each tensor a rank reads, for a layout (world, tp, ep):
 *   replicated      embeddings, norms, routers, the shared-expert gate, per-head q/k norms
 *   rows over tp    q/k/v (and their biases, full-width q/k norms) by whole heads; dense and
 *                   shared-expert gate/up; lm_head (vocab-parallel)
 *   cols over tp    o_proj; dense and shared-expert down_proj
 *   experts over ep per-expert tensors of owned experts; dim 0 of fused 3-D expert tensors
 * tp rank = rank % tp, ep rank = rank % ep. Row/col splits are balanced (first ranks may hold
 * one more row); head splits need heads and kv heads divisible by tp. */
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "models/mk_models.h"

struct mk_shard_plan {
  mk_shard_slice *s;
  int n;
  uint64_t bytes;
};

void mk_shard_experts(int n_experts, int ep, int ep_rank, int *first, int *count) {
  int a = (int)((int64_t)n_experts * ep_rank / ep), b = (int)((int64_t)n_experts * (ep_rank + 1) / ep);
  *first = a;
  *count = b - a;
}

static void split(int64_t n, int parts, int r, int64_t *b, int64_t *e) {
  *b = n * r / parts;
  *e = n * (r + 1) / parts;
}

mk_status mk_shard_plan_create(const mk_model_t *m, const mk_layout_t *L, int rank, mk_shard_plan_t **out) {
  *out = NULL;
  const mk_model_config_t *c = mk_model_config(m);
  if (!L || L->world < 1 || L->tp < 1 || L->ep < 1 || L->world % L->tp || L->world % L->ep || rank < 0 || rank >= L->world)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "shard plan: bad layout (world %d, tp %d, ep %d, rank %d)",
                  L ? L->world : 0, L ? L->tp : 0, L ? L->ep : 0, rank);
  if (c->n_heads % L->tp || c->n_kv_heads % L->tp)
    MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_MODEL, "shard plan: tp %d does not divide %d heads and %d kv heads", L->tp,
                  c->n_heads, c->n_kv_heads);
  if (L->ep > c->n_experts)
    MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_MODEL, "shard plan: ep %d is more than %d experts", L->ep, c->n_experts);
  const mk_st_t *st = mk_model_checkpoint(m);
  int nt = mk_st_count(st), tr = rank % L->tp, er = rank % L->ep, e0, ne;
  mk_shard_experts(c->n_experts, L->ep, er, &e0, &ne);
  mk_shard_plan_t *p = calloc(1, sizeof *p);
  unsigned char *seen = calloc((size_t)nt + 1, 1);
  if (p) p->s = calloc((size_t)nt + 1, sizeof *p->s);
  if (!p || !seen || !p->s) {
    free(seen);
    mk_shard_plan_destroy(p);
    return MK_STATUS_OUT_OF_MEMORY;
  }
  const mk_st_tensor *t0 = mk_st_get(st, 0);
  for (int i = 0; i < mk_model_weight_count(m); i++) {
    const mk_weight *w = mk_model_weight_at(m, i);
    const mk_st_tensor *t = w->tensor;
    int ti = (int)(t - t0);
    if (seen[ti]) continue;
    int fused = t->ndim == 3;
    int is_expert = w->role >= MK_W_EXPERT_GATE && w->role <= MK_W_EXPERT_DOWN;
    if (is_expert && !fused && (w->expert < e0 || w->expert >= e0 + ne)) continue;
    seen[ti] = 1;
    mk_shard_slice *s = &p->s[p->n++];
    s->tensor = t;
    for (int d = 0; d < t->ndim; d++) s->begin[d] = 0, s->end[d] = t->shape[d];
    int64_t hd = c->head_dim;
    switch (w->role) {
      case MK_W_Q: case MK_W_Q_BIAS: case MK_W_K: case MK_W_K_BIAS: case MK_W_V: case MK_W_V_BIAS:
      case MK_W_Q_NORM: case MK_W_K_NORM: {
        if ((w->role == MK_W_Q_NORM || w->role == MK_W_K_NORM) && c->qk_norm != MK_QK_NORM_FULL) break;
        int heads = w->role == MK_W_Q || w->role == MK_W_Q_BIAS || w->role == MK_W_Q_NORM ? c->n_heads : c->n_kv_heads;
        s->split = MK_SPLIT_ROWS;
        s->begin[0] = (int64_t)heads / L->tp * tr * hd;
        s->end[0] = (int64_t)heads / L->tp * (tr + 1) * hd;
        break;
      }
      case MK_W_LM_HEAD: case MK_W_DENSE_GATE: case MK_W_DENSE_UP: case MK_W_SHARED_GATE: case MK_W_SHARED_UP:
        s->split = MK_SPLIT_ROWS;
        split(t->shape[0], L->tp, tr, &s->begin[0], &s->end[0]);
        break;
      case MK_W_O: case MK_W_DENSE_DOWN: case MK_W_SHARED_DOWN:
        s->split = MK_SPLIT_COLS;
        split(t->shape[1], L->tp, tr, &s->begin[1], &s->end[1]);
        break;
      case MK_W_EXPERT_GATE: case MK_W_EXPERT_UP: case MK_W_EXPERT_DOWN:
        s->split = MK_SPLIT_EXPERTS;
        if (fused) s->begin[0] = e0, s->end[0] = e0 + ne;
        break;
      default:
        s->split = MK_SPLIT_NONE;
        break;
    }
    uint64_t n = mk_dtype_size(t->dtype);
    for (int d = 0; d < t->ndim; d++) n *= (uint64_t)(s->end[d] - s->begin[d]);
    p->bytes += n;
  }
  free(seen);
  *out = p;
  return MK_STATUS_OK;
}

void mk_shard_plan_destroy(mk_shard_plan_t *p) {
  if (!p) return;
  free(p->s);
  free(p);
}

int mk_shard_plan_count(const mk_shard_plan_t *p) { return p ? p->n : 0; }
const mk_shard_slice *mk_shard_plan_get(const mk_shard_plan_t *p, int i) { return p && i >= 0 && i < p->n ? &p->s[i] : NULL; }
uint64_t mk_shard_plan_bytes(const mk_shard_plan_t *p) { return p ? p->bytes : 0; }

mk_status mk_shard_plan_read(const mk_shard_plan_t *p, const mk_model_t *m, int i, void *dst) {
  const mk_shard_slice *s = mk_shard_plan_get(p, i);
  if (!s) return MK_STATUS_INVALID_ARGUMENT;
  return mk_st_read_raw(mk_model_checkpoint(m), s->tensor, s->begin, s->end, dst);
}

mk_status mk_shard_plan_read_f32(const mk_shard_plan_t *p, const mk_model_t *m, int i, float *dst) {
  const mk_shard_slice *s = mk_shard_plan_get(p, i);
  if (!s) return MK_STATUS_INVALID_ARGUMENT;
  return mk_st_read_f32(mk_model_checkpoint(m), s->tensor, s->begin, s->end, dst);
}
