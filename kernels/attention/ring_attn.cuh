/* ring_attn.cuh — internal to the fused ring attention (ring_attn.cu: the host side and the wgmma tile-loop kernel;
 * ring_attn_ws.cu: the warp-specialised kernel): the launch parameters, the spans of query and key rows, the work
 * items, and the two phases both kernels share — the sends of this rank's K/V shard and the close of a call. The
 * heap layout and the protocol are in ring_attn.cu's header comment. */
#ifndef MK_ATTN_RING_ATTN_CUH
#define MK_ATTN_RING_ATTN_CUH

#include <cuda_runtime.h>

#include "comm/mk_device.cuh"
#include "kernels/attention/flash_fwd.cuh"

namespace mk_attn {

enum { kRingParts = 8, kRingArrive = 2 * kRingParts, kRingTmaChunk = 16384, kRingTmaStages = 4, kRingMaxRanks = 64 };
enum { kRingCtlQueue = 0, kRingCtlFinished = 1, kRingCtlCalls = 2, kRingCtlWords = 4 };
constexpr int kRingBM = 128, kRingBN = 128; /* query rows of an item, keys of a tile (both kernels) */

struct ring_params {
  fwd_params p; /* q, o, lse (total_q = s), k/v = the heap's K/V arrays, heads, scale */
  mk_dev_world w;
  uint64_t k_off, v_off, slot_bytes, row_bytes, arrive_off, done_off, ack_off, ctl_off;
  int s, s1, s2, max_s, causal;
  int nqb_a, nqb_b, n_items, comm_ctas;
};

/* A run of query rows (one zigzag chunk, or all rows) or of key rows of one slot. */
struct rows_span {
  int row0, len;
  long long pos; /* global position of row0 */
};

__device__ __forceinline__ bool ring_is_local(const mk_dev_world &w, int rank) {
  return rank / w.local_size == w.node;
}

/* Key spans of shard `src`: causal, its two chunks (i = 0, 1); else all rows (i = 0). */
__device__ __forceinline__ int ring_n_spans(const ring_params &rp) { return rp.causal ? 2 : 1; }
__device__ __forceinline__ rows_span ring_key_span(const ring_params &rp, int src, int i) {
  if (!rp.causal) return {0, rp.s, (long long)src * rp.s};
  if (i == 0) return {0, rp.s1, (long long)src * rp.s1};
  return {rp.s1, rp.s2, (long long)rp.w.size * rp.s1 + (long long)(rp.w.size - 1 - src) * rp.s2};
}

/* Work item `item`: its q head, its query span and the first row of its block within the span. Causal, heaviest
 * first: the blocks of the late chunk, last block first, then the early chunk's, every head of a block together.
 * Non-causal (every item the same work): head by head, so that the CTAs at work share a few heads' K/V in L2
 * (session 42, one rank: 2 % faster at S 8192 and 16384 than all heads of a block together). */
__device__ __forceinline__ void ring_item(const ring_params &rp, int item, int &h, rows_span &q, int &m_start) {
  const int W = rp.w.size, r = rp.w.rank;
  const int qb = rp.causal ? item / rp.p.hq : item % rp.nqb_a;
  h = rp.causal ? item % rp.p.hq : item / rp.nqb_a;
  int m_block;
  if (qb < rp.nqb_b) {
    q = {rp.s1, rp.s2, (long long)W * rp.s1 + (long long)(W - 1 - r) * rp.s2};
    m_block = rp.nqb_b - 1 - qb;
  } else {
    q = rp.causal ? rows_span{0, rp.s1, (long long)r * rp.s1} : rows_span{0, rp.s, (long long)r * rp.s};
    m_block = rp.nqb_a - 1 - (qb - rp.nqb_b);
  }
  m_start = m_block * kRingBM;
}

/* Key tiles of span k that the query block at m_start of span q sees (the causal offset is q.pos - k.pos). */
__device__ __forceinline__ int ring_span_tiles(const ring_params &rp, const rows_span &q, int m_start,
                                               const rows_span &k) {
  long long n_end = k.len;
  if (rp.causal) {
    const long long last_row = (long long)min(m_start + kRingBM, q.len) - 1;
    n_end = max(0LL, min((long long)k.len, last_row + q.pos - k.pos + 1));
  }
  return (int)((n_end + kRingBN - 1) / kRingBN);
}

/* The sources with keys the query block at m_start of span q sees (bit k: source rank - k), and their key tiles. */
__device__ __forceinline__ uint64_t ring_todo(const ring_params &rp, const rows_span &q, int m_start, int &tiles) {
  const int W = rp.w.size, r = rp.w.rank;
  uint64_t todo = 0;
  tiles = 0;
  for (int k = 0; k < W; k++)
    for (int i = 0; i < ring_n_spans(rp); i++) {
      const int t = ring_span_tiles(rp, q, m_start, ring_key_span(rp, (r - k + W) % W, i));
      tiles += t;
      if (t > 0) todo |= 1ull << k;
    }
  return todo;
}

/* One thread: the next source of an item among the set bits of todo (bit k: source rank - k, whose shard is complete
 * once its arrive counter reaches target): the own shard first, then the nearest in ring order that has arrived;
 * where none has, it waits (bounded) for the nearest and sets ok = 0 if that wait fails (timeout or abort). */
__device__ __forceinline__ int ring_pick(const ring_params &rp, uint64_t todo, uint64_t target, int item, int &ok) {
  const mk_dev_world &w = rp.w;
  const int W = w.size, r = w.rank;
  for (int k = 0; k < W; k++) {
    const uint64_t *arrived = mk_local_ptr<uint64_t>(w, rp.arrive_off + 8ull * ((r - k + W) % W));
    if (((todo >> k) & 1) && (k == 0 || mk_ld_acquire_sys(arrived) >= target)) return k;
  }
  const int pick = __ffsll((long long)todo) - 1, src = (r - pick + W) % W;
  ok = mk_wait_ge(w, rp.arrive_off + 8ull * src, target, MK_OP_RING_ATTN, src, item);
  return pick;
}

/* Whole CTA: the sends of this rank's shard (ring_attn.cu's header comment), staged through `stage` (kRingTmaStages
 * chunks of kRingTmaChunk bytes of shared memory) with `bars`. False on timeout/abort. */
__device__ __forceinline__ bool ring_send(const ring_params &rp, uint64_t call, char *stage, uint64_t *bars) {
  const mk_dev_world &w = rp.w;
  const int W = w.size, r = w.rank, L = w.local_size, lr = w.local_rank;
  const uint64_t bytes = (uint64_t)rp.s * rp.row_bytes;
  const uint64_t src_k = rp.k_off + r * rp.slot_bytes, src_v = rp.v_off + r * rp.slot_bytes;
  int ok = 1;
  if (blockIdx.x == 0 && threadIdx.x == 0 && w.nnodes > 1)
    for (int k = 1; k < W && ok; k++) {
      const int dst = (r + k) % W;
      if (ring_is_local(w, dst)) continue;
      ok = mk_wait_ge(w, rp.done_off + 8ull * dst, call, MK_OP_RING_ATTN, dst, -1) &&
           mk_post(w, MK_CMD_PUT_SIGNAL, dst, src_k, src_k, bytes, rp.arrive_off + 8ull * r, kRingParts) &&
           mk_post(w, MK_CMD_PUT_SIGNAL, dst, src_v, src_v, bytes, rp.arrive_off + 8ull * r, kRingParts);
    }
  if (!__syncthreads_and(ok)) return false;
  const uint64_t part = ((bytes + kRingParts - 1) / kRingParts + 15) & ~15ull;
  const int units = (L - 1) * 2 * kRingParts;
  for (int u = blockIdx.x; u < units; u += rp.comm_ctas) {
    const int lp = (lr + u / (2 * kRingParts) + 1) % L, dst = w.node * L + lp;
    const uint64_t base = (u / kRingParts) % 2 ? src_v : src_k;
    const uint64_t beg = min(bytes, (uint64_t)(u % kRingParts) * part), len = min(bytes - beg, part);
    if (!mk_wait_ge_cta(w, rp.done_off + 8ull * dst, call, MK_OP_RING_ATTN, dst, -1)) return false;
    mk_copy_tma_cta(mk_peer_ptr(w, lp, base + beg), mk_local_ptr(w, base + beg), len, stage, kRingTmaChunk,
                    kRingTmaStages, bars);
    if (threadIdx.x == 0) mk_signal_add(w, lp, rp.arrive_off + 8ull * r, 1);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0 && w.nnodes > 1)
    for (int k = 1; k < W && ok; k++) {
      const int src = (r - k + W) % W;
      if (ring_is_local(w, src)) continue;
      ok = mk_wait_ge(w, rp.arrive_off + 8ull * src, (call + 1) * kRingArrive, MK_OP_RING_ATTN, src, -1) &&
           mk_post(w, MK_CMD_SIGNAL, src, 0, 0, 0, rp.ack_off + 8ull * r, 1);
    }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); /* the staging smem becomes tiles */
  return __syncthreads_and(ok);
}

