/* moe_skinny.cuh — the fused MoE's gate/up GEMM (+ SwiGLU) computed swapped for decode-sized
 * handles (MK_MOE_SKINNY; mk_moe_dev.sk_nt): act^T[i, rows] = silu(gate_e) * up_e over each local
 * expert's landed rows, with the expert's interleaved weights w1g (rows 16 q .. 16 q + 7 gate,
 * 16 q + 8 .. + 15 up) on the 64-row side of m64nNk16 wgmma and the expert's rows as its narrow n
 * side, as gemm_skinny.cuh does for the plain small-M GEMM (and cuBLASLt's swapped nvjet tiles).
 *
 * Why: the core puts the rows on the m side, in tiles of 128 rows. An expert of R rows costs
 * ceil(R / 64) x 64 rows of tensor work and ceil(R / 128) passes over its weight panel; at 129 .. 192
 * rows (issue 7's (128, 4096, 8) at EP = 4) two full tile-rows, compute-bound (docs/perf/NOTES.md moe
 * session 14). Here the tensor work is the rows rounded up to the next of 16, 32, 64, 96, 128, 144, 160,
 * 176, 192, and the weights stream once per chunk of rows.
 *
 * Work: a unit is (chunk, weight tile). Expert e's rows [exp_off[e], + rows[e]) are cut in chunks of
 * NTMAX rows (a template parameter, 64, 128 or 192, picked at create from the expected rows an expert,
 * moe.c), chunk-major over the experts in order; each chunk is cut in weight tiles of kBW rows of w1g
 * (kBW / 2 act columns): 128 for chunks of up to 128 rows, 256 for 192-row chunks (session 22's version
 * with 128 read 20 KB of tokens from L2 for 16 KB of weights a k-step, and was L2-bound). Units are
 * assigned statically (u = blockIdx.x, + gridDim.x, ...): every CTA is resident beside the dispatch (the
 * grid is what the dispatch leaves), so none waits behind a CTA that has no SM.
 *
 * Kernel shape (384 threads, one CTA per SM):
 *   warpgroup 0   producers (40 registers), one thread per ring. The weights' (thread 0) loads kBW x 64
 *                 tiles of w1g into its ring and never waits for rows (the weights do not depend on them),
 *                 so it runs up to its ring's depth ahead: the first unit's weights stream while its rows
 *                 land. The tokens' (thread 32) waits for each unit's 128-row tile-rows (ready[], as the
 *                 core's GEMM1 before_load), fences the proxies, and loads the unit's NT rows per k-step
 *                 (boxes of 64 and 16 rows; rows past m_cap zero-filled; rows past the chunk belong to the
 *                 next expert or are stale and are never stored) into its own, shallower ring.
 *   warpgroups 1,2 consumers (232 registers): warpgroup cw multiplies weight rows kBW / 2 cw .. + kBW / 2 - 1
 *                 of the tile (kMB m64 blocks) by the NT token rows of every stage; NT (<= NTMAX) is
 *                 chosen per unit from the chunk's rows, one instantiation of the k-loop and epilogue per NT.
 *                 Epilogue (moe_sk_store, per m64 block): a thread holds (gate row g, up row g + 8) x token
 *                 pairs, so act = silu(gate) * up needs no exchange.
 * GEMM2 beside GEMM1 (done2 set, MK_MOE_G12_SKINNY): every CTA triggers GEMM2's programmatic launch at entry and
 * publishes the rows of each stored unit per tile-row and chunk of weight tiles (moe_sk_publish); the units'
 * chunk-major order completes the first experts' tile-rows first, so GEMM2's claims on them run on the SMs of
 * the dispatch and of CTAs past their last unit while the rest of GEMM1 streams.
 * Rings: weights in stages of kBW x 128 bytes, as many as the tokens' ring leaves room for (NTMAX 64: 11,
 * 128: 9, 192: 4 of 32 KB), tokens in 4 stages of NTMAX x 128 bytes (3 at 192; expect_tx NT x 128):
 * streaming the weights from HBM wants bytes in flight, the tokens come from L2. One ring of stages of
 * both (session 22's first version) held 4 stages at 256-row chunks and streamed ~2 TB/s. */
#ifndef MK_KERNELS_MOE_MOE_SKINNY_CUH
#define MK_KERNELS_MOE_MOE_SKINNY_CUH

#include "kernels/gemm/gemm_core.cuh"
#include "kernels/moe/moe_common.cuh"

constexpr int kSkBK = 64;

