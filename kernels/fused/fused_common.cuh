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
  int W, me;           /* ranks (one node group: local rank == rank), this rank */
  int slot;            /* epoch slot */
  uint64_t arrive;     /* heap offset of arrive[16] */
  uint64_t cnt;        /* heap offset of the op's counters */
  uint64_t buf;        /* heap offset of the op's data workspace */
};

/* One thread, after the data the flag publishes is written and visible to it: set local
 * peer p's flag at heap offset off to value (release, system scope). */
__device__ __forceinline__ void mk_fused_flag_set(const mk_dev_world &w, int p, uint64_t off, uint64_t value) {
  __threadfence_system();
  mk_st_release_sys(reinterpret_cast<uint64_t *>(w.peer_heap[p] + off), value);
}

/* One thread: tell every peer this rank entered call `epoch`. */
__device__ __forceinline__ void mk_fused_arrive(const mk_dev_world &w, const mk_fused_view &v, uint64_t epoch) {
  for (int p = 0; p < v.W; p++)
    if (p != v.me) mk_fused_flag_set(w, p, v.arrive + 8ull * v.me, epoch + 1);
}

/* Whole CTA: wait until flags off + p * stride (p < W) in this rank's heap all reach target. */
__device__ __forceinline__ bool mk_fused_wait_flags_cta(const mk_dev_world &w, uint64_t off, uint64_t stride, int W,
                                                        uint64_t target, int op, int tile) {
  int ok = 1;
  if (threadIdx.x == 0)
    for (int p = 0; p < W && ok; p++) ok = mk_wait_ge(w, off + p * stride, target, op, p, tile);
  return __syncthreads_and(ok);
}

/* One thread: wait until peer p entered call `epoch` (p == me: at once). */
__device__ __forceinline__ bool mk_fused_wait_arrived(const mk_dev_world &w, const mk_fused_view &v, int p,
                                                      uint64_t epoch, int op) {
  if (p == v.me) return true;
  return mk_wait_ge(w, v.arrive + 8ull * p, epoch + 1, op, p, -1);
}

/* Order async-proxy (TMA) reads after an acquire that observed another agent's writes. */
__device__ __forceinline__ void mk_fence_proxy_async() { asm volatile("fence.proxy.async.global;" ::: "memory"); }

/* Whole CTA: dst[r][c] = bf16(sum_{p = 0..W-1} src_p[r][c]) in fp32, ranks in order 0..W-1,
 * for rows r < rows and columns c < cols (cols % 8 == 0; 16-byte aligned rows). src_p =
 * base[p] + r * ld (elements); dst likewise with ld. Every rank that reduces the same
 * inputs gets the same bits. */
__device__ __forceinline__ void mk_fused_reduce_block(uint16_t *dst, const uint16_t *const *src, int W, int rows,
                                                      int cols, int64_t ld) {
  const int vec = cols / 8, total = rows * vec;
  for (int i = threadIdx.x; i < total; i += blockDim.x) {
    const int r = i / vec, c = (i - r * vec) * 8;
    const int64_t off = (int64_t)r * ld + c;
    float acc[8];
#pragma unroll
    for (int j = 0; j < 8; j++) acc[j] = 0.f;
    int p = 0;
    for (; p + 1 < W; p += 2) { /* two loads in flight */
      const uint4 a = *reinterpret_cast<const uint4 *>(src[p] + off);
      const uint4 b = *reinterpret_cast<const uint4 *>(src[p + 1] + off);
      const __nv_bfloat162 *ha = reinterpret_cast<const __nv_bfloat162 *>(&a);
      const __nv_bfloat162 *hb = reinterpret_cast<const __nv_bfloat162 *>(&b);
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const float2 fa = __bfloat1622float2(ha[j]);
        acc[2 * j] += fa.x;
        acc[2 * j + 1] += fa.y;
      }
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const float2 fb = __bfloat1622float2(hb[j]);
        acc[2 * j] += fb.x;
        acc[2 * j + 1] += fb.y;
      }
    }
    if (p < W) {
      const uint4 a = *reinterpret_cast<const uint4 *>(src[p] + off);
      const __nv_bfloat162 *ha = reinterpret_cast<const __nv_bfloat162 *>(&a);
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const float2 fa = __bfloat1622float2(ha[j]);
        acc[2 * j] += fa.x;
        acc[2 * j + 1] += fa.y;
      }
    }
    uint4 o;
    __nv_bfloat162 *ho = reinterpret_cast<__nv_bfloat162 *>(&o);
#pragma unroll
    for (int j = 0; j < 4; j++) ho[j] = __floats2bfloat162_rn(acc[2 * j], acc[2 * j + 1]);
    *reinterpret_cast<uint4 *>(dst + off) = o;
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

/* The GEMM core launch with the role CTAs of `policy` beside `compute` GEMM CTAs. */
template <class Policy>
static mk_status mk_fused_launch(const uint16_t *A, const uint16_t *B, const mk_gemm_args &args,
                                 mk_gemm_b_layout layout, const Policy &policy, int compute, cudaStream_t stream) {
  return mk_gemm_core_launch(A, B, args, layout, policy, compute, 0, stream);
}
