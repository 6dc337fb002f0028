/* ring_attn.cu — sequence-parallel ("ring") attention over the ranks of an mk_comm_t: the fused
 * path (one persistent launch per rank) and the unfused path (NCCL all-gather of K/V, then the
 * flash kernel). Layouts and the API: mk_attention.h.
 *
 * Heap layout of a handle (same offsets on every rank; W ranks, slot = max_s rows of [hkv, d]):
 *   K[W][max_s][hkv][d], V[W][max_s][hkv][d]   slot j holds rank j's shard; slot `rank` is the
 *                                             caller's input, the others are received
 *   arrive[W] u64   arrive[j]: parts of j's shard received this far (only j adds: +1 per part
 *                   over NVLink, +kRingParts per tensor through the proxy; kRingArrive per call)
 *   done[W]   u64   done[j]: calls rank j has finished (j adds 1 when its last CTA leaves)
 *   ack[W]    u64   ack[j]: calls in which remote rank j has received this rank's shard
 *   ctl[4]    u64   work queue, CTAs finished, calls made (this rank only; the last CTA of a
 *                   call resets the first two and advances the third, so nothing is reset by
 *                   the host and graph replays stay correct)
 *
 * One launch of grid G <= SMs (all CTAs resident; SMs - 1 with other node groups, leaving one
 * SM for the proxy's signal kernel), one CTA per SM. Call number e = ctl[calls] at the start.
 *  send CTAs (the first MK_RING_COMM_CTAS): CTA 0 thread 0 first posts PUT_SIGNALs of K and V to
 *    every rank of another node group (ring order: rank + 1 first), each after waiting for
 *    done[dst] >= e (dst no longer reads its slot of call e - 1). Then the send CTAs push
 *    (dst, tensor, part) units to the peers of the node group with TMA bulk copies, in ring
 *    order, each unit after done[dst] >= e, each followed by arrive[rank] += 1 on dst. Then CTA
 *    0 waits for each remote source's shard and acks it (ack[rank] += 1 on the source through
 *    the proxy). Then the send CTAs join the compute.
 *  compute (every CTA): (query block of 128 rows, q head) items from the queue (ring_item: causal heaviest first,
 *    non-causal head by head); for each, the online softmax runs over the key ranges of every source rank in the
 *    order the shards arrive (own shard first; a source that has not arrived is skipped while another has; then the
 *    nearest in ring order is waited for, bounded), with the causal offset of each (query chunk, key chunk) pair;
 *    O and the LSE are written once. No partial results, no merges. Two kernels do this (MK_RING_ATTN_WS):
 *      warp-specialised (ring_attn_ws.cu, default): FlashAttention-3's schedule of flash_fwd_ws.cuh; the producer
 *        warp claims the items, picks and waits for the sources, and streams every key tile of an item through the
 *        ring with a note of its keys and causal offset; the consumer warpgroups mask by the note.
 *      tile loop (this file): 256 threads, the cp.async tile loop of flash_fwd_sm90.cuh per (item, key span).
 *  finish: the last CTA waits for ack[j] >= e + 1 of every remote rank j (the proxy has copied
 *    this rank's shard out, so the caller may overwrite it), resets the queue, advances the
 *    call number and adds 1 to done[rank] on every other rank.
 * Deviation from a store-and-forward ring: every shard goes from its owner straight to each
 * rank (NVSwitch gives every pair the full link), in ring order, so rank r receives shard
 * r - 1 first, as a ring would deliver it, with no forwarding hop; the receive buffer has a
 * slot per rank (the memory of an all-gather) instead of two rotating slots, which needs no
 * per-step back-pressure and lets each CTA keep its accumulators in registers across all steps. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>

#include "core/check.h"
#include "kernels/attention/flash_fwd_sm90.cuh"
#include "kernels/attention/ring_attn.cuh"

/* CTAs that push K/V to the peers of the node group before they compute. */
MK_PARAM_INT(ring_comm_ctas, "RING_COMM_CTAS", 8, 1, 64)
/* 1: the warp-specialised kernel (ring_attn_ws.cu), 0: the wgmma tile loop (this file). */
MK_PARAM_INT(ring_attn_ws, "RING_ATTN_WS", 1, 0, 1)

