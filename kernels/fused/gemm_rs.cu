/* gemm_rs.cu — fused GEMM + ReduceScatter: C_r[Ms, N] = rows [r Ms, (r+1) Ms) of
 * sum_p A_p[M, K] @ B_p, Ms = M/W, one launch, a fixed reduction order (ranks 0..W-1).
 * The policy, buffer layout, flags and barrier points are in fused_reduce.cuh: each rank's
 * GEMM stores its partial locally and flags each 128 x 128 block to the block's owner; the
 * owner's reducer CTAs pull the W partials of its rows over NVLink (unicast, no multicast)
 * as they complete and sum them in rank order. Other node groups: one proxied put per pair
 * after the GEMM (correctness path). */
#include "kernels/fused/fused_reduce.cuh"

extern "C" mk_status mk_fused_preload_rs(void) { return mk_reduce_preload<MK_FUSED_GEMM_RS>(); }

extern "C" mk_status mk_gemm_rs(mk_fused_t *f, const mk_fused_args *a, mk_stream_t stream) {
  MK_CHECK(mk_fused_check(f, MK_FUSED_GEMM_RS, a));
  return mk_reduce_launch<MK_FUSED_GEMM_RS>(f, a, a->C, (cudaStream_t)stream);
}
