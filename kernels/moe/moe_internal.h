/* moe_internal.h — internal to kernels/moe: the MoE handle (host C) and the launchers of the
 * fused and unfused pieces (extern "C", defined in the .cu files). Plain C: no CUDA C++.
 *
 * Symmetric-heap buffers of the fused path (same offsets on every rank; W ranks, C = comm
 * CTAs, Tm = max_tokens, El = E / W local experts). Counter ownership follows
 * comm/mk_dev_world.h: a counter lives in the heap of the rank that waits on it.
 *   cnt_in   [W][cnt_stride] int32  from source s: rows s sends here, then pairs per local expert
 *   cnt_sig  [W] u64               +1 per call from each source (target: calls + 1)
 *   land     [W][Tm][H] bf16       token rows from source s, one per (token, this rank)
 *   lmeta    [W][Tm] mk_moe_meta   their token index at home and (local expert, weight) list
 *   land_sig [W][C] u64            +1 per call from source s's CTA c after its chunk (C: dispatch CTAs)
 *   comb     [W][Tm][H] bf16       at home: from expert rank d, row j = sum_i w_i y_i of the
 *                                  row this rank sent to d in slot j
 *   comb_sig [W][Cc] u64           +1 per call from rank d's CTA c after its chunk (Cc: combine CTAs)
 *   smeta    [W][Tm] mk_moe_meta   sender side: the meta of each row to rank d (source of puts)
 *   cnt_out  [W][cnt_stride] int32 sender side: the count record for rank d
 *   stage    [W][Tm][H] bf16       inter-node only: dispatch rows staged in the heap for proxy puts
 *   cstage   [W][Tm][H] bf16       inter-node only: combine rows staged likewise
 *   cnt_done u64                   local: the exchange's last call (its target) once counts, group
 *                                  offsets and the ready/done2 zeroing are done; the dispatch,
 *                                  launched beside the exchange at decode, waits on it
 *   plan_done u64                  local (cnt_done + 8): the call's target once its plan (n_send,
 *                                  smeta) is done; with send_early the dispatch sends its rows after
 *                                  it and receives after cnt_done. A rank then writes a peer's land
 *                                  and lmeta before that peer has its counts, so both are doubled
 *                                  (copy target & 1): a rank in call e + 1 has had its call-e rows
 *                                  from every peer, so each peer is past call e - 1, the last call
 *                                  that used copy (e + 1) & 1 (its receive and combine precede its
 *                                  call-e dispatch on its streams)
 *   ready    [tiles] u64           local: rows of GEMM1 tile-row landed (reset each call)
 *   done2    [tiles][8] u64        local (reset each call): the combine kernel's GEMM2 tiles stored per
 *                                  tile-row (first tiles words); with the push combine GEMM2 does not
 *                                  count, and GEMM2 beside GEMM1 (g12_need) has GEMM1 count the rows
 *                                  it stored per (tile-row, chunk of its N: MK_MOE_G12_CHUNKS), each
 *                                  GEMM2 unit waiting for the chunks its K-range reads
 *   g2_out   u64                   local: GEMM2 CTAs past their last tile (push; reset each call)
 * Push combine (mk_moe_dev.push: one node group): GEMM2's epilogue stores each row straight home,
 *   pland    [Tm][K][H] bf16       at home: row (t, q) = y of token t's q-th expert (o_comb when
 *                                  Tm K <= W Tm, else its own area)
 *   psig     [W] u64               +1 per call from expert rank d once all its GEMM2 CTAs stored
 *   With mk_moe_dev.fan (args.share_out, mk_moe_forward_all) pland is [W][Tm][K][H] on every rank:
 *   GEMM2 stores row (home h, token t, q) at [h][t][q] into every rank (the same heap offset), and
 *   every rank's reduce sums every token. The reduce's last CTA advances the call (no advance kernel).
 * Decode without the count exchange (mk_moe_dev.ll, MK_MOE_LL: push, one node group, W Tm <= 64 by
 *   default): every local expert has one static region of R = W Tm rows in A1, source s's rows at
 *   [e R + s Tm, + its count); a sender places each (token, expert) row there at the expert's rank,
 *   its slot the number of the source's earlier pairs with that expert (no atomics, no counts):
 *   a1       [El R + 128][H] bf16  A1 in the heap (peers store into it); rows past a source's count
 *                                  hold stale or zero values, computed and discarded
 *   rowinfo  [El R + 128] u64      row p's (call target & 0xffffff) << 40 | home << 32 | token K + q,
 *                                  by the sender; GEMM2 pushes row p home where the target matches,
 *                                  else into C2 (scratch)
 *   land_cnt u64                   +1 per call from each sender CTA of every source, after its rows
 *                                  (target: (calls + 1) W C); GEMM1's tiles wait for it
 * Rows by copy engine (mk_moe_dev.ce_send, MK_MOE_CE_SEND: the serial schedule with the push combine in one
 *   node group): at the start of a call every rank copies its whole x [T][H] into land[rank] at every peer
 *   (cudaMemcpyAsync on s2, row t at slot t: no SM moves a row over NVLink), then writes 1 into xflag[rank]
 *   there (a stream memory operation after the copy). The dispatch sends only the metas (lmeta, land_sig as
 *   before) and groups a peer's rows from land[s][token] once its xflag[s] is set, its own from x[token].
 *   xflag    [W] u64               1 (32-bit write) from source s once its rows are in land[s]; zeroed by a
 *                                  memset on s after the dispatch (before this rank's GEMM2 can signal psig,
 *                                  which the source's next call waits for through its reduce) */
