/* flash_fwd_ws.cu — the warp-specialised Hopper (sm_90a) flash attention forward kernel, FlashAttention-3's
 * schedule (flash_fwd_ws.cuh: the roles, barriers and the consumers' tile loop, shared with the ring attention); the
 * same contract as the other two kernels (flash_fwd.cu holds the public launcher).
 *
 * A work item = 128 query rows of one (sequence, q head[, split of the keys]). Persistent (MK_ATTN_WS_PERSISTENT; by
 * default for short calls, ws_pick): one CTA an SM takes the items heaviest first in rounds (ws_item); its producer
 * hands them to the consumers in shared memory with their Q tiles, in two Q buffers, the next item's Q loaded as the
 * current one starts (ws_items); else one CTA an item.
 * The producer's first warp loads the Q tile and then the K and V tiles by TMA (2-D maps [tokens][heads x d],
 * 64-column boxes with the 128-byte swizzle that wgmma reads). The key tile that would run past its sequence starts
 * BN keys before the sequence's end instead (ws_tile_start), so only a sequence shorter than a tile has a tile past
 * its end: in a varlen batch the warp's cp.async copies that one, rows past the sequence zero-filled (the rows after
 * it belong to the next sequence or lie past the buffer); in a one-sequence call the map ends at the last key and
 * TMA zero-fills. The epilogue of an unsplit call stages O in shared memory and stores it by TMA (ws_store_o_tma),
 * but where a query block's rows run past its sequence into the next (varlen) and in split calls the threads store O
 * directly (store_out). */
#include <cuda_runtime.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "core/check.h"
#include "kernels/attention/flash_fwd_ws.cuh"
#include "kernels/gemm/tma_map.cuh"

