/* moe.c — the MoE handle (buffers in the symmetric heap and local scratch sized for the worst
 * case from max_tokens) and the fused forward: the stream choreography of the kernels in
 * dispatch_gemm.cu and gemm_combine.cu (protocol comments there). No host synchronisation;
 * the fork to a second stream and back is graph-capturable. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "kernels/moe/moe_internal.h"

/* Overlapped schedule: 1 launches the dispatch before the plan and exchange, released by the
 * exchange's cnt_done flag (docs/perf/NOTES.md, moe, session 5); 0 after them, through an event
 * (as before session 5; for A/B runs). Either is correct on any rank mix. */
MK_PARAM_INT(moe_dispatch_early, "MOE_DISPATCH_EARLY", 1, 0, 1)
/* With the early dispatch in one node group: its rows leave once the plan is done, beside the count exchange,
 * into doubled landing areas (mk_moe_dev.send_early); 0: after the counts (the order before session 23). */
MK_PARAM_INT(moe_send_early, "MOE_SEND_EARLY", 1, 0, 1)

/* Overlapped schedule: 1 launches GEMM1 on every SM with dynamic tile claims (mk_gemm_units): the C
 * CTAs past SMs - C start on the dispatch's SMs as its CTAs exit and take the tiles still
 * unclaimed; 0 on SMs - C CTAs, each walking its fixed tiles (as before session 13). */
MK_PARAM_INT(moe_gemm1_claim, "MOE_GEMM1_CLAIM", 1, 0, 1)
/* With MOE_GEMM1_CLAIM: 1 GEMM2 (on SMs - Cc beside the combine) claims its tiles on the same
 * counter, 0 fixed tiles. */
MK_PARAM_INT(moe_gemm2_claim, "MOE_GEMM2_CLAIM", 1, 0, 1)
/* Overlapped schedule with MOE_GEMM1_CLAIM: dispatch CTAs (0: as the combine, comm_ctas or 16). Their SMs
 * go to GEMM1 once the dispatch is done. */
MK_PARAM_INT(moe_dispatch_ctas, "MOE_DISPATCH_CTAS", 0, 0, 1024)

/* Decode without the count exchange (mk_moe_dev.ll; moe_internal.h, dispatch_gemm.cu): a sender kernel
 * stores each (token, expert) row straight into a static region of A1 at the expert's rank and every
 * tile waits for one counter, instead of the plan, the count exchange and the dispatch's copies. -1
 * (default): where the overlapped schedule pushes rows home in one node group, SwiGLU in GEMM1's
 * epilogue, no split-K or swapped gate/up GEMM, W x max_tokens <= 64 (an expert's region of
 * W max_tokens rows is one warpgroup's 64 rows) and 4 top_k >= E (a region expects a quarter of its
 * rows filled); 1: also at any E and up to 128 rows (both warpgroups compute every region); 0: never. */
MK_PARAM_INT(moe_ll, "MOE_LL", -1, -1, 1)

/* Push combine (gemm_combine.cu): GEMM2's epilogue stores each row straight into its home rank, and
 * a local reduce sums the top-k rows there, instead of the combine kernel's per-rank partial sums
 * after (serial) or beside (overlapped) GEMM2. 1: inside one node group (the epilogue stores over
 * NVLink), never in the hybrid schedule; 0: never. Run daa81ae (4 x H200, docs/perf/NOTES.md moe
 * session 15): faster at every decode shape and at the E = 8 and 128 prefill shapes, top_k 8 > 4
 * ranks included, though rows then cross NVLink once per expert rather than once per rank. */
MK_PARAM_INT(moe_push, "MOE_PUSH", 1, 0, 1)

/* Across node groups, each dispatch / combine CTA sent its chunk for a remote rank as its own PUTs and
 * SIGNAL: ~3 C + 2 Cc proxy commands per remote rank and call (~2500 at T = 4096 on 2 x 4, where the
 * fused MoE ran 4.4-8x its unfused path through the loopback proxy: docs/perf/NOTES.md session 19).
 * 1: every CTA counts its chunk, and the last one of the call PUTs the whole area for that rank at
 * once, then signals every chunk (2 PUTs and C signals for the dispatch, 1 and Cc for the combine):
 * the receiver's per-chunk waits are unchanged, though chunks no longer arrive one by one. 0: per
 * chunk, as before. -1 (default): by schedule: whole areas under the serial and hybrid ones, where
 * nothing reads a row before all have landed (2 x 2, T = 4096: 10.1 -> 6.1 ms with the signals
 * batched), per chunk under the overlapped one (decode), whose GEMM1 tiles start as their chunks land
 * (T = 16: 0.514 per chunk, 0.543 whole; run 5707401). */
MK_PARAM_INT(moe_remote_whole, "MOE_REMOTE_WHOLE", -1, -1, 1)

/* Serial schedule with the push combine (prefill-sized handles in one node group): GEMM2 beside GEMM1.
 * n >= 0: GEMM1 runs on SMs - n CTAs and lets GEMM2, launched right after it as a programmatic
 * dependent on every SM with dynamic claims, start at once on the n SMs it leaves (and on the others
 * as GEMM1's CTAs exit); each GEMM2 tile-row waits until GEMM1 has stored all its tiles across N, so
 * GEMM2's NVLink stores of rows home run beside GEMM1's math instead of after it. -1: one after the
 * other, as before. -2 (default): 3/8 of the SMs where GEMM2 is bound by its stores home rather than
 * its math, else -1 (mk_moe_pick_g12). Needs SwiGLU in GEMM1's epilogue and no split-K (else -1). */
MK_PARAM_INT(moe_g12_sms, "MOE_G12_SMS", -2, -2, 1024)

/* MK_MOE_G12_SMS = -2. GEMM2 moves (W - 1) / W of 2 H bytes a row over NVLink against 2 H I flops of
 * math: bound by its stores where I W / (W - 1) is small. By the rates alone (~350 GB/s, ~650 TFLOP/s)
 * below 1857; measured, SMs of its own from the start pay below ~1280, and 0 (GEMM2's CTAs take the SMs
 * GEMM1's CTAs leave during its last wave) below 2048:
 * - run f8f0bf7 (4 x H200, (4096, 2048, 128, 8, 768), I W / (W - 1) = 1024): 1.044 ms one after the
 *   other, 0.998 / 0.984 / 0.962 / 0.944 with 0 / 16 / 32 / 48 SMs for GEMM2 from the start (its math is
 *   a third of the two GEMMs'); E = 8 (19115) 4.93 -> 5.04-5.49, E = 256 (2731) 11.65 -> 11.59-12.20;
 * - run eb52c71 (2 x H200, the E = 128 shape, 1536): 0.896 one after the other, 0.910 with 49 SMs;
 * - run bb9a063-x2 (2 x H200, in turns, twice): E = 128 (1536) 0.883 / 0.880 one after the other, 0.858 /
 *   0.859 with 0; E = 8 (28672) and E = 256 (4096) level within their spread. */
int mk_moe_pick_g12(const mk_moe_args *a, int W, int sms) {
  if (W < 2) return -1;
  const double x = (double)a->inter * W / (W - 1);
  return x < 1280.0 ? sms * 3 / 8 : x < 2048.0 ? 0 : -1;
}

/* Serial schedule with the push combine in one node group: the dispatch's rows by copy engine (mk_moe_dev.ce_send,
 * moe_internal.h). Each rank copies its whole x into every peer's landing area at the start of the call
 * (cudaMemcpyAsync on a second stream, beside the plan and count exchange), so no SM moves a row over NVLink and
 * the dispatch only groups rows into A1 (its own from x, a peer's once that peer's copy is in). A row of a token
 * none of whose experts lives at a peer crosses anyway: -1 (default) where a token reaches a given peer with
 * probability >= 3/4 under uniform routing (1 - C(E - E/W, k) / C(E, k): E = 8, k = 2 at W = 2 0.79; E = 128, k = 8
 * at W = 4 0.90; not E = 8, k = 2 at W = 4, 0.46); 1 wherever the schedule allows; 0 never (the SM dispatch). */