namespace mk_attn {
namespace {

template <int D>
__device__ __forceinline__ void span_block(const ring_params &rp, int h, const rows_span &q, int m_start, int src,
                                           const rows_span &k, fwd_block &blk) {
  fwd_block_init<D, sm90_config::kBM, sm90_config::kBN>(rp.p, h, q.row0, q.len, src * rp.max_s + k.row0, k.len,
                                                        m_start, rp.causal != 0, q.pos - k.pos, blk);
}

/* Whole CTA: items from the queue until it is empty. False on timeout/abort. */
template <int D>
__device__ bool ring_compute(const ring_params &rp, uint64_t call, uint8_t *smem_raw, int *sh) {
  const mk_dev_world &w = rp.w;
  const int W = w.size, r = w.rank;
  const sm90_tiles<D> t(smem_raw);
  uint64_t *ctl = mk_local_ptr<uint64_t>(w, rp.ctl_off);
  const uint64_t target = (call + 1) * kRingArrive;
  for (;;) {
    __syncthreads(); /* the previous item is done with shared memory and sh[] */
    if (threadIdx.x == 0) sh[0] = (int)atomicAdd(reinterpret_cast<unsigned long long *>(&ctl[kRingCtlQueue]), 1ull);
    __syncthreads();
    const int item = sh[0];
    if (item >= rp.n_items) return true;
    int h, m_start;
    rows_span q;
    ring_item(rp, item, h, q, m_start);
    fwd_block blk;
    int tiles;
    uint64_t todo = ring_todo(rp, q, m_start, tiles);
    span_block<D>(rp, h, q, m_start, r, ring_key_span(rp, r, 0), blk); /* any span: for the query rows */
    sm90_load_q<D>(t, blk);
    sm90_acc<D> acc;
    sm90_acc_init(acc);
    while (todo) {
      __syncthreads(); /* every thread has read sh[1], sh[2] of the previous source */
      if (threadIdx.x == 0) {
        int ok = 1;
        sh[1] = ring_pick(rp, todo, target, item, ok);
        sh[2] = ok;
      }
      __syncthreads();
      const int k = sh[1];
      if (!sh[2]) { /* timeout or abort: drain the loads in flight and leave */
        cp_async_commit();
        cp_async_wait<0>();
        return false;
      }
      todo &= ~(1ull << k);
      const int src = (r - k + W) % W;
      for (int i = 0; i < ring_n_spans(rp); i++) {
        span_block<D>(rp, h, q, m_start, src, ring_key_span(rp, src, i), blk);
        if (blk.n_blocks > 0) sm90_attend<D>(blk, t, rp.p.scale_log2, acc);
      }
    }
    cp_async_commit(); /* the Q loads, when no key tile was visited */
    cp_async_wait<0>();
    store_out<D>(rp.p, blk, h, sm90_row0(blk), threadIdx.x % 4, acc.o, acc.m, acc.l);
  }
}

template <int D>
__global__ void __launch_bounds__(sm90_config::kThreads, 1) ring_attn_kernel(const ring_params rp) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __trap(); /* built for a GPU without wgmma: the launcher never starts this kernel there */
#else
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  __shared__ uint64_t bars[kRingTmaStages];
  __shared__ int sh[4];
  const uint64_t call = mk_ld_volatile(mk_local_ptr<uint64_t>(rp.w, rp.ctl_off + 8ull * kRingCtlCalls));
  bool ok = true;
  if ((int)blockIdx.x < rp.comm_ctas) ok = ring_send(rp, call, (char *)sm90_tiles<D>(smem_raw).sQ, bars);
  if (ok) ring_compute<D>(rp, call, smem_raw, sh);
  __syncthreads();
  if (threadIdx.x == 0) ring_finish(rp, call);
#endif
}

__global__ void ring_cu_kernel(int32_t *cu, int4 a, int4 b) {
  cu[0] = a.x, cu[1] = a.y, cu[2] = a.z, cu[3] = a.w, cu[4] = b.x, cu[5] = b.y, cu[6] = b.z, cu[7] = b.w;
}

}  // namespace
}  // namespace mk_attn

using namespace mk_attn;

struct mk_ring_attn {
  mk_comm_t *comm;
  mk_dev_world w;
  int W, rank, max_s, hkv, d, sms;
  uint64_t k_off, v_off, slot_bytes, sig_off;
  uint16_t *gk, *gv, *pk, *pv; /* unfused: gathered (rank order), reordered (sequence order) */
  int32_t *cu;                 /* unfused: cu_seqlens of its flash calls */
};