namespace mk_attn {
namespace {

/* Work item r of this CTA: false when it has none. One item a CTA (blockIdx: query block from the last, head,
 * sequence x splits), or persistent (kPersist): the items in order heaviest first (query block from the last, then
 * head, then sequence x splits), dealt to the CTAs in rounds, each round in the other direction (CTA c takes item
 * r G + c in even rounds, r G + G - 1 - c in odd ones). any is false where round r has none for this CTA. */
template <bool kPersist>
__device__ __forceinline__ bool ws_item(const fwd_params &p, int r, int &z, int &m_block, int &h, bool &any) {
  if (!kPersist) {
    z = blockIdx.z, m_block = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, any = true;
    return r == 0;
  }
  const int G = gridDim.x, zs = p.batch * (p.splits > 1 ? p.splits : 1);
  const int blocks = (p.seqlen_q + ws_config::kBM - 1) / ws_config::kBM;
  const long long n = (long long)blocks * p.hq * zs, base = (long long)r * G;
  if (base >= n) return false;
  const long long item = base + ((r & 1) ? G - 1 - (int)blockIdx.x : (int)blockIdx.x);
  any = item < n;
  if (any) {
    const long long per_block = (long long)p.hq * zs;
    m_block = blocks - 1 - (int)(item / per_block);
    h = (int)(item % per_block % p.hq);
    z = (int)(item % per_block / p.hq);
  }
  return true;
}

/* The flash kernel's shared memory: ws_smem's, and with kPersist, after the barriers (from the next 1 KiB), a staging
 * area for O and a second Q tile (one CTA an item stages O in the Q tile, free after the item's last S). */
template <int D, bool kPersist, int BN>
constexpr size_t ws_fwd_smem_bytes() {
  return ws_config::smem_bytes<D, BN>() +
         (kPersist ? 1024 - 256 + 2 * (size_t)ws_config::kBM * D * sizeof(uint16_t) : 0);
}
template <int D, bool kPersist, int BN>
__device__ __forceinline__ uint16_t *ws_fwd_stage_o(const ws_smem<D, BN> &sm) {
  return kPersist ? reinterpret_cast<uint16_t *>(reinterpret_cast<uint8_t *>(sm.bar) + 1024) : sm.sQ;
}
static_assert(ws_fwd_smem_bytes<128, true, ws_config::kBN>() <= 227 * 1024, "an H100/H200 CTA's shared memory");

/* Persistent: the producer deals the CTA's items to the consumers through two Q buffers, item j in buffer j & 1 (the
 * ws_smem Q tile, or the second one after the staging area), so that it loads the next item's Q as the current one
 * starts, not after its last S. With each Q it writes the item's note (ws_item_note) before the arrive that completes
 * that buffer's full barrier, and the consumers copy the note after their wait on it, before they release the buffer;
 * a note with h < 0 ends the items (its full barrier completed by a plain arrive, as for an item without key tiles).
 * It replaces the consumers' own ws_item and fwd_block_setup between one item's stores and the next one's Q wait, and
 * that Q's load from HBM after the last S: of the ~1,800 cycles from the stores to the Q wait at 2048 keys causal,
 * ~1,500 were the set-up (64-bit divisions, cu_seqlens loads), and the Q wait itself ~1,800 more (NOTES,
 * attention/flash_fwd, session 50). The second buffer's barriers lie after ws_bars, the notes in the 768 bytes the
 * persistent kernel adds before the staging area. */
struct ws_item_note {
  fwd_block blk;
  int h;
};
struct ws_q2 {
  uint64_t full, empty; /* the second Q buffer's, as ws_bars' q_full and q_empty */
};
static_assert(sizeof(ws_bars) <= 128 && sizeof(ws_item_note) <= 128, "the persistent barriers' and notes' room");
/* Buffer b's Q tile, barriers and note, at constant offsets from sm's (b is 0 or 1). */
template <int D, int BN>
struct ws_items {
  static constexpr int kQ1 = (ws_config::kBM + 2 * ws_config::kStages * BN) * D + 512 + ws_config::kBM * D;
  uint16_t *sq0;
  uint8_t *bars;
  __device__ __forceinline__ explicit ws_items(const ws_smem<D, BN> &sm)
      : sq0(sm.sQ), bars(reinterpret_cast<uint8_t *>(sm.bar)) {}
  __device__ __forceinline__ uint16_t *sq(int b) const { return sq0 + b * kQ1; }
  __device__ __forceinline__ uint64_t *full(int b) const { return reinterpret_cast<uint64_t *>(bars + 128 * b); }
  __device__ __forceinline__ uint64_t *empty(int b) const { return reinterpret_cast<uint64_t *>(bars + 8 + 128 * b); }
  __device__ __forceinline__ ws_item_note *note(int b) const {
    return reinterpret_cast<ws_item_note *>(bars + 256 + 128 * b);
  }
};
static_assert(offsetof(ws_bars, q_full) == 0 && offsetof(ws_bars, q_empty) == 8 && offsetof(ws_q2, empty) == 8,
              "ws_items' offsets");

/* Whether consumer wg stores its 64 rows of O by TMA (ws_store_o_tma): in an unsplit call (p.o_tma) where those rows
 * lie inside the item's sequence, or where its sequence is the last of p.o's rows (the map clips the rows past them);
 * else, where the rows past the sequence belong to the next one, by store_out. The same for the whole warpgroup. */
__device__ __forceinline__ bool ws_o_by_tma(const fwd_params &p, const fwd_block &blk, int wg) {
  return p.o_tma && (blk.m_start + wg * 64 + 64 <= blk.seqlen_q || blk.q0 + blk.seqlen_q == p.total_q);
}

/* The epilogue through shared memory (ws_o_by_tma), FlashAttention-3's: consumer wg's 64 rows of O / l as bf16 into
 * its SW128 boxes of the staging tile sO (laid out as the Q tile: D / 64 boxes of 128 rows x 64 columns, this
 * consumer's 64 rows in each; conflict-free 4-byte stores), then one thread's TMA store of them (the map clips the rows
 * past the sequence); then the LSE directly, after the proxy fence (MEMBAR.ALL.CTA in its SASS, which would wait for
 * them). Before it writes sO, the thread that issued the last item's store waits for that store to have read it
 * (kPersist). The direct 4-byte stores it replaces fill half a sector each; at 2048 keys it cut the last P V -> stores
 * done from ~2,780 to ~2,020 cycles (NOTES, attention/flash_fwd, session 49). */
template <int D>
__device__ __forceinline__ void ws_store_o_tma(const CUtensorMap *to, uint16_t *sO, const fwd_params &p,
                                               const fwd_block &blk, int h, int wg, int ct, const float (&o)[D / 8][4],
                                               const float (&m_r)[2], const float (&l_r)[2]) {
  constexpr int BM = ws_config::kBM;
  const int lane = ct % 32, t = lane % 4, bar = ws_config::kBarEpi + wg;
  const int r0 = wg * 64 + ((ct % 128) / 32) * 16 + lane / 4; /* this thread's first row of the 128 */
  const bool leader = ct % 128 == 0;
  if (leader) mk_sm90::bulk_wait_read<0>();
  mk_sm90::named_bar_sync(bar, 128);
  float l[2];
#pragma unroll
  for (int r = 0; r < 2; r++) {
    l[r] = quad_sum(l_r[r]);
    const float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
#pragma unroll
    for (int j = 0; j < D / 8; j++)
      *reinterpret_cast<uint32_t *>(sO + sw128(BM, r0 + r * 8, j) + 2 * t) =
          pack_bf16x2(o[j][2 * r] * inv, o[j][2 * r + 1] * inv);
  }
  fence_proxy_async(); /* sO is read by the TMA store (async proxy) */
  mk_sm90::named_bar_sync(bar, 128);
  if (leader) {
#pragma unroll
    for (int cb = 0; cb < D / 64; cb++)
      mk_sm90::tma_store_3d(to, sO + cb * BM * 64 + wg * 64 * 64, h * D + cb * 64, blk.q0 + blk.m_start + wg * 64, 0);
    mk_sm90::bulk_commit();
  }
  if (!p.lse || t) return;
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const int q = blk.m_start + r0 + r * 8;
    if (q < blk.seqlen_q)
      p.lse[(long long)h * p.total_q + blk.q0 + q] = row_lse(m_r[r], l[r], p.scale);
  }
}

/* One CTA an item, one sequence (p.q_prefetch = the CTAs resident at once): lane 0 of the producer prefetches into L2
 * the Q tile of the CTA launched that many after its own, about the one that starts (on some SM) as this wave's CTAs
 * exit, so that its Q load hits L2; q0 = the sequence's first row. At 2048 keys a CTA's Q took ~2,900 cycles from the
 * producer's load to the consumers' wait, most of the ~5,600 between one CTA's stores and the next one's Q on the same
 * SM (NOTES, attention/flash_fwd, session 49). */
template <int D>
__device__ __forceinline__ void ws_prefetch_later_q(const CUtensorMap *tq, const fwd_params &p, int q0) {
  const int lin = (int)(blockIdx.x + gridDim.x * blockIdx.y) + p.q_prefetch;
  if (threadIdx.x % 32 || lin >= (int)(gridDim.x * gridDim.y)) return;
  const int m0 = (int)(gridDim.x - 1 - lin % gridDim.x) * ws_config::kBM, h = lin / (int)gridDim.x;
#pragma unroll
  for (int cb = 0; cb < D / 64; cb++) mk_sm90::tma_prefetch_3d(tq, h * D + cb * 64, q0 + m0, 0);
}

/* Thread 0, right after it initialised the barriers and before the CTA's barrier (p.early_q): the Q tile and, where
 * it goes by TMA, K0 of the CTA's first item, so that they load while the CTA starts (its barrier, the register
 * moves, the producer's set-up). Returns what it issued (bit 0 Q, bit 1 K0) for ws_produce to skip. */
template <int D, bool kPersist, int BN>
__device__ __forceinline__ int ws_issue_first(const CUtensorMap *tq, const CUtensorMap *tk, const fwd_params &p,
                                              const ws_smem<D, BN> &sm) {
  int z, m_block, h;
  bool any;
  fwd_block blk;
  if (!p.early_q || !ws_item<kPersist>(p, 0, z, m_block, h, any) || !any ||
      !fwd_block_setup<D, ws_config::kBM, BN>(p, z, m_block, h, blk) || blk.n_blocks == blk.n_begin)
    return 0;
  ws_load_q<D>(tq, sm.sQ, *sm.bar, h * D, blk.q0 + blk.m_start);
  const int n0 = ws_tile_start<BN>(blk.n_begin, blk.seqlen_k);
  if (p.cu_k && blk.seqlen_k - n0 < BN) return 1; /* K0 by cp.async: the whole warp, later */
  ws_load_tile<D, BN>(tk, sm.sK, &sm.bar->k_full[0], &sm.bar->k_empty[0], 0, (h / p.group) * D, blk.k0 + n0, 0, true,
                      nullptr, 0, 0);
  return 3;
}

/* The producer warp, one tile of BN keys (ring stage of ring tile kt + t) of item blk's key tile t (ws_tile_start):
 * by TMA, or by cp.async where it would run past its sequence in a varlen batch. */
template <int D, int BN>
__device__ __forceinline__ void ws_load_kv(const CUtensorMap *map, const uint16_t *g, uint16_t *ring, uint64_t *full,
                                           uint64_t *empty, const fwd_block &blk, int col, bool varlen, int kt, int t) {
  constexpr int S = ws_config::kStages;
  const int s = (kt + t) % S, n0 = ws_tile_start<BN>(blk.n_begin + t, blk.seqlen_k), valid = blk.seqlen_k - n0;
  ws_load_tile<D, BN>(map, ring + s * BN * D, &full[s], &empty[s], (uint32_t)(((kt + t) / S) & 1), col, blk.k0 + n0,
                      0, !varlen || valid >= BN, g + (long long)n0 * blk.kv_stride, blk.kv_stride, valid);
}

/* The persistent producer warp (ws_items): item j's note and Q into buffer j & 1 once the consumers have released
 * that buffer's previous item (j - 2); the note of the end after the last item. */
template <int D, int BN>
__device__ __forceinline__ void ws_produce_persistent(const CUtensorMap *tq, const CUtensorMap *tk,
                                                      const CUtensorMap *tv, const fwd_params &p,
                                                      const ws_smem<D, BN> &sm) {
  constexpr int BM = ws_config::kBM;
  ws_bars &bar = *sm.bar;
  const ws_items<D, BN> it(sm);
  const bool lead = threadIdx.x % 32 == 0, varlen = p.cu_k != nullptr;
  int r = 0, j = 0, kt = 0;
  /* The CTA's next item from round r on (false: none left). */
  auto next = [&](fwd_block &blk, int &h) {
    int z, m_block;
    bool any;
    for (; ws_item<true>(p, r, z, m_block, h, any); r++)
      if (any && fwd_block_setup<D, BM, BN>(p, z, m_block, h, blk)) {
        r++;
        return true;
      }
    return false;
  };
  auto publish = [&](const fwd_block &blk, int h, bool end) {
    const int b = j & 1;
    mk_sm90::mbar_wait(it.empty(b), ((j >> 1) & 1) ^ 1);
    if (lead) {
      if (end)
        it.note(b)->h = -1;
      else
        *it.note(b) = ws_item_note{blk, h};
    }
    if (!end && blk.n_blocks > blk.n_begin)
      ws_load_q<D>(tq, it.sq(b), it.full(b), h * D, blk.q0 + blk.m_start);
    else if (lead)
      mk_sm90::mbar_arrive(it.full(b));
    j++;
  };
  {
    fwd_block blk;
    int h;
    const bool have = next(blk, h);
    publish(blk, h, !have);
  }
  for (int i = 0;; i++) { /* item i, from its note (this warp's lane 0 wrote it): fewer registers than a copy */
    __syncwarp();
    const ws_item_note cur = *it.note(i & 1);
    if (cur.h < 0) break;
    const fwd_block &blk = cur.blk;
    const int tiles = blk.n_blocks - blk.n_begin, col = (cur.h / p.group) * D;
    if (tiles > 0) ws_load_kv<D, BN>(tk, blk.gk, sm.sK, bar.k_full, bar.k_empty, blk, col, varlen, kt, 0);
    {
      fwd_block nxt;
      int hn;
      const bool more = next(nxt, hn);
      publish(nxt, hn, !more);
    }
    for (int t = 0; t < tiles; t++) {
      if (t + 1 < tiles) ws_load_kv<D, BN>(tk, blk.gk, sm.sK, bar.k_full, bar.k_empty, blk, col, varlen, kt, t + 1);
      ws_load_kv<D, BN>(tv, blk.gv, sm.sV, bar.v_full, bar.v_empty, blk, col, varlen, kt, t);
    }
    kt += tiles;
  }
}

/* The producer warp: per item, Q (once the consumers are done with the previous item's), then K0, K1, V0, K2, V1,
 * ... into the ring; kt counts the ring's tiles over the items. Persistent: Q, K0 of the first item, then per item the
 * next item's Q (ws_items) after its K0. */
template <int D, bool kPersist, int BN>
__device__ __forceinline__ void ws_produce(const CUtensorMap *tq, const CUtensorMap *tk, const CUtensorMap *tv,
                                           const fwd_params &p, const ws_smem<D, BN> &sm, int pre) {
  constexpr int BM = ws_config::kBM;
  ws_bars &bar = *sm.bar;
  if constexpr (!kPersist) pre = __shfl_sync(0xffffffffu, pre, 0); /* lane 0's (ws_issue_first), for item 0 */
  const bool varlen = p.cu_k != nullptr;
  if (threadIdx.x % 32 == 0) {
    mk_sm90::tma_prefetch_desc(tq);
    mk_sm90::tma_prefetch_desc(tk);
    mk_sm90::tma_prefetch_desc(tv);
  }
  if constexpr (kPersist) {
    ws_produce_persistent<D, BN>(tq, tk, tv, p, sm);
    return;
  }
  int kt = 0, qi = 0, z, m_block, h;
  bool any;
  for (int r = 0; ws_item<kPersist>(p, r, z, m_block, h, any); r++) {
    fwd_block blk;
    if (!any || !fwd_block_setup<D, BM, BN>(p, z, m_block, h, blk)) continue;
    const int tiles = blk.n_blocks - blk.n_begin, col = (h / p.group) * D;
    if (tiles == 0) continue;
    const int pre_r = r == 0 ? pre : 0;
    if (!(pre_r & 1)) {
      mk_sm90::mbar_wait(&bar.q_empty, (qi & 1) ^ 1);
      ws_load_q<D>(tq, sm.sQ, bar, h * D, blk.q0 + blk.m_start);
    }
    auto load = [&](const CUtensorMap *map, const uint16_t *g, uint16_t *ring, uint64_t *full, uint64_t *empty,
                    int t) { ws_load_kv<D, BN>(map, g, ring, full, empty, blk, col, varlen, kt, t); };
    if (!(pre_r & 2)) load(tk, blk.gk, sm.sK, bar.k_full, bar.k_empty, 0);
    if (!kPersist && p.q_prefetch) ws_prefetch_later_q<D>(tq, p, blk.q0);
    for (int t = 0; t < tiles; t++) {
      if (t + 1 < tiles) load(tk, blk.gk, sm.sK, bar.k_full, bar.k_empty, t + 1);
      load(tv, blk.gv, sm.sV, bar.v_full, bar.v_empty, t);
    }
    kt += tiles, qi++;
  }
}

template <int D, bool kPersist, int BN>
__global__ void __launch_bounds__(ws_config::kThreads, 1)
    flash_fwd_ws_kernel(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
                        const __grid_constant__ CUtensorMap tv, const __grid_constant__ CUtensorMap to,
                        const fwd_params p) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __trap(); /* built for a GPU without wgmma: the launcher never starts this kernel there */
#else
  using C = ws_config;
  constexpr int BM = C::kBM, ND = D / 8;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const ws_smem<D, BN> sm(smem_raw);
  const int tid = threadIdx.x;
  int pre = 0;
  if (tid == 0) {
    ws_init_bars(*sm.bar);
    if constexpr (kPersist) {
      const ws_items<D, BN> it(sm);
      mk_sm90::mbar_init(it.full(1), 1);
      mk_sm90::mbar_init(it.empty(1), 4 * C::kConsumers);
      mk_sm90::mbar_fence_init();
    } else {
      pre = ws_issue_first<D, kPersist, BN>(&tq, &tk, p, sm);
    }
  }
  __syncthreads();

