/* flash_fwd_ws.cuh — internal: the pieces of FlashAttention-3's warp-specialised schedule (Hopper, sm_90a) shared by
 * the flash forward kernel (flash_fwd_ws.cu) and the fused ring attention (ring_attn_ws.cu).
 *
 * A CTA of 384 threads: warpgroup 0 the producer (its first warp loads tiles; registers cut to 56, 24 with 176-key
 * tiles), warpgroups 1 and 2 the consumers (registers raised to 224, 240), 64 query rows each of a 128-row query
 * block. Shared memory, from a 1024-byte boundary: the Q tile, a 2-stage ring of K tiles, a 2-stage ring of V
 * tiles (BN keys each: 128, or 176 in the flash kernel's non-causal calls of one CTA an item; SW128 layout, see
 * wgmma.cuh), then the barriers (ws_bars):
 *   q_full, k_full[s], v_full[s]     1 arrival: the producer's expect_tx (a TMA load), or its plain arrive after the
 *                                    cp.async of a tile (ws_load_tile) or in place of a load
 *   q_empty, k_empty[s], v_empty[s]  8 arrivals: lane 0 of each consumer warp once its wgmma has read the buffer
 *                                    (Q after the item's last S)
 * The producer loads in the order the consumers read: Q, K0, K1, V0, K2, V1, ...; the ring's stages and phases count
 * tiles over all of a CTA's items (kt).
 * Per key tile t, each consumer (ws_consume):
 *   issue S_t = Q K_t^T; rescale O by alpha_{t-1}; issue O += P_{t-1} V_{t-1}
 *   wait S_t; release K_t; mask, online softmax of S_t (alpha_t, P_t in fp32) while P V runs
 *   wait P V; release V_{t-1}; P_t to bf16 register fragments
 * and the two consumers take turns issuing their wgmmas (named barriers 1 and 2, FA3's warp scheduler barrier), so
 * one's softmax overlaps the other's tensor-core work. */
#ifndef MK_ATTN_FLASH_FWD_WS_CUH
#define MK_ATTN_FLASH_FWD_WS_CUH

#include "kernels/attention/flash_fwd.cuh"
#include "kernels/attention/wgmma.cuh"
#include "kernels/gemm/sm90_ptx.cuh"

