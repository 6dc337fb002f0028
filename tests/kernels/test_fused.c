/* test_fused.c (multigpu, under mk-launch) — one fused op (argv[1]: ag, rs or ar: the SM roles,
 * MK_FUSED_{AG,RS,AR}_COPY = 0; ag_ce, rs_ce, ar_ce: copy-engine transfers, = 1, then calls
 * that switch modes; rs_ceov, ar_ceov: the same with MK_FUSED_CE_OVERLAP=1 (the owner's reduce
 * beside the GEMM), then calls that alternate SM roles, overlapped and plain copy engines; rs_tma,
 * ar_tma, rs_tail, ar_tail, rs_push, ar_push: SM roles with a reducer variant, bits compared with the plain one;
 * rs_beside, ar_beside: the reduction on SMs beside the GEMM (MK_FUSED_BESIDE=1) at the round shapes, the
 * copy-engine mode at the others, bits compared between the two at the round shape; rs_fold, ar_fold: the same with
 * fold mode (MK_FUSED_FOLD=1: the peers' partials summed in the own tiles' epilogue); rs_cefold, ar_cefold: the
 * copy-engine mode with MK_FUSED_CE_FOLD=1 (the own tiles add the copied partials in their epilogue) where it applies,
 * bits compared with the reduce kernel (=0);
 * ag_auto, rs_auto, ar_auto: the variable as the environment has it, by
 * default the mode chosen by shape, so that with low MK_FUSED_{RS,AR}_CE_MIN_MB (AG: MK_FUSED_AG_CE_MIN_N) the shapes
 * below run some calls on either path; TEST_EXPECT_CE_FOLD=1: some calls must have run with the own rows summed in
 * the epilogue on copy engines, MK_FUSED_CE_FOLD's default for GEMM+AR over 2 ranks) on fresh
 * random inputs against the fp32 reference GEMM (GPU), at odd shapes (rows per rank not a
 * multiple of the 128-row tile, N not a multiple of 128) and a round one, in an order that
 * changes shape between calls; then 100 back-to-back calls and 100 replays of a captured CUDA
 * graph of the odd shape, each checked; AR results must be bit-identical on every rank
 * (hashes compared through the bootstrap); AR also at M = 1 .. 128 (its small-M path on one
 * node group; repeats bit-identical), 100 calls and 100 replays at M = 16 and 128; bad arguments are refused. AG also with the shard
 * written in place (mk_ag_gemm_shard). Under --nodes 2 the same checks cover the proxy path.
 * argv[2] = groupN: the op over groups of N consecutive ranks (mk_fused_create_group), every group
 * at once on its own data (the reference reduced over the group alone, AR's bits compared within
 * the group), and groups that leave this rank out or cross a node group refused.
 * Outputs are poisoned
 * (NaN) before every checked run; relative Frobenius error <= 1e-2, NaN fails. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/mk_comm.h"
#include "kernels/mk_kernels.h"
#include "tests/mk_test.h"

typedef struct shape {
  int64_t m, n, k;
} shape;

typedef struct ctx {
  mk_comm_t *c;
  mk_fused_t *f;
  cudaStream_t s;
  int op, W, me, inplace; /* inplace: AG input written into mk_ag_gemm_shard; W, me: the group's */
  int first, gid;         /* the group: ranks first .. first + W - 1, group index gid */
  uint64_t seed;
  uint16_t *A, *Afull, *B, *C;
  uint16_t *Acat, *Bcat, *Bp; /* RS/AR reference: the group's A_p and B_p side by side along K; a B_p */
  float *ref;
} ctx;

static mk_status call(ctx *x, const shape *sh) {
  mk_fused_args a = {x->A, x->B, x->C, sh->m, sh->n, sh->k, MK_GEMM_B_NK, 0};
  if (x->inplace) a.A = mk_ag_gemm_shard(x->f, sh->m, sh->k);
  if (x->op == MK_FUSED_AG_GEMM) return mk_ag_gemm(x->f, &a, (mk_stream_t)x->s);
  if (x->op == MK_FUSED_GEMM_RS) return mk_gemm_rs(x->f, &a, (mk_stream_t)x->s);
  return mk_gemm_ar(x->f, &a, (mk_stream_t)x->s);
}