MK_PARAM_INT(moe_ce_send, "MOE_CE_SEND", -1, -1, 1)

int mk_moe_pick_ce_send(const mk_moe_args *a, int W) {
  const int64_t p = mk_param_moe_ce_send();
  if (p == 0 || W < 2 || a->n_experts < W) return 0;
  if (p == 1) return 1;
  const int E = a->n_experts, El = E / W;
  double none = 1.0; /* probability that none of a token's k distinct experts is among a peer's El */
  for (int i = 0; i < a->top_k; i++) none *= (double)(E - El - i) / (double)(E - i);
  return 1.0 - none >= 0.75;
}

/* GEMM1's L2 prefetch while its first tile's rows are in flight, in 64-column k-blocks of the tile's
 * weights: -1 (default) by the L2's size (half of it over the first wave, at most 8 a tile); n >= 0: n. */
MK_PARAM_INT(moe_pf_kblocks, "MOE_PF_KBLOCKS", -1, -1, 1024)

/* Decode-sized handles (overlapped schedule) with the push combine: 1 and 2 launch GEMM2 as GEMM1's
 * programmatic dependent on every SM with its own claims, each tile-row's loads waiting until GEMM1
 * has stored that tile-row across N (done2), so GEMM2's CTAs take the SMs GEMM1's CTAs leave as its
 * last tiles finish (its weights streaming beside GEMM1's tail) instead of after GEMM1's kernel ends.
 * Needs SwiGLU in GEMM1's epilogue, no split-K in GEMM1 and the core GEMM1 (not the swapped one); 1
 * also needs GEMM2 unsplit, 2 takes GEMM2's k-slices too (each slice waits for its tile-row; the
 * slices' fix-up waits go to lower claims, which running CTAs hold); elsewhere one after the other,
 * as with 0. GEMM2's units wait only for the eighths of GEMM1's N their K-range reads (MK_MOE_G12_CHUNKS).
 * Run 736c371-x4 (4 x H200, (16, 4096, 8), in turns, twice): 1 0.2731 / 0.2733 ms, 2 0.2630 / 0.2632 (waiting
 * per whole tile-row, run f686361-x4: 0.2679). */
MK_PARAM_INT(moe_g12_decode, "MOE_G12_DECODE", 2, 0, 2)

/* The swapped gate/up GEMM (MK_MOE_SKINNY) with GEMM2 beside it (push combine, overlapped schedule, with
 * MK_MOE_G12_DECODE = 2's rules for GEMM2's k-slices): 1 GEMM2 is launched as its programmatic dependent and
 * each GEMM2 unit waits for the rows the swapped GEMM1's units stored in its tile-row's chunks, so GEMM2 takes
 * the SMs GEMM1's last round leaves idle (its statically assigned units run in 1.75 rounds at (128, 4096, 8) on
 * 4 ranks, 224 units on 128 CTAs; 3.5 at (256, 4096, 8) on 2); 0 (default): one after the other. Runs adb52ae-x2
 * and 11b0072-x2 (2 x H200, (256, 4096, 8), in turns, four draws each): 1 0.6143 / 0.6158 / 0.6149 / 0.6152 ms,
 * 0 0.6212 / 0.6194 / 0.6115 / 0.6134: level, GEMM2's first tile 0.25 ms earlier but its last as late. Every
 * GEMM2 tile in k-slices, tile-major (11b0072, reverted): 0.666 / 0.667. Not measured on 4 ranks. */
MK_PARAM_INT(moe_g12_skinny, "MOE_G12_SKINNY", 0, 0, 1)

/* The unfused path's expert GEMMs: 0 a cublasLtMatmul per expert (plans kept per bucket of M), 1 one cuBLAS
 * grouped GEMM (cublasGemmGroupedBatchedEx) for all local experts, gate/up and down each; -1 (default) per
 * call, grouped where a rank holds >= 16 experts and none has more than 256 rows (mk_moe_unfused_grouped).
 * Run 9dd19db-x2 (2 x H200, EP = 2, per expert / grouped, ms): (16, 2048, 128) 1.221 / 0.279, (128, 2048,
 * 128) 1.393 / 0.324, (16, 7168, 256) 2.788 / 2.013, (128, 7168, 256) 4.300 / 3.059, where the per-expert
 * loop is 128-256 host calls a step; (16, 4096, 8) 0.478 / 0.532, (128, 4096, 8) 0.532 / 0.680, (4096,
 * 4096, 8) 5.21 / 11.47, (4096, 2048, 128) 1.954 / 1.902, (8192, 7168, 256) 14.15 / 26.56. */
MK_PARAM_INT(moe_unfused_gemm, "MOE_UNFUSED_GEMM", -1, -1, 1)

/* The fused path's grouped GEMM tile widths (wgmma n): 0 as the shape picks them (GEMM1 by the core's wave
 * model, mk_gemm_pick_width; GEMM2 mk_moe_dev.bn2's rule), 128 or 256 both GEMMs at that width (A/B runs;
 * GEMM1 beside GEMM2, MK_MOE_G12_SMS, keeps 256); -1 (default) 128 for decode-sized handles whose experts
 * expect <= 64 rows, else 0 (mk_moe_pick_tile_n). Runs f3e637d-x2 and 1bdafea-x2 (2 x H200, EP = 2, fused ms,
 * 0 / 128): (16, 2048, 128) 0.233 / 0.218 and 0.232 / 0.217, (128, 2048, 128) 0.260 / 0.253 and 0.260 / 0.252,
 * (16, 4096, 8) 0.444 / 0.423 and 0.446 / 0.425, (128, 4096, 8) 0.467 / 0.452 (twice); but (256, 4096, 8), 128
 * rows an expert, 0.645 / 0.670 and 0.657 / 0.675; E = 256 within 0.5 %. The weights stream in half the
 * granule: the last wave of the weight-bound decode GEMMs idles fewer SMs. */
MK_PARAM_INT(moe_tile_n, "MOE_TILE_N", -1, -1, 256)

/* Rows a local expert expects at uniform routing: every token's top_k picks spread over E experts, W max_tokens
 * tokens in all (W >= 1, E >= W). */
static double moe_rows_expected(const mk_moe_args *a, int W) {
  return (double)W * (double)a->max_tokens * a->top_k / a->n_experts;
}

int mk_moe_pick_tile_n(const mk_moe_args *a, int W, int overlapped) {
  const int64_t p = mk_param_moe_tile_n();
  if (p >= 0) return p == 0 || p == 128 || p == 256 ? (int)p : -1;
  if (!overlapped || W < 1 || a->n_experts < W) return 0;
  return moe_rows_expected(a, W) <= 64.0 ? 128 : 0;
}

/* Decode-sized handles (overlapped schedule, SwiGLU in the epilogue): the gate/up GEMM computed swapped
 * (moe_skinny.cuh): the weights on the wgmma's 64-row side, each expert's rows as its n (16 .. 192), so an
 * expert of 129 .. 192 rows costs its rows of tensor work and one pass over its weights instead of two
 * 128-row tile-rows. -1 (default): on, in 192-row chunks, where an expert expects 97 .. 160 rows (W max_tokens
 * top_k / E) and 2 I >= 256 (run 3447d2e-x2: (256, 4096, 8) at EP = 2, 128 rows an expert, 0.643 -> 0.594 ms;
 * 160 rows level; 64 rows 8 % slower); 1: on, in chunks of rows by the expected rows (64, 128 or 192); 64, 128,
 * 192: on, in chunks of that many rows (tests, A/B); 0: off (the core). */
