/* gemm_skinny.cuh — the small-M (decode) GEMM, C[M, N] = A[M, K] @ B[N, K]^T for 1 <= M <= 128
 * and B stored [N, K] (weights): computed swapped, C^T[N, M] = B · A^T, so the weights fill
 * the 64-row side of m64nTk16 wgmma and the M token rows (padded with zeros to T in {16, 32,
 * 64, 128}) are its narrow n side. At M = 16 the core's 128-row tiles would do 8x the tensor work;
 * here the tensor cores idle and the kernel is what it should be, a stream of the weights
 * from HBM through shared memory, read once.
 *
 * Kernel shape (384 threads, one CTA per SM), weight tiles of BN = 64 (default) or 128 rows
 * (MK_GEMM_SKINNY_BN):
 *   warpgroup 0   producer: one thread issues, per 64-wide k-step, a TMA load of the BN x 64
 *                 weight tile (rows n0..n0+BN-1, the layout of the core's A tile) and of the
 *                 T x 64 token tile (rows past M zero-filled by TMA; the core's B-tile layout)
 *                 into a deep ring (BN = 64: 8 stages at T = 128, 13 at T = 64 .. 22 at T = 16;
 *                 BN = 128: 7 at T = 128, 9 .. 12 below; ~200 KB in flight either way; the
 *                 stage count is what the shared memory left by the exchange/staging area holds).
 *   warpgroups 1,2 consumers (m64nTk16, T/2 fp32 accumulators a thread: 64 at T = 128, under
 *                 __launch_bounds__(384, 1)'s 168 registers; each releases a stage
 *                 as soon as its wgmma is done):
 *                 BN = 128: warpgroup cw multiplies weight rows n0 + 64 cw .. + 63 by the tokens
 *                 of every stage (the empty barrier counts the 8 consumer warps);
 *                 BN = 64: both multiply the tile's 64 rows, warpgroup cw the k-steps of its
 *                 parity (k0 + cw, k0 + cw + 2, ...; a stage is consumed by one warpgroup, its
 *                 empty barrier counts 4 warps), so one CTA streams 64 rows at the rate two
 *                 warpgroups issue; at the end each hands the other, through shared memory (an
 *                 area of its own: the producer may already fill the ring for the next tile),
 *                 the partial sums of the token half the other keeps, and adds the ones it gets
 *                 in the fixed order even + odd (mk_gemm_skinny_exchange); the fix-up and the
 *                 epilogue then run on 128 threads' halves: warpgroup cw owns token blocks j in
 *                 [cw T / 16, (cw + 1) T / 16) of all 64 rows.
 *                 Stores: C transposed: the thread holding acc(n, t) and the one holding acc(n +
 *                 1, t) (lane ^ 4) swap halves with one shuffle so each stores a bf16x2 pair of n
 *                 of one token row, masked to t < M and n < N (the Epi template parameter:
 *                 plain here; GEMM+AR's one-shot small-M path stores into the peers instead,
 *                 kernels/fused/gemm_ar.cu).
 * Work: tiles = ceil(N / BN) weight tiles. With fewer tiles than SMs the K range is split in
 * `splits` slices (unit u = slice * tiles + tile, grid = tiles * splits <= SMs: all CTAs
 * resident, one unit each); slices 0 .. splits-2 write fp32 partials (thread-major float4s)
 * to the workspace and release-add a per-(slice, tile, warpgroup) flag; the last slice waits
 * for the flags (acquire), adds the partials in order 0, 1, ... to its own (deterministic: the
 * split depends on the shape, BN and the SM count only) and re-arms the flags to 0 for the next
 * launch (the same protocol as the core's split-K, gemm_core.cuh). splits = 1: persistent
 * over tiles. At N = 8192 and BN = 64 the 128 tiles take 128 CTAs with no split (cuBLASLt's
 * nvjet 64x16 tiling); at BN = 128, 64 tiles x 2 slices. */
#ifndef MK_KERNELS_GEMM_SKINNY_CUH
#define MK_KERNELS_GEMM_SKINNY_CUH

#include "kernels/gemm/gemm_core.cuh"