static int64_t out_rows(const ctx *x, const shape *sh) { return x->op == MK_FUSED_GEMM_RS ? sh->m / x->W : sh->m; }

/* Fresh inputs for shape `id` and the fp32 reference of this rank's output. */
static void prepare(ctx *x, const shape *sh, int id) {
  const uint64_t base = x->seed + 1000ull * (uint64_t)id + 7919ull * (uint64_t)x->gid; /* each group its data */
  const int64_t ms = sh->m / x->W;
  mk_stream_t s = (mk_stream_t)x->s;
  ASSERT_OK(mk_fill_uniform_bf16(x->B, (size_t)(sh->n * sh->k), base + 100 + (uint64_t)x->me, -1.0f, 1.0f, s));
  if (x->op == MK_FUSED_AG_GEMM) {
    /* Rank p's shard is the same fill on every rank: the gathered A is known locally. */
    uint16_t *shard = x->inplace ? mk_ag_gemm_shard(x->f, sh->m, sh->k) : x->A;
    ASSERT_TRUE(shard != NULL);
    ASSERT_OK(mk_fill_uniform_bf16(shard, (size_t)(ms * sh->k), base + (uint64_t)x->me, -1.0f, 1.0f, s));
    for (int p = 0; p < x->W; p++)
      ASSERT_OK(mk_fill_uniform_bf16(x->Afull + (size_t)(p * ms * sh->k), (size_t)(ms * sh->k), base + (uint64_t)p,
                                     -1.0f, 1.0f, s));
    ASSERT_OK(mk_gemm_ref_f32(x->Afull, x->B, x->ref, sh->m, sh->n, sh->k, MK_GEMM_B_NK, s));
  } else {
    /* The sum over the group of A_p B_p^T is one GEMM over [A_0 .. A_{W-1}] and [B_0 .. B_{W-1}] side by side
     * along K: every rank's fills are known locally, so no collective (the test also runs on ranks sharing a GPU,
     * where NCCL refuses). */
    ASSERT_OK(mk_fill_uniform_bf16(x->A, (size_t)(sh->m * sh->k), base + (uint64_t)x->me, -1.0f, 1.0f, s));
    const size_t row = (size_t)sh->k * 2, cat_row = (size_t)x->W * row;
    for (int p = 0; p < x->W; p++) {
      ASSERT_OK(mk_fill_uniform_bf16(x->Afull, (size_t)(sh->m * sh->k), base + (uint64_t)p, -1.0f, 1.0f, s));
      CUDA_OK(cudaMemcpy2DAsync(x->Acat + (size_t)p * sh->k, cat_row, x->Afull, row, row, (size_t)sh->m,
                                cudaMemcpyDeviceToDevice, x->s));
      ASSERT_OK(mk_fill_uniform_bf16(x->Bp, (size_t)(sh->n * sh->k), base + 100 + (uint64_t)p, -1.0f, 1.0f, s));
      CUDA_OK(cudaMemcpy2DAsync(x->Bcat + (size_t)p * sh->k, cat_row, x->Bp, row, row, (size_t)sh->n,
                                cudaMemcpyDeviceToDevice, x->s));
    }
    ASSERT_OK(mk_gemm_ref_f32(x->Acat, x->Bcat, x->ref, sh->m, sh->n, x->W * sh->k, MK_GEMM_B_NK, s));
  }
  CUDA_OK(cudaStreamSynchronize(x->s));
}

static void poison(ctx *x, const shape *sh) {
  CUDA_OK(cudaMemsetAsync(x->C, 0xff, (size_t)(out_rows(x, sh) * sh->n) * 2, x->s));
}

/* FNV-1a hash of this rank's output C (after the stream's work). */
static uint64_t c_hash(ctx *x, const shape *sh) {
  CUDA_OK(cudaStreamSynchronize(x->s));
  const size_t bytes = (size_t)(out_rows(x, sh) * sh->n) * 2;
  unsigned char *h = malloc(bytes);
  ASSERT_TRUE(h != NULL);
  CUDA_OK(cudaMemcpy(h, x->C, bytes, cudaMemcpyDeviceToHost));
  uint64_t hash = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; i++) hash = (hash ^ h[i]) * 1099511628211ull;
  free(h);
  return hash;
}

