/* gemm_rs.cu — fused GEMM + ReduceScatter: C_r[Ms, N] = rows [r Ms, (r+1) Ms) of
 * sum_p A_p[M, K] @ B_p, Ms = M/W, one launch, a fixed reduction order (ranks 0..W-1).
 * The policy, buffer layout, flags and barrier points are in fused_reduce.cuh: each rank's
 * GEMM stores its partial locally and flags each 128 x 128 block to the block's owner; the
 * owner's reducer CTAs pull the W partials of its rows over NVLink (unicast, no multicast)
 * as they complete and sum them in rank order. Other node groups: one proxied put per pair
 * after the GEMM (correctness path). */
#include "kernels/fused/fused_reduce.cuh"

/* GEMM+RS / GEMM+AR fold mode (fused_reduce.cuh): 1 = wherever it applies, 0 = off, -1 = GEMM+AR over 2 ranks only,
 * where it was measured faster than the other modes (2 x H200, run 5c64781-x2: AR 1024 0.2316 / 0.2320 ms against
 * the SM two-shot's 0.2378 / 0.2383, AR 4096 0.828 / 0.843 against copy engines' 0.854 / 0.879); RS stays on copy
 * engines there (2048 / 8192 / 16384 fold 0.39 / 1.61 / 3.13-3.16 against 0.38 / 1.51-1.55 / 3.02-3.07); 4 ranks are
 * not measured yet. */
MK_PARAM_INT(fused_fold, "FUSED_FOLD", -1, -1, 1)
/* GEMM+RS / GEMM+AR on copy engines in the owner-by-owner order (W <= 4, MK_FUSED_CE_OVERLAP=0): 1 = the own tiles,
 * computed last, add the peers' partials (pushed by the copy engines into X while the GEMM computes the own rows) in
 * their epilogue, as fold mode does, instead of the reduce kernel after the GEMM (AR: and push the sums to every
 * rank from there, then gather the peers' sums, as fold mode does, instead of the copy-engine second shot); 0 = the
 * reduce kernel; -1 = GEMM+AR over 2 ranks where the copy engines apply by shape (mk_fused_ce_fold_auto), ahead of
 * fold mode there (2 x H200, run a1217a2-x2, in turns, twice: AR 1024 0.2226 / 0.2215 ms against fold's 0.2292 /
 * 0.2292, AR 4096 0.7835 / 0.7839 against 0.8053 / 0.7890); RS stays on the reduce kernel (level, runs 4e1e411-x2,
 * a1217a2-x2); 4 ranks are not measured yet. */
MK_PARAM_INT(fused_ce_fold, "FUSED_CE_FOLD", -1, -1, 1)
/* Fold mode's parts left out, to time them (wrong results): 1 no sums, 2 the peers' rows kept local, 4 no flags,
 * 8 every row stored into the own P by out_row's plain path, 16 the plain GEMM (mk_gemm_bf16) into P instead of the
 * op's kernel, 32 the plain grouped tile order (no owner-by-owner walk). */
MK_PARAM_INT(fused_fold_debug, "FUSED_FOLD_DEBUG", 0, 0, 63)


extern "C" int mk_fused_fold(const mk_fused_t *f, mk_fused_op op, int64_t m, int64_t n) {
  (void)n;
  const int64_t mode = mk_param_fused_fold();
  if (!f || (unsigned)op > MK_FUSED_GEMM_AR || op == MK_FUSED_AG_GEMM || !f->ws[op].ready || !mode) return 0;
  if (mode < 0 && (op != MK_FUSED_GEMM_AR || f->world != 2)) return 0;
  if (mode < 0 && mk_fused_ce_fold_auto(f, op, m, n)) return 0; /* copy engines with the sums in the epilogue */
  /* the owners' rows whole 128-row tile-rows, W dividing the group of tile-rows (the owner-by-owner order), PX */
  return f->nnodes == 1 && (f->world == 2 || f->world == 4) && f->ws[op].px &&
         m % f->world == 0 && (m / f->world) % 128 == 0;
}

extern "C" mk_status mk_fused_preload_rs(void) { return mk_reduce_preload<MK_FUSED_GEMM_RS>(); }

extern "C" mk_status mk_gemm_rs(mk_fused_t *f, const mk_fused_args *a, mk_stream_t stream) {
  MK_CHECK(mk_fused_check(f, MK_FUSED_GEMM_RS, a));
  return mk_reduce_launch<MK_FUSED_GEMM_RS>(f, a, a->C, (cudaStream_t)stream);
}