extern "C" int64_t mk_ring_attn_position(int rank, int w, int s, int causal, int row) {
  if (!causal) return (int64_t)rank * s + row;
  const int s1 = (s + 1) / 2, s2 = s / 2;
  return row < s1 ? (int64_t)rank * s1 + row : (int64_t)w * s1 + (int64_t)(w - 1 - rank) * s2 + (row - s1);
}

extern "C" mk_status mk_ring_attn_create(mk_comm_t *comm, int max_s, int hkv, int d, mk_ring_attn_t **out) {
  if (!comm || !out) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "ring_attn: comm or out is NULL");
  *out = NULL;
  const mk_world *wd = mk_comm_world(comm);
  if (max_s < 1 || hkv < 1 || (d != 64 && d != 128) || wd->size > kRingMaxRanks ||
      (int64_t)max_s * wd->size > INT32_MAX)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "ring_attn: max_s %d, hkv %d (>= 1), d %d (64 or 128), %d ranks (at most %d; ranks x max_s within "
                  "int32)",
                  max_s, hkv, d, wd->size, (int)kRingMaxRanks);
  int dev = 0, major = 0, sms = 0;
  MK_CUDA_CHECK(cudaGetDevice(&dev));
  MK_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  MK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  if (major != 9)
    MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_KERNEL, "ring_attn: needs a Hopper GPU (this one is sm_%d0)", major);
  mk_status st = MK_STATUS_OK;
  mk_ring_attn_t *ra = (mk_ring_attn_t *)calloc(1, sizeof *ra);
  if (!ra) return MK_STATUS_OUT_OF_MEMORY;
  ra->comm = comm, ra->W = wd->size, ra->rank = wd->rank, ra->max_s = max_s, ra->hkv = hkv, ra->d = d, ra->sms = sms;
  ra->slot_bytes = (uint64_t)max_s * hkv * d * 2;
  const size_t gathered = (size_t)ra->W * ra->slot_bytes;
  MK_CHECK_GOTO(mk_comm_heap_alloc(comm, ra->W * ra->slot_bytes, &ra->k_off), st, fail);
  MK_CHECK_GOTO(mk_comm_heap_alloc(comm, ra->W * ra->slot_bytes, &ra->v_off), st, fail);
  MK_CHECK_GOTO(mk_comm_heap_alloc(comm, (3ull * ra->W + kRingCtlWords) * 8, &ra->sig_off), st, fail);
  MK_CHECK_GOTO(mk_comm_dev_world(comm, &ra->w), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&ra->gk, gathered), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&ra->gv, gathered), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&ra->pk, gathered), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&ra->pv, gathered), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&ra->cu, 8 * sizeof(int32_t)), st, fail);
  /* Load the kernels now: lazy loading at a first launch would wait for running kernels, and a
   * peer's kernel may be spinning on this one. */
  {
    cudaFuncAttributes fa;
    const size_t smem = d == 64 ? sm90_config::smem_bytes<64>() : sm90_config::smem_bytes<128>();
    const void *k = d == 64 ? (const void *)ring_attn_kernel<64> : (const void *)ring_attn_kernel<128>;
    MK_CUDA_CHECK_GOTO(cudaFuncGetAttributes(&fa, k), st, fail);
    MK_CUDA_CHECK_GOTO(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem), st, fail);
    MK_CUDA_CHECK_GOTO(cudaFuncGetAttributes(&fa, (const void *)ring_cu_kernel), st, fail);
    MK_CHECK_GOTO(ring_ws_prepare(d), st, fail);
  }
  *out = ra;
  return MK_STATUS_OK;
fail:
  mk_ring_attn_destroy(ra);
  return st;
}

extern "C" void mk_ring_attn_destroy(mk_ring_attn_t *ra) {
  if (!ra) return;
  cudaFree(ra->gk), cudaFree(ra->gv), cudaFree(ra->pk), cudaFree(ra->pv), cudaFree(ra->cu);
  free(ra);
}

extern "C" mk_status mk_ring_attn_kv(const mk_ring_attn_t *ra, uint16_t **k, uint16_t **v) {
  if (!ra || !k || !v) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "ring_attn_kv: a NULL argument");
  *k = (uint16_t *)mk_comm_heap_ptr(ra->comm, ra->k_off + ra->rank * ra->slot_bytes);
  *v = (uint16_t *)mk_comm_heap_ptr(ra->comm, ra->v_off + ra->rank * ra->slot_bytes);
  return MK_STATUS_OK;
}

