/* mk_fused.h — the fused tensor/sequence-parallel linear layers: one persistent launch each,
 * communication overlapped with the Hopper GEMM core tile by tile. Included by
 * kernels/mk_kernels.h. W = ranks of the handle's group: the whole mk_comm_t (mk_fused_create) or
 * consecutive ranks of one node group (mk_fused_create_group), r = this rank's index in it.
 *
 *   mk_ag_gemm   C[M, N]      = AllGather_rows(A_r[M/W, K]) @ B_r        (column-parallel)
 *   mk_gemm_rs   C_r[M/W, N]  = rows [r M/W, (r+1) M/W) of sum_r A_r[M, K] @ B_r  (row-parallel, SP)
 *   mk_gemm_ar   C[M, N]      = sum_r A_r[M, K] @ B_r, bit-identical on every rank (row-parallel, TP)
 *
 * Usage (every rank, same order of calls; collective like mk_comm_heap_alloc):
 *   mk_fused_t *f;  mk_fused_create(comm, 0, max_m, max_n, max_k, &f);   // heap workspace
 *   mk_fused_args a = {.A = a_shard, .B = w, .C = out, .m = M, .n = N, .k = K};
 *   mk_ag_gemm(f, &a, stream);          // no host synchronisation; graph-capturable
 *   cudaStreamSynchronize(stream); mk_comm_check(comm);   // TIMEOUT / REMOTE_ERROR
 * A, B and C are device pointers (16-byte aligned), any device memory: the ops move data
 * through their own workspace in the symmetric heap. B is [N, K] (MK_GEMM_B_NK) or [K, N].
 * Shapes: N and K multiples of 8; AG and RS need M divisible by W (rows per rank M/W need not
 * divide by the 128-row tile); AR takes any M.
 * Several node groups (mk-launch --nodes, loopback/ib/efa transports): data for ranks of other
 * node groups moves through the FIFO and proxy, one put per pair of ranks per call after the
 * rank's part is ready (correct, not yet overlapped); one SM stays free for the proxy.
 * Role split: comm_ctas CTAs (AG: pushers; RS/AR: reducers) beside the GEMM CTAs, 0 = the
 * per-shape default (mk_fused_default_ctas). The ops use epoch slots 10, 11, 12 (flags over NVLink)
 * and each handle counts its own calls (targets of the counters added through the proxy).
 * Transfer modes (one node group; kernels/fused/copy_engine.c): SM roles (above) or copy engines
 * (cudaMemcpyAsync peer copies on side streams of the handle, flags by stream memory
 * operations; the GEMM takes every SM and comm_ctas is ignored; AR runs two-shot). Chosen per
 * call by shape (mk_fused_ce_select; measured on 4 H200s, docs/perf/NOTES.md "Session 4"):
 * AG copy engines from N >= MK_FUSED_AG_CE_MIN_N columns (below, 16 SM pushers); RS from M x N x 2 >=
 * MK_FUSED_RS_CE_MIN_MB MiB; AR from M x N x 2 >=
 * MK_FUSED_AR_CE_MIN_MB MiB with M a multiple of W; else SM roles. MK_FUSED_AG_COPY,
 * MK_FUSED_RS_COPY, MK_FUSED_AR_COPY = 0 / 1 force one mode (-1 = by shape); RS and AR need
 * staging that mk_fused_create allocates (see there), without it they run on SM roles. Ranks that share a GPU
 * (MK_GPU_SHARE=1, a test mode) always run on SM roles.
 * MK_FUSED_CE_OVERLAP=1 (opt-in): RS/AR on copy engines sum the owner's rows beside the GEMM,
 * in MK_FUSED_CE_REDUCERS CTAs taken from it, instead of after it. Fold mode (MK_FUSED_FOLD, see
 * mk_fused_fold; by default GEMM+AR over 2 ranks): no comm CTAs, no copy engines; the GEMM's own
 * tiles, computed last, add the peers' partials in their epilogue and push the sums. */
#ifndef MK_KERNELS_FUSED_MK_FUSED_H
#define MK_KERNELS_FUSED_MK_FUSED_H