MK_PARAM_INT(moe_skinny, "MOE_SKINNY", -1, -1, 256)

enum { SKINNY_AUTO_MIN_ROWS = 96, SKINNY_AUTO_MAX_ROWS = 160 };

/* Chunk rows: -1 192 inside the measured window, else 0; 1 the expected rows of a local expert at uniform
 * routing with a margin, rounded up to 64, 128 or 192 (a chunk of more rows is cut: its weights stream once a
 * chunk). */
int mk_moe_pick_skinny(const mk_moe_args *a, int W) {
  const int64_t p = mk_param_moe_skinny();
  if (p == 0 || W < 1 || a->n_experts < W) return 0;
  const double rows = moe_rows_expected(a, W);
  if (p == -1) /* and at least one 256-row weight tile an expert */
    return rows > SKINNY_AUTO_MIN_ROWS && rows <= SKINNY_AUTO_MAX_ROWS && 2 * (int64_t)a->inter >= 256 ? 192 : 0;
  if (p != 1) return p == 64 || p == 128 || p == 192 ? (int)p : -1;
  const double want = rows * 1.25 + 16;
  return want <= 64 ? 64 : want <= 128 ? 128 : 192;
}

enum { GROUPED_MIN_EXPERTS = 16, GROUPED_MAX_ROWS = 256 };

int mk_moe_unfused_grouped(int El, const int32_t *rows) {
  const int64_t p = mk_param_moe_unfused_gemm();
  if (p >= 0) return (int)p;
  if (El < GROUPED_MIN_EXPERTS) return 0;
  for (int e = 0; e < El; e++)
    if (rows[e] > GROUPED_MAX_ROWS) return 0;
  return 1;
}

static mk_status heap(mk_moe_t *m, uint64_t bytes, uint64_t *off) {
  return mk_comm_heap_alloc(m->comm, bytes ? bytes : 256, off);
}

static mk_status dalloc(void **p, size_t bytes) {
  MK_CUDA_CHECK(cudaMalloc(p, bytes ? bytes : 256));
  return MK_STATUS_OK;
}

/* AUTO (docs/perf/NOTES.md, moe, version 4): serial from 1024 tokens per rank, where moving
 * rows on every SM before and after the GEMMs beat lending 16 SMs to it for the whole call
 * (1.1-1.5x on 4 x H200); overlapped below, where the phases are latency and both were within
 * ~8 %. Decided at create from max_tokens: every rank must run the same CTAs. */
static int pick_schedule(const mk_moe_args *a, int W) {
  (void)W;
  if (a->schedule != MK_MOE_SCHED_AUTO) return a->schedule;
  return a->max_tokens >= 1024 ? MK_MOE_SCHED_SERIAL : MK_MOE_SCHED_OVERLAP;
}

/* split_k AUTO (docs/perf/NOTES.md, moe, sessions 4 and 5): 8 k-slices where a local expert expects
 * 64 to 256 rows at uniform routing (max_tokens * top_k / El): one or two 128-row tile-rows that
 * stream the weights with the last wave leaving SMs idle. Measured on 4 x H200 (run 8d89cd6,
 * AUTO and --split-k 0 in one call): 128 rows (128,4096,8,2,14336) 0.431 split vs 0.451 off; at
 * 2-32 rows the fix-up costs more than the split gives (16,2048,128: 0.233 vs 0.212 off;
 * 128,2048,128: 0.276 vs 0.249; 16,7168,256: 1.457 vs 1.405; 16,4096,8: 0.310 vs 0.303;
 * 128,7168,256 at 16 rows within the spread, 1.741 vs 1.769). Which tiles are split is decided on
 * the device from the counts of each call (mk_gemm_dev_split's wave model), so a call with more
 * rows than expected splits less. Larger max_tokens (prefill-sized handles): off, not measured. */
int mk_moe_pick_split_k(const mk_moe_args *a, int W) {
  if (a->split_k == 1 || a->split_k == -1) return 0;
  if (a->split_k) return a->split_k;
  if (W < 1 || a->n_experts < W) return 0;
  const int64_t rows = (int64_t)moe_rows_expected(a, W); /* max_tokens top_k / El, rounded down */
  return rows >= 64 && rows <= 256 ? 8 : 0;
}

/* Rows of A1 / C1 / C2 in the worst case (mk_moe_dev.m_cap), and GEMM2's 256-wide tiles over them
 * (every local expert adds at most one partial tile-row). */
static int64_t moe_m_cap(const mk_moe_args *a, int W) {
  const int64_t El = a->n_experts / W;
  return (int64_t)W * a->max_tokens * (a->top_k < El ? a->top_k : El);
}
static int64_t moe_tiles256(const mk_moe_args *a, int W) {
  return (moe_m_cap(a, W) / 128 + a->n_experts / W) * ((a->hidden + 255) / 256);
}

/* GEMM2's k-slices (mk_moe_dev.split_k2): GEMM1's (|split_k|), or under AUTO 8 where the worst case of
 * GEMM2 has fewer 256-wide tiles than SMs (decode with few experts: Mixtral-like at T = 16, whose down
 * weights would otherwise stream on 64 of 132 SMs). Run d9a5d83 (2 x H200, EP = 2, (16, 4096, 8)):
 * GEMM2's phase 0.150 -> 0.124 ms with it. */
int mk_moe_pick_split_k2(const mk_moe_args *a, int W, int sms) {
  const int sk = mk_moe_pick_split_k(a, W);
  if (sk) return abs(sk);
  if (a->split_k || W < 1 || a->n_experts < W) return 0;
  return moe_tiles256(a, W) < sms ? 8 : 0;
}