#ifndef MK_KERNELS_MOE_INTERNAL_H
#define MK_KERNELS_MOE_INTERNAL_H

#include "comm/mk_comm.h"
#include "kernels/baseline/mk_baseline.h"
#include "kernels/moe/mk_moe.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MK_MOE_EPOCH_SLOT 13 /* == MK_OP_MOE (comm/mk_device.cuh) */
#define MK_MOE_G12_CHUNKS 8  /* done2's counters a tile-row (GEMM2 beside GEMM1: chunks of GEMM1's N) */

/* 80 bytes: one landing row's routing at its destination. */
typedef struct mk_moe_meta {
  int32_t token; /* index at home */
  int32_t n;     /* experts of this token on the destination rank, in top-k order */
  int32_t q;  /* 4 bits per entry i: the top-k index at home of e[i] (push combine) */
  int32_t pad;
  int32_t e[MK_MOE_MAX_TOPK]; /* local expert ids */
  float w[MK_MOE_MAX_TOPK];   /* routing weights */
} mk_moe_meta;

/* Everything the kernels need, passed by value (device pointers and heap offsets). */
typedef struct mk_moe_dev {
  mk_dev_world w;
  int W, rank, El, E, K, H, I;
  int C, Cc;          /* dispatch CTAs, combine CTAs */
  int tiles_n2, bn2;  /* GEMM2 tile width bn2, tiles_n2 = H / bn2 rounded up */
  int tile_n1;        /* GEMM1's tile width (MK_MOE_TILE_N): 0 the core's pick, 128 or 256 */
  int sk_nt;          /* > 0: GEMM1 swapped (moe_skinny.cuh, MK_MOE_SKINNY) in chunks of sk_nt rows (64, 128, 192) */
  int64_t Tm, m_cap, cnt_stride;
  uint64_t *calls; /* device: this handle's fused calls so far (targets: calls + 1). Per handle, not
                      the comm's epoch slot, so handles of several layers may interleave */
  uint64_t o_cnt_in, o_cnt_sig, o_land, o_lmeta, o_land_sig, o_comb, o_comb_sig, o_smeta, o_cnt_out, o_stage,
      o_cstage, o_ready, o_done2, o_cnt_done, o_plan_done, o_g2_out, o_pland, o_psig;
  int send_early;              /* the dispatch sends its rows once the plan is done, beside the count exchange
                                  (dispatch_early, one node group, MK_MOE_SEND_EARLY); land and lmeta are then
                                  two copies, by the parity of the call's target */
  uint64_t land_par, lmeta_par; /* send_early: bytes from one copy of land / lmeta to the other, else 0 */
  int push;          /* push combine: GEMM2 stores rows home (one node group, not hybrid; MK_MOE_PUSH) */
  uint16_t **rowdst; /* push: [m_cap + 128] where row p of C2 goes (a pland row at its home; fan: at this rank,
                        every rank's copy at the same offset), by the dispatch */
  int fan;           /* push, args.share_out: every GEMM2 row into every rank's pland [W][Tm][K][H] */
  uint32_t *tick;    /* push: the reduce's CTAs out this call (the last one advances calls and re-arms it) */
  /* local scratch (cudaMalloc) */
  int32_t *n_send;   /* [W] rows to rank d (zeroed each call) */
  int32_t *cnt_pairs;/* [E] pairs per global expert (zeroed each call) */
  int32_t *fill;     /* [El] rows placed per local expert (zeroed each call) */
  int32_t *slot;     /* [Tm][W] landing slot of token t at rank d, -1 = none */
  int32_t *n_from;   /* [W] rows from source s */
  int32_t *rows;     /* [El] GEMM group sizes */
  int32_t *exp_off;  /* [El + 1] */
  int32_t *tile_base;/* [El + 1] */
  int32_t *posmap;   /* [W][Tm][K] row of A1 of landing row (s, j), expert i */
  uint16_t *A1, *C1, *act, *C2;
  const uint16_t *w1, *w2;
  uint16_t *w1g; /* w1 with gate/up rows interleaved in blocks of 8 (glu); NULL otherwise */
  int glu;       /* SwiGLU in GEMM1's epilogue: GEMM1 writes act directly */
  uint64_t *prof;/* [MK_MOE_PHASES] phase stamps (args.profile), NULL = off; moe_stamp */
  int split_k;     /* |args.split_k| >= 2: max k-slices of the grouped GEMMs' last wave; else 0 */
  int split_force; /* args.split_k < 0: always split (mk_gemm_args.split_mode 1), else the model */
  int split_k2;    /* GEMM2's: split_k, or under AUTO 8 where GEMM2's 256-wide tiles are fewer than the SMs */
  int wg_skip;     /* the grouped GEMMs' idle-warpgroup skip (mk_gemm_args.wg_skip): decode-sized handles */
  float *sk_ws;    /* split-K partials: 2 SMs x 128 x 256 fp32 (both GEMMs, stream-ordered) */
  uint32_t *sk_flags; /* [4 SMs] zeroed at create, re-armed by each launch */
  uint64_t *g1_sync; /* overlapped schedule with MK_MOE_GEMM1_CLAIM, else NULL: [0] +1 per dispatch CTA
                        started (target C x (calls + 1)); [1] GEMM1's dynamic claims (uint32 [2],
                        mk_gemm_args.claim) */
  int g2_claim;      /* GEMM2 claims its tiles on g1_sync[1] too (MK_MOE_GEMM2_CLAIM) */
  int g12_need;      /* > 0: GEMM2 beside GEMM1 (push, SwiGLU in GEMM1's epilogue, no split-K in the core's
                        GEMM1; serial schedule: MK_MOE_G12_SMS, overlapped: MK_MOE_G12_DECODE, the swapped
                        GEMM1 MK_MOE_G12_SKINNY): GEMM1 (g12_bn-wide column tiles) on SMs - g12 SMs adds the
                        rows it stored to done2[tile-row][chunk], GEMM2, launched as its programmatic dependent
                        on every SM with claims (g12_claim), waits for the rows of the chunks it reads (g12_need
                        = GEMM1's column tiles across N); 0: one after the other */
  int g12_bn;        /* g12_need: GEMM1's tile width (256 serial, the decode tiles' tile_n1 overlapped, the
                        swapped GEMM1's weight rows a unit, moe_sk_config::kBW) */
  uint32_t *g12_claim; /* g12_need: GEMM2's dynamic claims (uint32 [2], mk_gemm_args.claim), zeroed at create */
  int pf_kblocks;  /* GEMM1: 64-wide k-blocks of its first B tile each CTA prefetches into L2 while
                      the tile's rows are in flight (0 = off; moe.c sizes it to half the L2) */
  int ll;            /* decode without the count exchange (see the heap list above); R = W Tm rows an expert */
  int64_t R;
  uint64_t o_a1, o_rowinfo, o_land_cnt;
  int ce_send;       /* rows by copy engine (see the heap list above) */
  uint64_t o_xflag;
  uint64_t *pub_cnt; /* several node groups with MK_MOE_REMOTE_WHOLE, else NULL: [2][W] chunks published
                        to rank r so far (dispatch, then combine), zeroed at create; the CTA whose add
                        completes a call's count PUTs the whole area for r (moe_publish) */
} mk_moe_dev;

