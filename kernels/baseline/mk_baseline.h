/* mk_baseline.h — the unfused baselines the fused ops are compared against. Included by
 * kernels/mk_kernels.h.
 *
 * cuBLASLt GEMM (bf16 in, fp32 accumulate, bf16 out), same shapes and layouts as mk_gemm.h:
 *   mk_cublaslt_t *lt; mk_cublaslt_create(&lt);
 *   mk_cublaslt_gemm_bf16(lt, A, B, C, M, N, K, MK_GEMM_B_NK, stream);
 *   mk_cublaslt_destroy(lt);
 * The handle owns a 32 MiB workspace and remembers the heuristic's algorithm for the last
 * shape, so repeated calls of one shape cost one cublasLtMatmul each. One handle per stream
 * at a time (the workspace is shared by its calls). */
#ifndef MK_KERNELS_BASELINE_MK_BASELINE_H
#define MK_KERNELS_BASELINE_MK_BASELINE_H

#include <stdint.h>

#include "core/mk_core.h"
#include "kernels/gemm/mk_gemm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mk_cublaslt mk_cublaslt_t;

mk_status mk_cublaslt_create(mk_cublaslt_t **out);
void mk_cublaslt_destroy(mk_cublaslt_t *lt); /* NULL: no-op */

/* C[M, N] = A[M, K] @ B through cublasLtMatmul (heuristic algorithm, the handle's workspace).
 * M >= 0 (0 is a no-op), N, K > 0 and multiples of 8. */
mk_status mk_cublaslt_gemm_bf16(mk_cublaslt_t *lt, const uint16_t *A, const uint16_t *B, uint16_t *C, int64_t M,
                                int64_t N, int64_t K, mk_gemm_b_layout b_layout, mk_stream_t stream);

/* Grouped GEMM with mk_gemm_grouped_bf16's meaning: reads rows[] (device) to the host
 * (synchronising the stream), then one cublasLtMatmul per non-empty group. */
mk_status mk_cublaslt_gemm_grouped_bf16(mk_cublaslt_t *lt, const uint16_t *A, const uint16_t *B, uint16_t *C,
                                        const int32_t *rows, int groups, int64_t m_cap, int64_t N, int64_t K,
                                        mk_gemm_b_layout b_layout, mk_stream_t stream);

#ifdef __cplusplus
}
#endif
#endif /* MK_KERNELS_BASELINE_MK_BASELINE_H */
