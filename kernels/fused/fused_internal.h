/* fused_internal.h — internal to kernels/fused: the handle (host C and the op launchers). */
#ifndef MK_KERNELS_FUSED_INTERNAL_H
#define MK_KERNELS_FUSED_INTERNAL_H

#include <cuda_runtime_api.h>

#include "kernels/fused/mk_fused.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { MK_FUSED_EPOCH_SLOT0 = 10, MK_FUSED_ARRIVE_SLOTS = 16, MK_FUSED_SPLIT_FLAG_BYTES = 65536 };
/* MK_FUSED_CE_FOLD: tile-rows per group of the GEMM's order, and so rows per copied piece 128 x this: the copy of an
 * owner's last group, which its own tiles wait for, must be short beside one wave of them (AR 4096 on 2 ranks: one
 * 2048-row group per owner, 32 MB, ~86 us over NVLink, made it 2-5 % slower than fold mode; run 0ce5506-x2). */
enum { MK_FUSED_CE_FOLD_GROUP = 8 };
/* Trace event kinds (MK_TRACE). */
enum { MK_TRACE_COMPUTE = 1, MK_TRACE_WAIT = 2, MK_TRACE_SEND = 3, MK_TRACE_REDUCE = 4, MK_TRACE_CAP = 1024 };

/* One op's workspace in the symmetric heap (same offsets on every rank). */
typedef struct mk_fused_ws {
  int ready;        /* allocated */
  uint64_t buf;     /* data: AG gathered A [max_m, max_k]; RS/AR: two partials [2][max_m, max_n] (epoch parity) */
  uint64_t pbytes;  /* RS/AR: bytes of one partial (256-byte multiple): the odd epochs' one starts there */
  uint64_t arrive;  /* u64 [MK_FUSED_ARRIVE_SLOTS]: arrive[p] += 1 when rank p enters a call */
  uint64_t cnt;     /* u64 counters: AG ready[W][chunks per shard]; RS/AR per (128-row, 128-col) block */
  uint64_t ncnt;    /* counters allocated */
  uint64_t xsig;    /* u64 [3][16] counters added through the proxy: arrive_x, xdata, ack */
  uint64_t ce;      /* copy-engine mode flags (copy_engine.c): AG u64 ce_arrive[16], ce_ready[W][pieces];
                       RS/AR u64 ce_arrive[16], ce_done[16], ce_done2[16], ce_cnt[W][pieces],
                       ce_piece[W][pieces], ce_sum[pieces] (the last two: MK_FUSED_CE_OVERLAP) */
  uint64_t cex;     /* RS/AR copy-engine mode: staging X [W][ceil(max_m/W)][max_n] bf16 (0: not allocated) */
  uint64_t cey;     /* AR copy-engine mode: the gathered sums Y [W ceil(max_m/W)][max_n] bf16 (after X) */
  uint64_t sk;      /* AR, one node group: slots S [2][W][min(max_m, 64)][max_n] bf16 of the small-M
                       one-shot path (gemm_ar.cu; 0: not allocated) */
  uint64_t ll;      /* AR, one node group: the small-M one-shot path's LL slots [2][W][llbytes] (gemm_ar.cu,
                       MK_FUSED_AR_LL: each 4 bytes of a partial beside a 4-byte flag; 0: not allocated) */
  uint64_t llbytes; /* bytes of one LL slot: twice the largest partial it holds */
  uint64_t xbuf;    /* several node groups: staging of data from other node groups (AG: unused;
                       RS: [W][ceil(max_m/W)][max_n]; AR: [W][max_m][max_n]) */
  uint64_t px;      /* RS/AR push mode (MK_FUSED_PUSH, one node group): [2][W][ceil(max_m/W)][max_n] bf16,
                       PX[e & 1][p] = rank p's partial of this rank's rows, stored by p's GEMM epilogue
                       (0: not allocated) */
  uint64_t pxbytes; /* bytes of one PX[e & 1] (256-byte multiple) */
} mk_fused_ws;