struct mk_moe {
  mk_comm_t *comm;
  mk_moe_args a;
  mk_moe_dev d;
  int sms, nnodes, sched; /* sched: mk_moe_schedule, never AUTO */
  int g12_sms;             /* d.g12_need: SMs GEMM1 leaves to GEMM2 from the start (MK_MOE_G12_SMS) */
  int w1g_owned;           /* d.w1g is this handle's (not args.w1_from's) */
  int dispatch_early;      /* overlapped: dispatch launched before the plan (MK_MOE_DISPATCH_EARLY) */
  void *zero_base;         /* local scratch zeroed each call (n_send, cnt_pairs, fill; mk_moe_launch_plan) */
  size_t zero_bytes;
  void *s2, *ev_fork, *ev_join, *ev_g1; /* cudaStream_t / cudaEvent_t */
  /* unfused */
  mk_nccl_t *nccl;
  mk_cublaslt_t *lt;
  mk_cublas_grouped_t *grouped; /* MK_MOE_UNFUSED_GEMM != 0: cuBLAS grouped GEMMs for the experts' GEMMs where
                                   mk_moe_unfused_grouped says so, else NULL */
  uint16_t *sendbuf, *recvbuf;
  int32_t *u_counts, *u_fill, *u_off, *u_pairpos, *u_rc, *u_table;
  int32_t *u_rows; /* [El] the unfused GEMMs' group sizes (d.rows is the fused path's: static under d.ll) */
  int32_t *h_counts, *h_rc, *h_table; /* pinned host */
  size_t *h_a2a;                      /* [4 W]: send counts/displs, recv counts/displs */
  int h_rows_valid;
};

