/* mk_moe.h — the MoE block across expert-parallel ranks (DESIGN.md, op 4): router kernels,
 * the fused path (device-side count exchange, dispatch overlapped with the grouped gate/up
 * GEMM + SwiGLU, down GEMM overlapped with the combine) and the unfused path (NCCL
 * all-to-all(v), cuBLASLt GEMMs). Included by kernels/mk_kernels.h.
 *
 * Layout. EP = every rank of the comm (W ranks, any number of nodes). Expert e lives on rank
 * e / (E / W), as local expert e % (E / W); E % W != 0 is refused. Per rank:
 *   x [T, H] bf16          this rank's tokens (T <= max_tokens, may differ per rank and call)
 *   topk_ids [T, k] int32  global expert ids (distinct per token), topk_w [T, k] fp32
 *   w1 [El, 2I, H] bf16    per local expert: rows [0, I) gate, rows [I, 2I) up (torch Linear)
 *   w2 [El, H, I] bf16     per local expert: down
 *   out [T, H] bf16        sum_k topk_w[t, k] * down_e(silu(gate_e x) * up_e x)
 * Results are bit-identical across runs and paths do not depend on arrival order (fixed
 * reduction order: experts of one rank in top-k order, then ranks in increasing order).
 *
 * Usage (collective: every rank, same order):
 *   mk_moe_args a = {.hidden = H, .inter = I, .n_experts = E, .top_k = k, .max_tokens = Tmax,
 *                    .w1 = w1, .w2 = w2};
 *   mk_moe_t *m;  mk_moe_create(comm, &a, &m);
 *   mk_moe_route(logits, T, E, k, 1, NULL, ids, w, NULL, NULL, stream);
 *   mk_moe_forward(m, MK_MOE_FUSED, x, T, ids, w, out, stream);   // graph-capturable
 *   mk_moe_destroy(m);
 * The fused path never synchronises the host on token counts: buffers are sized for the
 * worst case from max_tokens (every token of every rank on this rank's experts). */
#ifndef MK_KERNELS_MOE_MK_MOE_H
#define MK_KERNELS_MOE_MK_MOE_H

#include <stdint.h>

#include "comm/mk_comm.h"
#include "core/mk_core.h"
#include "kernels/gemm/mk_gemm.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MK_MOE_MAX_TOPK 8
#define MK_MOE_MAX_EXPERTS 1024
#define MK_MOE_MAX_RANKS 64

/* Router: per token t, softmax over the E logits [T, E] (fp32), the top_k largest (ties: the
 * lower expert id first) in decreasing order -> ids [T, top_k], their probabilities -> w
 * [T, top_k], divided by their sum when renorm. shared_logit [T] (Qwen2-MoE shared expert
 * gate, NULL = none) -> shared_w [T] = sigmoid(shared_logit). counts [E] (NULL = not wanted):
 * tokens per expert, zeroed by the call. 1 <= top_k <= min(E, 8), E <= 1024. */
mk_status mk_moe_route(const float *logits, int64_t T, int E, int top_k, int renorm, const float *shared_logit,
                       int32_t *ids, float *w, float *shared_w, int32_t *counts, mk_stream_t stream);
/* RMSNorm, router and routing of T tokens in one launch (a CTA a token; decode sizes): hb [T, H] (bf16) =
 * rmsnorm(x [T, H] fp32, norm_w [H], eps); the router's fp32 logits of the normed rows against router [E, H]
 * (bf16) and, with seg [H] (bf16; NULL: none), the shared expert's gate logit; then as mk_moe_route (ids, w
 * [T, top_k]; shared_w [T] = sigmoid(gate logit) with seg). The outputs are the bits of mk_rmsnorm_f32 +
 * mk_linear_f32out + mk_moe_route. Needs mk_moe_norm_route_fits(H, E, top_k): H % 8 == 0, H <= 8192, top_k <=
 * E <= 256; x, router and seg 16-byte aligned. Each CTA reads all of router: for many tokens the separate
 * kernels are faster. */
