/* mk_gemm.h — GEMM launchers (bf16 in, fp32 accumulate, bf16 out) and the fp32 reference
 * GEMM used to check them. Included by kernels/mk_kernels.h. Pointers are device pointers,
 * 16-byte aligned; matrices are dense row-major. */
#ifndef MK_KERNELS_GEMM_MK_GEMM_H
#define MK_KERNELS_GEMM_MK_GEMM_H

#include <stdint.h>

#include "core/mk_core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st *mk_stream_t; /* == cudaStream_t */

/* How B is stored: [N, K] (checkpoints' layout, "NT") or [K, N]. */
typedef enum mk_gemm_b_layout {
  MK_GEMM_B_NK = 0,
  MK_GEMM_B_KN = 1,
} mk_gemm_b_layout;

/* C[M, N] = A[M, K] @ B. Any M >= 0 (0 is a no-op); N, K > 0 and multiples of 8.
 * Hopper (sm_90a) only. Where the last wave of tiles is split along K (MK_GEMM_SPLIT_K),
 * the call uses an fp32 workspace owned by (device, stream), allocated on the first such
 * call outside graph capture and kept; a graph captured with it must not run concurrently
 * with other work on that stream that also uses it. Results are deterministic (the same
 * bits on every run on the same GPU model). */
mk_status mk_gemm_bf16(const uint16_t *A, const uint16_t *B, uint16_t *C, int64_t M, int64_t N, int64_t K,
                       mk_gemm_b_layout b_layout, mk_stream_t stream);

/* Grouped GEMM (MoE experts): for g < groups, rows [off_g, off_g + rows[g]) of A [m_cap, K]
 * times B_g = B + g * N * K (same layout for every group) into the same rows of C [m_cap, N],
 * off_g = rows[0] + ... + rows[g-1]. rows[] lives in device memory and is read by the kernel
 * (negative counts count as 0; rows past m_cap are neither read nor written). Rows of C
 * beyond the sum of the counts are left untouched. 1 <= groups <= 512. */
mk_status mk_gemm_grouped_bf16(const uint16_t *A, const uint16_t *B, uint16_t *C, const int32_t *rows, int groups,
                               int64_t m_cap, int64_t N, int64_t K, mk_gemm_b_layout b_layout, mk_stream_t stream);

/* Reference: C32[M, N] = A @ B in fp32 (simple tiled SIMT kernel; for checking large shapes
 * on the GPU). Any M, N, K >= 1. */
mk_status mk_gemm_ref_f32(const uint16_t *A, const uint16_t *B, float *C32, int64_t M, int64_t N, int64_t K,
                          mk_gemm_b_layout b_layout, mk_stream_t stream);

/* Relative Frobenius error ||bf16 out - ref|| / ||ref|| of n elements, computed on the device
 * into *err (host pointer; the call synchronises the stream). NaN/inf in out give +inf. */
mk_status mk_gemm_rel_err(const uint16_t *out, const float *ref, int64_t n, double *err, mk_stream_t stream);

/* MK_GEMM_SKINNY as loaded (-1 auto, 0 off, 1 every M <= 128 with B [N, K]; gemm.cu). */
int64_t mk_param_gemm_skinny(void);
/* MK_GEMM_SKINNY_BN as loaded (the skinny kernel's weight tile height, 64 or 128; gemm.cu). */
int64_t mk_param_gemm_skinny_bn(void);
/* MK_GEMM_SKINNY_PDL as loaded (1: the skinny kernel is launched as a programmatic dependent). */
int64_t mk_param_gemm_skinny_pdl(void);
/* MK_GEMM_SKINNY_SPLIT_KB as loaded (no k-slices for tiles of fewer weight bytes, KiB; gemm.cu). */
int64_t mk_param_gemm_skinny_split_kb(void);

#ifdef __cplusplus
}
#endif
#endif /* MK_KERNELS_GEMM_MK_GEMM_H */
