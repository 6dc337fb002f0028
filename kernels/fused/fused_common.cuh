/* fused_common.cuh — device helpers shared by the fused ops (ag_gemm.cu, gemm_rs.cu,
 * gemm_ar.cu): the per-call entry handshake, block reductions in a fixed rank order, the
 * block-task walk of reducer CTAs, and the host launch wrapper.
 *
 * Flags. Every flag has exactly one writer per call, which stores epoch + 1 (st.release.sys
 * after its data) into the waiter's heap; the waiter spins until flag >= epoch + 1. Values only
 * grow, a flag a call does not use keeps an older value, so calls of different shapes can
 * follow each other, nothing is reset, and a captured graph replays correctly (the epoch is
 * read on the device; the host advances it after the kernel, stream-ordered).
 * Entry handshake (every op). Each op owns arrive[16] flags in every rank's heap. When a call
 * starts, one thread of rank r sets arrive[r] on every peer. Before rank q writes into peer
 * p's workspace in call e, it waits until its own arrive[p] >= e + 1: p has entered call e, so
 * p's call e - 1 (stream-ordered before it), the last reader of that workspace, is over. */
#pragma once
#include <cuda_bf16.h>

#include "comm/mk_device.cuh"
#include "kernels/fused/fused_internal.h"
#include "kernels/gemm/gemm_core.cuh"

struct mk_fused_view {
  int W, me;           /* ranks of the group (global numbering), this rank */
  int L, node;         /* ranks per node group, this rank's node group */
  int slot;            /* epoch slot */
  uint64_t arrive;     /* heap offset of arrive[16] (flags, from ranks of this node group) */
  uint64_t cnt;        /* heap offset of the op's flags */
  uint64_t buf;        /* heap offset of the op's data workspace */
  uint64_t xsig;       /* heap offset of the proxied counters: arrive_x[16], xdata[16], ack[16] */
  uint64_t xbuf;       /* heap offset of the staging area for data from other node groups */
  const uint64_t *calls; /* this handle's calls of the op so far (device; fused_internal.h) */
  __device__ __forceinline__ bool local(int p) const { return p / L == node; }
  __device__ __forceinline__ int lp(int p) const { return p - node * L; }
  __device__ __forceinline__ uint64_t arrive_x(int p) const { return xsig + 8ull * p; }
  __device__ __forceinline__ uint64_t xdata(int p) const { return xsig + 128 + 8ull * p; }
  __device__ __forceinline__ uint64_t ack(int p) const { return xsig + 256 + 8ull * p; }
  /* This call's target of the proxied counters (arrive_x, xdata, ack): +1 per call of the handle. */
  __device__ __forceinline__ uint64_t xtarget() const { return mk_ld_volatile(calls) + 1; }
};

/* MK_TRACE: per-CTA role timeline. buf = [CTAs][cap] events of two u64 {globaltimer start,
 * duration << 8 | kind}, zeroed before the op; a CTA's first cap/2 slots belong to its
 * role thread (role CTAs) or the GEMM's signaller (after_store, gemm_core.cuh), the rest to the
 * GEMM CTA's tail crew (thread 128).
 * NULL buf: nothing is recorded. */
struct mk_fused_trace {
  uint64_t *buf;
  int cap;
};
__device__ __forceinline__ void mk_trace_ev(const mk_fused_trace &tr, int half, int *n, int kind, uint64_t t0,
                                            uint64_t t1) {
  if (!tr.buf || *n >= tr.cap / 2) return;
  uint64_t *e = tr.buf + ((size_t)blockIdx.x * tr.cap + (size_t)half * (tr.cap / 2) + *n) * 2;
  e[0] = t0;
  e[1] = ((t1 - t0) << 8) | (uint64_t)kind;
  (*n)++;
}

/* One thread, after the data the flag publishes is written and visible to it: set local
 * peer lp's flag at heap offset off to value (release, system scope). */
__device__ __forceinline__ void mk_fused_flag_set(const mk_dev_world &w, int lp, uint64_t off, uint64_t value) {
  __threadfence_system();
  mk_st_release_sys(reinterpret_cast<uint64_t *>(w.peer_heap[lp] + off), value);
}

/* One thread: tell every peer this rank entered call `epoch`: a flag over NVLink inside the
 * node group (one fence, then the flags: mk_st_relaxed_sys), a proxied SIGNAL (+1 on
 * arrive_x[me], once per call) to other node groups. */
__device__ __forceinline__ void mk_fused_arrive(const mk_dev_world &w, const mk_fused_view &v, uint64_t epoch) {
  __threadfence_system();
  for (int p = 0; p < v.W; p++) {
    if (p == v.me) continue;
    if (v.local(p)) mk_st_relaxed_sys(reinterpret_cast<uint64_t *>(w.peer_heap[v.lp(p)] + v.arrive + 8ull * v.me), epoch + 1);
    else mk_post(w, MK_CMD_SIGNAL, p, 0, 0, 0, v.arrive_x(v.me), 1);
  }
}

