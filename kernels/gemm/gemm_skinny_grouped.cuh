/* gemm_skinny_grouped.cuh — the skinny GEMM (gemm_skinny.cuh) over groups: the MoE decode
 * GEMMs, where each local expert g has rows_g = 2 .. 128 token rows and the time is the stream
 * of the experts' weights. Group g computes C_g^T[N, rows_g] = B_g · A_g^T with B = [groups][N][K]
 * (weights, on the 64-row side of m64nTk16 wgmma) and A_g = rows [row_off_g, row_off_g + rows_g)
 * of A [m_cap, K] (tokens, the narrow n = T side: T in {16, 32, 64, 128}, a template parameter the
 * caller picks from its worst case; rows past rows_g are read but never stored).
 *
 * Work unit u = (group g = u % groups, 64-row weight tile = u / groups): groups interleaved so
 * that the CTAs' first units spread over the experts. Persistent: CTA b takes u = b, b + grid, ...
 * A group with more than T rows is done in T-row chunks, each streaming the tile's weights again
 * (correct, slow: meant for rows_g <= T, the decode case); a group without rows is skipped.
 * Kernel shape as the skinny kernel at BN = 64 (384 threads, one CTA per SM): warpgroup 0's thread
 * 0 fills a deep TMA ring (stage = 64 x 64 weight tile + T x 64 token tile), warpgroups 1 and 2 take
 * the even and odd k-steps, swap partial sums (mk_gemm_skinny_exchange), and the Policy stores.
 *
 * The point: at a unit's first chunk the producer issues the weight loads of the first
 * min(stages, k-steps) stages (arrive.expect_tx of the whole stage, then only the weight box),
 * then calls p.wait_rows(g, rows_g) (it may spin until the group's rows have landed, with
 * acquire semantics, as the core's before_load), then the token boxes of those stages: the
 * weight stream starts at the kernel's start, not when the rows are in.
 *
 * Policy:
 *   static constexpr bool kAfterUnit;
 *   __device__ void wait_rows(int g, int rows);   // producer thread, once per unit (see above)
 *   template <int T> __device__ void store(int g, int row0, int n_rows, int tile, const float (&d)[T / 2],
 *                                          int cw, int warp, int lane) const;
 *       // all 256 consumer threads, per chunk: rows row0 .. row0 + n_rows - 1 of A (n_rows <= T),
 *       // weight rows 64 tile .. + 63; d as mk_gemm_skinny_pairs(_f32)<T, 64> reads it
 *   __device__ void after_unit(int g, int rows);  // only with kAfterUnit: one thread, after every consumer
 *       // thread stored all chunks of the unit and ran __threadfence() (named barrier 1)
 */
#ifndef MK_KERNELS_GEMM_SKINNY_GROUPED_CUH
#define MK_KERNELS_GEMM_SKINNY_GROUPED_CUH

#include "kernels/gemm/gemm_skinny.cuh"

struct mk_gemm_skinny_grouped_args {
  int n, k, groups, tiles;        /* tiles = ceil(n / 64) */
  const int32_t *rows, *row_off;  /* device [groups]: rows of each group, first row in A */
};