  if (tid < 128) {
    mk_sm90::setmaxnreg_dec<C::producer_regs<BN>()>();
    if (tid < 32) ws_produce<D, kPersist, BN>(&tq, &tk, &tv, p, sm, pre);
    return;
  }
  mk_sm90::setmaxnreg_inc<C::consumer_regs<BN>()>();
  const int ct = tid - 128, wg = ct / 128, tq4 = tid % 4;
  if (wg == 1) ws_their_turn(wg); /* consumer 0 issues first */
  int kt = 0;
  /* One item: its key tiles against Q tile sq (persistent: waited for; its q_empty released after the last S, at once
   * without key tiles), then O and the LSE. */
  auto item = [&](fwd_block &blk, int h, const uint16_t *sq, uint64_t *q_empty) {
    const int tiles = blk.n_blocks - blk.n_begin, row0 = ws_row0(blk, wg, ct);
    float o[ND][4], m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.f, 0.f};
#pragma unroll
    for (int j = 0; j < ND; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
    if (kPersist || tiles > 0) {
      if (!kPersist) mk_sm90::mbar_wait(&sm.bar->q_full, 0); /* one item */
      ws_consume<D, BN>(sm, wg, ct, tiles, kt, blk, row0, p.scale_log2,
                        [](int t, fwd_block &b) {
                          const int nb = b.n_begin + t;
                          return make_int2(ws_tile_start<BN>(nb, b.seqlen_k), nb * BN);
                        },
                        o, m_r, l_r, sq, q_empty);
    }
    if (ws_o_by_tma(p, blk, wg))
      ws_store_o_tma<D>(&to, ws_fwd_stage_o<D, kPersist, BN>(sm), p, blk, h, wg, ct, o, m_r, l_r);
    else
      store_out<D>(p, blk, h, row0, tq4, o, m_r, l_r);
  };
  if constexpr (kPersist) {
    const ws_items<D, BN> it(sm);
    for (int j = 0;; j++) { /* the producer's notes */
      const int b = j & 1;
      mk_sm90::mbar_wait(it.full(b), (j >> 1) & 1);
      const ws_item_note note = *it.note(b);
      if (note.h < 0) break;
      fwd_block blk = note.blk;
      item(blk, note.h, it.sq(b), it.empty(b));
    }
  } else {
    int z, m_block, h;
    bool any;
    for (int r = 0; ws_item<kPersist>(p, r, z, m_block, h, any); r++) { /* one item */
      fwd_block blk;
      if (!any || !fwd_block_setup<D, BM, BN>(p, z, m_block, h, blk)) continue;
      item(blk, h, nullptr, nullptr);
    }
  }
  if (wg == 0) ws_my_turn(wg); /* takes consumer 1's last hand-over, so both barriers end balanced */
  if (p.o_tma && ct % 128 == 0) mk_sm90::bulk_wait_read<0>(); /* the staged O stays until its store has read it */
#endif
}

