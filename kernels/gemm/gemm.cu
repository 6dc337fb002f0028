/* gemm.cu — the plain GEMM: the core (gemm_core.cuh) with no-op hooks, data-parallel in the
 * tile width that suits the shape (128, 160, 224 or 256 columns: mk_gemm_pick_width), or
 * with the last wave of 256-wide tiles split along K (mk_gemm_split_plan picks per shape). The split needs an
 * fp32 workspace of (splits - 1) partial tiles per split tile (about one per SM where the
 * model picks it) plus flags; it is allocated once per (device, stream) and kept for the
 * life of the process (the flags re-arm themselves, so launches on one stream reuse it in
 * stream order). While a stream is being captured into a graph no workspace can be
 * allocated: a stream that has none yet then runs data-parallel.
 * M <= 128 with B [N, K] (decode) goes to the skinny kernel (gemm_skinny.cuh: weights on the
 * wide side of the wgmma, streamed once; k-slices meet in the same workspace). */
#include <pthread.h>

#include "kernels/gemm/gemm_skinny.cuh"

/* 0: pick the tile width per shape; 128, 160, 224 or 256: force it (tuning, tests; the
 * grouped GEMM and the fused ops take only 128 or 256 and pick for any other value). */
MK_PARAM_INT(gemm_tile_n, "GEMM_TILE_N", 0, 0, 256)
/* Epilogue: 1 stages each warp's 16 x 64 slabs of C in shared memory for 16-byte stores (widths 128 and
 * 256); 0 stores bf16 pairs straight from the accumulators (gemm_core.cuh). */
MK_PARAM_INT(gemm_epi, "GEMM_EPI", 1, 0, 1)
/* Tile-rows per group of the default tile order (L2 reuse of B panels). */
MK_PARAM_INT(gemm_group_m, "GEMM_GROUP_M", 16, 1, 1024)
/* -1: split the last wave along K where the model says it pays; 0 (or 1): never; 2..16:
 * always, in that many k-slices. */
MK_PARAM_INT(gemm_split_k, "GEMM_SPLIT_K", -1, -1, 16)
/* Skinny kernel for M <= 128, B [N, K]: -1 auto (weights of at least 32 MiB: mk_gemm_skinny_pays),
 * 0 off (the core), 1 every such shape. */
MK_PARAM_INT(gemm_skinny, "GEMM_SKINNY", -1, -1, 1)
/* Skinny kernel's weight tile height: 64 (both consumer warpgroups on one 64-row tile, k-steps
 * alternating; cuBLASLt's shape at decode) or 128 (a warpgroup per 64 rows); other values: 64.
 * Also GEMM+AR's small-M path. */
MK_PARAM_INT(gemm_skinny_bn, "GEMM_SKINNY_BN", 64, 64, 128)
/* Skinny kernel launched with programmatic stream serialisation (1) or plainly (0): its CTAs may
 * be placed while the previous kernel on the stream finishes; they wait (griddepcontrol.wait) for
 * it before any global access (gemm_skinny.cuh). */
MK_PARAM_INT(gemm_skinny_pdl, "GEMM_SKINNY_PDL", 1, 0, 1)
/* Skinny kernel: no k-slices where a tile's weights (bn x K x 2 bytes) are under this many KiB
 * (0: split wherever the tiles leave SMs idle; mk_gemm_skinny_splits). */
MK_PARAM_INT(gemm_skinny_split_kb, "GEMM_SKINNY_SPLIT_KB", 256, 0, 1 << 20)
/* 1: a consumer warpgroup of the core none of whose 64 rows of the tile is valid (M tails, MoE
 * experts with few rows) issues no wgmma for it; 0: both always compute; -1 (default): as the
 * caller's mk_gemm_args.wg_skip asks (the MoE GEMMs of decode-sized handles). Read on the host at
 * every core launch (mk_gemm_core_launch_bn). Run cac236a (2 x H200, same routing draw, on and
 * off in turns): MoE decode at EP = 2 2-8 % faster with it; a grouped GEMM 1100 x 28672 x 4096 of 8
 * groups 15 % slower (0.600 against 0.521 ms), hence not everywhere: with fixed tiles the CTAs drift
 * apart and an expert's tile-rows stop sharing its B panels in L2 (ncu, session 13: 2.16 against 1.73
 * GB of DRAM reads; docs/perf/NOTES.md). */
MK_PARAM_INT(gemm_wg_skip, "GEMM_WG_SKIP", -1, -1, 1)
/* Grouped GEMM (mk_gemm_grouped_bf16): 1 its CTAs claim tiles in order from a counter of the
 * (device, stream) workspace (mk_gemm_units' dynamic claims), 0 each walks fixed tiles. */
MK_PARAM_INT(gemm_claim, "GEMM_CLAIM", 0, 0, 1)

namespace {
struct gemm_ws {
  int dev;
  cudaStream_t stream;
  uint8_t *base;
  size_t bytes;
};
gemm_ws g_ws[32];
int g_nws;
pthread_mutex_t g_ws_lock = PTHREAD_MUTEX_INITIALIZER;
const size_t kClaimBytes = 64;                     /* the grouped GEMM's claim counters, at the end of the flags */
const size_t kFlagBytes = 64 * 1024 + kClaimBytes; /* room for 8192 partial tiles' two flags, then the claims */
}  // namespace

/* The workspace of (current device, stream) with at least `bytes` of partials; *base = NULL
 * when none can be had now (capture in progress, or the table is full). */