mk_status mk_moe_create(mk_comm_t *comm, const mk_moe_args *a, mk_moe_t **out) {
  if (!out) return MK_STATUS_INVALID_ARGUMENT;
  *out = NULL;
  if (!comm || !a) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "moe: comm and args must be non-null");
  const mk_world *wd = mk_comm_world(comm);
  const int W = wd->size;
  if (a->n_experts < 1 || a->n_experts > MK_MOE_MAX_EXPERTS || a->n_experts % W)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "moe: %d experts cannot be split over %d expert-parallel ranks (E must be a multiple of the EP "
                  "size, 1 <= E <= %d)",
                  a->n_experts, W, MK_MOE_MAX_EXPERTS);
  const int El = a->n_experts / W;
  if (a->hidden <= 0 || a->inter <= 0 || a->hidden % 8 || a->inter % 8 || a->top_k < 1 ||
      a->top_k > MK_MOE_MAX_TOPK || a->top_k > a->n_experts || a->max_tokens < 1 || a->max_tokens > (1 << 24) ||
      W > MK_MOE_MAX_RANKS || El > 512 || !a->w1 || !a->w2 || a->comm_ctas < 0 || a->comm_ctas > 1024 ||
      a->schedule < MK_MOE_SCHED_AUTO || a->schedule > MK_MOE_SCHED_HYBRID || a->split_k < -16 || a->split_k > 16)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "moe: bad args H=%d I=%d E=%d top_k=%d max_tokens=%lld ranks=%d comm_ctas=%d schedule=%d "
                  "split_k=%d (need "
                  "H, I > 0 and multiples of 8, 1 <= top_k <= min(E, %d), <= %d ranks, <= 512 experts per rank, "
                  "weights set, comm_ctas <= 1024, schedule 0..3, |split_k| <= 16)",
                  a->hidden, a->inter, a->n_experts, a->top_k, (long long)a->max_tokens, W, a->comm_ctas, a->schedule,
                  a->split_k, MK_MOE_MAX_TOPK, MK_MOE_MAX_RANKS);
  mk_moe_t *m = calloc(1, sizeof *m);
  if (!m) return MK_STATUS_OUT_OF_MEMORY;
  mk_status st = MK_STATUS_OK;
  m->comm = comm;
  m->a = *a;
  m->nnodes = wd->nnodes;
  mk_moe_dev *d = &m->d;
  MK_CHECK_GOTO(mk_comm_dev_world(comm, &d->w), st, fail);
  d->W = W, d->rank = wd->rank, d->El = El, d->E = a->n_experts, d->K = a->top_k, d->H = a->hidden;
  d->I = a->inter, d->Tm = a->max_tokens;
  d->m_cap = moe_m_cap(a, W);
  d->cnt_stride = ((El + 1 + 3) / 4) * 4;
  d->w1 = a->w1, d->w2 = a->w2, d->glu = !a->swiglu_pass;
  int dev = mk_comm_device(comm);
  MK_CUDA_CHECK_GOTO(cudaDeviceGetAttribute(&m->sms, cudaDevAttrMultiProcessorCount, dev), st, fail);
  m->sched = pick_schedule(a, W);
  m->dispatch_early = m->sched == MK_MOE_SCHED_OVERLAP && mk_param_moe_dispatch_early();
  {
    const int sk = mk_moe_pick_split_k(a, W);
    d->split_k = abs(sk) >= 2 ? abs(sk) : 0;
    d->split_force = sk <= -2;
    d->wg_skip = m->sched == MK_MOE_SCHED_OVERLAP; /* decode-sized (AUTO: max_tokens < 1024) */
  }
  { /* GEMM2: where the worst case has fewer 256-wide tiles than SMs (decode, few experts: the
       weights stream on too few SMs), k-slices of 256-wide tiles (split_k2 = 8 under AUTO, even
       where GEMM1's rule leaves split_k off; run d9a5d83, docs/perf/NOTES.md moe session 13), or
       128-wide tiles where split-K is off */
    d->split_k2 = mk_moe_pick_split_k2(a, W, m->sms);
    const int tn = mk_moe_pick_tile_n(a, W, m->sched == MK_MOE_SCHED_OVERLAP);
    if (tn < 0) {
      MK_WARN(MK_SUBSYS_KERNEL, "moe: MK_MOE_TILE_N=%lld (want -1, 0, 128 or 256)", (long long)mk_param_moe_tile_n());
      st = MK_STATUS_INVALID_ARGUMENT;
      goto fail;
    }
    d->tile_n1 = tn;
    d->bn2 = tn ? tn : moe_tiles256(a, W) < m->sms && !d->split_k2 ? 128 : 256;
    d->tiles_n2 = (a->hidden + d->bn2 - 1) / d->bn2;
  }
  { /* dispatch CTAs C, combine CTAs Cc; beside a GEMM (on its own stream) they leave >= 8 SMs to it */
    const int lent = a->comm_ctas ? a->comm_ctas : 16, alone = a->comm_ctas ? a->comm_ctas : m->sms - 4;
    d->C = m->sched == MK_MOE_SCHED_OVERLAP ? lent : m->sched == MK_MOE_SCHED_SERIAL ? alone : m->sms - 4;
    if (m->sched == MK_MOE_SCHED_OVERLAP && mk_param_moe_gemm1_claim() && mk_param_moe_dispatch_ctas())
      d->C = (int)mk_param_moe_dispatch_ctas();
    d->Cc = m->sched == MK_MOE_SCHED_SERIAL ? alone : lent;
    const int beside = m->sched == MK_MOE_SCHED_OVERLAP   ? (d->C > d->Cc ? d->C : d->Cc)
                       : m->sched == MK_MOE_SCHED_HYBRID ? d->Cc
                                                          : 0;
    if (d->C > m->sms || d->Cc > m->sms || (beside && m->sms <= beside + 8)) {
      MK_WARN(MK_SUBSYS_KERNEL, "moe: %d dispatch / %d combine CTAs (comm_ctas %d, MK_MOE_DISPATCH_CTAS) do not fit "
              "%d SMs beside a GEMM (schedule %d)", d->C, d->Cc, a->comm_ctas, m->sms, m->sched);
      st = MK_STATUS_INVALID_ARGUMENT;
      goto fail;
    }
  }
  {
    const int64_t p = mk_param_moe_push();
    d->push = m->nnodes == 1 && m->sched != MK_MOE_SCHED_HYBRID && p == 1;
  }
  const uint64_t Wu = (uint64_t)W, area = Wu * (uint64_t)d->Tm * (uint64_t)d->H * 2;
  const uint64_t metas = Wu * (uint64_t)d->Tm * sizeof(mk_moe_meta), far = m->nnodes > 1;
  d->send_early = m->dispatch_early && !far && mk_param_moe_send_early();
  d->land_par = d->send_early ? area : 0, d->lmeta_par = d->send_early ? metas : 0;
  {
    const int64_t ll = mk_param_moe_ll(), R = (int64_t)W * d->Tm;
    /* auto: where an expert's region expects at least a quarter of its rows filled (R K / E >= R / 4: Mixtral's
       E = 8, k = 2, not Qwen3's E = 128, k = 8, whose 1/16-full regions ran slower, run 77e0b2c) */
    d->ll = ll != 0 && m->sched == MK_MOE_SCHED_OVERLAP && d->push && d->glu && m->nnodes == 1 && !d->split_k &&
            mk_moe_pick_skinny(a, W) <= 0 && d->Tm <= 64 && R <= (ll == 1 ? 128 : 64) &&
            (ll == 1 || 4 * (int64_t)a->top_k >= a->n_experts);
    d->R = d->ll ? R : 0;
    if (d->ll && d->m_cap < El * R) d->m_cap = El * R;
  }
  const int64_t tiles = d->m_cap / 128 + El + 1;
  /* Heap: the same sequence on every rank (nnodes and sizes are the same everywhere). */
  MK_CHECK_GOTO(heap(m, Wu * d->cnt_stride * 4, &d->o_cnt_in), st, fail);
  MK_CHECK_GOTO(heap(m, Wu * 8, &d->o_cnt_sig), st, fail);
  MK_CHECK_GOTO(heap(m, area + d->land_par, &d->o_land), st, fail);
  MK_CHECK_GOTO(heap(m, metas + d->lmeta_par, &d->o_lmeta), st, fail);
  MK_CHECK_GOTO(heap(m, Wu * d->C * 8, &d->o_land_sig), st, fail);
  MK_CHECK_GOTO(heap(m, area, &d->o_comb), st, fail);
  MK_CHECK_GOTO(heap(m, Wu * d->Cc * 8, &d->o_comb_sig), st, fail);
  MK_CHECK_GOTO(heap(m, metas, &d->o_smeta), st, fail);
  MK_CHECK_GOTO(heap(m, Wu * d->cnt_stride * 4, &d->o_cnt_out), st, fail);
  MK_CHECK_GOTO(heap(m, far ? area : 0, &d->o_stage), st, fail);
  MK_CHECK_GOTO(heap(m, far ? area : 0, &d->o_cstage), st, fail);
  /* ready [tiles], done2 [tiles][MK_MOE_G12_CHUNKS] (GEMM2 beside GEMM1 counts per chunk of GEMM1's N; the
     combine kernel uses the first tiles words), g2_out */
  MK_CHECK_GOTO(heap(m, (uint64_t)tiles * 8 * (1 + MK_MOE_G12_CHUNKS) + 8, &d->o_ready), st, fail);
  d->o_done2 = d->o_ready + (uint64_t)tiles * 8;
  d->o_g2_out = d->o_done2 + (uint64_t)tiles * 8 * MK_MOE_G12_CHUNKS;
  MK_CHECK_GOTO(heap(m, 16, &d->o_cnt_done), st, fail);
  if (d->ll) {
    MK_CHECK_GOTO(heap(m, (uint64_t)(El * d->R + 128) * d->H * 2, &d->o_a1), st, fail);
    MK_CHECK_GOTO(heap(m, (uint64_t)(El * d->R + 128) * 8, &d->o_rowinfo), st, fail);
    MK_CHECK_GOTO(heap(m, 8, &d->o_land_cnt), st, fail);
  }
  d->o_plan_done = d->o_cnt_done + 8;
  { /* push: pland [Tm][K][H] in comb's area where it fits (top_k <= W), else an area of its own where the
       heap has room (the same answer on every rank), else no push; args.share_out (fan): [W][Tm][K][H], an
       area of its own where the heap has room, else no fan */
    const uint64_t pl = (uint64_t)d->Tm * (uint64_t)d->K * (uint64_t)d->H * 2;
    d->o_pland = d->o_comb;
    d->fan = d->push && a->share_out && mk_comm_heap_left(comm) >= Wu * pl;
    if (d->fan) {
      MK_CHECK_GOTO(heap(m, Wu * pl, &d->o_pland), st, fail);
    } else {
      if (d->push && pl > area && mk_comm_heap_left(comm) < pl) d->push = 0;
      if (d->push && pl > area) MK_CHECK_GOTO(heap(m, pl, &d->o_pland), st, fail);
    }
    if (d->ll && !d->push) { /* the decode path needs the push combine */
      MK_WARN(MK_SUBSYS_KERNEL, "moe: the symmetric heap has no room for the push combine's %llu bytes, which the "
              "decode path without the count exchange needs (MK_MOE_LL=0, or a larger heap)", (unsigned long long)pl);
      st = MK_STATUS_OUT_OF_MEMORY;
      goto fail;
    }
    MK_CHECK_GOTO(heap(m, Wu * 8, &d->o_psig), st, fail);
    d->ce_send = m->sched == MK_MOE_SCHED_SERIAL && d->push && m->nnodes == 1 && !d->send_early &&
                 mk_moe_pick_ce_send(a, W);
    if (d->ce_send) MK_CHECK_GOTO(heap(m, Wu * 8, &d->o_xflag), st, fail);
    if (d->push) { /* the reduce's ticket (its last CTA advances the call) */
      MK_CHECK_GOTO(dalloc((void **)&d->tick, sizeof *d->tick), st, fail);
      MK_CUDA_CHECK_GOTO(cudaMemset(d->tick, 0, sizeof *d->tick), st, fail);
    }
  }
  { /* GEMM1's L2 prefetch while rows are in flight: its first wave's B tiles (tile_n1 rows, else 256),
       k-blocks of 64 columns (128 bytes a row), at most half the L2 in all and 8 k-blocks a tile, or
       MK_MOE_PF_KBLOCKS */
    int l2 = 0;
    MK_CUDA_CHECK_GOTO(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev), st, fail);
    const int64_t ctas = m->sched == MK_MOE_SCHED_OVERLAP ? m->sms - d->C : m->sms, bn = d->tile_n1 ? d->tile_n1 : 256;
    const int64_t kb = (int64_t)l2 / 2 / (ctas * bn * 128), kmax = (a->hidden + 63) / 64;
    d->pf_kblocks = (int)(mk_param_moe_pf_kblocks() >= 0 ? mk_param_moe_pf_kblocks() : kb < 8 ? kb : 8);
    if (d->pf_kblocks > kmax) d->pf_kblocks = (int)kmax;
  }
  if (a->profile) { /* the stamps, and the last call's end (moe_advance_kernel) */
    MK_CHECK_GOTO(dalloc((void **)&d->prof, sizeof(uint64_t) * (MK_MOE_PHASES + 1)), st, fail);
    MK_CUDA_CHECK_GOTO(cudaMemset(d->prof, 0, sizeof(uint64_t) * (MK_MOE_PHASES + 1)), st, fail);
  }
  if (m->sched == MK_MOE_SCHED_OVERLAP && mk_param_moe_gemm1_claim()) {
    MK_CHECK_GOTO(dalloc((void **)&d->g1_sync, 2 * sizeof(uint64_t)), st, fail);
    MK_CUDA_CHECK_GOTO(cudaMemset(d->g1_sync, 0, 2 * sizeof(uint64_t)), st, fail);
    d->g2_claim = (int)mk_param_moe_gemm2_claim();
  }
  {
    const int sk = mk_moe_pick_skinny(a, W);
    if (sk < 0) {
      MK_WARN(MK_SUBSYS_KERNEL, "moe: MK_MOE_SKINNY=%lld (want -1, 0, 1, 64, 128 or 192)",
              (long long)mk_param_moe_skinny());
      st = MK_STATUS_INVALID_ARGUMENT;
      goto fail;
    }
    if (m->sched == MK_MOE_SCHED_OVERLAP && d->glu) d->sk_nt = sk;
  }
  { /* GEMM2 beside GEMM1 (MK_MOE_G12_SMS); GEMM1's 256-wide tiles across its N = 2 I */
    const int64_t g12 = mk_param_moe_g12_sms() == -2 ? mk_moe_pick_g12(a, W, m->sms) : mk_param_moe_g12_sms();
    if (g12 >= 0 && m->sched == MK_MOE_SCHED_SERIAL && d->push && d->glu && !d->split_k && !d->split_k2) {
      if (g12 > m->sms - 8) {
        MK_WARN(MK_SUBSYS_KERNEL, "moe: MK_MOE_G12_SMS=%lld leaves GEMM1 fewer than 8 of %d SMs", (long long)g12,
                m->sms);
        st = MK_STATUS_INVALID_ARGUMENT;
        goto fail;
      }
      m->g12_sms = (int)g12;
      d->g12_bn = 256;
    }
    if (mk_param_moe_g12_decode() && m->sched == MK_MOE_SCHED_OVERLAP && d->push && d->glu && !d->split_k &&
        (!d->split_k2 || mk_param_moe_g12_decode() == 2) && !d->sk_nt)
      d->g12_bn = d->tile_n1 ? d->tile_n1 : 256;
    /* the swapped GEMM1 never uses the split workspace, so GEMM2's k-slices may (d->split_k is the core's) */
    if (mk_param_moe_g12_skinny() && d->sk_nt && m->sched == MK_MOE_SCHED_OVERLAP && d->push && d->glu &&
        (!d->split_k2 || mk_param_moe_g12_decode() == 2))
      d->g12_bn = d->sk_nt > 128 ? 256 : 128; /* moe_sk_config::kBW */
    if (d->g12_bn) {
      d->g12_need = (int)((2 * (int64_t)d->I + d->g12_bn - 1) / d->g12_bn);
      MK_CHECK_GOTO(dalloc((void **)&d->g12_claim, 2 * sizeof(uint32_t)), st, fail);
      MK_CUDA_CHECK_GOTO(cudaMemset(d->g12_claim, 0, 2 * sizeof(uint32_t)), st, fail);
    }
  }
  const int64_t whole = mk_param_moe_remote_whole();
  if (m->nnodes > 1 && (whole == 1 || (whole == -1 && m->sched != MK_MOE_SCHED_OVERLAP))) {
    MK_CHECK_GOTO(dalloc((void **)&d->pub_cnt, 2 * sizeof(uint64_t) * (size_t)W), st, fail);
    MK_CUDA_CHECK_GOTO(cudaMemset(d->pub_cnt, 0, 2 * sizeof(uint64_t) * (size_t)W), st, fail);
  }
  if (d->split_k || d->split_k2) { /* at most two partial tiles per GEMM CTA (mk_gemm_dev_split) */
    MK_CHECK_GOTO(dalloc((void **)&d->sk_ws, (size_t)2 * m->sms * 128 * 256 * 4), st, fail);
    MK_CHECK_GOTO(dalloc((void **)&d->sk_flags, sizeof(uint32_t) * 4 * (size_t)m->sms), st, fail);
    MK_CUDA_CHECK_GOTO(cudaMemset(d->sk_flags, 0, sizeof(uint32_t) * 4 * (size_t)m->sms), st, fail);
  }
  /* Local scratch. */
  m->zero_bytes = sizeof(int32_t) * (size_t)(W + d->E + El);
  MK_CHECK_GOTO(dalloc(&m->zero_base, m->zero_bytes), st, fail);
  d->n_send = (int32_t *)m->zero_base;
  d->cnt_pairs = d->n_send + W;
  d->fill = d->cnt_pairs + d->E;
  MK_CHECK_GOTO(dalloc((void **)&d->slot, sizeof(int32_t) * (size_t)(d->Tm * W)), st, fail);
  MK_CHECK_GOTO(dalloc((void **)&d->n_from, sizeof(int32_t) * (size_t)(W + 3 * El + 2)), st, fail);
  d->rows = d->n_from + W;
  d->exp_off = d->rows + El;
  d->tile_base = d->exp_off + El + 1;
  MK_CHECK_GOTO(dalloc((void **)&d->posmap, sizeof(int32_t) * (size_t)(Wu * d->Tm * d->K)), st, fail);
  if (d->ll) { /* A1 in the heap, zeroed (a region's unused rows are computed); static groups of R rows */
    d->A1 = (uint16_t *)(d->w.heap + d->o_a1);
    MK_CUDA_CHECK_GOTO(cudaMemset(d->A1, 0, (size_t)(El * d->R + 128) * d->H * 2), st, fail);
    int32_t h[3 * 512 + 2]; /* rows [El], exp_off [El + 1], tile_base [El + 1]; El <= 512 (checked above) */
    for (int e = 0; e <= El; e++) {
      if (e < El) h[e] = (int32_t)d->R;
      h[El + e] = (int32_t)(e * d->R);
      h[2 * El + 1 + e] = e;
    }
    MK_CUDA_CHECK_GOTO(cudaMemcpy(d->rows, h, sizeof(int32_t) * (size_t)(3 * El + 2), cudaMemcpyHostToDevice), st,
                       fail);
  } else {
    MK_CHECK_GOTO(dalloc((void **)&d->A1, (size_t)d->m_cap * d->H * 2), st, fail);
  }
  MK_CHECK_GOTO(dalloc((void **)&d->C1, (size_t)d->m_cap * d->I * 4), st, fail);
  MK_CHECK_GOTO(dalloc((void **)&d->act, (size_t)d->m_cap * d->I * 2), st, fail);
  MK_CHECK_GOTO(dalloc((void **)&d->C2, (size_t)d->m_cap * d->H * 2), st, fail);
  if (d->push) MK_CHECK_GOTO(dalloc((void **)&d->rowdst, sizeof(uint16_t *) * (size_t)(d->m_cap + 128)), st, fail);
  if (d->glu && a->w1_from) { /* the same experts' interleaved copy, made by another handle */
    const mk_moe_t *o = a->w1_from;
    if (o->comm != comm || o->a.hidden != a->hidden || o->a.inter != a->inter || o->a.n_experts != a->n_experts ||
        o->a.w1 != a->w1 || !o->d.w1g) {
      MK_WARN(MK_SUBSYS_KERNEL, "moe: args.w1_from is a handle over other experts or comm, or one without the "
              "interleaved w1 (made with swiglu_pass)");
      st = MK_STATUS_INVALID_ARGUMENT;
      goto fail;
    }
    d->w1g = o->d.w1g;
  } else if (d->glu) { /* rows 16i..16i+7 = gate rows 8i.., 16i+8..16i+15 = up rows 8i.. (mk_gemm_glu_pairs) */
    m->w1g_owned = 1;
    const size_t row = (size_t)d->H * 2, per = (size_t)2 * d->I * d->H;
    MK_CHECK_GOTO(dalloc((void **)&d->w1g, per * 2 * (size_t)El), st, fail);
    for (int e = 0; e < El; e++)
      for (int h = 0; h < 2; h++)
        MK_CUDA_CHECK_GOTO(cudaMemcpy2D(d->w1g + e * per + (size_t)h * 8 * d->H, 16 * row,
                                        a->w1 + e * per + (size_t)h * d->I * d->H, 8 * row, 8 * row,
                                        (size_t)d->I / 8, cudaMemcpyDeviceToDevice),
                           st, fail);
  }
  MK_CUDA_CHECK_GOTO(cudaStreamCreateWithFlags((cudaStream_t *)&m->s2, cudaStreamNonBlocking), st, fail);
  MK_CUDA_CHECK_GOTO(cudaEventCreateWithFlags((cudaEvent_t *)&m->ev_fork, cudaEventDisableTiming), st, fail);
  MK_CUDA_CHECK_GOTO(cudaEventCreateWithFlags((cudaEvent_t *)&m->ev_join, cudaEventDisableTiming), st, fail);
  MK_CUDA_CHECK_GOTO(cudaEventCreateWithFlags((cudaEvent_t *)&m->ev_g1, cudaEventDisableTiming), st, fail);
  /* Lazy loading: every kernel of the spinning producer/consumer pairs is loaded now. */
  MK_CHECK_GOTO(mk_moe_preload_dispatch(d->split_k), st, fail);
  MK_CHECK_GOTO(mk_moe_preload_combine(d->split_k2), st, fail);
  if (a->fused_only) goto ready;
  /* Unfused path. */
  if (mk_nccl_shared(comm, &m->nccl) != MK_STATUS_OK) m->nccl = NULL;
  MK_CHECK_GOTO(mk_cublaslt_create(&m->lt), st, fail);
  /* the cuBLAS handle only where mk_moe_unfused_grouped can pick it (two MoE handles a layer in the model) */
  if (mk_param_moe_unfused_gemm() == 1 || (mk_param_moe_unfused_gemm() == -1 && El >= GROUPED_MIN_EXPERTS))
    MK_CHECK_GOTO(mk_cublas_grouped_create(El, &m->grouped), st, fail);
  MK_CHECK_GOTO(dalloc((void **)&m->sendbuf, (size_t)d->Tm * d->K * d->H * 2), st, fail);
  MK_CHECK_GOTO(dalloc((void **)&m->recvbuf, (size_t)d->m_cap * d->H * 2), st, fail);
  MK_CHECK_GOTO(
      dalloc((void **)&m->u_counts, sizeof(int32_t) * (size_t)(3 * d->E + d->Tm * d->K + W * El * 9 + El)), st, fail);
  m->u_fill = m->u_counts + d->E;
  m->u_off = m->u_fill + d->E;
  m->u_pairpos = m->u_off + d->E;
  m->u_rc = m->u_pairpos + d->Tm * d->K;
  m->u_table = m->u_rc + W * El;
  m->u_rows = m->u_table + 8 * W * El;
  MK_CUDA_CHECK_GOTO(cudaMallocHost((void **)&m->h_counts, sizeof(int32_t) * (size_t)(2 * d->E + W * El * 9 + El)),
                     st, fail);
  m->h_rc = m->h_counts + 2 * d->E;
  m->h_table = m->h_rc + W * El;
  m->h_a2a = calloc(4 * (size_t)W, sizeof(size_t));
  if (!m->h_a2a) {
    st = MK_STATUS_OUT_OF_MEMORY;
    goto fail;
  }
