/* gemm_ar.cu — fused GEMM + AllReduce: C[M, N] = sum_p A_p[M, K] @ B_p on every rank, one
 * launch, bit-identical on all ranks: one-shot, every rank pulls every block of the W partials
 * (over NVLink inside the node group) and sums them in the order 0..W-1 (fused_reduce.cuh has
 * the layout, flags and barrier points). Any M. Traffic: each rank reads (W - 1) M N bf16, the
 * decode (small M) recipe; a two-shot path (reduce-scatter, then all-gather of the reduced
 * rows) for large M is not built yet. */
#include "kernels/fused/fused_reduce.cuh"

extern "C" mk_status mk_fused_preload_ar(void) { return mk_reduce_preload<MK_FUSED_GEMM_AR>(); }

extern "C" mk_status mk_gemm_ar(mk_fused_t *f, const mk_fused_args *a, mk_stream_t stream) {
  MK_CHECK(mk_fused_check(f, MK_FUSED_GEMM_AR, a));
  return mk_reduce_launch<MK_FUSED_GEMM_AR>(f, a, a->C, (cudaStream_t)stream);
}