static mk_status gemm_workspace(cudaStream_t stream, size_t bytes, uint8_t **base) {
  *base = NULL;
  int dev = 0;
  MK_CUDA_CHECK(cudaGetDevice(&dev));
  mk_status st = MK_STATUS_OK;
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  cudaError_t e = cudaSuccess;
  uint8_t *p = NULL;
  int i = 0;
  pthread_mutex_lock(&g_ws_lock);
  while (i < g_nws && !(g_ws[i].dev == dev && g_ws[i].stream == stream)) i++;
  if (i < g_nws && g_ws[i].bytes >= bytes) {
    *base = g_ws[i].base;
    goto done;
  }
  MK_CUDA_CHECK_GOTO(cudaStreamIsCapturing(stream, &cap), st, done);
  if (cap != cudaStreamCaptureStatusNone || i == (int)(sizeof g_ws / sizeof g_ws[0])) goto done;
  if (i < g_nws) { /* too small: cudaFree waits for the kernels still using it */
    cudaFree(g_ws[i].base);
    g_ws[i].base = NULL;
    g_ws[i].bytes = 0;
  }
  e = cudaMalloc((void **)&p, kFlagBytes + bytes);
  if (e == cudaSuccess) e = cudaMemsetAsync(p, 0, kFlagBytes, stream);
  if (e != cudaSuccess) {
    if (p) cudaFree(p);
    (void)cudaGetLastError();
    MK_WARN(MK_SUBSYS_KERNEL, "gemm: no split-K workspace (%zu bytes): %s; running data-parallel", bytes,
            cudaGetErrorString(e));
    goto done;
  }
  g_ws[i] = gemm_ws{dev, stream, p, bytes};
  if (i == g_nws) g_nws++;
  *base = p;
done:
  pthread_mutex_unlock(&g_ws_lock);
  return st;
}

/* gemm_grouped.cu (MK_GEMM_CLAIM): the claim counters of (current device, stream), zeroed at
 * allocation and re-armed by each launch; NULL when no workspace can be had now. */
mk_status mk_gemm_claim_counters(cudaStream_t stream, uint32_t **claim) {
  uint8_t *ws = NULL;
  *claim = NULL;
  MK_CHECK(gemm_workspace(stream, 0, &ws));
  if (ws) *claim = (uint32_t *)(ws + kFlagBytes - kClaimBytes);
  return MK_STATUS_OK;
}

extern "C" mk_status mk_gemm_bf16(const uint16_t *A, const uint16_t *B, uint16_t *C, int64_t M, int64_t N, int64_t K,
                                  mk_gemm_b_layout b_layout, mk_stream_t stream) {
  mk_gemm_args args = {C, M, N, K, 1, NULL};
  mk_gemm_policy_plain policy;
  policy.group_m = (int)mk_param_gemm_group_m();
  const int tile_n = (int)mk_param_gemm_tile_n();
  cudaStream_t s = (cudaStream_t)stream;
  MK_CHECK(mk_gemm_core_check(A, B, args, b_layout, tile_n));
  if (M == 0) return MK_STATUS_OK;
  int grid = 0;
  MK_CHECK(mk_gemm_sm_count(&grid));
  const int64_t skinny = mk_param_gemm_skinny();
  if ((skinny == 1 || (skinny == -1 && mk_gemm_skinny_pays(N, K))) &&
      M <= mk_gemm_skinny_config<16, 64>::kMaxM && b_layout == MK_GEMM_B_NK) {
    const int bn = mk_gemm_skinny_bn();
    int splits = mk_gemm_skinny_splits(N, K, grid, bn);
    uint8_t *ws = NULL;
    if (splits > 1 && mk_gemm_skinny_flag_words(N, splits, bn) * 4 <= kFlagBytes - kClaimBytes)
      MK_CHECK(gemm_workspace(s, mk_gemm_skinny_ws_bytes(M, N, splits, bn), &ws));
    if (!ws) splits = 1;
    return mk_gemm_skinny_launch(A, B, C, M, N, K, bn, splits, ws ? (float *)(ws + kFlagBytes) : NULL, (uint32_t *)ws,
                                 grid, s);
  }
  args.split_tiles = (int)mk_gemm_split_plan(args, grid, (int)mk_param_gemm_split_k(), tile_n, &args.splits);
  const size_t parts = (size_t)(args.splits - 1) * args.split_tiles;
  if (args.split_tiles && parts * 2 * 4 <= kFlagBytes - kClaimBytes) {
    const int bn = tile_n ? tile_n : 256;
    uint8_t *ws = NULL;
    MK_CHECK(gemm_workspace(s, parts * mk_gemm_config::kBM * bn * 4, &ws));
    if (ws) {
      args.flags = (uint32_t *)ws;
      args.ws = (float *)(ws + kFlagBytes);
      const int units = (int)(mk_gemm_tiles_bound(args, bn) - args.split_tiles) + args.split_tiles * args.splits;
      grid = std::min(grid, units);
      if (bn == 256) return mk_gemm_core_launch_bn<mk_gemm_policy_plain, 256, true>(A, B, args, b_layout, policy, grid, s);
      return mk_gemm_core_launch_bn<mk_gemm_policy_plain, 128, true>(A, B, args, b_layout, policy, grid, s);
    }
  }
  args.split_tiles = args.splits = 0;
  return mk_gemm_core_launch<mk_gemm_policy_plain, true>(A, B, args, b_layout, policy, 0, tile_n, s);
}