ready:
  MK_CUDA_CHECK_GOTO(cudaDeviceSynchronize(), st, fail);
  /* Counters of this handle start at 0, and so does its call count. */
  MK_CHECK_GOTO(dalloc((void **)&d->calls, sizeof *d->calls), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMemset(d->calls, 0, sizeof *d->calls), st, fail);
  MK_CUDA_CHECK_GOTO(cudaDeviceSynchronize(), st, fail); /* that memset (legacy stream) before any call's stream */
  MK_CHECK_GOTO(mk_comm_barrier(comm), st, fail);
  *out = m;
  return MK_STATUS_OK;
fail:
  mk_moe_destroy(m);
  return st;
}

void mk_moe_destroy(mk_moe_t *m) {
  if (!m) return;
  mk_moe_dev *d = &m->d;
  cudaFree(m->zero_base);
  cudaFree(d->calls);
  cudaFree(d->slot);
  cudaFree(d->n_from);
  cudaFree(d->posmap);
  if (!d->ll) cudaFree(d->A1); /* d.ll: in the heap */
  cudaFree(d->C1);
  cudaFree(d->act);
  cudaFree(d->C2);
  cudaFree(d->rowdst);
  cudaFree(d->tick);
  if (m->w1g_owned) cudaFree(d->w1g);
  cudaFree(d->prof);
  cudaFree(d->sk_ws);
  cudaFree(d->sk_flags);
  cudaFree(d->g1_sync);
  cudaFree(d->g12_claim);
  cudaFree(d->pub_cnt);
  if (m->s2) cudaStreamDestroy((cudaStream_t)m->s2);
  if (m->ev_fork) cudaEventDestroy((cudaEvent_t)m->ev_fork);
  if (m->ev_join) cudaEventDestroy((cudaEvent_t)m->ev_join);
  if (m->ev_g1) cudaEventDestroy((cudaEvent_t)m->ev_g1);
  mk_nccl_destroy(m->nccl);
  mk_cublaslt_destroy(m->lt);
  mk_cublas_grouped_destroy(m->grouped);
  cudaFree(m->sendbuf);
  cudaFree(m->recvbuf);
  cudaFree(m->u_counts);
  if (m->h_counts) cudaFreeHost(m->h_counts);
  free(m->h_a2a);
  free(m);
}