/* One thread: wait until peer p entered call `epoch` (p == me: at once). */
__device__ __forceinline__ bool mk_fused_wait_arrived(const mk_dev_world &w, const mk_fused_view &v, int p,
                                                      uint64_t epoch, int op) {
  if (p == v.me) return true;
  return v.local(p) ? mk_wait_ge(w, v.arrive + 8ull * p, epoch + 1, op, p, -1)
                    : mk_wait_ge(w, v.arrive_x(p), v.xtarget(), op, p, -1);
}

/* One thread of the inter-node CTA, once this rank's data for other node groups has been
 * posted: acknowledge every remote rank's data once it has landed here (xdata[s]), then wait
 * for the acknowledgements of this rank's puts, so that the proxy has read the source before
 * the kernel ends (the caller may overwrite it next). */
__device__ __forceinline__ bool mk_fused_inter_finish(const mk_dev_world &w, const mk_fused_view &v, uint64_t epoch,
                                                      int op) {
  for (int s = 0; s < v.W; s++) {
    if (v.local(s)) continue;
    if (!mk_wait_ge(w, v.xdata(s), v.xtarget(), op, s, -1)) return false;
    if (!mk_post(w, MK_CMD_SIGNAL, s, 0, 0, 0, v.ack(v.me), 1)) return false;
  }
  for (int q = 0; q < v.W; q++)
    if (!v.local(q) && !mk_wait_ge(w, v.ack(q), v.xtarget(), op, q, -1)) return false;
  return true;
}

/* Whole CTA: wait until flags off + p * stride (p < W) in this rank's heap all reach target. */
__device__ __forceinline__ bool mk_fused_wait_flags_cta(const mk_dev_world &w, uint64_t off, uint64_t stride, int W,
                                                        uint64_t target, int op, int tile) {
  int ok = 1;
  if (threadIdx.x == 0)
    for (int p = 0; p < W && ok; p++) ok = mk_wait_ge(w, off + p * stride, target, op, p, tile);
  return __syncthreads_and(ok);
}

/* Order async-proxy (TMA) reads after an acquire that observed another agent's writes. */
__device__ __forceinline__ void mk_fence_proxy_async() { asm volatile("fence.proxy.async.global;" ::: "memory"); }

/* acc[0..7] += the 8 bf16 of v. */
__device__ __forceinline__ void mk_fused_acc8(float *acc, const uint4 &v) {
  const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&v);
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const float2 f = __bfloat1622float2(h[j]);
    acc[2 * j] += f.x;
    acc[2 * j + 1] += f.y;
  }
}
/* The 8 sums as bf16 (round to nearest even). */
__device__ __forceinline__ uint4 mk_fused_pack8(const float *acc) {
  uint4 o;
  __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&o);
#pragma unroll
  for (int j = 0; j < 4; j++) h[j] = __floats2bfloat162_rn(acc[2 * j], acc[2 * j + 1]);
  return o;
}

/* The threads that run a reducer task: a whole role CTA (bar = 0: __syncthreads), or the 256
 * consumer threads of a GEMM CTA that has stored its last tile (the tail, fused_reduce.cuh:
 * named barrier `bar`). t: this thread's index in the crew, n: its size; half: the MK_TRACE
 * half its thread 0 records into (0: the role thread, 1: the GEMM CTA's tail crew). */
struct mk_crew {
  int t, n, bar, half;
  __device__ __forceinline__ void sync() const {
    if (bar) mk_sm90::named_bar_sync(bar, n);
    else __syncthreads();
  }
};

/* Crew (threads t of n): dst[r][c] = bf16(sum_{p = 0..W-1} src_p[r][c]) in fp32, ranks in order 0..W-1,
 * for rows r < rows and columns c < cols (cols % 8 == 0; 16-byte aligned rows). src_p =
 * base[p] + r * ld (elements); dst likewise with ld. Every rank that reduces the same
 * inputs gets the same bits. Sources are mostly peers' memory over NVLink, so loads are
 * latency-bound: each thread keeps about 8 16-byte loads in flight (U positions x W ranks; a
 * non-inlined function gets few registers: more spills). */
