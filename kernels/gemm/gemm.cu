/* gemm.cu — the plain GEMM: the core (gemm_core.cuh) with no-op hooks. */
#include "kernels/gemm/gemm_core.cuh"

/* 0: pick the tile width per shape; 128 or 256: force it (tuning, tests). */
MK_PARAM_INT(gemm_tile_n, "GEMM_TILE_N", 0, 0, 256)
/* Tile-rows per group of the default tile order (L2 reuse of B panels). */
MK_PARAM_INT(gemm_group_m, "GEMM_GROUP_M", 16, 1, 1024)

extern "C" mk_status mk_gemm_bf16(const uint16_t *A, const uint16_t *B, uint16_t *C, int64_t M, int64_t N, int64_t K,
                                  mk_gemm_b_layout b_layout, mk_stream_t stream) {
  mk_gemm_args args = {C, M, N, K, 1, NULL};
  mk_gemm_policy_plain policy;
  policy.group_m = (int)mk_param_gemm_group_m();
  return mk_gemm_core_launch(A, B, args, b_layout, policy, 0, (int)mk_param_gemm_tile_n(),
                             (cudaStream_t)stream);
}
