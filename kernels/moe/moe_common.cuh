/* moe_common.cuh — device helpers shared by the fused MoE kernels: node tests, warp row
 * copies, the tile-row of a GEMM row, and the "send a chunk" step that goes over NVLink
 * inside a node group and through the proxy FIFO to other node groups. */
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "comm/mk_device.cuh"
#include "kernels/moe/moe_internal.h"

constexpr int kMoeCommThreads = 512;
constexpr int kMoeWarps = kMoeCommThreads / 32;
/* Pause between polls of a wait that runs beside a GEMM (mk_wait_ge_paced): the dispatch's
 * land_sig, GEMM1's ready (its producer threads), the combine's done2 (twice this). */
constexpr unsigned kMoePollNs = 128;

__device__ __forceinline__ bool moe_same_node(const mk_moe_dev &d, int r) {
  return r / d.w.local_size == d.w.node;
}
__device__ __forceinline__ int moe_local(const mk_moe_dev &d, int r) { return r % d.w.local_size; }

/* Address of heap offset `off` at rank r: the peer's mapping inside the node group, else this
 * rank's own staging copy (the proxy moves it). */
template <typename T>
__device__ __forceinline__ T *moe_heap(const mk_moe_dev &d, int r, uint64_t off) {
  return moe_same_node(d, r) ? mk_peer_ptr<T>(d.w, moe_local(d, r), off) : mk_local_ptr<T>(d.w, off);
}

/* One warp copies a row of `bytes` (multiple of 16, 16-aligned) from src to n destinations
 * (n <= 8; dst q = base + pos[q] * bytes): 8 16-byte loads in flight per lane (the tail too),
 * each loaded vector stored to every destination (a row bound for several local experts is
 * read once). */
__device__ __forceinline__ void moe_copy_row_multi(char *base, const int *pos, int n, const void *src,
                                                   int64_t bytes) {
  const int lane = threadIdx.x & 31;
  const uint4 *__restrict__ in = (const uint4 *)src;
  const int64_t nv = bytes / 16;
  int64_t v = lane;
  for (; v + 7 * 32 < nv; v += 8 * 32) {
    uint4 r[8];
#pragma unroll
    for (int q = 0; q < 8; q++) r[q] = in[v + 32 * q];
    for (int k = 0; k < n; k++) {
      uint4 *o = (uint4 *)(base + (int64_t)pos[k] * bytes);
#pragma unroll
      for (int q = 0; q < 8; q++) o[v + 32 * q] = r[q];
    }
  }
  if (v < nv) { /* the rest: at most 8 vectors per lane, all loads issued before the stores */
    uint4 r[8];
#pragma unroll
    for (int q = 0; q < 8; q++)
      if (v + 32 * q < nv) r[q] = in[v + 32 * q];
    for (int k = 0; k < n; k++) {
      uint4 *o = (uint4 *)(base + (int64_t)pos[k] * bytes);
#pragma unroll
      for (int q = 0; q < 8; q++)
        if (v + 32 * q < nv) o[v + 32 * q] = r[q];
    }
  }
}
/* GEMM2 beside GEMM1 (mk_moe_dev.g12_need): done2 counts the rows GEMM1 has stored per (tile-row, chunk of
 * the tile-row's nt = g12_need column tiles), kMoeG12Chunks chunks a tile-row, so that a k-slice of GEMM2
 * waits only for the chunks its K-range reads (GEMM1 column tile j writes act columns [j bn / 2, (j + 1) bn /
 * 2)): a tile-row of r rows is complete in chunk c at r x moe_g12_chunk_tiles(c, nt). Rows, not tiles, so
 * that the swapped GEMM1 (moe_skinny.cuh), whose chunks of rows need not match the 128-row tile-rows, adds
 * the rows each unit stored in each tile-row it covers; the core's GEMM1 adds its tile's rows.
 * Tile j is in chunk j C / nt; chunk c holds tiles [ceil(c nt / C), ceil((c + 1) nt / C)), none where
 * nt < C. */
constexpr int kMoeG12Chunks = MK_MOE_G12_CHUNKS;
__device__ __forceinline__ int moe_g12_chunk(int j, int nt) { return j * kMoeG12Chunks / nt; }
__device__ __forceinline__ int moe_g12_chunk_tiles(int c, int nt) {
  return ((c + 1) * nt + kMoeG12Chunks - 1) / kMoeG12Chunks - (c * nt + kMoeG12Chunks - 1) / kMoeG12Chunks;
}

__device__ __forceinline__ void moe_copy_row(void *dst, const void *src, int64_t bytes) {
  const int zero = 0;
  moe_copy_row_multi((char *)dst, &zero, 1, src, bytes);
}

/* acc[0..7] += w * the 8 bf16 of y, in fp32 with round-to-nearest multiply and add (w = 1: a plain
 * sum, the same bits): every MoE weighted sum, fused and unfused, in its fixed order. */
__device__ __forceinline__ void moe_axpy8(float (&acc)[8], float w, const uint4 &y) {
  const __nv_bfloat162 *y2 = (const __nv_bfloat162 *)&y;
#pragma unroll
  for (int h = 0; h < 4; h++) {
    const float2 f = __bfloat1622float2(y2[h]);
    acc[2 * h] = __fadd_rn(acc[2 * h], __fmul_rn(w, f.x));
    acc[2 * h + 1] = __fadd_rn(acc[2 * h + 1], __fmul_rn(w, f.y));
  }
}
/* The 8 sums rounded to bf16. */
__device__ __forceinline__ uint4 moe_pack8(const float (&acc)[8]) {
  uint4 o;
  __nv_bfloat162 *o2 = (__nv_bfloat162 *)&o;
#pragma unroll
  for (int h = 0; h < 4; h++) o2[h] = __floats2bfloat162_rn(acc[2 * h], acc[2 * h + 1]);
  return o;
}