int mk_moe_norm_route_fits(int H, int E, int top_k);
mk_status mk_moe_norm_route(const float *x, const float *norm_w, int64_t T, int H, float eps, const uint16_t *router,
                            int E, const uint16_t *seg, int top_k, int renorm, uint16_t *hb, int32_t *ids, float *w,
                            float *shared_w, mk_stream_t stream);

typedef enum mk_moe_path { MK_MOE_FUSED = 0, MK_MOE_UNFUSED = 1 } mk_moe_path;

/* How the fused path places its phases on the SMs.
 *   OVERLAP  dispatch and combine on comm_ctas CTAs (default 16) beside the grouped GEMMs on the
 *            other SMs: GEMM1 tiles start as their rows land, the combine follows GEMM2's tiles.
 *            GEMM1 takes the dispatch's SMs too once it is done (its CTAs claim tiles from a
 *            counter; MK_MOE_GEMM1_CLAIM).
 *   SERIAL   dispatch on comm_ctas CTAs (default: SMs - 4), then both GEMMs on every SM, then
 *            the combine on the same CTAs: no SM is lent to communication while the GEMMs run.
 *   HYBRID   dispatch as SERIAL (SMs - 4 CTAs), GEMM1 on every SM, then GEMM2 on SMs - comm_ctas
 *            (default 16) with the combine beside it on comm_ctas CTAs, as OVERLAP.
 *   AUTO     OVERLAP or SERIAL from the shape at create (moe.c: pick_schedule). */
typedef enum mk_moe_schedule {
  MK_MOE_SCHED_AUTO = 0,
  MK_MOE_SCHED_OVERLAP = 1,
  MK_MOE_SCHED_SERIAL = 2,
  MK_MOE_SCHED_HYBRID = 3
} mk_moe_schedule;

typedef struct mk_moe_args {
  int hidden, inter, n_experts, top_k; /* H, I (multiples of 8), E, k */
  int64_t max_tokens;                  /* per rank and call */
  const uint16_t *w1, *w2;             /* this rank's experts, layouts above (device) */
  int comm_ctas;                       /* fused: CTAs that move rows (0 = the schedule's default);
                                          HYBRID: the combine's */
  int swiglu_pass;                     /* fused: 0 = SwiGLU in the gate/up GEMM's epilogue (from an
                                          interleaved copy of w1 made at create); 1 = the GEMM
                                          writes gate and up, a separate pass follows (A/B) */
  int schedule;                        /* fused: mk_moe_schedule (0 = AUTO) */
  int profile;                         /* fused: stamp each call's phases on the device (mk_moe_phases) */
  int split_k;                         /* fused: 0 = AUTO (8 where a local expert expects 64..256 rows
                                          from max_tokens, i.e. decode-sized handles; else off:
                                          mk_moe_pick_split_k in moe.c; the down GEMM also 8 where its
                                          256-wide tiles are fewer than the SMs); +-1 = off; 2..16 = the grouped
                                          GEMMs may split the tiles of their last wave (all tiles when
                                          there are fewer than CTAs: decode) in up to that many
                                          k-slices, so every SM streams weights, where a wave model on
                                          the device says it pays; -16..-2: always (tests); fixed-order
                                          fp32 fix-up (deterministic). Workspace: 2 x SMs x 128 KB */
  int fused_only;                      /* 1: no unfused-path resources (NCCL communicator, cuBLASLt,
                                          staging); its UNFUSED calls are refused (INVALID_USAGE) */
  const struct mk_moe *w1_from;        /* fused: take GEMM1's interleaved copy of w1 from this handle
                                          (same comm, H, I, E, w1; neither made with swiglu_pass)
                                          instead of making another; it must outlive this one.
                                          NULL: copy. (A second, decode-sized handle over the same
                                          experts: layers/model_gpu.c) */
  int share_out;                       /* fused: 1 = also mk_moe_forward_all, where the push combine is on
                                          (one node group) and the heap has room for W times its landing
                                          area (mk_moe_shares_out says); 0 = not */
} mk_moe_args;

typedef struct mk_moe mk_moe_t;

/* Collective. Allocates the symmetric-heap buffers (landing and combine areas, signals) and
 * the local work buffers; the unfused path's NCCL communicator when NCCL is built. */