/* MK_ATTN_WS_PERSISTENT: 1 one CTA an SM walking the work items heaviest first, 0 one CTA an item, -1 (default)
 * by the call (ws_pick): persistent for causal calls of at most 8192 keys, and for unsplit non-causal calls of at most
 * 4096 keys whose 128-key tiles pad no more keys than 176-key ones would. Causal, with the session 45 softmax (NOTES,
 * attention/flash_fwd, session 45; hq 32 unless noted): persistent 19 % faster at 2048 keys, 13 % at 4096, 4 % at
 * 8192 (3-4 % with 4 KV heads, 10 % at hq 16, hkv 2), 3 % slower at 16384. Non-causal, against one CTA an item with
 * 176-key tiles (run cc66fe2-h100, session 52): -7.8 % at 1024 keys, -8.8 % at 2048 (d 64 -7.9 %), -4.4 % at 4096;
 * +2.6 % at 2112 (17 tiles of 128 against 12 of 176), +1.4 % at 8192, where its items, heaviest first across all
 * heads, read every KV head at once (one CTA an item runs the query blocks of one head together). */
MK_PARAM_INT(attn_ws_persistent, "ATTN_WS_PERSISTENT", -1, -1, 1)
/* MK_ATTN_WS_BN176: 1 the one-CTA-an-item kernel takes tiles of 176 keys (FlashAttention-3's for d 128 without a
 * mask), 0 128, -1 (default) 176 for unsplit non-causal calls. The persistent kernel takes 128. */
