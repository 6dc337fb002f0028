/* ring_attn_ws.cu — the fused ring attention's warp-specialised kernel (MK_RING_ATTN_WS=1, the default): the sends
 * and the close of a call as in the tile-loop kernel (ring_attn.cuh), the attention on FlashAttention-3's schedule
 * (flash_fwd_ws.cuh). Protocol, heap layout and API: ring_attn.cu.
 *
 * One CTA an SM, 384 threads. The first comm_ctas CTAs first push this rank's shard to the peers (all threads, the
 * staging in the tile area), then every CTA splits into roles:
 *   producer warp (warp 0): claims an item from the queue, writes it and its count of key tiles to shared memory
 *     (sh.item, sh.tiles) and loads its Q tile (TMA over the caller's q), completing q_full; then picks the sources
 *     in arrival order (ring_pick: own shard first, bounded wait for the nearest when none has arrived) and streams
 *     every key tile of the item's spans through the ring by TMA: K_t with a note (sh.note[stage]: its first key,
 *     the span's keys and the causal offset), then V_{t-1}. The maps address a span of every slot as a plane
 *     (ring_ws_maps), so TMA zero-fills a tile past its span: keys past it (the next span's, or past s) are never
 *     read.
 *     When a wait fails (timeout, abort) it completes the item's remaining tiles without loading them, noted as
 *     keyless (the consumers finish the item; a failed call's output is undefined), and claims no further item.
 *     The end of the queue: sh.item = -1, q_full completed by a plain arrive.
 *   consumer warpgroups: per item, the tile loop of flash_fwd_ws.cuh with the notes' masks; O and the LSE once.
 * The notes and the item ride on the barriers: written by the producer's lane 0 before its arrive (release), read
 * by the consumers after their wait (acquire); a note's stage is refilled only after both consumers release it. */
#include <cuda_runtime.h>
#include <math.h>

#include "core/check.h"
#include "kernels/attention/flash_fwd_ws.cuh"
#include "kernels/attention/ring_attn.cuh"
#include "kernels/gemm/tma_map.cuh"