/* GEMM tile-row holding row `pos` of local expert e. */
__device__ __forceinline__ int moe_tile_of(const mk_moe_dev &d, int e, int pos) {
  return d.tile_base[e] + (pos - d.exp_off[e]) / 128;
}

/* One thread: fetch `bytes` (multiple of 16, 16-aligned) at p into L2, asynchronously (TMA). */
__device__ __forceinline__ void moe_prefetch_l2(const void *p, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}

__device__ __forceinline__ void moe_st_release_gpu(uint64_t *p, uint64_t v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void moe_red_add_gpu(uint64_t *p, uint64_t v) {
  asm volatile("red.release.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

/* This call's target for the counters that grow by 1 per call: the handle's counters and its
 * call count both started at 0 (each handle counts its own calls, so handles may interleave). */
__device__ __forceinline__ uint64_t moe_target(const mk_moe_dev &d) { return mk_ld_volatile(d.calls) + 1; }

/* Heap offsets of the call's land / lmeta: copy target & 1 with send_early (mk_moe_dev.land_par), else the one. */
__device__ __forceinline__ uint64_t moe_land_off(const mk_moe_dev &d, uint64_t target) {
  return d.o_land + (target & 1) * d.land_par;
}
__device__ __forceinline__ uint64_t moe_lmeta_off(const mk_moe_dev &d, uint64_t target) {
  return d.o_lmeta + (target & 1) * d.lmeta_par;
}

/* Where a phase's chunks to rank r go across node groups as one area (d.pub_cnt, MK_MOE_REMOTE_WHOLE):
 * cnt counts the chunks published to r so far, n_cta per call; the whole area is rows [0, rows) of
 * each of the two staged areas (area1 / area2 bytes per row at src / dst offsets), and chunk c's
 * signal is at sig0 + 8 c. */
struct moe_whole {
  uint64_t *cnt;
  int n_cta;
  int64_t rows;
  uint64_t src1, dst1, row1, src2, dst2, row2, sig0;
};

/* Thread 0, after the CTA wrote a chunk (rows [j0, j1) of a [W][Tm] area at rank r, either into
 * the peer directly or into this rank's staging copies at src offsets) and __syncthreads():
 * publish it and add 1 to the signal at rank r. Inter-node: PUTs of the staged rows (and the
 * optional second area, e.g. metadata) then a SIGNAL, in FIFO order; with wh.cnt (the whole area
 * at once), the chunk is counted instead (system fence first: the copy engine or NIC reads what
 * every CTA staged), and the CTA that completes the call's count posts the PUTs of the whole area
 * and then every chunk's SIGNAL. */
__device__ __forceinline__ bool moe_publish(const mk_moe_dev &d, int r, uint64_t src1, uint64_t dst1,
                                            uint64_t bytes1, uint64_t src2, uint64_t dst2, uint64_t bytes2,
                                            uint64_t sig_off, const moe_whole &wh) {
  if (moe_same_node(d, r)) {
    mk_signal_add(d.w, moe_local(d, r), sig_off, 1);
    return true;
  }
  bool ok = true;
  if (wh.cnt) {
    __threadfence_system();
    const unsigned long long last = (unsigned long long)moe_target(d) * (unsigned long long)wh.n_cta - 1;
    if (atomicAdd((unsigned long long *)wh.cnt, 1ull) != last) return true;
    __threadfence_system(); /* every other CTA's rows: their adds came before ours */
    if (wh.rows > 0 && wh.row1)
      ok = ok && mk_post(d.w, MK_CMD_PUT, r, wh.src1, wh.dst1, (uint64_t)wh.rows * wh.row1, 0, 0);
    if (wh.rows > 0 && wh.row2)
      ok = ok && mk_post(d.w, MK_CMD_PUT, r, wh.src2, wh.dst2, (uint64_t)wh.rows * wh.row2, 0, 0);
    for (int c = 0; c < wh.n_cta && ok; c++) ok = mk_post(d.w, MK_CMD_SIGNAL, r, 0, 0, 0, wh.sig0 + 8 * (uint64_t)c, 1);
    return ok;
  }
  if (bytes1) ok = ok && mk_post(d.w, MK_CMD_PUT, r, src1, dst1, bytes1, 0, 0);
  if (bytes2) ok = ok && mk_post(d.w, MK_CMD_PUT, r, src2, dst2, bytes2, 0, 0);
  ok = ok && mk_post(d.w, MK_CMD_SIGNAL, r, 0, 0, 0, sig_off, 1);
  return ok;
}

/* Chunk c of n rows split over C CTAs. */
__device__ __forceinline__ void moe_chunk(int64_t n, int c, int C, int64_t *j0, int64_t *j1) {
  *j0 = n * c / C;
  *j1 = n * (c + 1) / C;
}

/* Profile stamp (args.profile): slot keeps the latest time, or the earliest for the "first"
 * slots (stored complemented, so both are an atomicMax on a zeroed slot). */
__device__ __forceinline__ void moe_stamp(uint64_t *prof, int slot) {
  if (!prof) return;
  const uint64_t t = mk_globaltimer();
  atomicMax((unsigned long long *)prof + slot, (unsigned long long)(MK_MOE_PH_IS_FIRST(slot) ? ~t : t));
}
