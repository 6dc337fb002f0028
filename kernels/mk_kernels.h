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
