/* copy_engine.c — AG+GEMM and GEMM+RS with copy-engine transfers (MK_FUSED_AG_COPY=1,
 * MK_FUSED_RS_COPY=1; one node group): the host side of the protocols.
 *
 * AG+GEMM. The GEMM (ag_gemm.cu) keeps every SM and polls per-piece ready
 * flags; the shard moves by cudaMemcpyAsync peer copies on side streams and the flags are
 * set by stream memory operations (cuStreamWriteValue32 / cuStreamWaitValue32, reached
 * through the runtime's driver entry points: libcuda is never linked). No SM takes part in
 * the transfers, and nothing depends on the epoch, so a captured graph replays correctly.
 *
 * Flags (heap workspace `ce` of the AG op, u64 each, written as 32-bit values 0 or 1):
 *   ce_arrive[16]       ce_arrive[p] = 1 on rank q: p entered its call (p's previous GEMM,
 *                       the last reader of p's gathered buffer G, is over); q resets it to 0
 *                       before it pushes to p.
 *   ce_ready[W][nflags] ce_ready[p][f] = 1 on rank d: rows [f R, f R + R) of p's shard have
 *                       landed in d's G (R = rows per piece, MK_FUSED_CE_ROWS).
 * One call on rank me, in stream order:
 *   main: ce_ready (own) := 0 (every flag of the previous call was consumed by its GEMM; peers
 *         write them again only after the next step); ce_arrive[me] := 1 on every peer;
 *         fork to the side streams; the local shard copy into own G (skipped when in place);
 *         the GEMM (waits ce_ready >= 1 per piece); join.
 *   side: for j = 1 .. W-1, d = (me - j) mod W (the order d's GEMM walks the shards):
 *         wait ce_arrive[d] >= 1; ce_arrive[d] := 0; then per piece: copy to d's G,
 *         ce_ready[me][piece] := 1 on d (the write is fenced after the copy). Peer j's work
 *         goes to side stream (j - 1) mod MK_FUSED_CE_STREAMS: one peer's steps stay in order.
 * A reset cannot overtake the next set: d enters its next call only after its GEMM has seen
 * this rank's data, which is pushed after the reset (stream order). Hangs: the memop waits
 * have no timeout; when the GEMM's bounded wait gives up (abort), the kernel sets every
 * ce_arrive of its own heap to 1, so the side stream drains and the join completes. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/check.h"
#include "kernels/fused/fused_internal.h"

/* Transfer mode of each op: -1 by shape (mk_fused_ce_select), 0 SM roles, 1 copy engines (one
 * node group only; same value on every rank). RS and AR are read at mk_fused_create too: the staging. */
MK_PARAM_INT(fused_ag_copy, "FUSED_AG_COPY", -1, -1, 1)
MK_PARAM_INT(fused_rs_copy, "FUSED_RS_COPY", -1, -1, 1)
/* GEMM+AR: 1 = two-shot (the RS copy-engine path, then the owners' sums pushed to every rank). */
MK_PARAM_INT(fused_ar_copy, "FUSED_AR_COPY", -1, -1, 1)
/* By shape (-1): copy engines from M x N x 2 bytes of output partial on. Measured on 4 H200s
 * (NOTES "Session 4"): RS at N = 8192 SM better at 32 MB, copy engines at 128 MB; AR SM at
 * 2 MB, copy engines at 16 MB. Session 9 (run 5bdcff7, the owner-sequential order): RS at 32 MB
 * on copy engines 0.379 ms against 0.428 on SM roles. */
MK_PARAM_INT(fused_rs_ce_min_mb, "FUSED_RS_CE_MIN_MB", 32, 0, 1ll << 20)
/* AG by shape (-1): copy engines from N columns on; below, the op is bound by its transfer (the GEMM
 * per gathered byte is short) and the SM pushers win. 4 H200s, M = 8192, ms with 16 pushers / on copy
 * engines / NCCL + cuBLASLt: N = 1024, K = 4096 0.222 / 0.350 / 0.283 and K = 2048 0.129 / 0.257 / 0.157
 * (run 22aa710); N = 2048, K = 4096 0.283 / 0.353 / 0.367; N = 4096 0.432 / 0.423-0.436 / 0.542; the
 * acceptance shape 2048 x 7168 x 8192 0.370 / 0.354-0.364 / 0.411 (run 57bc3c2). */
MK_PARAM_INT(fused_ag_ce_min_n, "FUSED_AG_CE_MIN_N", 4096, 0, 1ll << 30)
MK_PARAM_INT(fused_ar_ce_min_mb, "FUSED_AR_CE_MIN_MB", 8, 0, 1ll << 20)
/* Side streams of the copies: peer j (j = 1 .. W-1 in push order) goes to stream (j - 1) mod
 * this (at most W - 1): 1 = all pushes in one ordered stream; W - 1 = one per peer, in parallel. */