static mk_status ring_check_args(const mk_ring_attn_t *ra, const mk_ring_attn_args *a) {
  if (!ra || !a) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "ring_attn: handle or args is NULL");
  if (a->s < 1 || a->s > ra->max_s || a->hq < 1 || a->hq % ra->hkv || a->hq > 65535 ||
      (a->causal != 0 && a->causal != 1))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "ring_attn: s %d (1..%d), hq %d (a multiple of hkv %d), causal %d (0 or 1)", a->s, ra->max_s, a->hq,
                  ra->hkv, a->causal);
  if (!(a->softmax_scale == a->softmax_scale) || isinf(a->softmax_scale))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "ring_attn: softmax_scale is not finite");
  if (!a->q || !a->o || ((uintptr_t)a->q | (uintptr_t)a->o) % 16)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "ring_attn: q and o must be non-NULL, 16-byte aligned");
  if ((int64_t)a->s * ra->W > INT32_MAX)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "ring_attn: %d ranks x s %d overflow int32", ra->W,
                  a->s);
  return MK_STATUS_OK;
}

static fwd_params ring_fwd_params(const mk_ring_attn_t *ra, const mk_ring_attn_args *a, const uint16_t *k,
                                  const uint16_t *v) {
  fwd_params p = {};
  p.q = a->q, p.k = k, p.v = v, p.o = a->o, p.lse = a->lse;
  p.total_q = a->s, p.hq = a->hq, p.hkv = ra->hkv, p.group = a->hq / ra->hkv;
  p.mask = a->causal ? MK_ATTN_MASK_CAUSAL_OFFSET : MK_ATTN_MASK_NONE;
  p.scale = a->softmax_scale;
  p.scale_log2 = a->softmax_scale * 1.4426950408889634f;
  return p;
}