/* MK_GEMM_SKINNY (gemm.cu): -1 auto, 0 off, 1 on; also read by GEMM+AR's small-M path. */
int64_t mk_param_gemm_skinny(void);

/* Weight rows per tile: 64 (MK_GEMM_SKINNY_BN = 64, the default) or 128 (gemm.cu). */
static inline int mk_gemm_skinny_bn(void) { return mk_param_gemm_skinny_bn() == 128 ? 128 : 64; }

template <int T, int BN, bool kStage = false>
struct mk_gemm_skinny_config {
  static constexpr int kBN = BN, kBK = 64, kThreads = 384, kMaxM = 128;
  static constexpr int kWBytes = kBN * kBK * 2, kTBytes = T * kBK * 2;
  static constexpr int kStageBytes = kWBytes + kTBytes; /* also the TMA bytes of one stage */
  /* An area beside the ring: BN = 64, the warpgroups' exchange, [2][T/4][128] floats (each hands
   * the other the half it keeps); an Epi with kStage, its staging of the finished tile, T rows of
   * BN + 8 bf16 (the pad spreads the transposed pair stores over the banks). */
  static constexpr int kXchBytes = BN == 64 ? 2 * (T / 4) * 128 * 4 : 0, kEpiBytes = kStage ? T * (BN + 8) * 2 : 0;
  static constexpr int kXBytes = kXchBytes > kEpiBytes ? kXchBytes : kEpiBytes;
  static constexpr int kMaxStages = BN == 64 ? 32 : 16;
  static constexpr int kStages = std::min(kMaxStages, (227 * 1024 - 1024 - kXBytes - 2 * kMaxStages * 8) / kStageBytes);
  static constexpr int kSmemBytes = 1024 + kStages * kStageBytes + kXBytes + 2 * kStages * 8;
  static_assert(T == 16 || T == 32 || T == 64 || T == 128, "token width");
  static_assert(BN == 64 || BN == 128, "tile height");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory");
};

struct mk_gemm_skinny_args {
  uint16_t *C;      /* [m, n] row-major */
  int m, n, k;
  int tiles;        /* ceil(n / BN) */
  int splits;       /* k-slices per tile, >= 1 */
  float *ws;        /* [splits - 1][tiles][2][BN T / 1024][128] float4 */
  uint32_t *flags;  /* [splits - 1][tiles][2]: 1 once written; 0 between launches */
};

/* The thread holding accumulators d (warpgroup cw, warp, lane of weight tile `tile`) hands
 * put(t, ne, v) every bf16x2 pair v = C[t][ne..ne+1] it owns after one shuffle: acc d[4j +
 * {0,1,2,3}] = (n = r0, t = c), (r0, c + 1), (r0 + 8, c), (r0 + 8, c + 1) with r0 = n0 + 16 warp
 * + lane / 4 (+ 64 cw when BN = 128), c = 8 j + 2 (lane % 4); lanes g = lane / 4 even and odd
 * (rows r0, r0 + 1) trade, the even lane keeping token c, the odd one c + 1. BN = 128: every j
 * of the warpgroup's 64 rows; BN = 64: both warpgroups hold the tile's 64 rows, warpgroup cw
 * the token blocks j in [cw T / 16, (cw + 1) T / 16) (after the exchange), compacted into
 * d[0 .. T / 4) (mk_gemm_skinny_exchange: the other half is dead, which keeps T = 128 free of
 * spills). Pairs may lie past M and N (N is a multiple of 8: a pair is all in or all out).
 * Every lane of the warp must call it. */