MK_PARAM_INT(fused_ce_streams, "FUSED_CE_STREAMS", 1, 1, MK_MAX_LOCAL)
/* Rows per copy and per ready flag in copy-engine mode (rounded up to 128 times a power of two). */
MK_PARAM_INT(fused_ce_rows, "FUSED_CE_ROWS", 256, 128, 1ll << 30)
/* RS/AR copy-engine mode: 1 = the owner's reduce runs beside the GEMM (per-piece arrival flags,
 * MK_FUSED_CE_REDUCERS CTAs of a kernel launched before the GEMM, which gets the other SMs);
 * 0 = the reduce kernel after the GEMM. Opt-in until measured (NOTES "rsov"). */
MK_PARAM_INT(fused_ce_overlap, "FUSED_CE_OVERLAP", 0, 0, 1)
MK_PARAM_INT(fused_ce_reducers, "FUSED_CE_REDUCERS", 8, 1, 64)
/* RS/AR copy-engine mode without the overlapped reduce: 1 = the GEMM computes the owners' rows one owner
 * after the other in push order, its own rows last, and the side streams push owner by owner (the copies of
 * the last peer's rows run beside the own rows); 0 = owners interleaved, pushes piece by piece. */
MK_PARAM_INT(fused_ce_seq, "FUSED_CE_SEQ", 1, 0, 1)
/* Rows per piece (progress counter and copy) of RS/AR in the owner-sequential order: 0 = each owner's rows in one
 * piece (default), else as MK_FUSED_CE_ROWS. Each piece is a memop wait and a copy queued behind the last on the
 * side stream, ~5 us apart: GEMM+AR at 8192 x 4096 x 1024 ran 0.534 ms with 256-row pieces and 0.430 with
 * 2048-row ones (one per owner; run 4f49fcd). In this order an owner's pieces are stored one after the other
 * anyway, and its copy overlaps the next owner's tiles whatever its size. */
MK_PARAM_INT(fused_ce_seq_rows, "FUSED_CE_SEQ_ROWS", 0, 0, 1ll << 30)
/* GEMM+RS / GEMM+AR beside mode (kernels/fused/beside.cuh): 1 = the reduction (AR: both shots) on SMs beside
 * the GEMM wherever it applies (one node group, the copy-engine staging, M a multiple of 128 W), 0 = off. The
 * comm kernel's CTAs during the GEMM (the GEMM gets the other SMs), the width of a piece in columns (a multiple
 * of 256), and the CTAs per SM of the launch after the GEMM that finishes the last pieces (0: none). */
MK_PARAM_INT(fused_beside, "FUSED_BESIDE", 0, 0, 1)
MK_PARAM_INT(fused_beside_sms, "FUSED_BESIDE_SMS", 4, 1, 64)
MK_PARAM_INT(fused_beside_cols, "FUSED_BESIDE_COLS", 256, 256, 1ll << 20)
MK_PARAM_INT(fused_beside_tail, "FUSED_BESIDE_TAIL", 2, 0, 8)

/* Stream memory operations on heap addresses (comm: mk_stream_write32 / mk_stream_wait32). */
#define MEMOP_WRITE(s, addr, v, what) MK_CHECK(mk_stream_write32((s), (addr), (v), (what)))
#define MEMOP_WAIT(s, addr, v, what) MK_CHECK(mk_stream_wait32((s), (addr), (v), (what)))

/* Fork: every side stream this call uses waits for the caller's stream up to here. */
static mk_status ce_fork(mk_fused_t *f, cudaStream_t s) {
  int ns = (int)mk_param_fused_ce_streams();
  if (ns > f->world - 1) ns = f->world - 1;
  if (ns > f->ce_nside) ns = f->ce_nside;
  if (ns < 1) ns = 1;
  f->ce_used = ns;
  MK_CUDA_CHECK(cudaEventRecord(f->ce_fork, s));
  for (int i = 0; i < ns; i++) MK_CUDA_CHECK(cudaStreamWaitEvent(f->ce_side[i], f->ce_fork, 0));
  if (f->ce_red_used) MK_CUDA_CHECK(cudaStreamWaitEvent(f->ce_red, f->ce_fork, 0));
  return MK_STATUS_OK;
}

/* On stream s: 1 into flag slot me of the array at heap offset off on every peer (arrivals, done2). */
static mk_status ce_tell_peers(mk_fused_t *f, cudaStream_t s, uint64_t off, const char *what) {
  for (int p = 0; p < f->world; p++)
    if (p != f->me) MEMOP_WRITE(s, f->w.peer_heap[p] + off + 8ull * f->me, 1, what);
  return MK_STATUS_OK;
}