#include <stdint.h>

#include "comm/mk_comm.h"
#include "core/mk_core.h"
#include "kernels/gemm/mk_gemm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mk_fused_op { MK_FUSED_AG_GEMM = 0, MK_FUSED_GEMM_RS = 1, MK_FUSED_GEMM_AR = 2 } mk_fused_op;

typedef struct mk_fused mk_fused_t;

typedef struct mk_fused_args {
  const uint16_t *A; /* AG: this rank's shard [M/W, K]; RS/AR: [M, K] (this rank's K slice) */
  const uint16_t *B; /* this rank's weight: [N, K] or [K, N] */
  uint16_t *C;       /* AG: [M, N]; RS: [M/W, N]; AR: [M, N] */
  int64_t m, n, k;   /* M: rows of the gathered / full product */
  mk_gemm_b_layout b_layout;
  int comm_ctas;     /* role split; 0 = default */
} mk_fused_args;

/* Collective: allocates the workspace of the ops in `ops` (a mask of 1 << mk_fused_op; 0 =
 * all three) for shapes up to max_m x max_n x max_k from comm's heap (heap memory is never
 * returned; create once per comm) and loads the kernels. Workspace: AG max_m * max_k * 2
 * bytes, RS and AR 2 * max_m * max_n * 2 bytes each (two partials used by alternate calls;
 * plus counters), and RS and AR a local split-K workspace of SMs x 128 KiB (cudaMalloc). RS's
 * copy-engine mode also takes max_m * max_n * 2 bytes of heap staging and as much local memory
 * (AR: twice that much heap), allocated when the mode can run: one node group, W > 1, and
 * MK_FUSED_{RS,AR}_COPY = 1, or -1 (default) with max_m * max_n * 2 >= MK_FUSED_{RS,AR}_CE_MIN_MB
 * MiB. With -1 a heap or device memory too small for it is a warning (the op keeps the SM path),
 * with 1 an error. AR on one node group also takes 2 * W * min(max_m, 128) * max_n * 2 bytes of
 * heap for its small-M path (M <= 128, B [N, K]: the skinny GEMM pushes each MK_GEMM_SKINNY_BN-column
 * slab to every rank, which sums the W slabs in rank order; MK_GEMM_SKINNY=0 turns it off). */
/* In-place all-gather of equal slices over the ranks first .. first + n - 1 of one node group
 * (2 <= n <= 8), on the SMs: each rank stores its slice into every peer's buffer over NVLink and
 * signals (gather_rows.cu; no NCCL, no host synchronisation, graph-capturable). buf [n][slice_bytes]
 * lies in the symmetric heap at the same offset on every rank, 16-byte aligned; rank first + i
 * brings slice i. Collective over the group: create (heap counters) and every call. Between two
 * calls on one buffer, some dependency on every peer's progress must keep a fast peer from
 * storing the next call's slice while this rank still reads the last (see gather_rows.cu). */
typedef struct mk_gather mk_gather_t;
mk_status mk_gather_create(mk_comm_t *comm, int first, int n, mk_gather_t **out);
void mk_gather_destroy(mk_gather_t *h); /* NULL: no-op */
mk_status mk_gather_rows(mk_gather_t *h, void *buf, uint64_t slice_bytes, mk_stream_t stream);
/* The same, then x[r, i] += fp32(buf's row r, column i) for the first `rows` rows of the gathered buffer taken as
 * bf16 rows of dim (the residual after the MoE block: one launch instead of two). */
mk_status mk_gather_rows_add(mk_gather_t *h, void *buf, uint64_t slice_bytes, float *x, int dim, int rows,
                             mk_stream_t stream);

mk_status mk_fused_create(mk_comm_t *comm, unsigned ops, int64_t max_m, int64_t max_n, int64_t max_k,
                          mk_fused_t **out);
/* The same over the group of ranks first .. first + n - 1 (2 <= n; consecutive ranks of one node
 * group, or first = 0 and n = every rank): the ops then run over the group alone, W = n, this
 * rank's index in it rank - first, and every M, shard and owner rule above is the group's
 * (several TP groups in one communicator, e.g. tp < ranks in layers/). Collective over the whole
 * comm: every rank calls it, each with its own group, the same n, ops and maxima (the heap's
 * offsets match everywhere). */