namespace mk_attn {
namespace {

static_assert(ws_config::kBM == kRingBM && ws_config::kBN == kRingBN, "the items and tiles of both kernels");

/* What the consumers need of a key tile to mask it. */
struct ring_ws_note {
  int n0, lo;       /* its first key within its span; the first it counts (ws_tile_start: the span's tail tile) */
  int seqlen_k;     /* the span's keys (0: a keyless zero tile) */
  long long off;    /* query i of the item's span sees key j of this span iff j <= i + off (causal) */
};

struct ring_ws_shared {
  ring_ws_note note[ws_config::kStages];
  int item, tiles; /* the item whose Q tile q_full announces (-1: the queue is empty), its key tiles */
};

/* The TMA maps: Q ([s][hq d], the caller's), and K and V by key span (kv[0] K, kv[1] V; [span] i of 0, 1): planes
 * = the W slots, the span's rows in each, so that TMA zero-fills a tile past its span. */
struct ring_ws_maps {
  CUtensorMap q, kv[2][2];
};

template <int D>
__device__ __forceinline__ void ring_ws_produce(const ring_params &rp, uint64_t call, const ring_ws_maps &maps,
                                                const ws_smem<D> &sm, ring_ws_shared &sh) {
  constexpr int BN = ws_config::kBN, S = ws_config::kStages;
  ws_bars &bar = *sm.bar;
  const mk_dev_world &w = rp.w;
  const int W = w.size, r = w.rank, lane = threadIdx.x % 32;
  const uint64_t target = (call + 1) * kRingArrive;
  uint64_t *queue = mk_local_ptr<uint64_t>(w, rp.ctl_off + 8ull * kRingCtlQueue);
  if (lane == 0) {
    mk_sm90::tma_prefetch_desc(&maps.q);
    for (int i = 0; i < ring_n_spans(rp); i++) {
      mk_sm90::tma_prefetch_desc(&maps.kv[0][i]);
      mk_sm90::tma_prefetch_desc(&maps.kv[1][i]);
    }
  }
  int kt = 0, ok = 1;
  for (int qi = 0;; qi++) {
    int item = rp.n_items;
    if (lane == 0 && ok) item = (int)atomicAdd(reinterpret_cast<unsigned long long *>(queue), 1ull);
    item = __shfl_sync(0xffffffffu, item, 0);
    mk_sm90::mbar_wait(&bar.q_empty, (qi & 1) ^ 1); /* the consumers are done with Q and sh.item */
    if (item >= rp.n_items) {
      if (lane == 0) {
        sh.item = -1;
        mk_sm90::mbar_arrive(&bar.q_full);
      }
      return;
    }
    int h, m_start, tiles;
    rows_span q;
    ring_item(rp, item, h, q, m_start);
    uint64_t todo = ring_todo(rp, q, m_start, tiles);
    if (lane == 0) sh.item = item, sh.tiles = tiles;
    ws_load_q<D>(&maps.q, sm.sQ, bar, h * D, q.row0 + m_start);
    const int col = (h / rp.p.group) * D;
    /* Tile t of tensor kv (0 K, 1 V): key row `row` of span `span` of slot `src`; src < 0: no load (a failed call's
     * tile: the stage keeps what it held). */
    auto load = [&](int kv, int t, int src, int span, int row) {
      const int s = (kt + t) % S;
      const uint32_t parity = (uint32_t)(((kt + t) / S) & 1);
      uint64_t *full = kv ? bar.v_full : bar.k_full, *empty = kv ? bar.v_empty : bar.k_empty;
      if (src >= 0) {
        ws_load_tile<D>(&maps.kv[kv][span], (kv ? sm.sV : sm.sK) + s * BN * D, &full[s], &empty[s], parity, col, row,
                        src, true, nullptr, 0, 0);
        return;
      }
      mk_sm90::mbar_wait(&empty[s], parity ^ 1);
      if (lane == 0) mk_sm90::mbar_arrive(&full[s]);
    };
    int t = 0, prev_src = 0, prev_span = 0, prev_row = 0;
    auto emit = [&](int src, int span, int row, const ring_ws_note &note) { /* K_t with its note, then V_{t-1} */
      const int s = (kt + t) % S;
      mk_sm90::mbar_wait(&bar.k_empty[s], (((kt + t) / S) & 1) ^ 1); /* the note's slot is free too */
      if (lane == 0) sh.note[s] = note;
      load(0, t, src, span, row);
      if (t > 0) load(1, t - 1, prev_src, prev_span, prev_row);
      prev_src = src, prev_span = span, prev_row = row, t++;
    };
    while (todo) {
      int k = __ffsll((long long)todo) - 1;
      if (lane == 0 && ok) {
        k = ring_pick(rp, todo, target, item, ok);
        asm volatile("fence.proxy.async.global;" ::: "memory"); /* its TMA reads (async proxy) after the acquire */
      }
      k = __shfl_sync(0xffffffffu, k, 0);
      ok = __shfl_sync(0xffffffffu, ok, 0);
      todo &= ~(1ull << k);
      const int src = (r - k + W) % W;
      for (int i = 0; i < ring_n_spans(rp); i++) {
        const rows_span ks = ring_key_span(rp, src, i);
        const int nt = ring_span_tiles(rp, q, m_start, ks);
        for (int nb = 0; nb < nt; nb++) {
          const int n0 = ws_tile_start<BN>(nb, ks.len);
          if (ok)
            emit(src, i, n0, ring_ws_note{n0, nb * BN, ks.len, q.pos - ks.pos});
          else
            emit(-1, 0, 0, ring_ws_note{0, 0, 0, 0});
        }
      }
    }
    if (t > 0) load(1, t - 1, prev_src, prev_span, prev_row);
    kt += tiles;
  }
}

template <int D>
__device__ __forceinline__ void ring_ws_consume(const ring_params &rp, const ws_smem<D> &sm, const ring_ws_shared &sh,
                                                int wg, int ct) {
  constexpr int BM = ws_config::kBM, BN = ws_config::kBN, S = ws_config::kStages, ND = D / 8;
  int kt = 0;
  for (int qi = 0;; qi++) {
    mk_sm90::mbar_wait(&sm.bar->q_full, qi & 1);
    const int item = sh.item, tiles = sh.tiles;
    if (item < 0) return;
    int h, m_start;
    rows_span q;
    ring_item(rp, item, h, q, m_start);
    fwd_block blk; /* the query rows; each tile's note sets the keys and the causal offset */
    fwd_block_init<D, BM, BN>(rp.p, h, q.row0, q.len, 0, 0, m_start, rp.causal != 0, 0, blk);
    const int row0 = ws_row0(blk, wg, ct);
    float o[ND][4], m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.f, 0.f};
#pragma unroll
    for (int j = 0; j < ND; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
    ws_consume<D>(sm, wg, ct, tiles, kt, blk, row0, rp.p.scale_log2,
                  [&](int t, fwd_block &b) {
                    const ring_ws_note &n = sh.note[(kt + t) % S];
                    b.seqlen_k = n.seqlen_k;
                    b.off = n.off;
                    return make_int2(n.n0, n.lo);
                  },
                  o, m_r, l_r);
    store_out<D>(rp.p, blk, h, row0, ct % 4, o, m_r, l_r);
  }
}

template <int D>
__global__ void __launch_bounds__(ws_config::kThreads, 1)
    ring_attn_ws_kernel(const __grid_constant__ ring_ws_maps maps, const ring_params rp) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __trap(); /* built for a GPU without wgmma: the launcher never starts this kernel there */
#else
  using C = ws_config;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  __shared__ uint64_t send_bars[kRingTmaStages];
  __shared__ ring_ws_shared sh;
  const ws_smem<D> sm(smem_raw);
  const int tid = threadIdx.x;
  const uint64_t call = mk_ld_volatile(mk_local_ptr<uint64_t>(rp.w, rp.ctl_off + 8ull * kRingCtlCalls));
  if (tid == 0) ws_init_bars(*sm.bar);
  __syncthreads();
  bool ok = true;
  if ((int)blockIdx.x < rp.comm_ctas) ok = ring_send(rp, call, (char *)sm.sQ, send_bars);
  if (ok) {
    if (tid < 128) {
      mk_sm90::setmaxnreg_dec<C::producer_regs<C::kBN>()>();
      if (tid < 32) ring_ws_produce<D>(rp, call, maps, sm, sh);
    } else {
      mk_sm90::setmaxnreg_inc<C::consumer_regs<C::kBN>()>();
      const int ct = tid - 128, wg = ct / 128;
      if (wg == 1) ws_their_turn(wg); /* consumer 0 issues first */
      ring_ws_consume<D>(rp, sm, sh, wg, ct);
      if (wg == 0) ws_my_turn(wg); /* takes consumer 1's last hand-over, so both barriers end balanced */
    }
  }
  __syncthreads();
  if (tid == 0) ring_finish(rp, call);
#endif
}

template <int D>
mk_status ws_launch(const ring_params &rp, int grid, cudaStream_t stream) {
  using C = ws_config;
  const fwd_params &p = rp.p;
  ring_ws_maps maps;
  const uint64_t cols = (uint64_t)p.hkv * D, slot = (uint64_t)rp.max_s * cols * 2; /* bytes between the slots */
  MK_CHECK(mk_gemm_encode_map(&maps.q, p.q, (uint64_t)p.hq * D, (uint64_t)rp.s, 1, 64, C::kBM));
  for (int kv = 0; kv < 2; kv++) {
    const uint16_t *base = kv ? p.v : p.k;
    if (!rp.causal) {
      MK_CHECK(mk_gemm_encode_map_planes(&maps.kv[kv][0], base, cols, (uint64_t)rp.s, (uint64_t)rp.w.size, slot, 64,
                                         C::kBN));
      maps.kv[kv][1] = maps.kv[kv][0];
      continue;
    }
    MK_CHECK(mk_gemm_encode_map_planes(&maps.kv[kv][0], base, cols, (uint64_t)rp.s1, (uint64_t)rp.w.size, slot, 64,
                                       C::kBN));
    /* s = 1 leaves the second span empty: no tile reads it, its map only needs to be valid. */
    MK_CHECK(mk_gemm_encode_map_planes(&maps.kv[kv][1], base + (uint64_t)rp.s1 * cols,
                                       cols, (uint64_t)(rp.s2 > 0 ? rp.s2 : 1), (uint64_t)rp.w.size, slot, 64, C::kBN));
  }
  ring_attn_ws_kernel<D><<<grid, C::kThreads, C::smem_bytes<D>(), stream>>>(maps, rp);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

template <int D>
mk_status ws_prepare() {
  cudaFuncAttributes fa;
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)ring_attn_ws_kernel<D>));
  MK_CUDA_CHECK(cudaFuncSetAttribute((const void *)ring_attn_ws_kernel<D>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, (int)ws_config::smem_bytes<D>()));
  return MK_STATUS_OK;
}

}  // namespace

mk_status ring_ws_prepare(int d) { return d == 64 ? ws_prepare<64>() : ws_prepare<128>(); }

mk_status ring_ws_launch(const ring_params &rp, int d, int grid, cudaStream_t stream) {
  return d == 64 ? ws_launch<64>(rp, grid, stream) : ws_launch<128>(rp, grid, stream);
}

}  // namespace mk_attn