/* The side stream of the j-th peer in push order (j >= 1). */
static cudaStream_t ce_stream(const mk_fused_t *f, int j) { return f->ce_side[(j - 1) % f->ce_used]; }

mk_status mk_fused_ce_join(mk_fused_t *f, mk_stream_t stream) {
  for (int i = 0; i < f->ce_used; i++) {
    MK_CUDA_CHECK(cudaEventRecord(f->ce_join[i], f->ce_side[i]));
    MK_CUDA_CHECK(cudaStreamWaitEvent((cudaStream_t)stream, f->ce_join[i], 0));
  }
  if (f->ce_red_used) {
    MK_CUDA_CHECK(cudaEventRecord(f->ce_red_join, f->ce_red));
    MK_CUDA_CHECK(cudaStreamWaitEvent((cudaStream_t)stream, f->ce_red_join, 0));
  }
  return MK_STATUS_OK;
}

int mk_fused_ce_select(mk_fused_op op, int64_t m, int64_t n, int world, int nnodes, int copy, int64_t min_mb,
                       int provision) {
  if (world < 2 || nnodes != 1 || copy == 0 || (unsigned)op > MK_FUSED_GEMM_AR) return 0;
  if (op == MK_FUSED_AG_GEMM) return copy > 0 || provision || n >= min_mb; /* min_mb: columns here; no staging */
  if (m < 1 || n < 1) return 0;
  const int64_t big = 1ll << 30; /* beyond any shape the ops take: no overflow below */
  const int64_t bytes = m > big || n > big ? INT64_MAX : m * n * 2;
  const int64_t need = min_mb <= 0 ? 0 : min_mb >= (1ll << 40) ? INT64_MAX : min_mb << 20;
  if (copy < 0 && bytes < need) return 0;
  if (provision) return 1;
  /* Two-shot AR and the owners' staging need whole rows per rank; the progress counters are 32-bit. */
  return m % world == 0 && (m / world) * n / 8 < (1ll << 31);
}

/* Ranks that share a GPU (MK_GPU_SHARE, a test mode) never take the copy-engine modes: there the GEMM holds every SM
 * while it polls flags that the peers' copies set, and on one H200 shared by 2 ranks (session 43, run f020eaa-h200)
 * RS and AR forced onto copy engines timed out (rank 1 waiting on rank 0's flag) where every SM-role mode passed. */
static int ce_copy(const mk_fused_t *f, mk_fused_op op) {
  const int copy = (int)(op == MK_FUSED_AG_GEMM   ? mk_param_fused_ag_copy()
                         : op == MK_FUSED_GEMM_RS ? mk_param_fused_rs_copy()
                                                  : mk_param_fused_ar_copy());
  if (!f->gpu_shared) return copy;
  static int warned;
  if (copy == 1 && !warned++)
    MK_WARN(MK_SUBSYS_KERNEL, "fused: ranks share a GPU (MK_GPU_SHARE=1): MK_FUSED_{AG,RS,AR}_COPY=1 is not taken, "
            "the ops run on SM roles");
  return 0;
}

static int64_t ce_min_mb(mk_fused_op op) {
  return op == MK_FUSED_GEMM_RS ? mk_param_fused_rs_ce_min_mb() : mk_param_fused_ar_ce_min_mb();
}

int mk_fused_ag_ce_mode(const mk_fused_t *f, int64_t n) {
  return mk_fused_ce_select(MK_FUSED_AG_GEMM, f->max_m, n, f->world, f->nnodes, ce_copy(f, MK_FUSED_AG_GEMM),
                            mk_param_fused_ag_ce_min_n(), 0);
}
int mk_fused_ag_ce_min_n(void) { return (int)mk_param_fused_ag_ce_min_n(); }

int mk_fused_ce_overlap(const mk_fused_t *f) {
  if (!mk_param_fused_ce_overlap() || !f->ce_red) return 0;
  const int r = (int)mk_param_fused_ce_reducers();
  return r < f->sms / 2 ? r : f->sms / 2;
}

int mk_fused_ce_seq(const mk_fused_t *f) { return mk_param_fused_ce_seq() && !f->ce_red_used; }

int mk_fused_ce_push_step(int64_t np, int64_t t, int *second) {
  if (t <= 0 || np <= 1) { /* F0, or np = 1: F0 S0 */
    *second = t > 0;
    return 0;
  }
  if (t >= 2 * np - 1) {
    *second = 1;
    return (int)(np - 1);
  }
  *second = !(t & 1); /* t = 2k - 1: F(k); t = 2k: S(k - 1) */
  return (int)(t & 1 ? (t + 1) / 2 : t / 2 - 1);
}