struct mk_fused {
  mk_comm_t *comm;
  mk_dev_world w;
  int world, me, sms, local_size, node, nnodes; /* the group's (mk_fused_create_group) */
  int wrank;                                    /* this rank in the communicator */
  int gpu_shared; /* ranks share a GPU (MK_GPU_SHARE): SM roles only, copy-engine modes never (copy_engine.c) */
  int64_t max_m, max_n, max_k;
  mk_fused_ws ws[3];
  void *split_ws[3];   /* RS/AR: split-K workspace (local device memory): 64 KiB of flags, then partials */
  size_t split_bytes;  /* partial bytes of each split_ws */
  cudaStream_t ce_side[MK_MAX_LOCAL]; /* copy-engine modes: side streams of the peer copies */
  cudaEvent_t ce_fork, ce_join[MK_MAX_LOCAL]; /* main -> side streams, side streams -> main */
  int ce_nside, ce_used;  /* side streams created; used by the current call (MK_FUSED_CE_STREAMS) */
  cudaStream_t ce_red;    /* RS/AR copy-engine mode with MK_FUSED_CE_OVERLAP: the reduce kernel's stream */
  cudaEvent_t ce_red_join;
  int ce_red_used;        /* the current call forked ce_red (joined by mk_fused_ce_join) */
  uint16_t *ce_p[3];    /* RS/AR copy-engine mode: the local partial [max_m][max_n] (cudaMalloc) */
  uint64_t *bs_prog[3]; /* RS/AR beside mode: the GEMM's progress counters (beside.cuh; cudaMalloc, with ce_p) */
  uint64_t bs_nprog[3]; /* ... how many */
  uint64_t *trace;  /* MK_TRACE buffer (device), trace_ctas x MK_TRACE_CAP x 2 u64 */
  uint64_t *calls;  /* device u64 [3]: this handle's calls of each op so far. The proxied counters
                       (xsig) count this handle's calls, so their targets are calls + 1, not the
                       comm's epoch (which other handles of the op on the same comm also advance) */
  int trace_calls;
  uint32_t *exits;  /* device u32 [3]: CTAs of the running call past their last store, for ops
                       that advance their epoch in the kernel (GEMM+AR small M); 0 between calls */
  uint64_t *ar_prof; /* device u64 [MK_FUSED_AR_PHASES]: small-M AR phase stamps; NULL = off */
  uint32_t *claims; /* device u32 [3][2]: RS/AR reducer tasks taken in the running call (MK_FUSED_TAIL,
                       fused_reduce.cuh); zeroed with the epoch advance after each call */
  /* RS/AR reducers with 2-D TMA loads (MK_FUSED_REDUCE_TMA, fused_reduce.cuh): per op a device
   * ring of MK_FUSED_RMAP_SLOTS slots, each 2 (parity) x MK_MAX_LOCAL tensor maps (128 bytes) of
   * the peers' partials for one (M, N, box rows); rmap_key[op][slot] = {M, N, R} (0: empty). */
  void *rmaps[3];
  int64_t rmap_key[3][4][3];
  int rmap_next[3];
  int push_calls[3];   /* RS/AR calls launched in push mode (mk_fused_push_calls) */
  int beside_calls[3]; /* RS/AR calls launched in beside mode (mk_fused_beside_calls) */
  int fold_calls[3];   /* RS/AR calls launched in fold mode (mk_fused_fold_calls) */
  int ce_fold_calls[3]; /* RS/AR calls on copy engines, own rows summed in their epilogue (mk_fused_ce_fold_calls) */
};
enum { MK_FUSED_RMAP_SLOTS = 4 };

/* Shared argument checks: the op was set up, shapes within the workspace, pointers aligned.
 * Returns INVALID_ARGUMENT / INVALID_USAGE / UNSUPPORTED with a message naming the op. */
mk_status mk_fused_check(const mk_fused_t *f, mk_fused_op op, const mk_fused_args *a);
/* The role split of a call: a->comm_ctas, else the default; clipped to [1, sms / 2]. */
int mk_fused_ctas(const mk_fused_t *f, mk_fused_op op, const mk_fused_args *a);
/* GEMM CTAs of a call with `roles` role CTAs: the SMs left, less one with several node groups
 * (the loopback proxy runs a kernel beside the op, so one SM stays free for it). */
int mk_fused_compute_ctas(const mk_fused_t *f, int roles);
/* MK_FUSED_SPLIT_K, MK_FUSED_REDUCE_TMA (fused.c). */
int64_t mk_param_fused_split_k(void);
int64_t mk_param_fused_reduce_tma(void);
int64_t mk_param_fused_tail(void);
int64_t mk_param_fused_push(void); /* MK_FUSED_PUSH (fused.c), read at create (PX) and per call */
int64_t mk_param_fused_ar_copy(void); /* MK_FUSED_AR_COPY (copy_engine.c) */
/* Beside mode (beside.cuh; params in copy_engine.c): MK_FUSED_BESIDE, the comm kernel's CTAs beside the GEMM,
 * the piece width in columns, the tail launch's CTAs per SM; the comm kernel's dynamic shared memory (bytes: one
 * of its CTAs an SM, none beside a GEMM CTA). */