template <int NTMAX>
struct moe_sk_config {
  /* kMB m64 blocks of weights a consumer warpgroup: 1 (a unit of 128 weight rows) up to 128-row chunks, 2 (256
     weight rows, each token stage read by twice the weights) for 192-row chunks */
  static constexpr int kMB = NTMAX > 128 ? 2 : 1, kBW = 128 * kMB;
  static constexpr int kWBytes = kBW * kSkBK * 2, kTBytes = NTMAX * kSkBK * 2;
  static constexpr int kMaxStages = 16, kMaxExperts = 512;
  static constexpr int kMetaBytes = (kMaxExperts + 8) * 4; /* the experts' chunk prefix */
  static constexpr int kTStages = NTMAX > 128 ? 3 : 4;
  static constexpr int kWStages = std::min(
      kMaxStages, (227 * 1024 - 1024 - kMetaBytes - 4 * kMaxStages * 8 - kTStages * kTBytes) / kWBytes);
  static constexpr int kTOff = kWStages * kWBytes, kMetaOff = kTOff + kTStages * kTBytes;
  static constexpr int kBarOff = kMetaOff + kMetaBytes;
  static constexpr int kSmemBytes = 1024 + kBarOff + 2 * (kWStages + kTStages) * 8;
  static_assert(NTMAX == 64 || NTMAX == 128 || NTMAX == 192, "chunk rows");
  static_assert(kWStages >= 4 && kSmemBytes <= 227 * 1024, "shared memory");
};

/* Token width for a chunk of `rows` rows (1 .. NTMAX): the smallest wgmma n of the set that holds it. */
template <int NTMAX>
__device__ __forceinline__ int moe_sk_nt(int rows) {
  if (rows <= 16) return 16;
  if (rows <= 32) return 32;
  if (rows <= 64 || NTMAX == 64) return 64;
  if (rows <= 96) return 96;
  if (rows <= 128 || NTMAX == 128) return 128;
  return rows <= 144 ? 144 : rows <= 160 ? 160 : rows <= 176 ? 176 : 192;
}

struct moe_sk_args {
  mk_dev_world w;
  const int32_t *rows, *exp_off, *tile_base; /* [El], [El + 1], [El + 1] (the exchange's) */
  uint64_t o_ready;                          /* ready[tile-row] (heap offset, this rank) */
  uint16_t *act;                             /* [m_cap][I] */
  uint64_t *prof;
  uint64_t *done2; /* GEMM2 beside GEMM1 (mk_moe_dev.g12_need): [tile-row][kMoeG12Chunks], else NULL */
  int El, I, K, tiles_n; /* tiles_n = ceil(2 I / kBW), set at launch */
};

/* The unit's place: expert e, its first row m0 (of A1), its rows in this chunk, weight tile j. */
struct moe_sk_unit {
  int e, j, rows;
  int64_t m0;
};

/* GEMM2 beside GEMM1: after the unit's act columns are stored by both consumer warpgroups (named barrier 1, 256
 * threads), one thread adds the rows the unit stored in each 128-row tile-row it covers to done2[tile-row][the
 * chunk of weight tile j] (release, GPU scope: the barrier orders the other threads' stores before it). Not inlined:
 * inlined, the consumers' loop spilled more (ptxas at NTMAX 192: 112 / 224 bytes of spill stores / loads against 40 /
 * 152 without the call; 36 / 140 with it out of line). */
__device__ __noinline__ void moe_sk_publish(const moe_sk_args &a, const moe_sk_unit &un, int ct) {
  mk_sm90::named_bar_sync(1, 256);
  if (ct != 0) return;
  const int rel = (int)(un.m0 - a.exp_off[un.e]), c = moe_g12_chunk(un.j, a.tiles_n);
  for (int tr = rel / 128; tr <= (rel + un.rows - 1) / 128; tr++) {
    const int lo = max(rel, tr * 128), hi = min(rel + un.rows, tr * 128 + 128);
    moe_red_add_gpu(a.done2 + (int64_t)(a.tile_base[un.e] + tr) * kMoeG12Chunks + c, (uint64_t)(hi - lo));
  }
}

/* cbase[e] = chunks of experts before e (cbase[El] = all), filled by warp 0 (shuffle scan). */
template <int NTMAX>
__device__ __forceinline__ void moe_sk_prefix(const moe_sk_args &a, int *cbase) {
  const int lane = threadIdx.x & 31;
  int carry = 0;
  for (int e0 = 0; e0 < a.El; e0 += 32) {
    const int e = e0 + lane;
    const int c = e < a.El ? (a.rows[e] + NTMAX - 1) / NTMAX : 0;
    int v = c;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int x = __shfl_up_sync(0xffffffffu, v, o);
      if (lane >= o) v += x;
    }
    if (e < a.El) cbase[e] = carry + v - c;
    carry += __shfl_sync(0xffffffffu, v, 31);
  }
  if (lane == 0) cbase[a.El] = carry;
}