static int64_t ce_round_rows(int64_t want) {
  int64_t r = 128;
  while (r < want && r < (1ll << 24)) r *= 2;
  return r;
}

int mk_fused_ce_rows(void) { return (int)ce_round_rows(mk_param_fused_ce_rows()); }

int64_t mk_fused_rs_ce_rows(int64_t ms, int seq) {
  if (!seq) return mk_fused_ce_rows();
  const int64_t want = mk_param_fused_ce_seq_rows();
  if (want) return ce_round_rows(want);
  /* MK_FUSED_CE_FOLD: pieces of one group of the GEMM's order (MK_FUSED_CE_FOLD_GROUP tile-rows), so that the copy
     of a group's rows starts when the group is done, not when the owner's last group is */
  if (seq == 2 && ms > 128 * MK_FUSED_CE_FOLD_GROUP) return 128 * MK_FUSED_CE_FOLD_GROUP;
  return ms > 0 ? ms : 1;
}

mk_status mk_fused_ag_ce_begin(mk_fused_t *f, const mk_fused_args *a, int inplace, mk_stream_t stream) {
  const mk_fused_ws *ws = &f->ws[MK_FUSED_AG_GEMM];
  cudaStream_t s = (cudaStream_t)stream;
  const int W = f->world, me = f->me;
  const int64_t ms = a->m / W, k = a->k, R = mk_fused_ce_rows();
  const int64_t nflags = (ms + R - 1) / R; /* pieces (flags) per shard */
  const uint64_t arrive = ws->ce, ready = ws->ce + 8ull * MK_FUSED_ARRIVE_SLOTS;
  f->ce_red_used = 0;
  /* Own ready flags back to 0, then tell every peer this rank entered the call. */
  MK_CUDA_CHECK(cudaMemsetAsync(f->w.heap + ready, 0, 8ull * (uint64_t)W * (uint64_t)nflags, s));
  MK_CHECK(ce_tell_peers(f, s, arrive, "arrive write"));
  MK_CHECK(ce_fork(f, s));
  const char *src = (const char *)a->A;
  for (int j = 1; j < W; j++) {
    const int d = (me - j + W) % W;
    cudaStream_t side = ce_stream(f, j);
    char *own = f->w.heap + arrive + 8ull * d;
    MEMOP_WAIT(side, own, 1, "arrive wait");
    MEMOP_WRITE(side, own, 0, "arrive reset");
    char *dst = f->w.peer_heap[d] + ws->buf + (uint64_t)me * (uint64_t)ms * (uint64_t)k * 2;
    for (int64_t i = 0; i < nflags; i++) {
      const int64_t r0 = i * R, rows = ms - r0 < R ? ms - r0 : R;
      const uint64_t off = (uint64_t)r0 * (uint64_t)k * 2, bytes = (uint64_t)rows * (uint64_t)k * 2;
      MK_CUDA_CHECK(cudaMemcpyAsync(dst + off, src + off, bytes, cudaMemcpyDefault, side));
      const uint64_t flag = ready + 8ull * ((uint64_t)me * (uint64_t)nflags + (uint64_t)i);
      MEMOP_WRITE(side, f->w.peer_heap[d] + flag, 1, "ready write");
    }
  }
  if (!inplace)
    MK_CUDA_CHECK(cudaMemcpyAsync(f->w.heap + ws->buf + (uint64_t)me * (uint64_t)ms * (uint64_t)k * 2, src,
                                  (size_t)(ms * k) * 2, cudaMemcpyDefault, s));
  return MK_STATUS_OK;
}