template <int T, int BN, class F>
__device__ __forceinline__ void mk_gemm_skinny_pairs(const float (&d)[T / 2], int tile, int cw, int warp, int lane,
                                                     F &&put) {
  constexpr int J = BN == 128 ? T / 8 : T / 16;
  const int odd = (lane >> 2) & 1, hi = BN == 64 && cw;
  const int ne = tile * BN + (BN == 128 ? cw * 64 : 0) + warp * 16 + (lane >> 2) - odd;
#pragma unroll
  for (int jj = 0; jj < J; jj++) {
    /* constant register indices (no local-memory array) */
    const float d0 = d[4 * jj], d1 = d[4 * jj + 1], d2 = d[4 * jj + 2], d3 = d[4 * jj + 3];
    const float x = __shfl_xor_sync(0xffffffffu, odd ? d0 : d1, 4);
    const float y = __shfl_xor_sync(0xffffffffu, odd ? d2 : d3, 4);
    const int t = 8 * (jj + (hi ? J : 0)) + 2 * (lane & 3) + odd;
    put(t, ne, odd ? __floats2bfloat162_rn(x, d1) : __floats2bfloat162_rn(d0, x));
    put(t, ne + 8, odd ? __floats2bfloat162_rn(y, d3) : __floats2bfloat162_rn(d2, y));
  }
}

/* The plain epilogue: C[t][n] for t < M, n < N. An Epi provides
 *   static constexpr bool kStage;  // true: the kernel reserves `stage` (T x (BN + 8) bf16, 16-byte aligned)
 *   template <int T, int BN> __device__ void store(const mk_gemm_skinny_args &, int tile,
 *                                                  const float (&d)[T / 2], int cw, int warp, int lane,
 *                                                  uint8_t *stage);
 * called by all 256 consumer threads once per finished weight tile (after the warpgroups'
 * exchange and any split-K fix-up; each warpgroup stores what mk_gemm_skinny_pairs gives it);
 * it may synchronise them with named barrier 1 (256 threads) and use `stage` until it returns
 * (every consumer thread is past its last access of the area when store is called, and the
 * next access is the next tile's exchange, after its k-loop: store must end with its threads
 * done with `stage`, e.g. a barrier after the last read), and two hooks:
 *   __device__ void enter();          // thread 0 of every CTA, at entry
 *   __device__ void finish(const mk_gemm_skinny_args &, int ct);
 *                                     // every consumer thread (ct = 0..255), once, after the
 *                                     // CTA's last unit (it may use named barrier 1 too)
 * (GEMM+AR's small-M path stamps phases in them, and in finish waits for its peers, sums and
 * advances its epoch). */
struct mk_gemm_skinny_epi_plain {
  static constexpr bool kStage = false;
  __device__ __forceinline__ void enter() const {}
  __device__ __forceinline__ void finish(const mk_gemm_skinny_args &, int) const {}
  template <int T, int BN>
  __device__ __forceinline__ void store(const mk_gemm_skinny_args &a, int tile, const float (&d)[T / 2], int cw,
                                        int warp, int lane, uint8_t *) const {
    mk_gemm_skinny_pairs<T, BN>(d, tile, cw, warp, lane, [&](int t, int n, __nv_bfloat162 v) {
      if (t < a.m && n < a.n) *(__nv_bfloat162 *)(a.C + (size_t)t * a.n + n) = v;
    });
  }
};

/* BN = 64: warpgroup cw keeps half h = cw of its T/2 accumulators (token blocks), the other
 * warpgroup's partial sums of that half arrive through xb ([2][T/4][128] floats, thread-major:
 * conflict-free); sums in the fixed order (even k-steps) + (odd k-steps), left in d[0 .. T/4)
 * for both warpgroups (d[T/4 ..) is dead afterwards: constant register indices only). Named barrier 4 (256
 * threads) before the reads and after them (the area is reused by the next tile). */
template <int T>
__device__ __forceinline__ void mk_gemm_skinny_exchange(float (&d)[T / 2], float *xb, int cw, int l) {
  constexpr int H = T / 4;
#pragma unroll
  for (int q = 0; q < H; q++) xb[(cw * H + q) * 128 + l] = cw ? d[q] : d[H + q]; /* the half the other keeps */
  mk_sm90::named_bar_sync(4, 256);
#pragma unroll
  for (int q = 0; q < H; q++) {
    const float x = xb[((1 - cw) * H + q) * 128 + l];
    d[q] = cw ? x + d[H + q] : d[q] + x; /* WG0's (even k-steps) first in both */
  }
  mk_sm90::named_bar_sync(4, 256);
}