template <int NTMAX>
__device__ __forceinline__ moe_sk_unit moe_sk_decode(const moe_sk_args &a, const int *cbase, int u) {
  const int chunk = u / a.tiles_n;
  moe_sk_unit r;
  r.j = u - chunk * a.tiles_n;
  int lo = 0, hi = a.El - 1; /* the last e with cbase[e] <= chunk (experts without rows have no chunk) */
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (cbase[mid] <= chunk) lo = mid;
    else hi = mid - 1;
  }
  r.e = lo;
  const int c = chunk - cbase[lo];
  r.m0 = (int64_t)a.exp_off[lo] + (int64_t)c * NTMAX;
  r.rows = min(NTMAX, a.rows[lo] - c * NTMAX);
  return r;
}

/* The producer's token loads of k-step kb: nt = 64 a + 16 b rows from row m0, boxes of 64 then of 16. */
__device__ __forceinline__ void moe_sk_tokens(const CUtensorMap *t64, const CUtensorMap *t16, int nt, int kb, int m0,
                                              uint8_t *st, uint64_t *bar) {
  int r = 0;
  for (; r + 64 <= nt; r += 64) mk_sm90::tma_load_3d(st + r * kSkBK * 2, t64, bar, kb * kSkBK, m0 + r, 0);
  for (; r < nt; r += 16) mk_sm90::tma_load_3d(st + r * kSkBK * 2, t16, bar, kb * kSkBK, m0 + r, 0);
}

/* Epilogue of one m64 block: the thread holds (gate row, up row) x token pairs of act column i, so act =
 * silu(gate) * up needs no exchange; lanes g and g ^ 1 (lane ^ 4) hold columns i, i + 1 and trade one value so
 * that each stores a bf16x2 of two act columns of one token row, masked to the chunk's rows and to I. */
template <int NT>
__device__ __forceinline__ void moe_sk_store(const moe_sk_args &a, const moe_sk_unit &un, const float (&d)[NT / 2],
                                             int i, int lane) {
  const int odd = (lane >> 2) & 1;
  const int ie = i - odd; /* the pair's first column */
#pragma unroll
  for (int jj = 0; jj < NT / 8; jj++) {
    const float v0 = mk_gemm_silu(d[4 * jj]) * d[4 * jj + 2];     /* (i, t)     */
    const float v1 = mk_gemm_silu(d[4 * jj + 1]) * d[4 * jj + 3]; /* (i, t + 1) */
    const float x = __shfl_xor_sync(0xffffffffu, odd ? v0 : v1, 4);
    const int t = 8 * jj + 2 * (lane & 3) + odd;
    if (t < un.rows && ie < a.I)
      *(__nv_bfloat162 *)(a.act + (un.m0 + t) * a.I + ie) =
          odd ? __floats2bfloat162_rn(x, v1) : __floats2bfloat162_rn(v0, x);
  }
}

/* One unit's k-loop and epilogue on a consumer warpgroup, token width NT: weight rows kBW / 2 cw + 64 h of
 * the stage times the NT token rows into d[h] (h < kMB). */