/* x [T, H], ids and w [T, K]: this rank's tokens; red: what the reduce sums (this rank's tokens into out, or,
 * stride > 0, every rank's: mk_moe_forward_all). */
static mk_status forward_fused(mk_moe_t *m, const uint16_t *x, int64_t T, const int32_t *ids, const float *w,
                               const mk_moe_red *red, cudaStream_t s) {
  uint16_t *out = red->out;
  mk_moe_dev *d = &m->d;
  cudaStream_t s2 = (cudaStream_t)m->s2;
  if (d->prof) MK_CUDA_CHECK(cudaMemsetAsync(d->prof, 0, sizeof(uint64_t) * MK_MOE_PHASES, s));
  if (d->ll) { /* rows straight into A1 at their experts' ranks; GEMM1 on every SM; GEMM2 pushes them home */
    MK_CHECK(mk_moe_launch_ll_send(d, x, ids, T, s));
    MK_CHECK(mk_moe_launch_gemm1(d, m->sms, s));
    MK_CHECK(mk_moe_launch_gemm2(d, m->sms, s));
    return mk_moe_launch_push_reduce(d, red, s); /* barrier point 2: every row home; the advance */
  }
  if (d->ce_send) { /* x into every peer's land[rank] by copy engine, then xflag[rank] := 1 there */
    MK_CUDA_CHECK(cudaEventRecord((cudaEvent_t)m->ev_fork, s));
    MK_CUDA_CHECK(cudaStreamWaitEvent(s2, (cudaEvent_t)m->ev_fork, 0));
    const uint64_t per = (uint64_t)d->Tm * (uint64_t)d->H * 2;
    for (int i = 1; i < d->W; i++) {
      const int r = (d->rank + i) % d->W;
      char *peer = d->w.peer_heap[r % d->w.local_size];
      if (T > 0)
        MK_CUDA_CHECK(cudaMemcpyAsync(peer + d->o_land + (uint64_t)d->rank * per, x, (size_t)T * (size_t)d->H * 2,
                                      cudaMemcpyDefault, s2));
      MK_CHECK(mk_stream_write32(s2, peer + d->o_xflag + 8ull * (uint64_t)d->rank, 1, "moe: xflag write"));
    }
    MK_CUDA_CHECK(cudaEventRecord((cudaEvent_t)m->ev_join, s2));
  }
  if (!m->dispatch_early) MK_CHECK(mk_moe_launch_plan(d, ids, w, T, s)); /* barrier point 1: all counts known */
  if (m->sched == MK_MOE_SCHED_HYBRID) { /* serial dispatch, combine beside GEMM2 */
    MK_CHECK(mk_moe_launch_dispatch(d, x, s));
    MK_CHECK(mk_moe_launch_gemm1(d, m->sms, s));
    if (!d->glu) MK_CHECK(mk_moe_launch_swiglu(d, -1, s));
    MK_CUDA_CHECK(cudaEventRecord((cudaEvent_t)m->ev_fork, s));
    MK_CUDA_CHECK(cudaStreamWaitEvent(s2, (cudaEvent_t)m->ev_fork, 0));
    MK_CHECK(mk_moe_launch_combine(d, s2)); /* spins on done2 until gemm2 stores tiles */
    MK_CUDA_CHECK(cudaEventRecord((cudaEvent_t)m->ev_join, s2));
    MK_CHECK(mk_moe_launch_gemm2(d, m->sms - d->Cc, s));
    MK_CUDA_CHECK(cudaStreamWaitEvent(s, (cudaEvent_t)m->ev_join, 0));
    MK_CHECK(mk_moe_launch_reduce(d, T, out, s));
    return mk_moe_launch_advance(d, s);
  }
  if (m->sched == MK_MOE_SCHED_SERIAL) { /* one stream: every CTA of dispatch / combine is resident */
    MK_CHECK(mk_moe_launch_dispatch(d, x, s)); /* ce_send: it waits for the peers' copies (xflag) too */
    /* ce_send: the peers' flags consumed; this rank's copies (s2) join before the reduce (GEMM1 need not wait) */
    if (d->ce_send) MK_CUDA_CHECK(cudaMemsetAsync(d->w.heap + d->o_xflag, 0, (size_t)d->W * 8, s));
    if (d->g12_need) { /* GEMM2 beside GEMM1: its programmatic dependent (MK_MOE_G12_SMS) */
      MK_CHECK(mk_moe_launch_gemm1(d, m->sms - m->g12_sms, s));
      MK_CHECK(mk_moe_launch_gemm2(d, m->sms, s));
      if (d->ce_send) MK_CUDA_CHECK(cudaStreamWaitEvent(s, (cudaEvent_t)m->ev_join, 0));
      return mk_moe_launch_push_reduce(d, red, s);
    }
    MK_CHECK(mk_moe_launch_gemm1(d, m->sms, s));
    if (!d->glu) MK_CHECK(mk_moe_launch_swiglu(d, -1, s));
    MK_CHECK(mk_moe_launch_gemm2(d, m->sms, s));
    if (d->ce_send) MK_CUDA_CHECK(cudaStreamWaitEvent(s, (cudaEvent_t)m->ev_join, 0));
    if (d->push) return mk_moe_launch_push_reduce(d, red, s);
    MK_CHECK(mk_moe_launch_combine(d, s));
    MK_CHECK(mk_moe_launch_reduce(d, T, out, s));
    return mk_moe_launch_advance(d, s);
  }
  /* Overlapped (dispatch_early): the dispatch is forked before the plan and exchange, its CTAs
   * resident while they run and released by the exchange's cnt_done flag, not by the end of its
   * kernel and an event (a kernel boundary, an event and a launch less between the counts and
   * the rows). The exchange needs 1 SM beside the C dispatch CTAs: create leaves >= 8. */
  MK_CUDA_CHECK(cudaEventRecord((cudaEvent_t)m->ev_fork, s));
  MK_CUDA_CHECK(cudaStreamWaitEvent(s2, (cudaEvent_t)m->ev_fork, 0));
  MK_CHECK(mk_moe_launch_dispatch(d, x, s2));
  if (m->dispatch_early) MK_CHECK(mk_moe_launch_plan(d, ids, w, T, s)); /* barrier point 1 */
  /* g1_sync: the dispatch's SMs join. Across node groups one SM stays free of GEMM1 and the dispatch:
     the loopback proxy adds this rank's signals (counts, rows) with a kernel, and with every SM taken
     by a dispatch CTA (512 threads x 128 registers fill an SM's register file) or by a GEMM1 CTA
     waiting for rows, the peers wait for those signals forever (2 x 2 at T = 16, run dba0e56) */
  const int g1_grid = m->nnodes > 1 ? m->sms - d->C - 1 : d->g1_sync && !d->sk_nt ? m->sms : m->sms - d->C;
  MK_CHECK(mk_moe_launch_gemm1(d, g1_grid, s));
  if (!d->glu) MK_CHECK(mk_moe_launch_swiglu(d, -1, s));
  if (d->push) { /* GEMM2 on every SM stores the rows home; s2 (the dispatch) joins before the reduce */
    MK_CUDA_CHECK(cudaEventRecord((cudaEvent_t)m->ev_join, s2));
    MK_CHECK(mk_moe_launch_gemm2(d, m->sms, s));
    MK_CUDA_CHECK(cudaStreamWaitEvent(s, (cudaEvent_t)m->ev_join, 0));
    return mk_moe_launch_push_reduce(d, red, s); /* barrier point 2: every row home; the advance */
  }
  /* The combine starts once GEMM1 is done, not when the dispatch is: its CTAs would otherwise
   * sit on their SMs for all of GEMM1 polling done2, which only GEMM2 advances. */
  MK_CUDA_CHECK(cudaEventRecord((cudaEvent_t)m->ev_g1, s));
  MK_CUDA_CHECK(cudaStreamWaitEvent(s2, (cudaEvent_t)m->ev_g1, 0));
  MK_CHECK(mk_moe_launch_combine(d, s2)); /* spins on done2 until gemm2 stores tiles */
  MK_CUDA_CHECK(cudaEventRecord((cudaEvent_t)m->ev_join, s2));
  MK_CHECK(mk_moe_launch_gemm2(d, m->sms - d->Cc, s));
  MK_CUDA_CHECK(cudaStreamWaitEvent(s, (cudaEvent_t)m->ev_join, 0));
  MK_CHECK(mk_moe_launch_reduce(d, T, out, s)); /* barrier point 2: all combine rows home */
  return mk_moe_launch_advance(d, s);
}