/* moe.c: split_k that args.split_k resolves to (0 = AUTO: the cost model, docs/perf/NOTES.md moe
 * session 4; +-1 = off) on W ranks; the result is 0 (off) or as mk_moe_dev.split_k/split_force:
 * |s| >= 2, s < 0 = always. Pure host logic (test_moe_pick). */
int mk_moe_pick_split_k(const mk_moe_args *a, int W);
/* moe.c: GEMM2's k-slices (>= 0; pure host logic, test_moe_pick) on W ranks of `sms` SMs. */
int mk_moe_pick_split_k2(const mk_moe_args *a, int W, int sms);

/* moe.c: 1 where the unfused path runs this call's expert GEMMs as cuBLAS grouped GEMMs (MK_MOE_UNFUSED_GEMM;
 * rows: the host's El row counts), else 0. Pure host logic (test_moe_pick). */
int mk_moe_unfused_grouped(int El, const int32_t *rows);
/* moe.c: the grouped GEMMs' tile width from MK_MOE_TILE_N on W ranks (overlapped: the handle's schedule is the
 * overlapped one, i.e. decode-sized): 0 the shape's pick, 128 or 256, -1 a value of MK_MOE_TILE_N that is none of
 * -1, 0, 128, 256. Pure host logic (test_moe_pick). */
int mk_moe_pick_tile_n(const mk_moe_args *a, int W, int overlapped);
/* moe.c: MK_MOE_SKINNY's chunk rows for GEMM1 swapped (64, 128 or 192) on W ranks, 0 = the core's GEMM1, -1 = a
 * value of MK_MOE_SKINNY that is none of -1, 0, 1, 64, 128, 192. The
 * schedule and SwiGLU placement are the caller's to check. Pure host logic (test_moe_pick). */
int mk_moe_pick_skinny(const mk_moe_args *a, int W);
/* moe.c: MK_MOE_G12_SMS = -2 (GEMM2 beside GEMM1): the SMs GEMM1 leaves to GEMM2 from the start on W ranks
 * of `sms` SMs, or -1 (one after the other). Pure host logic (test_moe_pick). */