template <int T, int BN, class Epi>
__global__ void __launch_bounds__(384, 1)
    mk_gemm_skinny_kernel(const __grid_constant__ CUtensorMap tma_w, const __grid_constant__ CUtensorMap tma_t,
                          mk_gemm_skinny_args args, Epi epi) {
  using Cfg = mk_gemm_skinny_config<T, BN, Epi::kStage>;
  using namespace mk_sm90;
  extern __shared__ uint8_t smem_raw[];
  uint8_t *smem = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
  float *xb = (float *)(smem + Cfg::kStages * Cfg::kStageBytes);
  uint64_t *full = (uint64_t *)(smem + Cfg::kStages * Cfg::kStageBytes + Cfg::kXBytes);
  uint64_t *empty = full + Cfg::kStages;
  const int tid = threadIdx.x, wg = tid / 128;
  /* Programmatic dependent launch (mk_gemm_skinny_launch_t): wait for the grids this launch
   * depends on (complete, their memory visible) before any global access, then let the next
   * launch be scheduled (its CTAs take SMs as these leave, and wait there in turn). Both are
   * no-ops in a launch without the attribute. */
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (tid == 0) {
    for (int s = 0; s < Cfg::kStages; s++) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], BN == 64 ? 4 : 8); /* one arrive per warp that consumes the stage */
    }
    mbar_fence_init();
    epi.enter();
  }
  __syncthreads();
  const int k_iters = (args.k + Cfg::kBK - 1) / Cfg::kBK, units = args.tiles * args.splits;

  if (wg == 0) {
    /* ---- producer ---- */
    if (tid != 0) return;
    tma_prefetch_desc(&tma_w);
    tma_prefetch_desc(&tma_t);
    int s = 0;
    uint32_t phase = 0;
    for (int u = blockIdx.x; u < units; u += gridDim.x) {
      const int sl = u / args.tiles, tile = u - sl * args.tiles;
      const int k0 = (int)((int64_t)k_iters * sl / args.splits), k1 = (int)((int64_t)k_iters * (sl + 1) / args.splits);
      for (int kb = k0; kb < k1; kb++) {
        mbar_wait(&empty[s], phase ^ 1);
        uint8_t *sw = smem + s * Cfg::kStageBytes;
        mbar_expect_tx(&full[s], Cfg::kStageBytes);
        tma_load_3d(sw, &tma_w, &full[s], kb * Cfg::kBK, tile * Cfg::kBN, 0);
        tma_load_3d(sw + Cfg::kWBytes, &tma_t, &full[s], kb * Cfg::kBK, 0, 0);
        if (++s == Cfg::kStages) {
          s = 0;
          phase ^= 1;
        }
      }
    }
    return;
  }
  /* ---- consumers ---- BN = 128: warpgroup cw takes rows 64 cw .. + 63 of every stage; BN = 64:
   * both take the tile's 64 rows, warpgroup cw the k-steps k0 + cw, k0 + cw + 2, ... (stage g of
   * the CTA's ring sequence: slot g % kStages, parity (g / kStages) & 1). */
  const int cw = wg - 1, warp = (tid / 32) % 4, lane = tid % 32, l = tid % 128;
  constexpr int kStep = BN == 64 ? 2 : 1;
  uint32_t g0 = 0; /* ring position of the unit's first k-step */
  float d[T / 2];
  for (int u = blockIdx.x; u < units; u += gridDim.x) {
    const int sl = u / args.tiles, tile = u - sl * args.tiles;
    const int k0 = (int)((int64_t)k_iters * sl / args.splits), k1 = (int)((int64_t)k_iters * (sl + 1) / args.splits);
#pragma unroll
    for (int i = 0; i < T / 2; i++) d[i] = 0.f;
    int prev = -1;
    for (int i = BN == 64 ? cw : 0; i < k1 - k0; i += kStep) {
      const uint32_t g = g0 + (uint32_t)i;
      const int s = (int)(g % Cfg::kStages);
      mbar_wait(&full[s], (g / Cfg::kStages) & 1);
      const uint8_t *sw = smem + s * Cfg::kStageBytes + (BN == 128 ? cw * 64 * Cfg::kBK * 2 : 0);
      const uint8_t *st = smem + s * Cfg::kStageBytes + Cfg::kWBytes;
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < Cfg::kBK / 16; kk++)
        wgmma_m64nk16_bf16<T, 0>(d, desc_sw128(sw + kk * 32, 16, 1024), desc_sw128(st + kk * 32, 16, 1024));
      wgmma_commit();
      wgmma_wait<1>(); /* the group that read stage `prev` is done */
      mk_gemm_ring_free(empty, lane, prev);
      prev = s;
    }
    g0 += (uint32_t)(k1 - k0);
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < T / 2; i++) fence_operand(d[i]);
    mk_gemm_ring_free(empty, lane, prev);
    if constexpr (BN == 64) {
      mk_gemm_skinny_exchange<T>(d, xb, cw, l);
      /* the fix-up on the half this warpgroup keeps, d[0 .. T/4) */
      if (args.splits > 1 && !mk_gemm_split_fixup(*reinterpret_cast<float(*)[T / 4]>(&d[0]), args.ws, args.flags, sl,
                                                   args.splits, args.tiles, tile, cw, l))
        continue;
    } else {
      if (args.splits > 1 && !mk_gemm_split_fixup(d, args.ws, args.flags, sl, args.splits, args.tiles, tile, cw, l))
        continue;
    }
    epi.template store<T, BN>(args, tile, d, cw, warp, lane, (uint8_t *)xb);
  }
  epi.finish(args, cw * 128 + warp * 32 + lane);
}

