/* ref_internal.h — helpers shared inside models/reference (not a public header). */
#ifndef MK_MODELS_REF_INTERNAL_H
#define MK_MODELS_REF_INTERNAL_H

#include <stdint.h>

#include "models/mk_models.h"

typedef void (*mk_ref_task_fn)(void *ctx, int64_t begin, int64_t end);
/* Run fn over [0, items) in static chunks on the pool (inline when work is small). */
void mk_ref_parallel_(int64_t items, double work, mk_ref_task_fn fn, void *ctx);
int mk_ref_threads_(void);
void mk_ref_linear_(const float *x, int64_t n, int64_t in, const float *w, const float *b, int64_t out, float *y);
void mk_ref_rmsnorm_(const float *x, const float *w, int64_t n, int64_t dim, float eps, float *out);
void mk_ref_rope_(float *v, int n_heads, int hd, int pos, double theta);
/* bf16 != 0: x is taken as already rounded; intermediates and y rounded to bf16 (the GPU's). */
mk_status mk_ref_dense_mlp_(const float *x, int64_t n, int64_t H, int64_t I, const float *g, const float *u,
                            const float *d, float *y, int bf16);
/* v[i] = bf16(v[i]) (round to nearest even) */
void mk_ref_round_bf16_(float *v, int64_t n);
/* mk_ref_moe_block, and when margin is not NULL: margin[t] = min(margin[t], the token's relative
 * top-k router margin) (mk_ref_route_margin); force_ids not NULL: [n, top_k] experts to use
 * instead of the router's top-k (weighted by their router probabilities). */
mk_status mk_ref_moe_block_(const mk_ref_moe_weights *w, const float *x, int n, float *out, int32_t *topk_ids,
                            float *topk_w, float *margin, const int32_t *force_ids);

#endif
