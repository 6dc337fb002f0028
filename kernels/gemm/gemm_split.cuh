/* gemm_split.cuh — launcher of the GEMM core with the last wave split along K on the device
 * (mk_gemm_dev_split in gemm_core.cuh): for grouped GEMMs whose tile count only the kernel
 * knows (MoE decode: fewer tiles than SMs). The plain GEMM plans its split on the host
 * (mk_gemm_split_plan) and does not use this. */
#pragma once
#include "kernels/gemm/gemm_core.cuh"

/* As mk_gemm_core_launch (widths 128 and 256), with the last wave split along K on the device
 * (mk_gemm_dev_split; args.splits = -max slices, 2 <= max <= 16; args.split_mode). The grid is
 * capped at the tile bound times max, not at the tile bound, so slices can fill the SMs a
 * short wave leaves idle. args.ws: >= 2 * grid * 128 * 256 * 4 bytes; args.flags: >= 4 * grid
 * words, zeroed once (they re-arm themselves); both owned by the caller, used by one launch
 * at a time. */
template <class Policy>
static mk_status mk_gemm_core_launch_split(const uint16_t *A, const uint16_t *B, const mk_gemm_args &args,
                                           mk_gemm_b_layout layout, const Policy &policy, int grid, int tile_n,
                                           cudaStream_t stream) {
  MK_CHECK(mk_gemm_core_check(A, B, args, layout, tile_n));
  if (args.splits > -2 || args.splits < -16 || !args.ws || !args.flags)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "gemm: device split-K needs splits in [-16, -2] (got %d) and a workspace", args.splits);
  if (args.m_cap == 0) return MK_STATUS_OK;
  if (grid <= 0) MK_CHECK(mk_gemm_sm_count(&grid));
  if (tile_n != 128 && tile_n != 256) tile_n = mk_gemm_pick_width(args, grid, false);
  const int64_t want = mk_gemm_tiles_bound(args, tile_n) * -args.splits;
  if (want < grid) grid = (int)want;
  if (tile_n == 256) return mk_gemm_core_launch_bn<Policy, 256, true>(A, B, args, layout, policy, grid, stream);
  return mk_gemm_core_launch_bn<Policy, 128, true>(A, B, args, layout, policy, grid, stream);
}
