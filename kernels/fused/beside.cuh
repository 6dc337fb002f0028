/* beside.cuh — GEMM+RS / GEMM+AR with the reduction on SMs beside the GEMM ("beside" mode,
 * MK_FUSED_BESIDE; one node group, the copy-engine staging, M a multiple of 128 W, W dividing
 * the GEMM's group of tile-rows). The GEMM (fused_reduce.cuh, copy-engine layout) stores its
 * whole partial P into local memory in the owner-interleaved grouped order and counts each tile
 * it stores; a small comm kernel on the handle's reduce stream, resident on the SMs the GEMM
 * leaves free, moves and sums the finished tiles while the GEMM runs; a second launch of it,
 * queued after the GEMM, brings every SM to what is left. No copy engine, no host wait.
 *
 * Pieces. A group of the GEMM's order holds gmo = group_m / W tile-rows of each owner and walks
 * them column by column. Owner o's piece i = (group g, column slab j of cw columns) is its rows
 * [g gmo 128, (g + 1) gmo 128) x columns [j cw, (j + 1) cw); part k of it is tile-row k of the
 * piece (128 rows x cw columns, the unit of every task and flag). np = groups x slabs.
 * Buffers (heap of the op unless said):
 *   P          [M][N] bf16  local (f->ce_p): this rank's partial
 *   X          [W][ms][N]   X[s] = rank s's partial of this rank's rows (ms = M / W)
 *   Y          [W ms][N]    AR: owner o's sums of its rows, pushed by o
 *   prog[W][np][parts]      local device memory (not the heap): elements / 8 of part k of owner o's
 *                           piece i stored by the GEMM (zeroed before each call on the caller's stream)
 *   pf[W][np][parts]        pf[s][i][k] = e + 1 on owner o: s's part is in o's X[s]
 *   sf[W][np][parts]        AR: sf[o][i][k] = e + 1 on rank q: o's sums of that part are in q's Y
 * pf and sf lie in the op's flag area (ws->cnt) and only grow (epoch e + 1 of the call), as every
 * flag there (prog, a count, must not: other paths wait there for epochs).
 * Tasks, numbered in one order on every rank, taken by any CTA of either launch through one
 * claim counter (zeroed by the epoch advance after the call); block b = 0 .. np holds
 *   F(b, o, k)  b < np, each peer o: once prog[o][b][k] is complete (and o has entered the call,
 *               arrive[o] >= e + 1: its X and Y are free), copy the part of P to o's X[me],
 *               one system fence, pf[me][b][k] := e + 1 on o;
 *   R(b, k)     b < np: once prog[me][b][k] is complete and pf[s][b][k] of every peer, sum P's
 *               own rows and X[s] in rank order 0..W-1 (fp32) into C; AR: the sums also into
 *               every peer's Y, one fence, sf[me][b][k] := e + 1 there;
 *   G(b-1,o,k)  AR, b >= 1, each peer o: once sf[o][b-1][k], copy o's sums Y -> C.
 * Every task waits only for tasks of lower number (on any rank) or for the GEMM, which waits for
 * nothing: the lowest unfinished task can always run (its taker is resident; an untaken one is
 * taken next by a CTA whose earlier tasks are done; a CTA holds one claim ahead of the task it
 * runs, which is of lower number), so the call completes. Every row is summed
 * by its owner in rank order: AR's ranks hold the same bits. Reuse: X and Y of rank o are written
 * in call e only after arrive[o] >= e + 1, which o's comm kernel sets at its start, after o's
 * call e - 1 (the last reader) joined; P and prog are this rank's, between two joins. Waits are
 * bounded (error record); a failed one ends its CTA, the others see the abort. */
#pragma once
#include "kernels/fused/fused_common.cuh"