/* k-slices per tile of height bn on `sms` SMs: 1 when the tiles fill the SMs or a tile's weights
 * (bn x K x 2 bytes) are under MK_GEMM_SKINNY_SPLIT_KB (256 KiB), else as many as fit (tiles * splits <= sms), each slice at
 * least 4 k-steps, at most 16. The fix-up (partials written, a flag, read back) costs ~3 us, more
 * than a split saves on small tiles: GEMM+AR 64 x 4096 x 1024 (128 KB tiles, run 85f8146, 4 x H200)
 * 0.0248 ms in 2 slices, 0.0234 unsplit (the GEMM phase 6.7 against 4.4 us). */
static inline int mk_gemm_skinny_splits(int64_t n, int64_t k, int sms, int bn) {
  const int64_t tiles = (n + bn - 1) / bn, k_iters = (k + 63) / 64;
  if ((int64_t)bn * k * 2 < (mk_param_gemm_skinny_split_kb() << 10)) return 1;
  int64_t s = std::min<int64_t>(std::min<int64_t>(sms / tiles, k_iters / 4), 16);
  return s < 1 ? 1 : (int)s;
}

/* Auto mode (MK_GEMM_SKINNY=-1) of the plain GEMM takes the skinny kernel only where the weights are
 * large enough for streaming them to dominate: N x K x 2 >= 32 MiB. Measured on one H200 (runs
 * 5f41751, bc5bc01): 8192 x 7168 (117 MB) 0.034 ms at M = 16 and 0.038 at M = 128 against 0.049 for
 * the core (cuBLASLt 0.033 / 0.036); at 4096 x 1024 (8 MB) 0.010 ms (cuBLASLt 0.008), the core not
 * timed there, so small weights keep it. GEMM+AR's small-M path does not use this rule (gemm_ar.cu).
 * MK_GEMM_SKINNY=1 takes it for every M <= 128, B [N, K]. */
static inline bool mk_gemm_skinny_pays(int64_t n, int64_t k) { return n * k * 2 >= (32ll << 20); }

/* Workspace bytes for a launch with tiles of height bn (0 when splits = 1). */
static inline size_t mk_gemm_skinny_ws_bytes(int64_t m, int64_t n, int splits, int bn) {
  const int T = m <= 16 ? 16 : m <= 32 ? 32 : m <= 64 ? 64 : 128;
  return (size_t)(splits - 1) * (size_t)((n + bn - 1) / bn) * (size_t)bn * T * 4;
}

/* Flag words for a launch ((splits - 1) x tiles x 2 warpgroups). */
static inline size_t mk_gemm_skinny_flag_words(int64_t n, int splits, int bn) {
  return (size_t)(splits - 1) * (size_t)((n + bn - 1) / bn) * 2;
}