/* Checks C against the reference (and, for AR, the same bits on every rank). */
static void check(ctx *x, const shape *sh, const char *what) {
  CUDA_OK(cudaStreamSynchronize(x->s));
  ASSERT_OK(mk_comm_check(x->c));
  const int64_t rows = out_rows(x, sh);
  const float *ref = x->ref + (x->op == MK_FUSED_GEMM_RS ? (size_t)(x->me * rows * sh->n) : 0);
  double err = 0;
  ASSERT_OK(mk_gemm_rel_err(x->C, ref, rows * sh->n, &err, (mk_stream_t)x->s));
  printf("rank %d: %s M=%lld N=%lld K=%lld (%s): rel err %.3g\n", x->me, what, (long long)sh->m, (long long)sh->n,
         (long long)sh->k,
         mk_fused_uses_ce(x->f, (mk_fused_op)x->op, sh->m, sh->n)                        ? "copy engines"
         : x->op == MK_FUSED_GEMM_AR && mk_fused_ar_two_shot(x->f, sh->m, sh->n) ? "SM roles, two-shot"
                                                                                     : "SM roles",
         err);
  ASSERT_DBL_LE(err, 1e-2);
  if (x->op == MK_FUSED_GEMM_AR) {
    uint64_t hash = c_hash(x, sh), all[64];
    ASSERT_OK(mk_comm_allgather(x->c, &hash, all, sizeof hash));
    for (int p = 0; p < x->W; p++) ASSERT_UEQ(all[x->first + p], all[x->first]);
  }
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 600);
  const char *opname = argc > 1 ? argv[1] : "";
  ctx x;
  memset(&x, 0, sizeof x);
  /* The transfer mode, set before mk_fused_create (RS/AR allocate their staging then). */
  static const char *const envs[3] = {"MK_FUSED_AG_COPY", "MK_FUSED_RS_COPY", "MK_FUSED_AR_COPY"};
  static const char *const names[3] = {"ag", "rs", "ar"};
  x.op = -1;
  for (int op = 0; op < 3; op++)
    if (!strncmp(opname, names[op], 2) && (!opname[2] || !strcmp(opname + 2, "_ce") || !strcmp(opname + 2, "_auto") ||
                                           (op != MK_FUSED_AG_GEMM && (!strcmp(opname + 2, "_ceov") || !strcmp(opname + 2, "_tma") ||
                                                                      !strcmp(opname + 2, "_tail") ||
                                                                      !strcmp(opname + 2, "_push") ||
                                                                      !strcmp(opname + 2, "_beside") ||
                                                                      !strcmp(opname + 2, "_fold"))) ||
                                           (op != MK_FUSED_AG_GEMM && !strcmp(opname + 2, "_cefold")) ||
                                           (op == MK_FUSED_GEMM_AR && !strcmp(opname + 2, "_two"))))
      x.op = op;
  if (x.op < 0)
    MK_TEST_FAIL_("usage: test_fused ag|rs|ar[_ce|_auto], rs|ar_ceov, rs|ar_tma, rs|ar_tail, rs|ar_push, rs|ar_beside, "
                  "rs|ar_fold, rs|ar_cefold, ar_two (got '%s')",
                  opname);
  const char *ce_env = envs[x.op];
  /* *_beside: the reduction on SMs beside the GEMM (MK_FUSED_BESIDE=1) where it applies (M a multiple of 128 W:
   * the round shapes), bits compared with the copy-engine mode (its staging, = 1), which the other shapes run. */
  const int beside = !strcmp(opname + 2, "_beside"), fold = !strcmp(opname + 2, "_fold");
  const int cefold = !strcmp(opname + 2, "_cefold");
  const int ov = !strcmp(opname + 2, "_ceov"), ce = ov || beside || fold || cefold || !strcmp(opname + 2, "_ce");
  if (beside) setenv("MK_FUSED_BESIDE", "1", 1);
  if (fold) setenv("MK_FUSED_FOLD", "1", 1);
  else if (strcmp(opname + 2, "_auto")) setenv("MK_FUSED_FOLD", "0", 1); /* the named mode, not fold (AR's default at 2) */
  /* ar_two: the two-shot on SM roles wherever it applies (M a multiple of 128 W: the round
   * shapes; the odd ones run one-shot between them, so the modes' flags interleave). */
  const int two = !strcmp(opname + 2, "_two");
  if (strcmp(opname + 2, "_auto")) setenv(ce_env, ce ? "1" : "0", 1);
  if (ov) setenv("MK_FUSED_CE_OVERLAP", "1", 1);
  if (two) setenv("MK_FUSED_AR_TWO_SHOT", "1", 1);
  /* ar, ar_ce, ar_ceov: the one-shot / copy-engine paths at the round shape too (not the two-shot by shape). */
  if (x.op == MK_FUSED_GEMM_AR && (!opname[2] || ce)) setenv("MK_FUSED_AR_TWO_SHOT", "0", 1);
  /* *_tma: the reducers load with 2-D TMA boxes (MK_FUSED_REDUCE_TMA=1), SM roles. */
  const int tma = !strcmp(opname + 2, "_tma");
  if (tma) setenv("MK_FUSED_REDUCE_TMA", "1", 1), setenv("MK_FUSED_PUSH", "0", 1); /* push mode reads no peer */
  /* *_tail: the GEMM CTAs join the reducers after their last tile (MK_FUSED_TAIL=1, the default),
   * bits compared with the role CTAs alone; ar_tail with the two-shot where it applies. */
  const int tail = !strcmp(opname + 2, "_tail");
  if (tail) setenv("MK_FUSED_TAIL", "1", 1);
  if (tail && x.op == MK_FUSED_GEMM_AR) setenv("MK_FUSED_AR_TWO_SHOT", "1", 1);
  /* *_push: the GEMM stores other owners' rows into their staging (MK_FUSED_PUSH=1, the default in one
   * node group), bits compared with the reducers pulling the partials; ar_push with the two-shot. */
  const int push = !strcmp(opname + 2, "_push");
  if (push && x.op == MK_FUSED_GEMM_AR) setenv("MK_FUSED_AR_TWO_SHOT", "1", 1);
  const char *cmp_env = tma      ? "MK_FUSED_REDUCE_TMA"
                        : tail   ? "MK_FUSED_TAIL"
                        : push   ? "MK_FUSED_PUSH"
                        : beside ? "MK_FUSED_BESIDE"
                        : fold   ? "MK_FUSED_FOLD"
                        : cefold ? "MK_FUSED_CE_FOLD"
                                 : NULL;
  mk_test_require_gpus(2);
  ASSERT_OK(mk_comm_create(&x.c));
  const mk_world *w = mk_comm_world(x.c);
  const int gsize = argc > 2 && !strncmp(argv[2], "group", 5) ? atoi(argv[2] + 5) : 0;
  if (argc > 2 && (gsize < 2 || w->size % gsize))
    MK_TEST_FAIL_("argv[2]: want groupN, N >= 2 dividing the %d ranks (got '%s')", w->size, argv[2]);
  x.W = gsize ? gsize : w->size;
  x.first = gsize ? w->rank / gsize * gsize : 0;
  x.gid = gsize ? w->rank / gsize : 0;
  x.me = w->rank - x.first;
  x.seed = mk_test_seed();
  ASSERT_OK(mk_comm_bcast(x.c, &x.seed, sizeof x.seed, 0));
  CUDA_OK(cudaStreamCreateWithFlags(&x.s, cudaStreamNonBlocking));
  const int64_t W = x.W;
  /* odd: M/W = 1002 rows per rank (not a multiple of 128), N % 128 != 0; round; small (decode); then
   * N = 1120 and 1344 at M = 1024 W, where AG+GEMM's wave model (MK_FUSED_AG_WIDTHS=1) picks the 160- and
   * 224-wide tiles when all 132 SMs of an H200 compute (copy-engine mode, 2 or 4 ranks; mk_gemm_dp_cost). */
  const shape shapes[] = {{W * 1002, 1000, 776}, {W * 512, 1024, 512}, {W * 4, 2048, 1024}, {W * 1002, 1000, 776},
                          {W * 1024, 1120, 512},  {W * 1024, 1344, 512}};
  const int nshapes = sizeof shapes / sizeof shapes[0];
  int64_t mm = 0, mn = 0, mk = 0;
  for (int i = 0; i < nshapes; i++) {
    if (shapes[i].m > mm) mm = shapes[i].m;
    if (shapes[i].n > mn) mn = shapes[i].n;
    if (shapes[i].k > mk) mk = shapes[i].k;
  }
  if (gsize && gsize < w->size) { /* refused before any collective step: a group without this rank, one across
                                    node groups */
    mk_fused_t *no = NULL;
    ASSERT_STATUS(mk_fused_create_group(x.c, (x.first + gsize) % w->size, gsize, 1u << x.op, mm, mn, mk, &no),
                  MK_STATUS_INVALID_ARGUMENT);
    const int f0 = w->local_size - 1; /* ranks f0, f0 + 1: the last of node group 0 and the first of 1 */
    if (w->nnodes > 1 && (w->rank == f0 || w->rank == f0 + 1))
      ASSERT_STATUS(mk_fused_create_group(x.c, f0, 2, 1u << x.op, mm, mn, mk, &no), MK_STATUS_INVALID_ARGUMENT);
    ASSERT_TRUE(no == NULL);
  }
  ASSERT_OK(mk_fused_create_group(x.c, x.first, x.W, 1u << x.op, mm, mn, mk, &x.f));
  printf("rank %d: %d ranks (group %d of ranks %d .. %d) in %d node group(s)\n", w->rank, w->size, x.gid, x.first,
         x.first + x.W - 1, w->nnodes);
  CUDA_OK(cudaMalloc((void **)&x.A, (size_t)(mm * mk) * 2));
  CUDA_OK(cudaMalloc((void **)&x.Afull, (size_t)(mm * mk) * 2));
  CUDA_OK(cudaMalloc((void **)&x.B, (size_t)(mn * mk) * 2));
  CUDA_OK(cudaMalloc((void **)&x.C, (size_t)(mm * mn) * 2));
  CUDA_OK(cudaMalloc((void **)&x.ref, (size_t)(mm * mn) * 4));
  if (x.op != MK_FUSED_AG_GEMM) {
    CUDA_OK(cudaMalloc((void **)&x.Acat, (size_t)(mm * mk * W) * 2));
    CUDA_OK(cudaMalloc((void **)&x.Bcat, (size_t)(mn * mk * W) * 2));
    CUDA_OK(cudaMalloc((void **)&x.Bp, (size_t)(mn * mk) * 2));
  }

  for (int i = 0; i < nshapes; i++) {
    x.inplace = x.op == MK_FUSED_AG_GEMM && (i & 1); /* AG: shapes 1 and 3 zero-copy */
    prepare(&x, &shapes[i], i);
    poison(&x, &shapes[i]);
    ASSERT_OK(call(&x, &shapes[i]));
    check(&x, &shapes[i], "single call");
  }

  /* *_tma, *_tail: each shape on the same inputs with the parameter 0, then 1 (read per call):
   * the same bits (the same fp32 sums in rank order, whichever CTA sums a block). */
  for (int i = 0; cmp_env && i < 3; i++) {
    uint64_t h[2];
    prepare(&x, &shapes[i], 40 + i);
    for (int t = 0; t < 2; t++) {
      setenv(cmp_env, t ? "1" : "0", 1);
      mk_param_reset_cache();
      poison(&x, &shapes[i]);
      ASSERT_OK(call(&x, &shapes[i]));
      const char *on = tma      ? "TMA reducers"
                       : tail   ? "GEMM CTAs join the reducers"
                       : beside ? "beside"
                       : fold   ? "fold"
                       : cefold ? "copy engines, own rows summed in the epilogue"
                                : "push";
      const char *off = tma      ? "register reducers"
                        : tail   ? "role CTAs alone"
                        : cefold ? "copy engines, reduce kernel"
                        : beside || fold ? "copy engines"
                                         : "pull";
      check(&x, &shapes[i], t ? on : off);
      h[t] = c_hash(&x, &shapes[i]);
    }
    ASSERT_UEQ(h[1], h[0]);
  }
  if (tma) ASSERT_TRUE(mk_fused_reduce_tma_shapes(x.f, (mk_fused_op)x.op) > 0); /* the TMA path did run */
  if (push && x.f) { /* the push mode did run (in one node group: emulated nodes keep pulling) */
    const int pushed = mk_fused_push_calls(x.f, (mk_fused_op)x.op);
    printf("rank %d: %d calls in push mode\n", x.me, pushed);
    ASSERT_TRUE(pushed > 0);
  }
  /* Ranks sharing a GPU (mk-launch --gpus, MK_GPU_SHARE=1) never take the copy-engine modes (copy_engine.c), nor
   * beside, fold and copy-engine fold, which run on them: every call above ran on SM roles, the bits compared are of
   * two such calls, and the counts below are not asked for. */
  const int shared = mk_comm_gpu_shared(x.c);
  if (shared && (beside || fold || cefold || getenv("TEST_EXPECT_CE_FOLD")))
    printf("rank %d: ranks share a GPU: no copy-engine mode taken, its call count not checked\n", x.me);
  if ((beside || fold || cefold) && !shared) { /* the comparison ran at the round shape; the calls below run in the
                                                  mode from here on, where it applies (shape 1), and it did run */
    setenv(cmp_env, "1", 1);
    mk_param_reset_cache();
    const int n = beside   ? mk_fused_beside_calls(x.f, (mk_fused_op)x.op)
                  : cefold ? mk_fused_ce_fold_calls(x.f, (mk_fused_op)x.op)
                           : mk_fused_fold_calls(x.f, (mk_fused_op)x.op);
    printf("rank %d: %d calls in %s mode\n", x.me, n, beside ? "beside" : cefold ? "copy-engine fold" : "fold");
    ASSERT_TRUE(n > 0);
    if (fold)
      ASSERT_TRUE(mk_fused_fold(x.f, (mk_fused_op)x.op, shapes[1].m, shapes[1].n) &&
                  !mk_fused_fold(x.f, (mk_fused_op)x.op, shapes[0].m, shapes[0].n));
  }

  if (getenv("TEST_EXPECT_CE_FOLD") && !shared) { /* ar_auto, 2 ranks, a low MK_FUSED_AR_CE_MIN_MB: the default took it */
    const int n = mk_fused_ce_fold_calls(x.f, (mk_fused_op)x.op);
    printf("rank %d: %d calls on copy engines with the own rows summed in the epilogue\n", x.me, n);
    ASSERT_TRUE(n > 0);
  }
  /* 100 back-to-back calls (no host synchronisation between them), then the check. */
  const shape *sh = &shapes[two || beside || fold || cefold ? 1 : 0];
  if (two) ASSERT_TRUE(mk_fused_ar_two_shot(x.f, sh->m, sh->n) && !mk_fused_ar_two_shot(x.f, shapes[0].m, shapes[0].n));
  x.inplace = 0;
  prepare(&x, sh, 7);
  poison(&x, sh);
  for (int it = 0; it < 100; it++) ASSERT_OK(call(&x, sh));
  check(&x, sh, "100 back-to-back calls");

  /* A captured graph of one call, replayed 100 times. */
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CUDA_OK(cudaStreamBeginCapture(x.s, cudaStreamCaptureModeThreadLocal));
  ASSERT_OK(call(&x, sh));
  CUDA_OK(cudaStreamEndCapture(x.s, &g));
  CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
  prepare(&x, sh, 8);
  poison(&x, sh);
  for (int it = 0; it < 100; it++) CUDA_OK(cudaGraphLaunch(ge, x.s));
  check(&x, sh, "100 graph replays");
  /* After the replays, a plain call still lines up with the peers' epochs. */
  poison(&x, &shapes[1]);
  prepare(&x, &shapes[1], 9);
  poison(&x, &shapes[1]);
  ASSERT_OK(call(&x, &shapes[1]));
  check(&x, &shapes[1], "call after replays");
  CUDA_OK(cudaGraphExecDestroy(ge));
  CUDA_OK(cudaGraphDestroy(g));
  /* AR with M <= 64 on one node group: the small-M one-shot path (skinny GEMM pushing its
   * slabs, gemm_ar.cu; MK_GEMM_SKINNY_BN from the environment: test_fused_ar_bn128_4 runs 128)
   * at M = 1, 16, 33, 64, 65, 100, 128 (token widths 16 .. 128, full and partial) with N a
   * multiple of neither 64 nor 128 (1000), each twice (bit-identical), then 100 back-to-back
   * calls and 100 graph replays of M = 16 and M = 128 (other node counts and
   * MK_FUSED_AR_COPY=1: the other paths, the same checks). */
  if (x.op == MK_FUSED_GEMM_AR) {
    /* Forced (auto takes it too for GEMM+AR since 5f41751): the same path whatever MK_GEMM_SKINNY says. */
    char skinny_was[24]; /* the value in effect (the loader's), restored below */
    snprintf(skinny_was, sizeof skinny_was, "%lld", (long long)mk_param_gemm_skinny());
    setenv("MK_GEMM_SKINNY", "1", 1);
    /* k-slices wherever the tiles leave SMs idle (these shapes' tiles are under the default's 256 KiB):
     * the split-K fix-up before the pushes stays covered */
    char split_was[24];
    snprintf(split_was, sizeof split_was, "%lld", (long long)mk_param_gemm_skinny_split_kb());
    setenv("MK_GEMM_SKINNY_SPLIT_KB", "0", 1);
    mk_param_reset_cache();
    const shape sm[] = {{1, 1000, 776},   {16, 1000, 776},  {33, 1000, 776},  {64, 1000, 776},  {65, 1000, 776},
                        {100, 1000, 776}, {128, 1000, 776}, {64, 2048, 1024}, {128, 2048, 1024}};
    for (int i = 0; i < (int)(sizeof sm / sizeof sm[0]); i++) {
      prepare(&x, &sm[i], 30 + i);
      poison(&x, &sm[i]);
      ASSERT_OK(call(&x, &sm[i]));
      check(&x, &sm[i], "small M");
      const uint64_t first = c_hash(&x, &sm[i]);
      poison(&x, &sm[i]);
      ASSERT_OK(call(&x, &sm[i]));
      ASSERT_UEQ(c_hash(&x, &sm[i]), first); /* a repeat gives the same bits */
    }
    for (int r = 0; r < 2; r++) {
      const shape *q = &sm[r ? 6 : 1]; /* M = 16 (T = 16), M = 128 (T = 128) */
      /* Calls 0..98 multiply other data (Afull as A): a read of a slot before its peer's
       * store of the last call would show in the result of call 99. */
      prepare(&x, q, 50 + 2 * r);
      poison(&x, q);
      ASSERT_OK(mk_fill_uniform_bf16(x.Afull, (size_t)(q->m * q->k), x.seed + 77 + (uint64_t)x.me, -1.0f, 1.0f,
                                     (mk_stream_t)x.s));
      uint16_t *const a_keep = x.A;
      for (int it = 0; it < 100; it++) {
        x.A = it < 99 ? x.Afull : a_keep;
        ASSERT_OK(call(&x, q));
      }
      x.A = a_keep;
      check(&x, q, "small M, 100 back-to-back calls");
      CUDA_OK(cudaStreamBeginCapture(x.s, cudaStreamCaptureModeThreadLocal));
      ASSERT_OK(call(&x, q));
      CUDA_OK(cudaStreamEndCapture(x.s, &g));
      CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
      prepare(&x, q, 51 + 2 * r);
      poison(&x, q);
      for (int it = 0; it < 100; it++) CUDA_OK(cudaGraphLaunch(ge, x.s));
      check(&x, q, "small M, 100 graph replays");
      CUDA_OK(cudaGraphExecDestroy(ge));
      CUDA_OK(cudaGraphDestroy(g));
    }
    /* Phase stamps (mk_fused_ar_profile) of one M = 16 call (split-K at N = 1000): the result
     * unchanged, every slot stamped, in order (each is a maximum over CTAs of a per-CTA ordered
     * sequence; entry the minimum). */
    if (mk_fused_ar_small_m(x.f, &(mk_fused_args){.m = sm[1].m, .n = sm[1].n, .k = sm[1].k, .b_layout = MK_GEMM_B_NK})) {
      uint64_t ph[MK_FUSED_AR_PHASES];
      ASSERT_OK(mk_fused_ar_profile(x.f, 1));
      prepare(&x, &sm[1], 60);
      poison(&x, &sm[1]);
      ASSERT_OK(call(&x, &sm[1]));
      check(&x, &sm[1], "small M, phase stamps");
      ASSERT_OK(mk_fused_ar_phases(x.f, ph));
      for (int i = 0; i < MK_FUSED_AR_PHASES; i++) ASSERT_TRUE(ph[i] != 0);
      for (int i = 1; i < MK_FUSED_AR_PHASES; i++) ASSERT_TRUE(ph[i] >= ph[i - 1]);
      ASSERT_OK(mk_fused_ar_profile(x.f, 0));
    }
    setenv("MK_GEMM_SKINNY", skinny_was, 1);
    setenv("MK_GEMM_SKINNY_SPLIT_KB", split_was, 1);
    mk_param_reset_cache();
  }
  /* *_ce: the SM roles and the copy engines alternate (their flags and buffers must
   * not mix up); AG with the shard not in place, then in place. *_ceov: the copy-engine calls
   * alternate overlapped (1, 5) and plain (3) reduces. */
  for (int i = 0; ce && i < (ov ? 6 : 4); i++) {
    setenv(ce_env, i & 1 ? "1" : "0", 1);
    if (ov) setenv("MK_FUSED_CE_OVERLAP", i == 3 ? "0" : "1", 1);
    mk_param_reset_cache();
    x.inplace = x.op == MK_FUSED_AG_GEMM && i >= 2;
    prepare(&x, &shapes[i & 1], 10 + i);
    poison(&x, &shapes[i & 1]);
    ASSERT_OK(call(&x, &shapes[i & 1]));
    check(&x, &shapes[i & 1], i & 1 ? "copy engines after SM roles" : "SM roles after copy engines");
  }
  x.inplace = 0;

  /* A second handle of the op on the same comm (a model rebuilt, another layer's handle),
   * created while the first lives and used interleaved with it: each counts its own calls
   * (its proxied counters start at zero while the comm's epoch of the op has advanced). */
  {
    mk_fused_t *f1 = x.f, *f2 = NULL;
    ASSERT_OK(mk_fused_create_group(x.c, x.first, x.W, 1u << x.op, mm, mn, mk, &f2));
    for (int i = 0; i < 4; i++) {
      x.f = i & 1 ? f1 : f2;
      prepare(&x, &shapes[2 - (i & 1)], 20 + i);
      poison(&x, &shapes[2 - (i & 1)]);
      ASSERT_OK(call(&x, &shapes[2 - (i & 1)]));
      check(&x, &shapes[2 - (i & 1)], i & 1 ? "first handle, interleaved" : "second handle, interleaved");
    }
    mk_fused_destroy(f2); /* check() synchronised the stream */
    x.f = f1;
  }

  /* Bad arguments are refused with a message (no kernel runs). */
  shape bad = {W * 8, 1001, 512}; /* N not a multiple of 8 */
  ASSERT_STATUS(call(&x, &bad), MK_STATUS_INVALID_ARGUMENT);
  bad = (shape){mm + W, 1024, 512}; /* larger than the workspace */
  ASSERT_STATUS(call(&x, &bad), MK_STATUS_INVALID_ARGUMENT);
  if (x.op != MK_FUSED_GEMM_AR) {
    bad = (shape){W * 8 + 1, 1024, 512}; /* M not a multiple of W */
    ASSERT_STATUS(call(&x, &bad), MK_STATUS_INVALID_ARGUMENT);
  }
  mk_fused_args na = {x.A, x.B, x.C, 64, 64, 64, MK_GEMM_B_NK, 0};
  ASSERT_STATUS(mk_ag_gemm(x.op == MK_FUSED_AG_GEMM ? x.f : NULL, &na, (mk_stream_t)x.s),
                x.op == MK_FUSED_AG_GEMM ? MK_STATUS_OK : MK_STATUS_INVALID_ARGUMENT);
  if (x.op != MK_FUSED_AG_GEMM) /* a handle without the op */
    ASSERT_STATUS(mk_ag_gemm(x.f, &na, (mk_stream_t)x.s), MK_STATUS_INVALID_USAGE);
  CUDA_OK(cudaStreamSynchronize(x.s));
  ASSERT_OK(mk_comm_check(x.c));

  CUDA_OK(cudaFree(x.A));
  CUDA_OK(cudaFree(x.Afull));
  CUDA_OK(cudaFree(x.B));
  CUDA_OK(cudaFree(x.C));
  CUDA_OK(cudaFree(x.ref));
  cudaFree(x.Acat), cudaFree(x.Bcat), cudaFree(x.Bp);
  CUDA_OK(cudaStreamDestroy(x.s));
  mk_fused_destroy(x.f);
  mk_comm_destroy(x.c);
  printf("rank %d: ok\n", x.me);
  return 0;
}