/* GEMM+RS. The GEMM (all SMs, no split-K, no reducer CTAs) stores its partial P locally
 * in a local buffer (cudaMalloc: no peer reads it; the heap's P pair stays with SM mode, so the
 * modes may alternate) and, after each tile, adds the tile's (rows x columns / 8) that
 * fall into piece i of owner o's rows to ce_cnt[o][i] (own heap, reset to 0 before the call).
 * Flags (heap workspace `ce` of the RS op, u64 each, 32-bit values):
 *   ce_arrive[16]  ce_arrive[p] = 1 on rank q: p entered its call (p's staging X is free: p's
 *                  previous reduce kernel, its last reader, is over); q resets it to 0.
 *   ce_done[16]    ce_done[s] = 1 on owner o: every row of s's partial that o owns is in o's X[s].
 *   ce_done2[16]   AR: ce_done2[o] = 1 on rank q: owner o's sums are in o's Y (second shot; with
 *                  MK_FUSED_CE_OVERLAP: o pushed them into q's Y).
 *   ce_cnt[W][pieces]  local: the GEMM's progress per owner and piece of MK_FUSED_CE_ROWS rows.
 * One call on rank me, in stream order:
 *   main: ce_done, ce_cnt (own) := 0; ce_arrive[me] := 1 on every peer; fork; the GEMM; the
 *         reduce kernel (waits, bounded, for ce_done[s] >= 1 of every peer s, then sums P's own
 *         rows and X[s] in rank order 0..W-1 into C); join.
 *   side: piece by piece (i), owners o = me + 1, me + 2, ... (the GEMM's owner-interleaved
 *         order finishes every owner's pieces at the same pace): before the first copy to o,
 *         wait ce_arrive[o] >= 1 and reset it; wait ce_cnt[o][i] = rows x N / 8; copy the rows
 *         of P to o's X[me]; after o's last piece ce_done[me] := 1 on o.
 * Staging X [W][M/W][N] bf16 (heap) and the local P [M][N] are allocated by mk_fused_create
 * when MK_FUSED_RS_COPY=1 is set then.
 * GEMM+AR (MK_FUSED_AR_COPY=1, M a multiple of W): the same first shot, the reduce kernel
 * writes the owner's sums into its rows of Y [M][N] (heap) instead of C; then every rank sets
 * ce_done2[me] on every peer (mk_fused_ar_ce_tell), a one-thread kernel waits (bounded) for
 * ce_done2 of every peer, and each peer's rows of its Y are pulled straight into C, the own rows
 * copied Y -> C (mk_fused_ar_ce_pull). Each row is summed once, by its owner, in rank order:
 * every rank holds the same bits.
 * The reduce kernel releases its own ce_arrive flags when its wait gives up (abort).
 *
 * Overlapped reduce (MK_FUSED_CE_OVERLAP=1; 0 = the above). Two more flag arrays after ce_cnt
 * (offsets mk_fused_ce_piece_off / mk_fused_ce_sum_off of the call's pieces np):
 *   ce_piece[W][np]  ce_piece[s][i] = 1 on owner o: piece i of s's partial rows owned by o is
 *                    in o's X[s] (written by s's side stream after that piece's copy, instead of
 *                    ce_done after the last one).
 *   ce_sum[np]       local, AR: rows of piece i this rank's reduce kernel has summed into Y.
 * The GEMM also counts the own rows in ce_cnt[me][i]. One call on rank me, in stream order:
 *   main: ce_done .. ce_sum (own) := 0 (one memset); ce_arrive[me] := 1 on every peer; fork
 *         (the side streams and the reduce stream ce_red); on ce_red the reduce kernel
 *         (MK_FUSED_CE_REDUCERS CTAs, mk_ce_overlap_reduce_kernel), then on main the GEMM on the
 *         SMs less those; the pushes; join (RS: done).
 *   ce_red: per piece i, in order, split over every CTA: wait (bounded) for ce_cnt[me][i] =
 *         rows x N / 8 and ce_piece[s][i] >= 1 of every peer s, sum P's own rows and X[s] in rank
 *         order into C (RS) or this rank's rows of Y (AR; then ce_sum[i] += the task's rows).
 *   side: the pushes above, ce_piece[me][i] := 1 on o after each copy. AR: the second shot per
 *         piece (mk_fused_ce_push_step: F0, F1, S0, F2, S1, ...): S(i) = wait ce_sum[i] >= the
 *         piece's rows, copy this rank's sums of piece i to every peer's Y; after the last
 *         piece ce_done2[me] := 1 there. Main, after the join: the one-thread wait for every
 *         peer's ce_done2, Y -> C.
 * Reuse across calls (the flags are single-buffered, and graphs replay the same offsets):
 * ce_piece[s][*] on o is reset by o at the start of o's call e and set by s in call e only
 * after s's side stream saw ce_arrive[o] >= 1, which o writes after the reset (stream order);
 * s's writes of call e - 1 were all seen by o's call-(e - 1) reduce kernel (it waits for every
 * piece of every peer), which the join ordered before o's reset. ce_sum and the own ce_cnt
 * are written and read inside this rank's call, between its reset and its join. X[s] and Y
 * are written as in the plain mode, after the owner's arrival (its previous reduce kernel and
 * Y -> C are over). No cycle: before F(k) a side stream holds only steps of pieces < k, S(k)
 * waits for this rank's reduce of piece k, which waits for the GEMMs and the F(k) of the
 * peers; the GEMM waits for nothing. A failed wait of the reduce kernel sets the own ce_arrive
 * flags and every ce_sum[i] to its target, so the side streams drain. */