template <int T, class P>
__global__ void __launch_bounds__(384, 1)
    mk_gemm_skinny_grouped_kernel(const __grid_constant__ CUtensorMap tma_w, const __grid_constant__ CUtensorMap tma_t,
                                  mk_gemm_skinny_grouped_args a, P p) {
  using Cfg = mk_gemm_skinny_config<T, 64>;
  using namespace mk_sm90;
  extern __shared__ uint8_t smem_raw[];
  /* empty: one arrive per warp of the warpgroup that consumes the stage */
  const mk_gemm_skinny_ring r = mk_gemm_skinny_ring_init<Cfg>(smem_raw, 4);
  uint8_t *smem = r.smem;
  uint64_t *full = r.full;
  const int tid = threadIdx.x, wg = tid / 128;
  const int k_iters = (a.k + Cfg::kBK - 1) / Cfg::kBK, units = a.groups * a.tiles;

  if (wg == 0) {
    /* ---- producer ---- */
    if (tid != 0) return;
    tma_prefetch_desc(&tma_w);
    tma_prefetch_desc(&tma_t);
    mk_gemm_skinny_producer<Cfg> pr;
    for (int u = blockIdx.x; u < units; u += gridDim.x) {
      const int g = u % a.groups, tile = u / a.groups, rows = a.rows[g];
      if (rows <= 0) continue;
      const int row0 = a.row_off[g], nc = (rows + T - 1) / T;
      for (int c = 0; c < nc; c++) {
        const int early = c == 0 ? min(Cfg::kStages, k_iters) : 0; /* stages whose tokens wait for the rows */
        const int s0 = pr.s;
        for (int kb = 0; kb < k_iters; kb++) {
          const int s = pr.next(r);
          uint8_t *sw = smem + s * Cfg::kStageBytes;
          tma_load_3d(sw, &tma_w, &full[s], kb * Cfg::kBK, tile * Cfg::kBN, g);
          if (kb >= early) tma_load_3d(sw + Cfg::kWBytes, &tma_t, &full[s], kb * Cfg::kBK, row0 + c * T, 0);
          if (kb == early - 1) { /* the weights of the first stages are in flight: now the rows */
            p.wait_rows(g, rows);
            for (int q = 0; q < early; q++) {
              const int sq = (s0 + q) % Cfg::kStages;
              tma_load_3d(smem + sq * Cfg::kStageBytes + Cfg::kWBytes, &tma_t, &full[sq], q * Cfg::kBK, row0, 0);
            }
          }
          pr.step();
        }
      }
    }
    return;
  }
  /* ---- consumers ---- warpgroup cw the k-steps cw, cw + 2, ... of each chunk (ring position g0 + i) */
  const int cw = wg - 1, warp = (tid / 32) % 4, lane = tid % 32, l = tid % 128;
  uint32_t g0 = 0;
  float d[T / 2];
  for (int u = blockIdx.x; u < units; u += gridDim.x) {
    const int g = u % a.groups, tile = u / a.groups, rows = a.rows[g];
    if (rows <= 0) continue;
    const int row0 = a.row_off[g], nc = (rows + T - 1) / T;
    for (int c = 0; c < nc; c++) {
      mk_gemm_skinny_mma<T, 64, Cfg>(d, r, g0, k_iters, cw, lane);
      g0 += (uint32_t)k_iters;
      mk_gemm_skinny_exchange<T>(d, r.xb, cw, l);
      p.template store<T>(g, row0 + c * T, min(T, rows - c * T), tile, d, cw, warp, lane);
    }
    if constexpr (P::kAfterUnit) {
      __threadfence();
      named_bar_sync(1, 256);
      if (tid == 128) p.after_unit(g, rows);
    }
  }
}

/* Encodes the maps (B as [groups][n][k], A as [m_cap][k]) and launches on `grid` CTAs. */
template <int T, class P>
static mk_status mk_gemm_skinny_grouped_launch_t(const uint16_t *A, int64_t m_cap, const uint16_t *B,
                                                 const mk_gemm_skinny_grouped_args &a, const P &p, int grid,
                                                 cudaStream_t stream) {
  using Cfg = mk_gemm_skinny_config<T, 64>;
  CUtensorMap mw, mt;
  MK_CHECK(mk_gemm_encode_map(&mw, B, (uint64_t)a.k, (uint64_t)a.n, (uint64_t)a.groups, Cfg::kBK, Cfg::kBN));
  MK_CHECK(mk_gemm_encode_map(&mt, A, (uint64_t)a.k, (uint64_t)m_cap, 1, Cfg::kBK, T));
  auto kern = mk_gemm_skinny_grouped_kernel<T, P>;
  static mk_gemm_smem_attr attr;
  MK_CHECK(attr.set((const void *)kern, Cfg::kSmemBytes));
  kern<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(mw, mt, a, p);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

/* T in {16, 32, 64, 128}; n and k multiples of 8, grid >= 1. */
template <class P>
static mk_status mk_gemm_skinny_grouped_launch(int T, const uint16_t *A, int64_t m_cap, const uint16_t *B,
                                               const mk_gemm_skinny_grouped_args &a, const P &p, int grid,
                                               cudaStream_t stream) {
  if (grid < 1 || a.n % 8 || a.k % 8 || a.groups < 1)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "gemm: grouped skinny GEMM needs n, k multiples of 8 and a grid (n=%d k=%d groups=%d grid=%d)", a.n,
                  a.k, a.groups, grid);
  switch (T) {
    case 16: return mk_gemm_skinny_grouped_launch_t<16>(A, m_cap, B, a, p, grid, stream);
    case 32: return mk_gemm_skinny_grouped_launch_t<32>(A, m_cap, B, a, p, grid, stream);
    case 64: return mk_gemm_skinny_grouped_launch_t<64>(A, m_cap, B, a, p, grid, stream);
    case 128: return mk_gemm_skinny_grouped_launch_t<128>(A, m_cap, B, a, p, grid, stream);
    default: break;
  }
  MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "gemm: grouped skinny token width %d (16/32/64/128)", T);
}

/* Lazy loading: load the four token widths' kernels of policy P now. */
template <class P>
static mk_status mk_gemm_skinny_grouped_preload(void) {
  cudaFuncAttributes fa;
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_gemm_skinny_grouped_kernel<16, P>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_gemm_skinny_grouped_kernel<32, P>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_gemm_skinny_grouped_kernel<64, P>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_gemm_skinny_grouped_kernel<128, P>));
  return MK_STATUS_OK;
}

#endif /* MK_KERNELS_GEMM_SKINNY_GROUPED_CUH */