namespace mk_attn {

/* Which warp-specialised kernel a call runs (ws_launch), from MK_ATTN_WS_PERSISTENT (mode: 1 persistent, 0 one CTA an
 * item, -1 by the call) and MK_ATTN_WS_BN176 (bn176: 1 176-key tiles for one CTA an item, 0 128, -1 by the call). By
 * the call: persistent for causal calls of at most 8192 keys, and for unsplit non-causal calls of at most 4096 keys
 * whose 128-key tiles (the persistent kernel's) pad no more keys than 176-key ones (2048: 2048 keys against 2112;
 * 2112: 2176 against 2112); else one CTA an item, with 176-key tiles for unsplit non-causal calls. Host code, and
 * what test_attn_ws_pick checks. */
enum ws_kernel { WS_PERSISTENT, WS_ITEM_128, WS_ITEM_176 };
inline ws_kernel ws_pick(const fwd_params &p, long long mode, long long bn176) {
  const long long k = p.seqlen_k;
  const bool plain = p.mask == MK_ATTN_MASK_NONE && p.splits <= 1;
  const bool pad_le = (k + 127) / 128 * 128 <= (k + 175) / 176 * 176;
  if (mode == 1 || (mode < 0 && ((p.mask != MK_ATTN_MASK_NONE && k <= 8192) || (plain && k <= 4096 && pad_le))))
    return WS_PERSISTENT;
  return bn176 == 1 || (bn176 < 0 && plain) ? WS_ITEM_176 : WS_ITEM_128;
}

struct ws_config {
  static constexpr int kConsumers = 2; /* consumer warpgroups, 64 query rows each */
  static constexpr int kThreads = 128 * (kConsumers + 1);
  static constexpr int kBM = 64 * kConsumers, kBN = 128; /* kBN: the key tile, unless a kernel names another */
  static constexpr int kStages = 2;
  /* Registers a producer / consumer thread after setmaxnreg, by key tile: 56 / 224 with 128 keys (56: the producer
   * without spills); 24 / 240 with 176, whose S and P take 36 registers more a consumer thread (at 232 / 40 the
   * consumers' tile loop spilled; 24 spills in the producer's cp.async path) */
  template <int BN>
  static constexpr int producer_regs() { return BN == kBN ? 56 : 24; }
  template <int BN>
  static constexpr int consumer_regs() { return BN == kBN ? 224 : 240; }
  static constexpr int kBarSched = 1; /* named barriers kBarSched + consumer: that consumer may issue */
  static constexpr int kBarEpi = 3;   /* named barriers kBarEpi + consumer: its epilogue (the flash kernel's) */
  template <int D, int BN = kBN>
  static constexpr size_t smem_bytes() { /* tiles, then the barriers; + 1 KiB to align the tiles to 1024 bytes */
    return (size_t)(kBM + 2 * kStages * BN) * D * sizeof(uint16_t) + 1024 + 256;
  }
};

/* setmaxnreg moves registers inside the CTA's pool, kThreads x the 168 a thread of the launch: an increase past it
 * waits for ever (32 / 240 did with 176-key tiles: NOTES, attention/flash_fwd, session 46) */
template <int BN>
constexpr bool ws_regs_fit() {
  using C = ws_config;
  return 128 * C::producer_regs<BN>() + 128 * C::kConsumers * C::consumer_regs<BN>() <= C::kThreads * 168;
}
static_assert(ws_regs_fit<128>() && ws_regs_fit<176>(), "the CTA's register pool");

struct ws_bars {
  uint64_t q_full, q_empty;
  uint64_t k_full[ws_config::kStages], v_full[ws_config::kStages];
  uint64_t k_empty[ws_config::kStages], v_empty[ws_config::kStages];
};

/* The tiles (BN keys a K or V tile) and the barriers, carved from the dynamic shared memory. */
template <int D, int BN = ws_config::kBN>
struct ws_smem {
  uint16_t *sQ, *sK, *sV; /* stage s of K at sK + s * BN * D, of V at sV + s * BN * D */
  ws_bars *bar;
  __device__ __forceinline__ explicit ws_smem(uint8_t *raw) {
    constexpr int BM = ws_config::kBM, S = ws_config::kStages;
    sQ = reinterpret_cast<uint16_t *>(raw + ((1024 - (smem_u32(raw) & 1023)) & 1023));
    sK = sQ + BM * D;
    sV = sK + S * BN * D;
    bar = reinterpret_cast<ws_bars *>(sV + S * BN * D);
  }
};

/* One thread, before the CTA barrier that precedes every use. */
__device__ __forceinline__ void ws_init_bars(ws_bars &bar) {
  constexpr int empties = 4 * ws_config::kConsumers;
  mk_sm90::mbar_init(&bar.q_full, 1);
  mk_sm90::mbar_init(&bar.q_empty, empties);
  for (int s = 0; s < ws_config::kStages; s++) {
    mk_sm90::mbar_init(&bar.k_full[s], 1);
    mk_sm90::mbar_init(&bar.v_full[s], 1);
    mk_sm90::mbar_init(&bar.k_empty[s], empties);
    mk_sm90::mbar_init(&bar.v_empty[s], empties);
  }
  mk_sm90::mbar_fence_init();
}

/* The producer warp: the Q tile of 128 rows from `row` (TMA map tq, columns from col) into sQ, completing on full
 * (bar.q_full by default). */
template <int D>
__device__ __forceinline__ void ws_load_q(const CUtensorMap *tq, uint16_t *sQ, uint64_t *full, int col, int row) {
  constexpr int BM = ws_config::kBM;
  if (threadIdx.x % 32) return;
  mk_sm90::mbar_expect_tx(full, BM * D * 2);
#pragma unroll
  for (int cb = 0; cb < D / 64; cb++) mk_sm90::tma_load_3d(sQ + cb * BM * 64, tq, full, col + cb * 64, row, 0);
}
template <int D>
__device__ __forceinline__ void ws_load_q(const CUtensorMap *tq, uint16_t *sQ, ws_bars &bar, int col, int row) {
  ws_load_q<D>(tq, sQ, &bar.q_full, col, row);
}

/* The producer warp: a tile of BN keys by cp.async from g (the tile's first key, head applied; stride elements
 * between keys), the keys from `valid` on zero-filled (valid <= 0: a zero tile); full completes once it is in. */
template <int D, int BN = ws_config::kBN>
__device__ __forceinline__ void ws_copy_tile(uint16_t *dst, uint64_t *full, const uint16_t *g, long long stride,
                                             int valid) {
  load_rows<BN, D / 8, 32>(dst, g, stride, valid, [](int r, int c) { return sw128(BN, r, c); });
  cp_async_commit();
  cp_async_wait<0>();
  fence_proxy_async(); /* read by wgmma (async proxy) once the consumers see the barrier */
  __syncwarp();
  if (threadIdx.x % 32 == 0) mk_sm90::mbar_arrive(full);
}

/* The producer warp: one K or V tile of BN keys into a ring stage (dst, its barriers full and empty), once the
 * consumers have freed it (empty's phase of parity ^ 1 complete). By TMA (map, columns from col, rows from row of
 * plane `plane`) when tma; else by ws_copy_tile. full completes once the tile is in. Lane 0 may write what the
 * consumers read with the tile (a per-stage note) before the call: the arrive releases it. */
template <int D, int BN = ws_config::kBN>
__device__ __forceinline__ void ws_load_tile(const CUtensorMap *map, uint16_t *dst, uint64_t *full, uint64_t *empty,
                                             uint32_t parity, int col, int row, int plane, bool tma,
                                             const uint16_t *g, long long stride, int valid) {
  mk_sm90::mbar_wait(empty, parity ^ 1); /* a fresh barrier's previous phase is complete */
  if (tma) {
    if (threadIdx.x % 32 == 0) {
      mk_sm90::mbar_expect_tx(full, BN * D * 2);
#pragma unroll
      for (int cb = 0; cb < D / 64; cb++)
        mk_sm90::tma_load_3d(dst + cb * BN * 64, map, full, col + cb * 64, row, plane);
    }
    return;
  }
  ws_copy_tile<D, BN>(dst, full, g, stride, valid);
}

/* The first key of key tile nb (BN keys) of a sequence of seqlen_k: nb * BN, except for the tile that runs past the
 * end of a sequence of at least BN keys, which starts BN keys before the end instead, so that its TMA box lies inside
 * the sequence: a box past the end made that tile's load 4,100-7,200 cycles slower (NOTES, attention/flash_fwd,
 * session 47). Its keys before nb * BN, the previous tile's, are masked (mask_tile's lo). */
template <int BN>
__device__ __forceinline__ int ws_tile_start(int nb, int seqlen_k) {
  const int n0 = nb * BN;
  return n0 + BN > seqlen_k && seqlen_k >= BN ? seqlen_k - BN : n0;
}

/* Consumer wg may issue its wgmmas / hands the turn to the other consumer. */
__device__ __forceinline__ void ws_my_turn(int wg) { mk_sm90::named_bar_sync(ws_config::kBarSched + wg, 256); }
__device__ __forceinline__ void ws_their_turn(int wg) {
  mk_sm90::named_bar_arrive(ws_config::kBarSched + (wg ^ 1), 256);
}

/* One consumer warpgroup (wg 0 or 1; ct = its thread index within the two consumers): the `tiles` key tiles of one
 * item against the Q tile in shared memory (q_full already waited for), accumulating into o, m_r, l_r (this thread's
 * rows row0 and row0 + 8 of blk). tile_mask(t, blk) sets blk's keys (seqlen_k) and causal offset (off) for key tile
 * t and returns the tile's first key relative to them (x) and the first key it counts (y: keys before it are masked,
 * see ws_tile_start); it runs before K_t is released. kt: the CTA's tiles so far
 * (advanced by tiles). Releases Q after the last S (at once when tiles is 0). The Q tile and its empty barrier are
 * sm's unless sq and q_empty name others (the flash kernel's persistent second Q buffer). */
template <int D, int BN = ws_config::kBN, class TileMask>
__device__ __forceinline__ void ws_consume(const ws_smem<D, BN> &sm, int wg, int ct, int tiles, int &kt, fwd_block &blk,
                                           int row0, float scale_log2, TileMask tile_mask, float (&o)[D / 8][4],
                                           float (&m_r)[2], float (&l_r)[2], const uint16_t *sq = nullptr,
                                           uint64_t *q_empty = nullptr) {
  using C = ws_config;
  constexpr int BM = C::kBM, S = C::kStages, NT = BN / 8, ND = D / 8;
  static_assert(BN == 128 || BN == 176, "the S wgmma's widths");
  ws_bars &bar = *sm.bar;
  const int lane = ct % 32, tq4 = lane % 4;
  const uint32_t q_addr = smem_u32(sq ? sq : sm.sQ) + (uint32_t)(wg * 64 * 128); /* this consumer's 64 rows */
  uint64_t *const q_free = q_empty ? q_empty : &bar.q_empty;
  auto release = [&](uint64_t *b) {
    __syncwarp();
    if (lane == 0) mk_sm90::mbar_arrive(b);
  };
  if (tiles == 0) {
    release(q_free);
    return;
  }
  float s[NT][4], alpha[2];
  uint32_t pa[BN / 16][4];
  float(&sf)[NT * 4] = *reinterpret_cast<float(*)[NT * 4]>(&s[0][0]);
  float(&of)[ND * 4] = *reinterpret_cast<float(*)[ND * 4]>(&o[0][0]);
  auto stage = [&](int t) { return (kt + t) % S; };
  auto phase = [&](int t) { return (uint32_t)(((kt + t) / S) & 1); };
  auto issue_s = [&](int t) { /* S = Q K_t^T, 64 rows x BN keys */
    const uint32_t k_addr = smem_u32(sm.sK + stage(t) * BN * D);
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < D / 16; ks++) {
      const uint32_t cb = (uint32_t)(ks / 4), kofs = (uint32_t)((ks % 4) * 32); /* bytes */
      const uint64_t da = gmma_desc(q_addr + cb * BM * 128 + kofs, 16, 1024);
      const uint64_t db = gmma_desc(k_addr + cb * BN * 128 + kofs, 16, 1024);
      if constexpr (BN == 128)
        wgmma_m64n128k16_ss(sf, da, db, ks > 0);
      else
        wgmma_m64n176k16_ss(sf, da, db, ks > 0);
    }
    wgmma_commit();
  };
  auto issue_pv = [&](int t) { /* O += P V_t */
    const uint32_t v_addr = smem_u32(sm.sV + stage(t) * BN * D);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) {
      const uint64_t dv = gmma_desc(v_addr + (uint32_t)(kk * 16 * 128), BN * 128, 1024);
      if constexpr (D == 128)
        wgmma_m64n128k16_rs_tb(of, pa[kk], dv, 1);
      else
        wgmma_m64n64k16_rs_tb(of, pa[kk], dv, 1);
    }
    wgmma_commit();
  };
  auto s_done = [&](int t) { /* S_t is in registers: K_t is free, and after the item's last S so is Q */
    fence_regs(sf);
    const int2 n0 = tile_mask(t, blk);
    release(&bar.k_empty[stage(t)]);
    if (t == tiles - 1) release(q_free);
    mask_tile<NT>(s, blk, n0.x, row0, tq4, n0.y);
    softmax_rows<NT>(s, m_r, l_r, scale_log2, alpha);
  };
  auto pv_done = [&](int t) { /* P V_t has completed: V_t is free, and P may be overwritten */
    fence_regs(of);
    fence_u32(pa);
    release(&bar.v_empty[stage(t)]);
  };
  auto to_p = [&] {
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) p_fragment<NT>(s, kk, pa[kk]);
  };

  mk_sm90::mbar_wait(&bar.k_full[stage(0)], phase(0));
  ws_my_turn(wg);
  issue_s(0);
  ws_their_turn(wg);
  wgmma_wait<0>();
  s_done(0);
  to_p();
  for (int t = 1; t < tiles; t++) {
    mk_sm90::mbar_wait(&bar.k_full[stage(t)], phase(t));
    ws_my_turn(wg);
    issue_s(t);
    rescale_o<ND>(o, alpha);
    mk_sm90::mbar_wait(&bar.v_full[stage(t - 1)], phase(t - 1));
    issue_pv(t - 1);
    ws_their_turn(wg);
    wgmma_wait<1>();
    s_done(t);
    wgmma_wait<0>();
    pv_done(t - 1);
    to_p();
  }
  rescale_o<ND>(o, alpha);
  mk_sm90::mbar_wait(&bar.v_full[stage(tiles - 1)], phase(tiles - 1));
  ws_my_turn(wg);
  issue_pv(tiles - 1);
  ws_their_turn(wg);
  wgmma_wait<0>();
  pv_done(tiles - 1);
  kt += tiles;
}

/* This consumer thread's first query row of the block (and row0 + 8). */
__device__ __forceinline__ int ws_row0(const fwd_block &blk, int wg, int ct) {
  return blk.m_start + wg * 64 + ((ct % 128) / 32) * 16 + (ct % 32) / 4;
}

}  // namespace mk_attn

#endif /* MK_ATTN_FLASH_FWD_WS_CUH */