/* The pieces of an M x N call (host and device). */
struct mk_beside_geom {
  int64_t ms, n;          /* rows per owner, columns */
  int W, gmo, cw, ncs;    /* ranks, tile-rows of an owner per group, slab width, slabs */
  int np, parts;          /* pieces per owner, parts per piece (= gmo) */
  /* Part k of piece i: owner-local rows [r0, r0 + rows) (rows 0: empty), columns [c0, c0 + cols). */
  __host__ __device__ void span(int i, int k, int64_t *r0, int *rows, int64_t *c0, int *cols) const {
    const int g = i / ncs, j = i - g * ncs;
    *r0 = ((int64_t)g * gmo + k) * 128;
    const int64_t left = ms - *r0;
    *rows = left <= 0 ? 0 : left < 128 ? (int)left : 128;
    *c0 = (int64_t)j * cw;
    *cols = (int)(n - *c0 < cw ? n - *c0 : cw);
  }
  /* Index of (owner o, piece i, part k) in prog / pf / sf. */
  __host__ __device__ uint64_t idx(int o, int i, int k) const { return ((uint64_t)o * np + i) * parts + k; }
  uint64_t flags() const { return (uint64_t)W * np * parts; }
};

static inline mk_beside_geom mk_beside_make_geom(int W, int64_t m, int64_t n, int group_m, int cw) {
  mk_beside_geom g;
  g.ms = m / W, g.n = n, g.W = W, g.gmo = group_m / W, g.cw = cw;
  g.ncs = (int)((n + cw - 1) / cw);
  const int64_t per = (int64_t)g.gmo * 128;
  g.np = (int)((g.ms + per - 1) / per) * g.ncs;
  g.parts = g.gmo;
  return g;
}

struct mk_beside {
  mk_dev_world w;
  mk_fused_view v;
  mk_beside_geom g;
  const uint16_t *P;
  uint16_t *C;                 /* RS: this rank's rows [ms][N]; AR: [M][N] */
  uint64_t x, y, pf, sf;       /* heap offsets */
  const uint64_t *prog;        /* local device memory */
  uint32_t *claims;
  int ar, op;
};

/* Whole CTA: rows x cols (cols % 8 == 0) from src to dst, both with row stride ld elements. */
static __device__ __noinline__ void mk_beside_copy(uint16_t *dst, const uint16_t *src, int rows, int cols, int64_t ld) {
  constexpr int U = 4; /* run d59de38-x2: 8 took AR 1024 from 0.242 to 0.273 ms (not explained) */
  const int vec = cols / 8, total = rows * vec, nt = (int)blockDim.x;
  for (int base = threadIdx.x; base < total; base += nt * U) {
    uint4 r[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
      const int e = base + u * nt, rr = e / vec;
      if (e < total) r[u] = __ldcg(reinterpret_cast<const uint4 *>(src + rr * ld) + (e - rr * vec));
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
      const int e = base + u * nt, rr = e / vec;
      if (e < total) reinterpret_cast<uint4 *>(dst + rr * ld)[e - rr * vec] = r[u];
    }
  }
}

