/* mk_kernels.h — public launchers of mkernel's CUDA kernels. Each takes a stream, checks
 * its launch, and returns mk_status. Pointers are device pointers. */
#ifndef MK_KERNELS_H
#define MK_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "core/mk_core.h"
#include "kernels/baseline/mk_baseline.h"
#include "kernels/gemm/mk_gemm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st *mk_stream_t; /* == cudaStream_t */

/* ---- elementwise ---- */
/* out[i] = bf16(uniform(seed, i) in [lo, hi)), i < n; bit-identical to the host formula in
 * core/rng.h. */
mk_status mk_fill_uniform_bf16(uint16_t *out, size_t n, uint64_t seed, float lo, float hi, mk_stream_t stream);
mk_status mk_fill_uniform_f32(float *out, size_t n, uint64_t seed, float lo, float hi, mk_stream_t stream);

/* ---- model elementwise ops (bf16 = uint16_t bits; fp32 arithmetic inside) ----
 * Each has a CPU twin in tests/kernels/test_elementwise.c. */
/* out[t, :] = fp32(table[ids[t], :]) ([vocab, dim] bf16); an id outside [0, vocab) gives NaNs. */
mk_status mk_embed_gather(const int32_t *ids, int64_t n, const uint16_t *table, int64_t vocab, int64_t dim,
                          float *out, mk_stream_t stream);
/* RMSNorm of fp32 rows x [n, dim] with fp32 weight w [dim] -> out_bf16 and/or out_f32 (either NULL). */
mk_status mk_rmsnorm_f32(const float *x, const float *w, int64_t n, int dim, float eps, uint16_t *out_bf16,
                         float *out_f32, mk_stream_t stream);
/* RMSNorm in place of bf16 rows x [rows, dim]: mean of squares = sumsq[r] / norm_dim when sumsq
 * is given (a norm across a width split over ranks), else over the row itself (norm_dim == dim). */
mk_status mk_rmsnorm_bf16(uint16_t *x, int64_t rows, int dim, const float *w, const float *sumsq, int norm_dim,
                          float eps, mk_stream_t stream);
/* out[r] = sum of squares of bf16 row r (fp32). */
mk_status mk_rowsumsq_bf16(const uint16_t *x, int64_t rows, int dim, float *out, mk_stream_t stream);
/* Rotate-half RoPE in place on x [n, heads * hd] bf16, token t at position pos0 + t. */
mk_status mk_rope_neox_bf16(uint16_t *x, int64_t n, int heads, int hd, int64_t pos0, double theta,
                            mk_stream_t stream);
/* The same with token t at position pos[t] (device int32 [n], each >= 0): many sequences' rows
 * in one launch. */
mk_status mk_rope_neox_pos_bf16(uint16_t *x, int64_t n, int heads, int hd, const int32_t *pos, double theta,
                                mk_stream_t stream);
/* The merged q/k/v projection's output qkv [n, (nh + 2 nkv) hd] -> q [n, nh hd], k and v [n, nkv hd]:
 * bias bq/bk/bv (each may be NULL), per-head RMSNorm of q and k with q_norm/k_norm [hd] (both or neither),
 * rotate-half RoPE of q and k at position pos0 + t, each step rounded to bf16 as mk_bias_add_bf16,
 * mk_rmsnorm_bf16 and mk_rope_neox_bf16 do. hd even, <= 256. */
mk_status mk_qkv_post_bf16(const uint16_t *qkv, int64_t n, int nh, int nkv, int hd, const float *bq, const float *bk,
                           const float *bv, const float *q_norm, const float *k_norm, float eps, int64_t pos0,
                           double theta, uint16_t *q, uint16_t *k, uint16_t *v, mk_stream_t stream);
/* x[r, c] += b[c] (bf16 rows, fp32 bias). */
mk_status mk_bias_add_bf16(uint16_t *x, int64_t rows, int cols, const float *b, mk_stream_t stream);
/* x[t, i] += (row_scale ? row_scale[t] : 1) * y[t, i]; x fp32 [n, dim], y bf16. */
mk_status mk_residual_add(float *x, const uint16_t *y, const float *row_scale, int64_t n, int dim,
                          mk_stream_t stream);
/* out = silu(gate) * up, n elements (may alias gate or up). */
mk_status mk_swiglu_bf16(const uint16_t *gate, const uint16_t *up, uint16_t *out, int64_t n, mk_stream_t stream);
/* out[r] = argmax of x[r, 0..cols) (lowest index on ties). */
mk_status mk_argmax_f32(const float *x, int64_t rows, int cols, int32_t *out, mk_stream_t stream);
mk_status mk_convert_bf16_to_f32(const uint16_t *in, float *out, int64_t n, mk_stream_t stream);
mk_status mk_convert_f32_to_bf16(const float *in, uint16_t *out, int64_t n, mk_stream_t stream);
/* y[n, out] (fp32) = x[n, in] (fp32) @ w[out, in]^T (bf16): router, gates, lm_head logits. */
mk_status mk_linear_f32out(const float *x, int64_t n, int in, const uint16_t *w, int out, float *y,
                           mk_stream_t stream);

#ifdef __cplusplus
}
#endif

/* ---- fused AG+GEMM, GEMM+RS, GEMM+AR ---- */
#include "kernels/fused/mk_fused.h"

/* ---- attention: flash forward, LSE merge, paged decode ---- */
#include "kernels/attention/mk_attention.h"

/* ---- MoE: router, fused and unfused expert-parallel block ---- */
#include "kernels/moe/mk_moe.h"

#endif /* MK_KERNELS_H */