/* Thread 0 of every CTA; the last one of this rank closes the call. */
__device__ __forceinline__ void ring_finish(const ring_params &rp, uint64_t call) {
  const mk_dev_world &w = rp.w;
  const int W = w.size, r = w.rank;
  uint64_t *ctl = mk_local_ptr<uint64_t>(w, rp.ctl_off);
  __threadfence();
  if (atomicAdd(reinterpret_cast<unsigned long long *>(&ctl[kRingCtlFinished]), 1ull) != gridDim.x - 1) return;
  for (int k = 1; k < W; k++) { /* remote ranks have copied this rank's shard out */
    const int j = (r + k) % W;
    if (!ring_is_local(w, j) && !mk_wait_ge(w, rp.ack_off + 8ull * j, call + 1, MK_OP_RING_ATTN, j, -1)) break;
  }
  ctl[kRingCtlQueue] = 0;
  ctl[kRingCtlFinished] = 0;
  ctl[kRingCtlCalls] = call + 1;
  __threadfence_system();
  for (int k = 1; k < W; k++) {
    const int j = (r + k) % W;
    if (ring_is_local(w, j))
      mk_signal_add(w, j % w.local_size, rp.done_off + 8ull * r, 1);
    else
      mk_post(w, MK_CMD_SIGNAL, j, 0, 0, 0, rp.done_off + 8ull * r, 1);
  }
}

/* The warp-specialised kernel (ring_attn_ws.cu): loads it and raises its shared-memory limit (at create: a kernel
 * loaded lazily at its first launch would wait for a peer's running kernel), and launches it on `grid` CTAs. */
mk_status ring_ws_prepare(int d);
mk_status ring_ws_launch(const ring_params &rp, int d, int grid, cudaStream_t stream);

}  // namespace mk_attn

#endif /* MK_ATTN_RING_ATTN_CUH */