template <int NTMAX, int NT>
__device__ __forceinline__ void moe_sk_consume(const moe_sk_args &a, const moe_sk_unit &un, float (&d0)[NT / 2],
                                               float (&d1)[NT / 2], uint8_t *smem, uint64_t *bars, uint32_t g0,
                                               int k_iters, int cw, int warp, int lane) {
  using Cfg = moe_sk_config<NTMAX>;
  using namespace mk_sm90;
  uint64_t *fullw = bars, *emptyw = fullw + Cfg::kWStages, *fullt = emptyw + Cfg::kWStages, *emptyt = fullt + Cfg::kTStages;
#pragma unroll
  for (int i = 0; i < NT / 2; i++) {
    d0[i] = 0.f;
    if constexpr (Cfg::kMB == 2) d1[i] = 0.f;
  }
  int pw = -1, pt = -1;
  for (int i = 0; i < k_iters; i++) {
    const uint32_t g = g0 + (uint32_t)i;
    const int sw_ = (int)(g % Cfg::kWStages), st_ = (int)(g % Cfg::kTStages);
    mbar_wait(&fullw[sw_], (g / Cfg::kWStages) & 1);
    mbar_wait(&fullt[st_], (g / Cfg::kTStages) & 1);
    const uint8_t *sw = smem + sw_ * Cfg::kWBytes + cw * (Cfg::kBW / 2) * kSkBK * 2;
    const uint8_t *st = smem + Cfg::kTOff + st_ * Cfg::kTBytes;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kSkBK / 16; kk++) {
      const uint64_t dt = desc_sw128(st + kk * 32, 16, 1024);
      wgmma_m64nk16_bf16<NT, 0>(d0, desc_sw128(sw + kk * 32, 16, 1024), dt);
      if constexpr (Cfg::kMB == 2)
        wgmma_m64nk16_bf16<NT, 0>(d1, desc_sw128(sw + 64 * kSkBK * 2 + kk * 32, 16, 1024), dt);
    }
    wgmma_commit();
    wgmma_wait<1>();
    mk_gemm_ring_free(emptyw, lane, pw);
    mk_gemm_ring_free(emptyt, lane, pt);
    pw = sw_, pt = st_;
  }
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < NT / 2; i++) {
    fence_operand(d0[i]);
    if constexpr (Cfg::kMB == 2) fence_operand(d1[i]);
  }
  mk_gemm_ring_free(emptyw, lane, pw);
  mk_gemm_ring_free(emptyt, lane, pt);
  moe_sk_store<NT>(a, un, d0, un.j * (Cfg::kBW / 2) + cw * (Cfg::kBW / 4) + warp * 8 + (lane >> 2), lane);
  if constexpr (Cfg::kMB == 2)
    moe_sk_store<NT>(a, un, d1, un.j * (Cfg::kBW / 2) + cw * (Cfg::kBW / 4) + 32 + warp * 8 + (lane >> 2), lane);
}