mk_status mk_fused_create_group(mk_comm_t *comm, int first, int n, unsigned ops, int64_t max_m, int64_t max_n,
                                int64_t max_k, mk_fused_t **out);
void mk_fused_destroy(mk_fused_t *f); /* NULL: no-op */

mk_status mk_ag_gemm(mk_fused_t *f, const mk_fused_args *a, mk_stream_t stream);
/* Where this rank's shard [M/W, K] sits inside the op's gathered buffer (symmetric heap) for
 * an AG of M x K; NULL if the shape does not fit the workspace. A caller that writes its
 * shard there and passes that pointer as A saves the local copy (zero-copy input). */
uint16_t *mk_ag_gemm_shard(mk_fused_t *f, int64_t m, int64_t k);
mk_status mk_gemm_rs(mk_fused_t *f, const mk_fused_args *a, mk_stream_t stream);
mk_status mk_gemm_ar(mk_fused_t *f, const mk_fused_args *a, mk_stream_t stream);

/* The transfer mode of a call, a pure function of values equal on every rank (no GPU): 1 = copy
 * engines, 0 = SM roles, for op at M x N with `world` ranks in `nnodes` node groups; copy =
 * MK_FUSED_{AG,RS,AR}_COPY (-1 by shape, 0 SM, 1 copy engines), min_mb = MK_FUSED_{RS,AR}_CE_MIN_MB
 * (RS/AR with copy = -1; AG: MK_FUSED_AG_CE_MIN_N, in columns). provision = 1 asks instead whether mk_fused_create allocates the RS/AR
 * staging for shapes up to M x N (M % W is not tested then). A call of RS/AR also needs that
 * staging to be there. */
int mk_fused_ce_select(mk_fused_op op, int64_t m, int64_t n, int world, int nnodes, int copy, int64_t min_mb,
                       int provision);

/* 1 when a call of op at M x N on this handle moves its data by copy engines (the environment
 * as it is now, the staging of mk_fused_create), 0 on SM roles. */
int mk_fused_uses_ce(const mk_fused_t *f, mk_fused_op op, int64_t m, int64_t n);
/* 1 when this GEMM+AR call takes the small-M path (the skinny GEMM pushing its slabs to every
 * rank; no comm CTAs): M <= 128, B [N, K], one node group, MK_GEMM_SKINNY != 0 (auto takes every
 * such call, whatever the weight size). */
int mk_fused_ar_small_m(const mk_fused_t *f, const mk_fused_args *a);
/* 1 when such a small-M call at M x N pushes its partials in the LL format (MK_FUSED_AR_LL: each 4 bytes beside a
 * flag, no fence, one-shot; gemm_ar.cu), 0 when it pushes them with a fence and flags (one- or two-shot). */
int mk_fused_ar_ll(const mk_fused_t *f, int64_t m, int64_t n);
/* 1 when a GEMM+AR call at M x N on this handle runs two-shot on SM roles (reduce-scatter of the
 * owners' rows, then every rank pulls the owners' sums): one node group, M a multiple of 128 x W,
 * and MK_FUSED_AR_TWO_SHOT=1, or by shape (-1, the default: M x N x 2 below
 * MK_FUSED_AR_TWO_MAX_MB with MK_FUSED_TAIL=1, MK_FUSED_AR_COPY not 1). It takes precedence over
 * the copy-engine mode. */
int mk_fused_ar_two_shot(const mk_fused_t *f, int64_t m, int64_t n);
/* GEMM+RS / GEMM+AR with MK_FUSED_REDUCE_TMA=1: how many (M, N) shapes this handle holds tensor maps
 * of the peers' partials for (0..4; 0 = every call so far used the register loads). */
int mk_fused_reduce_tma_shapes(const mk_fused_t *f, mk_fused_op op);
/* GEMM+RS / GEMM+AR: calls of this handle that ran in push mode (MK_FUSED_PUSH: on SM roles in one
 * node group, the GEMM storing other owners' rows into their staging, the reducers reading it locally). */
