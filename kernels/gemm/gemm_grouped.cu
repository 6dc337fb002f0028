/* gemm_grouped.cu — grouped GEMM for MoE experts: the core with per-group row counts read on
 * the device and no-op hooks. */
#include "kernels/gemm/gemm_core.cuh"

int64_t mk_param_gemm_tile_n(void);  /* gemm.cu: MK_GEMM_TILE_N */
int64_t mk_param_gemm_group_m(void); /* gemm.cu: MK_GEMM_GROUP_M */
int64_t mk_param_gemm_claim(void);   /* gemm.cu: MK_GEMM_CLAIM */
mk_status mk_gemm_claim_counters(cudaStream_t stream, uint32_t **claim); /* gemm.cu */

extern "C" mk_status mk_gemm_grouped_bf16(const uint16_t *A, const uint16_t *B, uint16_t *C, const int32_t *rows,
                                          int groups, int64_t m_cap, int64_t N, int64_t K, mk_gemm_b_layout b_layout,
                                          mk_stream_t stream) {
  if (!rows) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "gemm_grouped: rows[] is NULL");
  mk_gemm_args args = {C, m_cap, N, K, groups, rows};
  mk_gemm_policy_plain policy;
  policy.group_m = (int)mk_param_gemm_group_m();
  if (mk_param_gemm_claim() == 1 && m_cap > 0) MK_CHECK(mk_gemm_claim_counters((cudaStream_t)stream, &args.claim));
  return mk_gemm_core_launch(A, B, args, b_layout, policy, 0, (int)mk_param_gemm_tile_n(),
                             (cudaStream_t)stream);
}