extern "C" mk_status mk_ring_attn_fwd(mk_ring_attn_t *ra, const mk_ring_attn_args *a, mk_stream_t stream) {
  MK_CHECK(ring_check_args(ra, a));
  ring_params rp = {};
  rp.p = ring_fwd_params(ra, a, (const uint16_t *)mk_comm_heap_ptr(ra->comm, ra->k_off),
                         (const uint16_t *)mk_comm_heap_ptr(ra->comm, ra->v_off));
  rp.w = ra->w;
  rp.k_off = ra->k_off, rp.v_off = ra->v_off, rp.slot_bytes = ra->slot_bytes;
  rp.row_bytes = (uint64_t)ra->hkv * ra->d * 2;
  rp.arrive_off = ra->sig_off, rp.done_off = ra->sig_off + 8ull * ra->W, rp.ack_off = ra->sig_off + 16ull * ra->W;
  rp.ctl_off = ra->sig_off + 24ull * ra->W;
  rp.s = a->s, rp.s1 = (a->s + 1) / 2, rp.s2 = a->s / 2, rp.max_s = ra->max_s, rp.causal = a->causal;
  static_assert(sm90_config::kBM == kRingBM && sm90_config::kBN == kRingBN, "the items and tiles of both kernels");
  const int bm = kRingBM;
  rp.nqb_a = ((a->causal ? rp.s1 : a->s) + bm - 1) / bm;
  rp.nqb_b = a->causal ? (rp.s2 + bm - 1) / bm : 0;
  rp.n_items = (rp.nqb_a + rp.nqb_b) * a->hq;
  int grid = rp.n_items > (int)mk_param_ring_comm_ctas() ? rp.n_items : (int)mk_param_ring_comm_ctas();
  /* All CTAs resident (one per SM); with other node groups one SM stays free for the proxy's
   * signal kernel, which this launch waits for. */
  const int most = ra->sms - (ra->w.nnodes > 1 ? 1 : 0);
  if (grid > most) grid = most;
  if (grid < 1) grid = 1;
  rp.comm_ctas = (int)mk_param_ring_comm_ctas() < grid ? (int)mk_param_ring_comm_ctas() : grid;
  cudaStream_t s = (cudaStream_t)stream;
  if (mk_param_ring_attn_ws()) return ring_ws_launch(rp, ra->d, grid, s);
  if (ra->d == 64) {
    ring_attn_kernel<64><<<grid, sm90_config::kThreads, sm90_config::smem_bytes<64>(), s>>>(rp);
  } else {
    ring_attn_kernel<128><<<grid, sm90_config::kThreads, sm90_config::smem_bytes<128>(), s>>>(rp);
  }
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

/* ---- unfused: NCCL all-gather of K and V, then the flash kernel ------------------------- */
extern "C" mk_status mk_ring_attn_unfused(mk_ring_attn_t *ra, mk_nccl_t *nccl, const mk_ring_attn_args *a, int parts,
                                          mk_stream_t stream) {
  MK_CHECK(ring_check_args(ra, a));
  if (!parts || (parts & ~(MK_RING_ATTN_GATHER | MK_RING_ATTN_ATTEND)))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "ring_attn_unfused: parts %d", parts);
  cudaStream_t st = (cudaStream_t)stream;
  const int W = ra->W, r = ra->rank, S = a->s, s1 = (S + 1) / 2, s2 = S / 2;
  const size_t row = (size_t)ra->hkv * ra->d * 2; /* bytes per token of K (or V) */
  if (parts & MK_RING_ATTN_GATHER) {
    if (!nccl) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "ring_attn_unfused: gather needs NCCL");
    uint16_t *k, *v;
    MK_CHECK(mk_ring_attn_kv(ra, &k, &v));
    const size_t count = (size_t)S * ra->hkv * ra->d;
    MK_CHECK(mk_nccl_all_gather(nccl, k, ra->gk, count, MK_DTYPE_BF16, stream));
    MK_CHECK(mk_nccl_all_gather(nccl, v, ra->gv, count, MK_DTYPE_BF16, stream));
    if (a->causal) /* rank order -> sequence order: rank j's rows [0, s1) are chunk j, the rest chunk 2W-1-j */
      for (int t = 0; t < 2; t++) {
        const char *g = (const char *)(t ? ra->gv : ra->gk);
        char *p = (char *)(t ? ra->pv : ra->pk);
        MK_CUDA_CHECK(cudaMemcpy2DAsync(p, s1 * row, g, S * row, s1 * row, W, cudaMemcpyDeviceToDevice, st));
        for (int j = 0; s2 && j < W; j++)
          MK_CUDA_CHECK(cudaMemcpyAsync(p + ((size_t)W * s1 + (size_t)(W - 1 - j) * s2) * row,
                                        g + ((size_t)j * S + s1) * row, s2 * row, cudaMemcpyDeviceToDevice, st));
      }
  }
  if (!(parts & MK_RING_ATTN_ATTEND)) return MK_STATUS_OK;
  /* Bottom-right causal masks: queries of chunk r see the keys [0, (r+1) s1); those of chunk
   * 2W-1-r the keys up to the end of their chunk. lse rows keep the stride s (total_q). */
  const int k_a = a->causal ? (r + 1) * s1 : W * S, k_b = W * s1 + (W - r) * s2;
  ring_cu_kernel<<<1, 1, 0, st>>>(ra->cu, make_int4(0, a->causal ? s1 : S, 0, k_a), make_int4(0, s2, 0, k_b));
  MK_CUDA_LAUNCH_CHECK();
  mk_attn_fwd_args f = {};
  f.q = a->q, f.k = a->causal ? ra->pk : ra->gk, f.v = a->causal ? ra->pv : ra->gv, f.o = a->o, f.lse = a->lse;
  f.cu_seqlens_q = ra->cu, f.cu_seqlens_k = ra->cu + 2, f.batch = 1, f.max_seqlen_q = a->causal ? s1 : S;
  f.max_seqlen_k = k_a, f.total_q = S, f.hq = a->hq, f.hkv = ra->hkv, f.d = ra->d;
  f.mask = a->causal ? MK_ATTN_MASK_CAUSAL : MK_ATTN_MASK_NONE, f.softmax_scale = a->softmax_scale;
  MK_CHECK(mk_flash_attn_fwd(&f, stream));
  if (!a->causal || !s2) return MK_STATUS_OK;
  const size_t qrow = (size_t)a->hq * ra->d;
  f.q = a->q + s1 * qrow, f.o = a->o + s1 * qrow, f.lse = a->lse ? a->lse + s1 : NULL;
  f.cu_seqlens_q = ra->cu + 4, f.cu_seqlens_k = ra->cu + 6, f.max_seqlen_q = s2, f.max_seqlen_k = k_b;
  return mk_flash_attn_fwd(&f, stream);
}