/* The comm kernel (see the top of the file); arrive: this launch tells the peers the call began. */
static __global__ void __launch_bounds__(512) mk_beside_kernel(mk_beside b, int arrive) {
  __shared__ int slot[2];
  const mk_beside_geom &g = b.g;
  const int W = g.W, me = b.v.me, parts = g.parts;
  const uint64_t e = mk_epoch(b.w, b.v.slot);
  if (arrive && blockIdx.x == 0 && threadIdx.x == 0) mk_fused_arrive(b.w, b.v, e);
  const int nF = (W - 1) * parts, nR = parts, nG = b.ar ? nF : 0, S = nF + nR + nG;
  const int total = (g.np + 1) * S;
  uint32_t seen = 1u << me; /* thread 0: peers known to have entered the call */
  const int64_t n = g.n, ms = g.ms;
  int next = threadIdx.x == 0 ? (int)atomicAdd(b.claims, 1u) : 0; /* thread 0: one claim ahead */
  for (int it = 0;; it++) {
    if (threadIdx.x == 0) {
      slot[it & 1] = next;
      if (next < total) next = (int)atomicAdd(b.claims, 1u);
    }
    __syncthreads();
    const int t = slot[it & 1];
    if (t >= total) return;
    const int blk = t / S, u = t - blk * S;
    int kind, i, o = me, k;
    if (u < nF) kind = 0, i = blk, o = (me + 1 + u / parts) % W, k = u % parts;
    else if (u < nF + nR) kind = 1, i = blk, k = u - nF;
    else kind = 2, i = blk - 1, o = (me + 1 + (u - nF - nR) / parts) % W, k = (u - nF - nR) % parts;
    if (i < 0 || i >= g.np) continue;
    int64_t r0, c0;
    int rows, cols;
    g.span(i, k, &r0, &rows, &c0, &cols);
    if (rows == 0) continue;
    const uint64_t target = (uint64_t)rows * cols / 8;
    int ok = 1;
    if (threadIdx.x == 0) {
      if (kind == 0) {
        if (!(seen >> o & 1)) ok = mk_fused_wait_arrived(b.w, b.v, o, e, b.op), seen |= 1u << o;
        ok = ok && mk_wait_ge_ptr(b.w, b.prog + g.idx(o, i, k), target, b.op, me, i, 0);
      } else if (kind == 1) {
        ok = mk_wait_ge_ptr(b.w, b.prog + g.idx(me, i, k), target, b.op, me, i, 0);
        for (int s = 0; s < W && ok; s++)
          if (s != me) ok = mk_wait_ge(b.w, b.pf + 8 * g.idx(s, i, k), e + 1, b.op, s, i);
      } else {
        ok = mk_wait_ge(b.w, b.sf + 8 * g.idx(o, i, k), e + 1, b.op, o, i);
      }
    }
    if (!__syncthreads_and(ok)) return; /* the error is recorded */
    if (kind == 0) {
      uint16_t *dst = mk_peer_ptr<uint16_t>(b.w, o, b.x) + ((int64_t)me * ms + r0) * n + c0;
      mk_beside_copy(dst, b.P + ((int64_t)o * ms + r0) * n + c0, rows, cols, n);
    } else if (kind == 1) {
      /* the sum of the copy-engine mode's reduce (the same bits); AR: also into the next peer's Y, then copied from C
         into the other peers' Y (each thread reads back only the vectors it stored) */
      const uint16_t *src[MK_FUSED_ARRIVE_SLOTS];
      for (int s = 0; s < W; s++)
        src[s] = s == me ? b.P + ((int64_t)me * ms + r0) * n + c0
                         : mk_local_ptr<uint16_t>(b.w, b.x) + ((int64_t)s * ms + r0) * n + c0;
      const int64_t off = (int64_t)me * ms + r0;
      uint16_t *c = b.C + ((b.ar ? off : r0) * n + c0);
      const uint64_t yo = b.y + (uint64_t)(off * n + c0) * 2; /* heap offset of these sums in Y */
      uint16_t *y1 = b.ar ? mk_peer_ptr<uint16_t>(b.w, (me + 1) % W, yo) : nullptr;
      mk_fused_reduce_block(c, src, W, rows, cols, n, y1, threadIdx.x, blockDim.x);
      for (int j = 2; b.ar && j < W; j++) mk_beside_copy(mk_peer_ptr<uint16_t>(b.w, (me + j) % W, yo), c, rows, cols, n);
    } else {
      const int64_t off = ((int64_t)o * ms + r0) * n + c0;
      mk_beside_copy(b.C + off, mk_local_ptr<uint16_t>(b.w, b.y) + off, rows, cols, n);
    }
    if (kind == 2 || (kind == 1 && !b.ar)) continue; /* nothing to publish */
    __syncthreads(); /* every thread's stores are performed for thread 0 before its system fence */
    if (threadIdx.x == 0) {
      __threadfence_system();
      if (kind == 0) mk_st_relaxed_sys(mk_peer_ptr<uint64_t>(b.w, o, b.pf + 8 * g.idx(me, i, k)), e + 1);
      else
        for (int q = 0; q < W; q++)
          if (q != me) mk_st_relaxed_sys(mk_peer_ptr<uint64_t>(b.w, q, b.sf + 8 * g.idx(me, i, k)), e + 1);
    }
  }
}