MK_PARAM_INT(attn_ws_bn176, "ATTN_WS_BN176", -1, -1, 1)
/* MK_ATTN_WS_TMA_O: 1 (default) the epilogue of an unsplit call stages O in shared memory for a TMA store
 * (ws_store_o_tma, ws_o_by_tma); 0 each thread stores its O directly (store_out, as split calls always do). */
MK_PARAM_INT(attn_ws_tma_o, "ATTN_WS_TMA_O", 1, 0, 1)
/* MK_ATTN_WS_Q_PREFETCH: 1 (default) one CTA an item in a one-sequence unsplit call, each CTA's producer prefetches
 * into L2 the Q tile of the CTA an SM count after its own (ws_prefetch_later_q); 0 none. */
MK_PARAM_INT(attn_ws_q_prefetch, "ATTN_WS_Q_PREFETCH", 1, 0, 1)
/* MK_ATTN_WS_EARLY_Q: 1 (default) one CTA an item, thread 0 issues the item's Q and K0 before the CTA's barrier
 * (ws_issue_first); 0 the producer warp does, after it. Run 1c28130, bursts: 2048 and 2112 non-causal -1.1 %, 4096,
 * 8192 and causal level (NOTES, attention/flash_fwd, session 50). */
MK_PARAM_INT(attn_ws_early_q, "ATTN_WS_EARLY_Q", 1, 0, 1)
/* MK_ATTN_WS_CTAS: the persistent kernel's CTAs, at most one an SM (0, default: one an SM). Fewer make each CTA walk
 * many items, as large calls do: test_flash_attn_ws1_ctas3 runs the test's small cases so. */
