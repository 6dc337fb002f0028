/* layout.c — the parallel layout of a model on a world: attention TP inside a node group,
 * experts over every rank; checks that each split divides evenly. */
#include "core/check.h"
#include "layers/layers_internal.h"

/* Why tp does not fit (NULL: it fits). */
static const char *tp_misfit(const mk_model_config_t *c, const mk_world *w, int tp) {
  if (tp < 1 || w->local_size % tp) return "it does not divide the ranks per node (TP stays inside a node)";
  if (c->n_heads % tp) return "it does not divide the attention heads";
  if (c->n_kv_heads % tp) return "it does not divide the KV heads";
  if ((c->n_heads / tp) * c->head_dim % 8 || (c->n_kv_heads / tp) * c->head_dim % 8)
    return "the per-rank q or kv width (heads x head_dim) is not a multiple of 8";
  if (c->dense_inter && (c->dense_inter % tp || (c->dense_inter / tp) % 8))
    return "the per-rank dense MLP width is not a multiple of 8";
  if (c->shared_inter && (c->shared_inter % tp || (c->shared_inter / tp) % 8))
    return "the per-rank shared-expert width is not a multiple of 8";
  return NULL;
}

mk_status mk_layers_layout_choose(const mk_model_config_t *c, const mk_world *w, int tp_req, mk_layout_t *out) {
  if (!c || !w || !out || w->size < 1 || w->local_size < 1 || tp_req < 0)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "layout: bad arguments");
  if (c->n_experts % w->size)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL,
                  "layout: %d experts do not divide over %d ranks (EP spans every rank)", c->n_experts, w->size);
  if (c->hidden % 8 || c->moe_inter % 8)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL,
                  "layout: hidden %d and expert width %d must be multiples of 8 (GEMM operands)", c->hidden, c->moe_inter);
  int tp = tp_req;
  if (tp) {
    const char *why = tp_misfit(c, w, tp);
    if (why) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "layout: --tp %d: %s (%d ranks per node, %d heads, "
                           "%d KV heads, head_dim %d)", tp, why, w->local_size, c->n_heads, c->n_kv_heads, c->head_dim);
  } else {
    for (tp = w->local_size; tp > 1 && tp_misfit(c, w, tp); tp--) {}
    if (tp_misfit(c, w, tp))
      MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "layout: no tensor-parallel size fits: %s",
                    tp_misfit(c, w, 1));
  }
  *out = (mk_layout_t){.world = w->size, .tp = tp, .ep = w->size};
  return MK_STATUS_OK;
}

int mk_layers_moe_dec_cap_(int max_seq, int want, int tp) {
  if (want < 0) want = tp >= 1 ? (64 + tp - 1) / tp : 64; /* a decode batch of 64 over the TP group */
  return want > 0 && want < max_seq ? want : 0;
}

int mk_layers_moe_use_dec_(int cap, int fused, int n, int tp) {
  return cap > 0 && fused && tp >= 1 && n >= 1 && (n + tp - 1) / tp <= cap;
}