int mk_moe_pick_g12(const mk_moe_args *a, int W, int sms);
/* moe.c: 1 where the dispatch's rows go by copy engine (MK_MOE_CE_SEND; mk_moe_dev.ce_send) on W ranks, else 0.
 * The schedule, push combine and node groups are the caller's to check. Pure host logic (test_moe_pick). */
int mk_moe_pick_ce_send(const mk_moe_args *a, int W);

/* dispatch_gemm.cu */
/* Zeroes the call's local counters and scratch (n_send, cnt_pairs, fill, ready, done2), plans
 * and exchanges the counts: one kernel for T <= 1024 (decode), else a memset, plan and exchange. */
mk_status mk_moe_launch_plan(const mk_moe_dev *d, const int32_t *ids, const float *w, int64_t T, void *stream);
mk_status mk_moe_launch_dispatch(const mk_moe_dev *d, const uint16_t *x, void *stream);
mk_status mk_moe_launch_ll_send(const mk_moe_dev *d, const uint16_t *x, const int32_t *ids, int64_t T, void *stream);
mk_status mk_moe_launch_gemm1(const mk_moe_dev *d, int grid, void *stream);
mk_status mk_moe_launch_swiglu(const mk_moe_dev *d, int64_t rows_host, void *stream); /* rows_host < 0: device */
mk_status mk_moe_preload_dispatch(int split_k); /* split_k: also the split-K GEMM1 kernels */
/* gemm_combine.cu */
mk_status mk_moe_launch_gemm2(const mk_moe_dev *d, int grid, void *stream);
mk_status mk_moe_launch_combine(const mk_moe_dev *d, void *stream);
mk_status mk_moe_launch_reduce(const mk_moe_dev *d, int64_t T, uint16_t *out, void *stream);
/* push: out[t] = sum over q of w[t, q] pland[t][q] once every expert rank's GEMM2 is home; then the call's
 * advance (*calls += 1, as mk_moe_launch_advance). stride > 0 (d.fan): the T tokens of the whole group, token i
 * of rank i / stride, and resid (NULL: none) += out. */
typedef struct mk_moe_red {
  int64_t T, stride;
  const int32_t *ids;
  const float *w;
  uint16_t *out;
  float *resid;
} mk_moe_red;
mk_status mk_moe_launch_push_reduce(const mk_moe_dev *d, const mk_moe_red *r, void *stream);
mk_status mk_moe_preload_combine(int split_k);
/* The profile slots that keep the earliest stamp (stored complemented: moe_stamp, mk_moe_phases). */
#define MK_MOE_PH_IS_FIRST(i)                                                                                     \
  ((i) == MK_MOE_PH_EXCH_START || (i) == MK_MOE_PH_G1_FIRST || (i) == MK_MOE_PH_G2_FIRST || (i) == MK_MOE_PH_START || \
   (i) == MK_MOE_PH_DISPATCH_START)
mk_status mk_moe_launch_advance(const mk_moe_dev *d, void *stream); /* *d->calls += 1, stream-ordered */
/* moe_permute.cu (unfused) */
mk_status mk_moe_launch_count(const int32_t *ids, int64_t n, int E, int32_t *counts, void *stream); /* zeroes first */
mk_status mk_moe_launch_permute(const int32_t *ids, int64_t T, int K, int H, const uint16_t *x, const int32_t *off,
                                int32_t *fill, uint16_t *sendbuf, int32_t *pairpos, void *stream);
/* table [n][4] = {src_row, dst_row, rows, first row (prefix of rows)}; copies rows of H bf16 */
mk_status mk_moe_launch_block_copy(const int32_t *table, int n, int64_t total_rows, int H, const uint16_t *src,
                                   uint16_t *dst, void *stream);
mk_status mk_moe_launch_unpermute(const uint16_t *back, const int32_t *pairpos, const float *w, int64_t T, int K,
                                  int H, uint16_t *out, void *stream);

/* moe_unfused.c */
mk_status mk_moe_forward_unfused(mk_moe_t *m, const uint16_t *x, int64_t T, const int32_t *ids, const float *w,
                                 uint16_t *out, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* MK_KERNELS_MOE_INTERNAL_H */