MK_PARAM_INT(attn_ws_ctas, "ATTN_WS_CTAS", 0, 0, 1 << 20)

template <int D, bool kPersist, int BN>
mk_status ws_start(const fwd_params &p_in, int persistent, int sms, cudaStream_t stream) {
  using C = ws_config;
  CUtensorMap mq, mk, mv, mo;
  fwd_params p = p_in;
  p.o_tma = mk_param_attn_ws_tma_o() && p.splits <= 1;
  p.q_prefetch = !kPersist && p.batch == 1 && p.splits <= 1 && mk_param_attn_ws_q_prefetch() ? sms : 0;
  p.early_q = mk_param_attn_ws_early_q();
  /* The maps' rows: one sequence ends at its last key (TMA zero-fills a tile of a sequence shorter than BN); in a
   * varlen batch only key tiles inside their sequence go through TMA, so batch x the longest sequence bounds every
   * row they read. */
  long long k_rows = p.cu_k ? (long long)p.batch * p.seqlen_k : (long long)p.seqlen_k;
  k_rows = k_rows < 1 ? 1 : k_rows > INT32_MAX ? INT32_MAX : k_rows;
  const uint64_t qr = (uint64_t)(p.total_q > 0 ? p.total_q : 1), kr = (uint64_t)k_rows;
  MK_CHECK(mk_gemm_encode_map(&mq, p.q, (uint64_t)p.hq * D, qr, 1, 64, C::kBM));
  MK_CHECK(mk_gemm_encode_map(&mk, p.k, (uint64_t)p.hkv * D, kr, 1, 64, BN));
  MK_CHECK(mk_gemm_encode_map(&mv, p.v, (uint64_t)p.hkv * D, kr, 1, 64, BN));
  if (p.o_tma)
    MK_CHECK(mk_gemm_encode_map(&mo, p.o, (uint64_t)p.hq * D, qr, 1, 64, 64));
  else
    mo = mq; /* not read */
  return flash_fwd_start(flash_fwd_ws_kernel<D, kPersist, BN>, C::kThreads, C::kBM,
                         ws_fwd_smem_bytes<D, kPersist, BN>(), p, D, persistent, stream, mq, mk, mv, mo);
}

template <int D>
mk_status ws_launch(const fwd_params &p, int sms, cudaStream_t stream) {
  const ws_kernel k = ws_pick(p, mk_param_attn_ws_persistent(), mk_param_attn_ws_bn176());
  if (k == WS_PERSISTENT) {
    const int64_t ctas = mk_param_attn_ws_ctas();
    return ws_start<D, true, ws_config::kBN>(p, ctas > 0 && ctas < sms ? (int)ctas : sms, sms, stream);
  }
  if (k == WS_ITEM_176) return ws_start<D, false, 176>(p, 0, sms, stream);
  return ws_start<D, false, ws_config::kBN>(p, 0, sms, stream);
}

}  // namespace

mk_status flash_fwd_launch_ws(const fwd_params &p, int d, int sms, cudaStream_t stream) {
  static_assert(ws_config::kBN == kSm90TileN && ws_config::kBM == kFwdTileM, "the split's choice assumes these tiles");
  static_assert(sizeof(ws_bars) <= 256, "the barriers' room in smem_bytes");
  if (d == 64) return ws_launch<64>(p, sms, stream);
  return ws_launch<128>(p, sms, stream);
}

}  // namespace mk_attn