int mk_fused_push_calls(const mk_fused_t *f, mk_fused_op op);
/* RS/AR calls of this handle that ran in beside mode (MK_FUSED_BESIDE: the reduction on SMs beside the GEMM). */
int mk_fused_beside_calls(const mk_fused_t *f, mk_fused_op op);
/* 1 when a GEMM+RS / GEMM+AR call at M x N on this handle runs in fold mode (MK_FUSED_FOLD, fused_reduce.cuh: the
 * GEMM computes the peers' rows first and pushes them to their owners, its own rows last, and sums the peers'
 * partials into its own tiles in their epilogue; AR pushes the sums to every rank from there too): one node group,
 * W = 2 or 4, M a multiple of 128 W, the push staging allocated; by default (-1) GEMM+AR over 2 ranks only, except
 * where MK_FUSED_CE_FOLD's default takes the call (copy engines by shape: mk_fused_uses_ce answers 1 there), = 1 both
 * ops wherever it applies. It takes precedence over every other mode of the op (mk_fused_uses_ce and
 * mk_fused_ar_two_shot answer 0 there). */
int mk_fused_fold(const mk_fused_t *f, mk_fused_op op, int64_t m, int64_t n);
/* RS/AR calls of this handle that ran in fold mode. */
int mk_fused_fold_calls(const mk_fused_t *f, mk_fused_op op);
/* GEMM+RS / GEMM+AR calls of this handle on copy engines whose own rows were summed in the GEMM's epilogue
 * (MK_FUSED_CE_FOLD=1, or its default -1 for GEMM+AR over 2 ranks on copy engines; fused_reduce.cuh: the
 * owner-by-owner order, W <= 4, the reduce not overlapped) instead of by the reduce kernel (AR: the sums then pushed
 * to every rank from there, as in fold mode). */
int mk_fused_ce_fold_calls(const mk_fused_t *f, mk_fused_op op);

/* Phase stamps of GEMM+AR's small-M path (opt-in; mk-bench gemm_ar --breakdown). With
 * mk_fused_ar_profile(f, 1) (allocates; 0 turns it off) every later small-M call zeroes the
 * stamps first (a memset on its stream) and its kernel records %globaltimer (ns) in them;
 * mk_fused_ar_phases synchronises the device and returns the last call's raw stamps (0: not
 * reached), on this GPU's clock (%globaltimer differs between GPUs: compare a rank's stamps
 * with its own). Slots: */
typedef enum mk_fused_ar_phase {
  MK_FUSED_AR_PH_ENTRY = 0,  /* first CTA enters the kernel */
  MK_FUSED_AR_PH_ENTRY_LAST, /* last CTA enters (the grid's launch spread) */
  MK_FUSED_AR_PH_GEMM,       /* last CTA's accumulators final (after the split-K fix-up) */
  MK_FUSED_AR_PH_PUSHED,     /* last CTA's stores into the peers' slots issued (CTA barrier) */
  MK_FUSED_AR_PH_WAITED,     /* last CTA's wait for the W flags of its slab satisfied */
  MK_FUSED_AR_PH_REDUCED,    /* last CTA's sums stored into C (CTA barrier) */
  MK_FUSED_AR_PH_EXIT,       /* last CTA leaves (after its sums; it counted itself out, and the
                                last advanced the epoch, before its waits) */
  MK_FUSED_AR_PHASES
} mk_fused_ar_phase;
mk_status mk_fused_ar_profile(mk_fused_t *f, int on);
mk_status mk_fused_ar_phases(mk_fused_t *f, uint64_t ns[MK_FUSED_AR_PHASES]);
const char *mk_fused_ar_phase_name(int phase); /* short name, "?" outside the range */

/* The default role split (comm CTAs) for an op and shape on this GPU. */
int mk_fused_default_ctas(mk_fused_op op, int64_t m, int64_t n, int64_t k, int world);

#ifdef __cplusplus
}
#endif
#endif /* MK_KERNELS_FUSED_MK_FUSED_H */