mk_status mk_moe_forward(mk_moe_t *m, mk_moe_path path, const uint16_t *x, int64_t T, const int32_t *topk_ids,
                         const float *topk_w, uint16_t *out, mk_stream_t stream) {
  if (!m) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "moe_forward: handle is NULL");
  if (T < 0 || T > m->d.Tm)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "moe_forward: T=%lld outside [0, max_tokens=%lld]",
                  (long long)T, (long long)m->d.Tm);
  if (T > 0 && (!x || !topk_ids || !topk_w || !out || ((uintptr_t)x | (uintptr_t)out) % 16))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "moe_forward: x, topk_ids, topk_w and out must be non-null (x and out 16-byte aligned)");
  if (path == MK_MOE_FUSED) {
    const mk_moe_red red = {T, 0, topk_ids, topk_w, out, NULL};
    return forward_fused(m, x, T, topk_ids, topk_w, &red, (cudaStream_t)stream);
  }
  if (path == MK_MOE_UNFUSED && m->a.fused_only)
    MK_ERR_RETURN(MK_STATUS_INVALID_USAGE, MK_SUBSYS_KERNEL, "moe_forward: UNFUSED on a handle made with fused_only");
  if (path == MK_MOE_UNFUSED) return mk_moe_forward_unfused(m, x, T, topk_ids, topk_w, out, stream);
  MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "moe_forward: unknown path %d", (int)path);
}