int64_t mk_param_fused_beside(void);
int64_t mk_param_fused_beside_sms(void);
int64_t mk_param_fused_beside_cols(void);
int64_t mk_param_fused_beside_tail(void);
enum { MK_FUSED_BESIDE_SMEM = 120 << 10 };
/* AG+GEMM copy-engine mode (copy_engine.c): whether this call uses it (mk_fused_ce_select:
 * MK_FUSED_AG_COPY -1 or 1, one node group, W > 1); rows per piece (MK_FUSED_CE_ROWS, 128 times a power of two); begin = flag
 * resets, arrival, the fork and the peer copies on the side streams, and the local copy
 * (unless inplace), all stream-ordered before the GEMM; mk_fused_ce_join after the GEMM. */
int mk_fused_ag_ce_mode(const mk_fused_t *f, int64_t n); /* AG+GEMM of N columns on copy engines */
int mk_fused_ag_ce_min_n(void);                           /* MK_FUSED_AG_CE_MIN_N */
int mk_fused_ce_rows(void);
/* RS/AR copy-engine mode: rows per piece of a call with ms rows per owner; seq 1: the owner-sequential order
 * (MK_FUSED_CE_SEQ_ROWS, default one piece per owner), 2: that order with MK_FUSED_CE_FOLD (MK_FUSED_CE_SEQ_ROWS,
 * default the 128 MK_FUSED_CE_FOLD_GROUP rows of one group of the GEMM's order, whose tiles complete together),
 * 0: mk_fused_ce_rows(). */
int64_t mk_fused_rs_ce_rows(int64_t ms, int seq);
mk_status mk_fused_ag_ce_begin(mk_fused_t *f, const mk_fused_args *a, int inplace, mk_stream_t stream);
/* Copy-engine modes: the side streams' work joins the caller's stream. */
mk_status mk_fused_ce_join(mk_fused_t *f, mk_stream_t stream);
/* GEMM+RS / GEMM+AR copy-engine mode (copy_engine.c): whether this call uses it
 * (mk_fused_ce_select, and the staging is there); mk_fused_ce_stage (mk_fused_create) allocates
 * the staging where the mode can run (a warning and none where memory lacks in mode -1);
 * begin = flag resets, arrival, fork (before the GEMM); push = the side stream's work (enqueued
 * after the GEMM's launch, runs beside it); then the reduce kernel and mk_fused_ce_join. */
int mk_fused_rs_ce_mode(const mk_fused_t *f, mk_fused_op op, int64_t m, int64_t n);
int64_t mk_param_fused_fold_debug(void); /* gemm_rs.cu: MK_FUSED_FOLD_DEBUG */
int64_t mk_param_fused_ce_fold(void);    /* gemm_rs.cu: MK_FUSED_CE_FOLD */
int64_t mk_param_fused_fold(void);       /* gemm_rs.cu: MK_FUSED_FOLD */
int64_t mk_param_fused_ar_two_shot(void); /* gemm_ar.cu: MK_FUSED_AR_TWO_SHOT */
/* 1 when MK_FUSED_CE_FOLD's default (-1) takes this call: GEMM+AR over 2 ranks of one node group, on copy engines by
 * shape (the staging allocated, M x N x 2 >= MK_FUSED_AR_CE_MIN_MB MiB), M a multiple of 128 W, with MK_FUSED_FOLD,
 * MK_FUSED_AR_TWO_SHOT at their defaults (-1), MK_FUSED_BESIDE and MK_FUSED_CE_OVERLAP off, MK_FUSED_CE_SEQ on. Fold
 * mode, the SM two-shot and the copy engines' second shot give way to it there (copy_engine.c). */
int mk_fused_ce_fold_auto(const mk_fused_t *f, mk_fused_op op, int64_t m, int64_t n);
mk_status mk_fused_ce_stage(mk_fused_t *f, mk_fused_op op);
mk_status mk_fused_rs_ce_begin(mk_fused_t *f, mk_fused_op op, const mk_fused_args *a, mk_stream_t stream);
/* seq 1: the GEMM walks the owners one after the other (mk_fused_ce_seq): push owner by owner; 2: the same, and
 * MK_FUSED_CE_FOLD: ce_piece[me][i] := 1 on the owner after each piece (the owner's GEMM waits for it). */