int mk_fused_ce_fold_auto(const mk_fused_t *f, mk_fused_op op, int64_t m, int64_t n) {
  return op == MK_FUSED_GEMM_AR && mk_param_fused_ce_fold() < 0 && f->world == 2 && f->nnodes == 1 && f->ws[op].cex &&
         m % (128 * f->world) == 0 && mk_param_fused_fold() < 0 && mk_param_fused_ar_two_shot() < 0 &&
         !mk_param_fused_beside() && !mk_param_fused_ce_overlap() && mk_param_fused_ce_seq() &&
         mk_fused_ce_select(op, m, n, f->world, f->nnodes, ce_copy(f, op), ce_min_mb(op), 0);
}

int mk_fused_rs_ce_mode(const mk_fused_t *f, mk_fused_op op, int64_t m, int64_t n) {
  if (mk_fused_fold(f, op, m, n)) return 0;                              /* fold mode first */
  if (op == MK_FUSED_GEMM_AR && mk_fused_ar_two_shot(f, m, n)) return 0; /* SM two-shot first */
  return f->ws[op].cex && mk_fused_ce_select(op, m, n, f->world, f->nnodes, ce_copy(f, op), ce_min_mb(op), 0);
}

int mk_fused_uses_ce(const mk_fused_t *f, mk_fused_op op, int64_t m, int64_t n) {
  if (!f || (unsigned)op > MK_FUSED_GEMM_AR || !f->ws[op].ready) return 0;
  return op == MK_FUSED_AG_GEMM ? mk_fused_ag_ce_mode(f, n) : mk_fused_rs_ce_mode(f, op, m, n);
}

/* Staging of the RS/AR copy-engine mode (protocol above): heap X (AR: and Y) and the local P.
 * Forced (=1): a failure fails mk_fused_create. By shape (-1): every rank must reach the same
 * answer, so the heap's room (equal on every rank) is checked before any allocation, and the
 * ranks' local cudaMalloc results are all-gathered; if any rank lacks room the op keeps the SM
 * path, with one warning per process. */
mk_status mk_fused_ce_stage(mk_fused_t *f, mk_fused_op op) {
  static int warned;
  mk_fused_ws *ws = &f->ws[op];
  const int copy = ce_copy(f, op), W = f->world;
  if (op == MK_FUSED_AG_GEMM || !mk_fused_ce_select(op, f->max_m, f->max_n, W, f->nnodes, copy, ce_min_mb(op), 1))
    return MK_STATUS_OK;
  const uint64_t xbytes = ((uint64_t)W * (uint64_t)((f->max_m + W - 1) / W) * (uint64_t)f->max_n * 2 + 255) &
                          ~(uint64_t)255;
  const uint64_t heap = (op == MK_FUSED_GEMM_AR ? 2 : 1) * xbytes;
  if (copy == 1) {
    MK_CHECK(mk_comm_heap_alloc(f->comm, heap, &ws->cex));
    MK_CUDA_CHECK(cudaMalloc((void **)&f->ce_p[op], xbytes));
  } else {
    const uint64_t left = mk_comm_heap_left(f->comm);
    int ok = left >= heap;
    if (ok) { /* the heap check is the same on every rank: all of them all-gather, or none */
      if (cudaMalloc((void **)&f->ce_p[op], xbytes) != cudaSuccess) {
        (void)cudaGetLastError(); /* out of memory is not sticky: clear it */
        f->ce_p[op] = NULL;
        ok = 0;
      }
      int *all = malloc((size_t)W * sizeof *all);
      const mk_status st = all ? mk_comm_allgather(f->comm, &ok, all, sizeof ok) : MK_STATUS_OUT_OF_MEMORY;
      for (int p = 0; st == MK_STATUS_OK && p < W; p++) ok &= all[p];
      free(all);
      if (st != MK_STATUS_OK) return st; /* ce_p (if any) is freed by mk_fused_destroy */
      if (!ok && f->ce_p[op]) {
        cudaFree(f->ce_p[op]);
        f->ce_p[op] = NULL;
      }
    }
    if (!ok) {
      const char *name = op == MK_FUSED_GEMM_RS ? "gemm_rs" : "gemm_ar", *var = op == MK_FUSED_GEMM_RS ? "RS" : "AR";
      const unsigned long long mib = 1ull << 20, short_mib = left < heap ? (heap - left + mib - 1) / mib : 0;
      if (warned) return MK_STATUS_OK;
      warned = 1;
      if (short_mib)
        MK_WARN(MK_SUBSYS_KERNEL,
                "fused: %s up to %lld x %lld keeps the SM path: its copy-engine mode needs %llu MiB of heap staging, "
                "%llu MiB of MK_HEAP_BYTES are left; raise MK_HEAP_BYTES by at least %llu MiB (MK_FUSED_%s_COPY=0 "
                "silences this)",
                name, (long long)f->max_m, (long long)f->max_n, (unsigned long long)(heap >> 20),
                (unsigned long long)(left >> 20), short_mib, var);
      else
        MK_WARN(MK_SUBSYS_KERNEL,
                "fused: %s up to %lld x %lld keeps the SM path: its copy-engine mode needs %llu MiB of device memory "
                "(cudaMalloc) that some rank lacks (MK_FUSED_%s_COPY=0 silences this)",
                name, (long long)f->max_m, (long long)f->max_n, (unsigned long long)(xbytes >> 20), var);
      return MK_STATUS_OK;
    }
    MK_CHECK(mk_comm_heap_alloc(f->comm, heap, &ws->cex)); /* fits: checked above */
  }
  if (op == MK_FUSED_GEMM_AR) ws->cey = ws->cex + xbytes;
  return MK_STATUS_OK;
}