template <int NTMAX>
__global__ void __launch_bounds__(384, 1)
    moe_sk_gemm1_kernel(const __grid_constant__ CUtensorMap tma_w, const __grid_constant__ CUtensorMap tma_t64,
                        const __grid_constant__ CUtensorMap tma_t16, moe_sk_args a) {
  using Cfg = moe_sk_config<NTMAX>;
  using namespace mk_sm90;
  extern __shared__ uint8_t smem_raw[];
  uint8_t *smem = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
  int *cbase = (int *)(smem + Cfg::kMetaOff);
  uint64_t *bars = (uint64_t *)(smem + Cfg::kBarOff);
  uint64_t *fullw = bars, *emptyw = fullw + Cfg::kWStages, *fullt = emptyw + Cfg::kWStages, *emptyt = fullt + Cfg::kTStages;
  const int tid = threadIdx.x, wg = tid / 128;
  if (tid == 0) {
    for (int s = 0; s < Cfg::kWStages; s++) mbar_init(&fullw[s], 1), mbar_init(&emptyw[s], 8); /* 8 consumer warps */
    for (int s = 0; s < Cfg::kTStages; s++) mbar_init(&fullt[s], 1), mbar_init(&emptyt[s], 8);
    mbar_fence_init();
  }
  if (tid < 32) moe_sk_prefix<NTMAX>(a, cbase);
  /* GEMM2 beside GEMM1: GEMM2, launched next as this kernel's programmatic dependent, may take the SMs this grid
     leaves (the dispatch's, then those of CTAs past their last unit); every CTA of this grid is resident by then */
  if (a.done2) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  __syncthreads();
  const int k_iters = (a.K + kSkBK - 1) / kSkBK, units = cbase[a.El] * a.tiles_n;
  if (wg == 0) {
    /* two producer threads, one per ring: the weights' (thread 0) never waits for rows, so it runs up to
       kWStages k-steps ahead of the tokens' (thread 32), which waits for each unit's rows */
    setmaxnreg_dec<40>();
    if (tid == 0) {
      tma_prefetch_desc(&tma_w);
      uint32_t g = 0;
      for (int u = blockIdx.x; u < units; u += gridDim.x) {
        const moe_sk_unit un = moe_sk_decode<NTMAX>(a, cbase, u);
        for (int i = 0; i < k_iters; i++, g++) {
          const int s = (int)(g % Cfg::kWStages);
          mbar_wait(&emptyw[s], ((g / Cfg::kWStages) & 1) ^ 1);
          mbar_expect_tx(&fullw[s], (uint32_t)Cfg::kWBytes);
          tma_load_3d(smem + s * Cfg::kWBytes, &tma_w, &fullw[s], i * kSkBK, un.j * Cfg::kBW, un.e);
        }
      }
    } else if (tid == 32) {
      tma_prefetch_desc(&tma_t64);
      tma_prefetch_desc(&tma_t16);
      uint32_t g = 0;
      for (int u = blockIdx.x; u < units; u += gridDim.x) {
        const moe_sk_unit un = moe_sk_decode<NTMAX>(a, cbase, u);
        const int nt = moe_sk_nt<NTMAX>(un.rows);
        const int tr0 = (int)(un.m0 - a.exp_off[un.e]) / 128, tr1 = (int)(un.m0 - a.exp_off[un.e] + un.rows - 1) / 128;
        for (int tr = tr0; tr <= tr1; tr++) { /* the chunk's 128-row tile-rows have landed */
          const int tile = a.tile_base[un.e] + tr;
          const uint64_t need = (uint64_t)min(128, a.rows[un.e] - tr * 128);
          mk_wait_ge_paced(a.w, a.o_ready + (uint64_t)tile * 8, need, MK_OP_MOE, -1, tile, kMoePollNs);
        }
        asm volatile("fence.proxy.async.global;" ::: "memory"); /* the dispatch's stores, then TMA reads */
        moe_stamp(a.prof, MK_MOE_PH_G1_FIRST);
        moe_stamp(a.prof, MK_MOE_PH_G1_LAST);
        for (int i = 0; i < k_iters; i++, g++) {
          const int s = (int)(g % Cfg::kTStages);
          mbar_wait(&emptyt[s], ((g / Cfg::kTStages) & 1) ^ 1);
          mbar_expect_tx(&fullt[s], (uint32_t)nt * kSkBK * 2);
          moe_sk_tokens(&tma_t64, &tma_t16, nt, i, (int)un.m0, smem + Cfg::kTOff + s * Cfg::kTBytes, &fullt[s]);
        }
      }
    }
    return;
  }
  setmaxnreg_inc<232>();
  const int cw = wg - 1, warp = (tid / 32) % 4, lane = tid % 32;
  float d[NTMAX / 2 * Cfg::kMB];
  uint32_t g0 = 0;
  for (int u = blockIdx.x; u < units; u += gridDim.x, g0 += (uint32_t)k_iters) {
    const moe_sk_unit un = moe_sk_decode<NTMAX>(a, cbase, u);
    switch (moe_sk_nt<NTMAX>(un.rows)) {
#define MK_SK_CASE(N)                                                                                          \
  case N:                                                                                                      \
    if constexpr (N <= NTMAX)                                                                                  \
      moe_sk_consume<NTMAX, N>(a, un, *reinterpret_cast<float(*)[N / 2]>(&d[0]),                             \
                               *reinterpret_cast<float(*)[N / 2]>(&d[(Cfg::kMB - 1) * (N / 2)]), smem, bars, g0, \
                               k_iters, cw, warp, lane);                                                       \
    break;
      MK_SK_CASE(16)
      MK_SK_CASE(32)
      MK_SK_CASE(64)
      MK_SK_CASE(96)
      MK_SK_CASE(128)
      MK_SK_CASE(144)
      MK_SK_CASE(160)
      MK_SK_CASE(176)
      MK_SK_CASE(192)
#undef MK_SK_CASE
      default:
        break;
    }
    if (a.done2) moe_sk_publish(a, un, tid - 128);
  }
}

/* Launch on `grid` CTAs (every one resident). A1 [m_cap][H], w1g [El][2 I][H]. */
template <int NTMAX>
static mk_status moe_sk_gemm1_launch(const uint16_t *A1, int64_t m_cap, const uint16_t *w1g, moe_sk_args a, int grid,
                                     cudaStream_t stream) {
  using Cfg = moe_sk_config<NTMAX>;
  a.tiles_n = (int)((2 * (int64_t)a.I + Cfg::kBW - 1) / Cfg::kBW);
  CUtensorMap mw, mt64, mt16;
  MK_CHECK(mk_gemm_encode_map(&mw, w1g, (uint64_t)a.K, 2 * (uint64_t)a.I, (uint64_t)a.El, kSkBK, Cfg::kBW));
  MK_CHECK(mk_gemm_encode_map(&mt64, A1, (uint64_t)a.K, (uint64_t)m_cap, 1, kSkBK, 64));
  MK_CHECK(mk_gemm_encode_map(&mt16, A1, (uint64_t)a.K, (uint64_t)m_cap, 1, kSkBK, 16));
  auto kern = moe_sk_gemm1_kernel<NTMAX>;
  static mk_gemm_smem_attr attr;
  MK_CHECK(attr.set((const void *)kern, Cfg::kSmemBytes));
  kern<<<grid, 384, Cfg::kSmemBytes, stream>>>(mw, mt64, mt16, a);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

#endif /* MK_KERNELS_MOE_MOE_SKINNY_CUH */