mk_status mk_fused_rs_ce_push(mk_fused_t *f, mk_fused_op op, const mk_fused_args *a, int seq);
/* RS/AR copy-engine mode, MK_FUSED_CE_OVERLAP=1: the reduce kernel's CTAs (MK_FUSED_CE_REDUCERS,
 * at most sms / 2) that run beside the GEMM; 0 = the mode is off (the reduce after the GEMM). */
int mk_fused_ce_overlap(const mk_fused_t *f);
/* RS/AR copy-engine mode of this call (after mk_fused_rs_ce_begin): 1 = the owner-sequential order
 * (MK_FUSED_CE_SEQ, not with the overlapped reduce) wherever the launch has an owner order at all
 * (mk_reduce_policy::perm_q): the GEMM walks owners me + 1, me + 2, ..., me, the side streams push
 * owner by owner. */
int mk_fused_ce_seq(const mk_fused_t *f);
/* Heap offsets (from ws->ce) of the RS/AR flags of a call with np pieces per owner. */
static inline uint64_t mk_fused_ce_cnt_off(void) { return 8ull * 3 * MK_FUSED_ARRIVE_SLOTS; }
static inline uint64_t mk_fused_ce_piece_off(int world, int64_t np) {
  return mk_fused_ce_cnt_off() + 8ull * (uint64_t)world * (uint64_t)np;
}
static inline uint64_t mk_fused_ce_sum_off(int world, int64_t np) {
  return mk_fused_ce_cnt_off() + 16ull * (uint64_t)world * (uint64_t)np;
}
/* AR with MK_FUSED_CE_OVERLAP: step t (0 <= t < 2 np) of a side stream's pushes. Returns the
 * piece; *second = 0: the first shot of that piece (partial rows to the owners), 1: the
 * second (this rank's sums to every peer). Order F0, F1, S0, F2, S1, ..., F(np-1), S(np-2),
 * S(np-1): a second shot trails the first shots by one piece, so it never waits in front of a
 * first shot of a piece it does not depend on (no cycle between the ranks' streams: before
 * F(k) a stream holds only steps of pieces < k). */
int mk_fused_ce_push_step(int64_t np, int64_t t, int *second);
/* GEMM+AR copy-engine mode (MK_FUSED_AR_COPY=1), after the reduce kernel: the second shot. */
mk_status mk_fused_ar_ce_tell(mk_fused_t *f, mk_stream_t stream);
mk_status mk_fused_ar_ce_pull(mk_fused_t *f, const mk_fused_args *a, mk_stream_t stream);
/* Advance the op's epoch and this handle's call count after its kernel, and zero the op's task
 * claims (stream-ordered, one one-thread kernel: mk_fused_launch_advance). GEMM+AR's small-M
 * path advances inside its kernel instead (gemm_ar.cu, the last CTA; it claims no tasks). */
mk_status mk_fused_epoch_advance(mk_fused_t *f, mk_fused_op op, mk_stream_t stream);
mk_status mk_fused_launch_advance(uint64_t *epoch, uint64_t *calls, uint32_t *claims, mk_stream_t stream);

/* MK_TRACE=FILE: *buf = a zeroed device buffer of MK_TRACE_CAP events per SM (NULL when
 * tracing is off or the stream is being captured); after the launch, mk_fused_trace_end
 * synchronises the stream (trace mode only) and writes FILE (FILE.rankN.json with several
 * ranks) as a Chrome trace: one track per CTA, named by the kinds of events it recorded. */
mk_status mk_fused_trace_begin(mk_fused_t *f, mk_stream_t stream, uint64_t **buf);
mk_status mk_fused_trace_end(mk_fused_t *f, mk_fused_op op, uint64_t *buf, mk_stream_t stream);

/* Kernel preloads (ag_gemm.cu, gemm_rs.cu, gemm_ar.cu). */
mk_status mk_fused_preload_ag(void);
mk_status mk_fused_preload_rs(void);
mk_status mk_fused_preload_ar(void);
mk_status mk_fused_preload_advance(void);

#ifdef __cplusplus
}
#endif
#endif /* MK_KERNELS_FUSED_INTERNAL_H */