mk_status mk_fused_rs_ce_begin(mk_fused_t *f, mk_fused_op op, const mk_fused_args *a, mk_stream_t stream) {
  const mk_fused_ws *ws = &f->ws[op];
  cudaStream_t s = (cudaStream_t)stream;
  const int W = f->world;
  const int64_t ms = a->m / W, R = mk_fused_ce_rows(), np = (ms + R - 1) / R;
  const uint64_t arrive = ws->ce;
  /* ce_done, ce_done2, ce_cnt, ce_piece, ce_sum := 0 (one memset). */
  MK_CUDA_CHECK(cudaMemsetAsync(f->w.heap + arrive + 8ull * MK_FUSED_ARRIVE_SLOTS, 0,
                                mk_fused_ce_sum_off(W, np) + 8ull * (uint64_t)np - 8ull * MK_FUSED_ARRIVE_SLOTS, s));
  f->ce_red_used = mk_fused_ce_overlap(f) > 0;
  MK_CHECK(ce_tell_peers(f, s, arrive, "arrive write"));
  return ce_fork(f, s);
}

/* One first-shot piece i to the side streams' peers j in [j0, j1) (o = me + j; step of mk_fused_rs_ce_push). */
static mk_status ce_push_first(mk_fused_t *f, mk_fused_op op, const mk_fused_args *a, int64_t R, int64_t i, int j0,
                               int j1, int overlap) {
  const mk_fused_ws *ws = &f->ws[op];
  const int W = f->world, me = f->me;
  const int64_t ms = a->m / W, n = a->n, np = (ms + R - 1) / R;
  const uint64_t arrive = ws->ce, done = ws->ce + 8ull * MK_FUSED_ARRIVE_SLOTS, cnt = ws->ce + mk_fused_ce_cnt_off();
  const uint64_t piece = ws->ce + mk_fused_ce_piece_off(W, np);
  const char *P = (const char *)f->ce_p[op];
  for (int j = j0; j < j1; j++) {
    const int o = (me + j) % W;
    cudaStream_t side = ce_stream(f, j);
    if (i == 0) {
      char *own = f->w.heap + arrive + 8ull * o;
      MEMOP_WAIT(side, own, 1, "arrive wait");
      MEMOP_WRITE(side, own, 0, "arrive reset");
    }
    const int64_t r0 = i * R, rows = ms - r0 < R ? ms - r0 : R;
    char *c = f->w.heap + cnt + 8ull * ((uint64_t)o * np + i);
    MEMOP_WAIT(side, c, (uint32_t)(rows * n / 8), "progress wait");
    const uint64_t bytes = (uint64_t)rows * (uint64_t)n * 2;
    MK_CUDA_CHECK(cudaMemcpyAsync(f->w.peer_heap[o] + ws->cex + ((uint64_t)me * ms + r0) * (uint64_t)n * 2,
                                  P + ((uint64_t)o * ms + r0) * (uint64_t)n * 2, bytes, cudaMemcpyDefault, side));
    if (overlap) {
      const uint64_t fl = piece + 8ull * ((uint64_t)me * np + i);
      MEMOP_WRITE(side, f->w.peer_heap[o] + fl, 1, "piece write");
    } else if (i == np - 1) {
      MEMOP_WRITE(side, f->w.peer_heap[o] + done + 8ull * me, 1, "done write");
    }
  }
  return MK_STATUS_OK;
}

/* AR with MK_FUSED_CE_OVERLAP, the second shot of piece i: once the reduce kernel has counted
 * every row of the piece in ce_sum[i] (local), this rank's sums of those rows go to every peer's
 * Y; after the last piece ce_done2[me] := 1 there. */