template <int W>
__device__ __noinline__ void mk_fused_reduce_block_w(uint16_t *dst, const uint16_t *const *src, int rows, int cols,
                                                        int64_t ld, uint16_t *dst2, int tid, int nthr) {
  constexpr int U = W >= 8 ? 1 : 8 / W;
  const int vec = cols / 8, total = rows * vec;
  const uint16_t *s[W];
#pragma unroll
  for (int p = 0; p < W; p++) s[p] = src[p];
  for (int base = tid; base < total; base += nthr * U) {
    uint4 v[U][W];
    int64_t off[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
      const int i = base + u * nthr;
      const int r = i / vec, c = (i - r * vec) * 8;
      off[u] = (int64_t)r * ld + c;
      if (i < total) {
#pragma unroll
        for (int p = 0; p < W; p++) v[u][p] = *reinterpret_cast<const uint4 *>(s[p] + off[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
      if (base + u * nthr >= total) break;
      float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
      for (int p = 0; p < W; p++) mk_fused_acc8(acc, v[u][p]);
      const uint4 o = mk_fused_pack8(acc);
      *reinterpret_cast<uint4 *>(dst + off[u]) = o;
      if (dst2) *reinterpret_cast<uint4 *>(dst2 + off[u]) = o;
    }
  }
}

/* The rank count as a template argument (DeepEP-style switch); more than 8 ranks: one
 * position at a time. The sum order (0 + src_0 + src_1 + ...) is the same on every path.
 * dst2 (optional, same ld): a second copy of the sums (the two-shot AR's owner keeps them in
 * its heap for the peers; dst2 may be one of the sources: each thread reads its positions of
 * every source before it writes them). W = 1 is a copy (bf16 -> fp32 -> bf16 is exact). */
static __device__ __noinline__ void mk_fused_reduce_block(uint16_t *dst, const uint16_t *const *src, int W, int rows,
                                                          int cols, int64_t ld, uint16_t *dst2, int tid, int nthr) {
  switch (W) {
    case 1: mk_fused_reduce_block_w<1>(dst, src, rows, cols, ld, dst2, tid, nthr); break;
    case 2: mk_fused_reduce_block_w<2>(dst, src, rows, cols, ld, dst2, tid, nthr); break;
    case 3: mk_fused_reduce_block_w<3>(dst, src, rows, cols, ld, dst2, tid, nthr); break;
    case 4: mk_fused_reduce_block_w<4>(dst, src, rows, cols, ld, dst2, tid, nthr); break;
    case 5: mk_fused_reduce_block_w<5>(dst, src, rows, cols, ld, dst2, tid, nthr); break;
    case 6: mk_fused_reduce_block_w<6>(dst, src, rows, cols, ld, dst2, tid, nthr); break;
    case 7: mk_fused_reduce_block_w<7>(dst, src, rows, cols, ld, dst2, tid, nthr); break;
    case 8: mk_fused_reduce_block_w<8>(dst, src, rows, cols, ld, dst2, tid, nthr); break;
    default: {
      const int vec = cols / 8, total = rows * vec;
      for (int i = tid; i < total; i += nthr) {
        const int r = i / vec, c = (i - r * vec) * 8;
        const int64_t off = (int64_t)r * ld + c;
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int p = 0; p < W; p++) mk_fused_acc8(acc, *reinterpret_cast<const uint4 *>(src[p] + off));
        const uint4 o = mk_fused_pack8(acc);
        *reinterpret_cast<uint4 *>(dst + off) = o;
        if (dst2) *reinterpret_cast<uint4 *>(dst2 + off) = o;
      }
    }
  }
}

/* Reducer task t -> (tile-row tm, 128-column block cb) over tile-rows [tm_lo, tm_lo + ntm) and
 * ncb column blocks, in the order the default GEMM tile order (mk_gemm_order_grouped) finishes
 * them: groups of group_m tile-rows, column by column within a group. */
__device__ __forceinline__ void mk_fused_task_block(int t, int tm_lo, int ntm, int ncb, int group_m, int *tm, int *cb) {
  const int per = group_m * ncb, g = t / per, first = g * group_m;
  const int rows = min(ntm - first, group_m), r = t - g * per;
  *tm = tm_lo + first + r % rows;
  *cb = r / rows;
}

/* The device view of op `op`'s workspace. */
static inline mk_fused_view mk_fused_make_view(const mk_fused_t *f, mk_fused_op op) {
  const mk_fused_ws *ws = &f->ws[op];
  return mk_fused_view{f->world, f->me, f->local_size, f->node, MK_FUSED_EPOCH_SLOT0 + (int)op,
                       ws->arrive, ws->cnt, ws->buf, ws->xsig, ws->xbuf, f->calls + (int)op};
}

/* The GEMM core launch with the role CTAs of `policy` beside `compute` GEMM CTAs. kAllWidths: the
 * width is chosen among every width of mk_gemm_widths (AG+GEMM), else 128 and 256. */
template <class Policy, bool kAllWidths = false>
static mk_status mk_fused_launch(const uint16_t *A, const uint16_t *B, const mk_gemm_args &args,
                                 mk_gemm_b_layout layout, const Policy &policy, int compute, cudaStream_t stream) {
  return mk_gemm_core_launch<Policy, kAllWidths>(A, B, args, layout, policy, compute, 0, stream);
}