template <int T, int BN, class Epi>
static mk_status mk_gemm_skinny_launch_t(const uint16_t *A, const uint16_t *B, const mk_gemm_skinny_args &args,
                                         const Epi &epi, int grid, cudaStream_t stream) {
  using Cfg = mk_gemm_skinny_config<T, BN, Epi::kStage>;
  CUtensorMap mw, mt;
  MK_CHECK(mk_gemm_encode_map(&mw, B, (uint64_t)args.k, (uint64_t)args.n, 1, Cfg::kBK, Cfg::kBN));
  MK_CHECK(mk_gemm_encode_map(&mt, A, (uint64_t)args.k, (uint64_t)args.m, 1, Cfg::kBK, T));
  auto kern = mk_gemm_skinny_kernel<T, BN, Epi>;
  static mk_gemm_smem_attr attr;
  MK_CHECK(attr.set((const void *)kern, Cfg::kSmemBytes));
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((unsigned)grid);
  cfg.blockDim = dim3(Cfg::kThreads);
  cfg.dynamicSmemBytes = Cfg::kSmemBytes;
  cfg.stream = stream;
  cfg.attrs = at;
  cfg.numAttrs = mk_param_gemm_skinny_pdl() ? 1 : 0;
  MK_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kern, mw, mt, args, epi));
  return MK_STATUS_OK;
}

template <int BN, class Epi>
static mk_status mk_gemm_skinny_launch_bn(const uint16_t *A, const uint16_t *B, const mk_gemm_skinny_args &args,
                                          const Epi &epi, int grid, cudaStream_t stream) {
  if (args.m <= 16) return mk_gemm_skinny_launch_t<16, BN>(A, B, args, epi, grid, stream);
  if (args.m <= 32) return mk_gemm_skinny_launch_t<32, BN>(A, B, args, epi, grid, stream);
  if (args.m <= 64) return mk_gemm_skinny_launch_t<64, BN>(A, B, args, epi, grid, stream);
  return mk_gemm_skinny_launch_t<128, BN>(A, B, args, epi, grid, stream);
}

/* C[M, N] = A[M, K] @ B[N, K]^T, 1 <= M <= 128 (shape and pointers already checked by
 * mk_gemm_core_check), stored by `epi`, in weight tiles of bn (64 or 128) rows. splits > 1
 * needs ws (mk_gemm_skinny_ws_bytes) and flags (mk_gemm_skinny_flag_words, zeroed once; they
 * re-arm themselves), used by one launch at a time; `sms`: the resident CTA bound. */
template <class Epi = mk_gemm_skinny_epi_plain>
static mk_status mk_gemm_skinny_launch(const uint16_t *A, const uint16_t *B, uint16_t *C, int64_t M, int64_t N,
                                       int64_t K, int bn, int splits, float *ws, uint32_t *flags, int sms,
                                       cudaStream_t stream, const Epi &epi = Epi()) {
  if (M < 1 || M > mk_gemm_skinny_config<16, 64>::kMaxM || (bn != 64 && bn != 128) || splits < 1 || (splits > 1 && (!ws || !flags)))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "gemm: skinny GEMM needs 1 <= M <= 128 (got %lld), tiles of 64 or 128 rows (%d) and a workspace "
                  "when split (%d)",
                  (long long)M, bn, splits);
  mk_gemm_skinny_args args = {C, (int)M, (int)N, (int)K, (int)((N + bn - 1) / bn), splits, ws, flags};
  const int64_t units = (int64_t)args.tiles * splits;
  const int grid = (int)std::min<int64_t>(units, sms);
  if (splits > 1 && units > sms)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "gemm: skinny split of %lld units on %d SMs",
                  (long long)units, sms);
  if (bn == 64) return mk_gemm_skinny_launch_bn<64>(A, B, args, epi, grid, stream);
  return mk_gemm_skinny_launch_bn<128>(A, B, args, epi, grid, stream);
}

#endif /* MK_KERNELS_GEMM_SKINNY_CUH */