int mk_moe_shares_out(const mk_moe_t *m) { return m && m->d.fan; }

mk_status mk_moe_forward_all(mk_moe_t *m, const uint16_t *x, int64_t T_all, int64_t stride, const int32_t *topk_ids,
                             const float *topk_w, uint16_t *out, float *resid, mk_stream_t stream) {
  if (!m) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "moe_forward_all: handle is NULL");
  if (!m->d.fan)
    MK_ERR_RETURN(MK_STATUS_INVALID_USAGE, MK_SUBSYS_KERNEL,
                  "moe_forward_all: the handle shares no outputs (made without args.share_out, or without the push "
                  "combine: several node groups, MK_MOE_PUSH=0, the hybrid schedule or a full heap)");
  const mk_moe_dev *d = &m->d;
  if (stride < 1 || stride > d->Tm || T_all < 0 || T_all > (int64_t)d->W * stride)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "moe_forward_all: T_all=%lld tokens in slices of stride=%lld over %d ranks (need 1 <= stride <= "
                  "max_tokens=%lld, 0 <= T_all <= ranks x stride)",
                  (long long)T_all, (long long)stride, d->W, (long long)d->Tm);
  if (T_all > 0 && (!x || !topk_ids || !topk_w || !out || ((uintptr_t)x | (uintptr_t)out | (uintptr_t)resid) % 16))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "moe_forward_all: x, topk_ids, topk_w and out must be non-null (x, out and resid 16-byte aligned)");
  const int64_t r0 = (int64_t)d->rank * stride < T_all ? (int64_t)d->rank * stride : T_all;
  const int64_t T = (r0 + stride < T_all ? r0 + stride : T_all) - r0;
  const mk_moe_red red = {T_all, stride, topk_ids, topk_w, out, resid};
  return forward_fused(m, x ? x + r0 * d->H : NULL, T, topk_ids ? topk_ids + r0 * d->K : NULL,
                       topk_w ? topk_w + r0 * d->K : NULL, &red, (cudaStream_t)stream);
}

static const char *const phase_names[MK_MOE_PHASES] = {"exch", "counts", "sent", "landed", "g1_first", "g1_last",
                                                       "g2_first", "g2_done", "combined", "red_wait", "done",
                                                       "start",    "end",      "d_start",  "prev_end"};

const char *mk_moe_phase_name(int phase) {
  return phase >= 0 && phase < MK_MOE_PHASES ? phase_names[phase] : "?";
}

mk_status mk_moe_phases(mk_moe_t *m, double ms[MK_MOE_PHASES]) {
  if (!m || !ms) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "moe_phases: handle and ms must be set");
  if (!m->d.prof)
    MK_ERR_RETURN(MK_STATUS_INVALID_USAGE, MK_SUBSYS_KERNEL, "moe_phases: the handle was made without args.profile");
  uint64_t t[MK_MOE_PHASES];
  MK_CUDA_CHECK(cudaDeviceSynchronize());
  MK_CUDA_CHECK(cudaMemcpy(t, m->d.prof, sizeof t, cudaMemcpyDeviceToHost));
  for (int i = 0; i < MK_MOE_PHASES; i++) /* the "first" slots are stored complemented (moe_stamp) */
    if (MK_MOE_PH_IS_FIRST(i)) t[i] = t[i] ? ~t[i] : 0;
  for (int i = 0; i < MK_MOE_PHASES; i++)
    ms[i] = t[i] && t[0] ? (double)(int64_t)(t[i] - t[0]) * 1e-6 : NAN;
  return MK_STATUS_OK;
}