mk_status mk_moe_create(mk_comm_t *comm, const mk_moe_args *a, mk_moe_t **out);
void mk_moe_destroy(mk_moe_t *m); /* NULL: no-op */

/* The whole block, dispatch ... combine. Collective: every rank calls it (T = 0 is allowed).
 * FUSED: stream-ordered, no host synchronisation, CUDA-graph capturable.
 * UNFUSED: synchronises the stream to read the counts (NCCL all-to-allv needs them). */
mk_status mk_moe_forward(mk_moe_t *m, mk_moe_path path, const uint16_t *x, int64_t T, const int32_t *topk_ids,
                         const float *topk_w, uint16_t *out, mk_stream_t stream);

/* The block over a group's tokens, every rank getting every token's output (fused path, a handle made
 * with args.share_out for which mk_moe_shares_out is 1). Collective. The W ranks hold the same T_all
 * tokens: x [T_all, H] (bf16), topk_ids / topk_w [T_all, k]; rank r dispatches rows [r stride,
 * min(T_all, (r + 1) stride)) (stride <= max_tokens, T_all <= W stride; the same T_all and stride on
 * every rank). GEMM2 stores each expert row into every rank, and every rank reduces every token:
 * out [T_all, H] (bf16) on every rank, the bits mk_moe_forward gives at each token's rank, and, with
 * resid (fp32 [T_all, H], 16-byte aligned; NULL: none), resid += out: an all-gather of the outputs
 * (and the residual add) without another launch or signal. */
mk_status mk_moe_forward_all(mk_moe_t *m, const uint16_t *x, int64_t T_all, int64_t stride, const int32_t *topk_ids,
                             const float *topk_w, uint16_t *out, float *resid, mk_stream_t stream);
int mk_moe_shares_out(const mk_moe_t *m); /* 1: mk_moe_forward_all runs on m; 0: not (NULL: 0) */

/* Pieces for the benchmark's bounds, on the layout of the last UNFUSED call (needs one):
 * both grouped GEMMs (+ SwiGLU) alone, and both NCCL all-to-allv alone. */
mk_status mk_moe_time_parts(mk_moe_t *m, int compute, mk_stream_t stream);

/* Phases of the last fused call of a handle made with args.profile = 1, as device timestamps
 * (%globaltimer) in ms from the start of its count exchange on this rank (NAN: not reached,
 * e.g. no GEMM tile on this rank). Synchronises the device. Order of the slots: */
typedef enum mk_moe_phase {
  MK_MOE_PH_EXCH_START = 0, /* count exchange starts (the reference, 0) */
  MK_MOE_PH_COUNTS,         /* every source's counts are in (barrier point 1) */
  MK_MOE_PH_SENT,           /* last dispatch CTA has sent its rows */
  MK_MOE_PH_LANDED,         /* last dispatch CTA has grouped its landed rows into A1 */
  MK_MOE_PH_G1_FIRST,       /* first GEMM1 tile may load (its rows are in) */
  MK_MOE_PH_G1_LAST,        /* last GEMM1 tile may load */
  MK_MOE_PH_G2_FIRST,       /* first GEMM2 tile loads (~ GEMM1 done) */
  MK_MOE_PH_G2_DONE,        /* last GEMM2 tile stored */
  MK_MOE_PH_COMBINED,       /* last combine CTA has sent its rows home */
  MK_MOE_PH_REDUCE_WAITED,  /* every combine row is home (barrier point 2) */
  MK_MOE_PH_DONE,           /* last reduce CTA done */
  MK_MOE_PH_START,          /* the plan starts (negative: before the exchange) */
  MK_MOE_PH_END,            /* last kernel of the call (the epoch advance) runs */
  MK_MOE_PH_DISPATCH_START, /* first dispatch CTA starts */
  MK_MOE_PH_PREV_END,       /* the handle's previous fused call's END (negative; NAN on its first call) */
  MK_MOE_PHASES
} mk_moe_phase;
mk_status mk_moe_phases(mk_moe_t *m, double ms[MK_MOE_PHASES]);
const char *mk_moe_phase_name(int phase); /* short name, "?" outside the range */

#ifdef __cplusplus
}
#endif
#endif /* MK_KERNELS_MOE_MK_MOE_H */