static mk_status ce_push_second(mk_fused_t *f, const mk_fused_args *a, int64_t i) {
  const mk_fused_ws *ws = &f->ws[MK_FUSED_GEMM_AR];
  const int W = f->world, me = f->me;
  const int64_t ms = a->m / W, n = a->n, R = mk_fused_ce_rows(), np = (ms + R - 1) / R;
  const int64_t r0 = i * R, rows = ms - r0 < R ? ms - r0 : R;
  const uint64_t done2 = ws->ce + 8ull * 2 * MK_FUSED_ARRIVE_SLOTS, sum = ws->ce + mk_fused_ce_sum_off(W, np);
  const uint64_t off = ws->cey + ((uint64_t)me * (uint64_t)ms + (uint64_t)r0) * (uint64_t)n * 2;
  for (int j = 1; j < W; j++) {
    const int o = (me + j) % W;
    cudaStream_t side = ce_stream(f, j);
    MEMOP_WAIT(side, f->w.heap + sum + 8ull * (uint64_t)i, (uint32_t)rows, "sum wait");
    MK_CUDA_CHECK(cudaMemcpyAsync(f->w.peer_heap[o] + off, f->w.heap + off, (uint64_t)rows * (uint64_t)n * 2,
                                  cudaMemcpyDefault, side));
    if (i == np - 1)
      MEMOP_WRITE(side, f->w.peer_heap[o] + done2 + 8ull * me, 1, "done2 write");
  }
  return MK_STATUS_OK;
}

mk_status mk_fused_rs_ce_push(mk_fused_t *f, mk_fused_op op, const mk_fused_args *a, int seq) {
  const int64_t ms = a->m / f->world, R = mk_fused_rs_ce_rows(ms, seq), np = (ms + R - 1) / R;
  const int overlap = f->ce_red_used;
  if (overlap && op == MK_FUSED_GEMM_AR) { /* both shots, interleaved per piece */
    for (int64_t t = 0; t < 2 * np; t++) {
      int second;
      const int64_t i = mk_fused_ce_push_step(np, t, &second);
      MK_CHECK(second ? ce_push_second(f, a, i) : ce_push_first(f, op, a, R, i, 1, f->world, 1));
    }
    return MK_STATUS_OK;
  }
  if (seq) { /* the GEMM's owner-sequential order: owner by owner (2: piece flags for the owner's GEMM) */
    for (int j = 1; j < f->world; j++)
      for (int64_t i = 0; i < np; i++) MK_CHECK(ce_push_first(f, op, a, R, i, j, j + 1, seq == 2));
    return MK_STATUS_OK;
  }
  for (int64_t i = 0; i < np; i++) MK_CHECK(ce_push_first(f, op, a, R, i, 1, f->world, overlap));
  return MK_STATUS_OK;
}

/* GEMM+AR, second shot, after the reduce kernel wrote this rank's sums into its rows of Y: tell every
 * peer (ce_done2[me] := 1 there; the memop's barrier orders it after the kernel's writes). */
mk_status mk_fused_ar_ce_tell(mk_fused_t *f, mk_stream_t stream) {
  return ce_tell_peers(f, (cudaStream_t)stream, f->ws[MK_FUSED_GEMM_AR].ce + 8ull * 2 * MK_FUSED_ARRIVE_SLOTS,
                       "done2 write");
}

/* Then, once the caller's bounded wait saw every peer's ce_done2: each peer's rows of its Y are
 * pulled straight into C by peer copies on the side streams, the own rows copied Y -> C on the
 * caller's stream; the caller joins. A peer's Y rows stay put until this rank's join: the peer
 * rewrites them only in its next call's reduce kernel, after this rank's pushes of that call
 * (its ce_done wait), which follow this call's join in stream order. */
mk_status mk_fused_ar_ce_pull(mk_fused_t *f, const mk_fused_args *a, mk_stream_t stream) {
  const mk_fused_ws *ws = &f->ws[MK_FUSED_GEMM_AR];
  const int W = f->world, me = f->me;
  const uint64_t ms = (uint64_t)(a->m / W), n = (uint64_t)a->n, rows = ms * n * 2;
  MK_CHECK(ce_fork(f, (cudaStream_t)stream));
  for (int j = 1; j < W; j++) {
    const int o = (me + j) % W;
    MK_CUDA_CHECK(cudaMemcpyAsync(a->C + (uint64_t)o * ms * n, f->w.peer_heap[o] + ws->cey + (uint64_t)o * rows, rows,
                                  cudaMemcpyDefault, ce_stream(f, j)));
  }
  MK_CUDA_CHECK(cudaMemcpyAsync(a->C + (uint64_t)me * ms * n, f->w.heap + ws->cey + (uint64_t)me * rows, rows,
                                cudaMemcpyDefault, (cudaStream_t)stream));
  return MK_STATUS_OK;
}
