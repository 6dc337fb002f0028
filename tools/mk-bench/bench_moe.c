/* bench_moe.c — `mk-bench moe`, under mk-launch (e.g. `mk-launch -n 4 -- mk-bench moe`): the
 * expert-parallel MoE block (dispatch ... combine), fused against unfused, per shape (tokens per
 * rank T, hidden H, experts E, top-k, expert size I) and routing distribution:
 *   uniform  random router logits
 *   zipf     logits biased by -2 ln(e + 1): expert e gets ~1/(e+1)^2 of the top-1 picks
 *   hot      every token's first pick is expert 0 (all tokens to one expert)
 * Rows `fused` and `unfused` carry compute_ms (both grouped GEMMs alone, mkernel core, on the
 * same layout), comm_ms (NCCL all-to-allv dispatch + combine alone, same counts) and their
 * maximum bound_ms: the overlap bound. The fused row's rel_err is its difference from the
 * unfused output (both bf16). Times are the maximum over ranks of each rank's median. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/mk_comm.h"
#include "core/check.h"
#include "core/rng.h"
#include "kernels/mk_kernels.h"
#include "mk_bench.h"

typedef struct moe_shape {
  int64_t T;
  int H, E, K, I;
} moe_shape;

typedef struct ctx {
  mk_moe_t *m;
  const uint16_t *x;
  const int32_t *ids;
  const float *w;
  uint16_t *out;
  int64_t T;
  int path; /* 0 fused, 1 unfused, 2 compute part, 3 comm part */
} ctx;

static mk_status run_one(void *user, int iter, void *stream) {
  ctx *c = user;
  (void)iter;
  if (c->path <= 1) return mk_moe_forward(c->m, (mk_moe_path)c->path, c->x, c->T, c->ids, c->w, c->out, stream);
  return mk_moe_time_parts(c->m, c->path == 2, stream);
}

static double rel_err_host(const uint16_t *a, const uint16_t *b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    const double x = mk_bf16_to_float(a[i]), y = mk_bf16_to_float(b[i]);
    if (!isfinite(x)) return INFINITY;
    num += (x - y) * (x - y);
    den += y * y;
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* One shape: weights, tokens, routing, both paths checked then timed. `fl`: the fused path's
 * options from the flags (comm_ctas, swiglu_pass, schedule, profile = --breakdown, split_k). */
static mk_status bench_shape(mk_comm_t *comm, const mk_bench_opts *o, mk_bench_report *r, const moe_shape *sh,
                             const char *routing, const mk_moe_args *fl, cudaStream_t s) {
  const int breakdown = fl->profile;
  const mk_world *wd = mk_comm_world(comm);
  const int W = wd->size, El = sh->E / W;
  const int64_t T = sh->T;
  mk_status st = MK_STATUS_OK;
  uint16_t *w1 = NULL, *w2 = NULL, *x = NULL, *of = NULL, *ou = NULL, *hf = NULL, *hu = NULL;
  float *logits = NULL, *hl = NULL, *wts = NULL;
  int32_t *ids = NULL;
  mk_moe_t *m = NULL;
  if (sh->E % W) {
    if (o->rank == 0) printf("  skipped E=%d: not a multiple of %d ranks\n", sh->E, W);
    return MK_STATUS_OK;
  }
  const size_t n1 = (size_t)El * 2 * sh->I * sh->H, n2 = (size_t)El * sh->H * sh->I, nx = (size_t)T * sh->H;
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&w1, n1 * 2), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&w2, n2 * 2), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&x, nx * 2), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&of, nx * 2), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&ou, nx * 2), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&logits, sizeof(float) * (size_t)T * sh->E), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&wts, sizeof(float) * (size_t)T * sh->K), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&ids, sizeof(int32_t) * (size_t)T * sh->K), st, fail);
  const uint64_t seed = o->seed + 7919ull * (uint64_t)wd->rank;
  const float sw = 1.0f / sqrtf((float)sh->H), sd = 1.0f / sqrtf((float)sh->I);
  MK_CHECK_GOTO(mk_fill_uniform_bf16(w1, n1, seed + 1, -sw, sw, s), st, fail);
  MK_CHECK_GOTO(mk_fill_uniform_bf16(w2, n2, seed + 2, -sd, sd, s), st, fail);
  MK_CHECK_GOTO(mk_fill_uniform_bf16(x, nx, seed + 3, -1.0f, 1.0f, s), st, fail);
  hl = malloc(sizeof(float) * (size_t)T * sh->E);
  hf = malloc(nx * 2), hu = malloc(nx * 2);
  if (!hl || !hf || !hu) {
    st = MK_STATUS_OUT_OF_MEMORY;
    goto fail;
  }
  for (int64_t t = 0; t < T; t++)
    for (int e = 0; e < sh->E; e++) {
      float v = mk_rng_uniform(seed + 4, (uint64_t)(t * sh->E + e), -1.0f, 2.0f);
      if (!strcmp(routing, "zipf")) v += -2.0f * logf((float)e + 1.0f);
      if (!strcmp(routing, "hot") && e == 0) v += 100.0f;
      hl[t * sh->E + e] = v;
    }
  MK_CUDA_CHECK_GOTO(cudaMemcpy(logits, hl, sizeof(float) * (size_t)T * sh->E, cudaMemcpyHostToDevice), st, fail);
  MK_CUDA_CHECK_GOTO(cudaDeviceSynchronize(), st, fail); /* the copy's last DMA (legacy stream) before s's work */
  MK_CHECK_GOTO(mk_moe_route(logits, T, sh->E, sh->K, 1, NULL, ids, wts, NULL, NULL, s), st, fail);
  mk_moe_args a = {.hidden = sh->H, .inter = sh->I, .n_experts = sh->E, .top_k = sh->K, .max_tokens = T,
                   .w1 = w1, .w2 = w2, .comm_ctas = fl->comm_ctas, .swiglu_pass = fl->swiglu_pass,
                   .schedule = fl->schedule, .profile = fl->profile, .split_k = fl->split_k};
  MK_CHECK_GOTO(mk_moe_create(comm, &a, &m), st, fail);
  /* correctness: fused vs unfused, and fused twice (bit-identical) */
  ctx c = {m, x, ids, wts, of, T, 0};
  MK_CHECK_GOTO(mk_moe_forward(m, MK_MOE_UNFUSED, x, T, ids, wts, ou, s), st, fail);
  MK_CHECK_GOTO(mk_moe_forward(m, MK_MOE_FUSED, x, T, ids, wts, of, s), st, fail);
  MK_CUDA_CHECK_GOTO(cudaStreamSynchronize(s), st, fail);
  MK_CHECK_GOTO(mk_comm_check(comm), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMemcpy(hf, of, nx * 2, cudaMemcpyDeviceToHost), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMemcpy(hu, ou, nx * 2, cudaMemcpyDeviceToHost), st, fail);
  double err = rel_err_host(hf, hu, nx);
  MK_CHECK_GOTO(mk_moe_forward(m, MK_MOE_FUSED, x, T, ids, wts, of, s), st, fail);
  MK_CUDA_CHECK_GOTO(cudaStreamSynchronize(s), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMemcpy(hu, of, nx * 2, cudaMemcpyDeviceToHost), st, fail);
  const int same = !memcmp(hf, hu, nx * 2);
  double mine[3] = {err, same ? 0.0 : 1.0, 0}, all[3 * MK_MOE_MAX_RANKS];
  MK_CHECK_GOTO(mk_comm_allgather(comm, mine, all, sizeof mine), st, fail);
  double worst = 0, diff = 0;
  for (int q = 0; q < W; q++) worst = fmax(worst, all[3 * q]), diff += all[3 * q + 1];
  if (o->rank == 0 && (worst > 2e-2 || diff > 0))
    mk_bench_report_fail(r, "moe T=%lld H=%d E=%d k=%d I=%d %s: fused vs unfused rel err %.3g, %d rank(s) not "
                         "bit-identical across runs", (long long)T, sh->H, sh->E, sh->K, sh->I, routing, worst,
                         (int)diff);
  /* timings: fused, unfused, the GEMMs alone, the all-to-alls alone */
  mk_bench_stats t[4];
  for (int p = 0; p < 4; p++) {
    /* --graph: the fused path from graph replays; the others eagerly (the unfused path reads the counts on
       the host each call, so it cannot be captured; the parts time it piecewise) */
    mk_bench_opts op = *o;
    op.graph = o->graph && p == 0;
    c.path = p;
    c.out = p == 1 ? ou : of;
    MK_CHECK_GOTO(mk_bench_time(&op, run_one, &c, s, &t[p]), st, fail);
    MK_CHECK_GOTO(mk_comm_check(comm), st, fail);
  }
  double med[12], allmed[12 * MK_MOE_MAX_RANKS];
  for (int p = 0; p < 4; p++) med[3 * p] = t[p].median_ms, med[3 * p + 1] = t[p].p10_ms, med[3 * p + 2] = t[p].p90_ms;
  MK_CHECK_GOTO(mk_comm_allgather(comm, med, allmed, sizeof med), st, fail);
  for (int q = 1; q < W; q++)
    for (int i = 0; i < 12; i++) med[i] = fmax(med[i], allmed[12 * q + i]);
  const double flops = 6.0 * (double)T * sh->K * sh->H * sh->I; /* per rank, on average */
  const double compute = med[6], comm_ms = med[9], bound = fmax(compute, comm_ms);
  for (int p = 0; p < 2; p++) {
    if (!(o->paths & (p ? MK_BENCH_PATH_UNFUSED : MK_BENCH_PATH_FUSED))) continue;
    mk_bench_row row;
    mk_bench_row_init(&row, "moe", p ? "unfused" : "fused");
    char extra[32] = "";
    if (fl->split_k) snprintf(extra, sizeof extra, ",\"split_k\":%d", fl->split_k == 1 ? 0 : fl->split_k);
    snprintf(row.shape, sizeof row.shape, "{\"t\":%lld,\"h\":%d,\"e\":%d,\"k\":%d,\"i\":%d,\"routing\":\"%s\"%s}",
             (long long)T, sh->H, sh->E, sh->K, sh->I, routing, extra);
    row.ranks = W;
    row.nodes = wd->nnodes;
    row.t.median_ms = med[3 * p], row.t.p10_ms = med[3 * p + 1], row.t.p90_ms = med[3 * p + 2];
    row.t.host_ms = t[p].host_ms;
    row.tflops = flops / (row.t.median_ms * 1e9);
    row.rel_err = p ? NAN : worst;
    row.compute_ms = compute, row.comm_ms = comm_ms, row.bound_ms = bound;
    if (o->rank == 0) MK_CHECK_GOTO(mk_bench_report_add(r, &row), st, fail);
  }
  if (o->rank == 0)
    printf("  T=%-5lld H=%-5d E=%-4d k=%d I=%-5d %-7s fused%s %8.3f ms  unfused %8.3f ms  gemms %8.3f  a2a %8.3f  "
           "fused/bound %.2f  err %.2g\n",
           (long long)T, sh->H, sh->E, sh->K, sh->I, routing, o->graph ? " (graph)" : "", med[0], med[3], compute,
           comm_ms, med[0] / bound, worst);
  if (breakdown) { /* 3 more fused calls, back to back: the last one's phases, latest over ranks (each from its
                      own exchange start). A lone call's "counts" would also hold the skew of the ranks' host
                      launches after the allgather above (tens of us), which calls in a stream do not see. */
    double ph[MK_MOE_PHASES], allph[MK_MOE_PHASES * MK_MOE_MAX_RANKS];
    for (int q = 0; q < 3; q++) MK_CHECK_GOTO(mk_moe_forward(m, MK_MOE_FUSED, x, T, ids, wts, of, s), st, fail);
    MK_CHECK_GOTO(mk_moe_phases(m, ph), st, fail);
    MK_CHECK_GOTO(mk_comm_allgather(comm, ph, allph, sizeof ph), st, fail);
    if (o->rank == 0) {
      printf("    phases ms (max over ranks):");
      for (int i = 1; i < MK_MOE_PHASES; i++) {
        double v = -1;
        for (int q = 0; q < W; q++)
          if (!isnan(allph[MK_MOE_PHASES * q + i])) v = fmax(v, allph[MK_MOE_PHASES * q + i]);
        printf(" %s %.3f", mk_moe_phase_name(i), v);
      }
      printf("\n");
    }
  }
fail:
  mk_moe_destroy(m);
  cudaFree(w1), cudaFree(w2), cudaFree(x), cudaFree(of), cudaFree(ou), cudaFree(logits), cudaFree(wts), cudaFree(ids);
  free(hl), free(hf), free(hu);
  return st;
}

int mk_bench_moe(int argc, char **argv) {
  mk_bench_opts o;
  mk_bench_opts_default(&o);
  moe_shape shapes[32];
  int ns = 0;
  const char *routings[3] = {"uniform", NULL, NULL};
  int nr = 0;
  int64_t comm_ctas = 0, split_k = 0; /* split_k 0: AUTO (no flag); --split-k 0 -> 1 (off) */
  int swiglu_pass = 0, schedule = MK_MOE_SCHED_AUTO, breakdown = 0;
  for (int i = 1; i < argc; i++) {
    int used = mk_bench_parse_common(&o, argc, argv, i);
    if (used < 0) return 2;
    if (used) {
      i += used - 1;
      continue;
    }
    if (!strcmp(argv[i], "--shape") && i + 1 < argc && ns < 32) {
      long long T;
      int H, E, K, I;
      if (sscanf(argv[++i], "%lld,%d,%d,%d,%d", &T, &H, &E, &K, &I) != 5 || T < 1 || H < 8 || H % 8 || E < 1 ||
          K < 1 || K > 8 || K > E || I < 8 || I % 8) {
        fprintf(stderr, "mk-bench moe: --shape wants T,H,E,K,I (T >= 1, H and I multiples of 8, 1 <= K <= min(E, "
                        "8)), got '%s'\n", argv[i]);
        return 2;
      }
      shapes[ns++] = (moe_shape){T, H, E, K, I};
    } else if (!strcmp(argv[i], "--routing") && i + 1 < argc && nr < 3) {
      const char *v = argv[++i];
      if (strcmp(v, "uniform") && strcmp(v, "zipf") && strcmp(v, "hot")) {
        fprintf(stderr, "mk-bench moe: --routing wants uniform, zipf or hot, got '%s'\n", v);
        return 2;
      }
      routings[nr++] = v;
    } else if (!strcmp(argv[i], "--comm-ctas") && i + 1 < argc) {
      if (mk_bench_parse_i64("--comm-ctas", argv[++i], 0, 1024, &comm_ctas)) return 2;
    } else if (!strcmp(argv[i], "--split-k") && i + 1 < argc) {
      if (mk_bench_parse_i64("--split-k", argv[++i], -16, 16, &split_k)) return 2;
      if (split_k == 0 || split_k == -1) split_k = 1; /* off (mk_moe_args: 0 is AUTO) */
    } else if (!strcmp(argv[i], "--swiglu-pass")) {
      swiglu_pass = 1;
    } else if (!strcmp(argv[i], "--breakdown")) {
      breakdown = 1;
    } else if (!strcmp(argv[i], "--schedule") && i + 1 < argc) {
      const char *v = argv[++i];
      schedule = !strcmp(v, "auto") ? MK_MOE_SCHED_AUTO : !strcmp(v, "overlap") ? MK_MOE_SCHED_OVERLAP
                 : !strcmp(v, "serial") ? MK_MOE_SCHED_SERIAL : !strcmp(v, "hybrid") ? MK_MOE_SCHED_HYBRID : -1;
      if (schedule < 0) {
        fprintf(stderr, "mk-bench moe: --schedule wants auto, overlap, serial or hybrid, got '%s'\n", v);
        return 2;
      }
    } else if (!strcmp(argv[i], "--help")) {
      printf("usage: mk-launch -n N [--nodes K] -- mk-bench moe [--shape T,H,E,K,I]... [--routing "
             "uniform|zipf|hot]... [--comm-ctas N] [--swiglu-pass] [--schedule auto|overlap|serial|hybrid] "
             "[--breakdown] [--split-k N] [common flags]\n"
             "  T tokens per rank, H hidden, E experts (a multiple of N), K top-k, I expert size.\n"
             "  Default shapes: (4096,4096,8,2,14336) (4096,2048,128,8,768) (8192,7168,256,8,2048) and T = 16, 128\n"
             "  with each model; default routing uniform. --comm-ctas: CTAs moving rows in the fused path\n"
             "  (0 = the schedule's default).\n"
             "  --swiglu-pass: the fused path runs SwiGLU as a separate pass instead of in the GEMM epilogue.\n"
             "  --schedule: the fused path's placement of phases on the SMs (mk_moe_schedule; default auto).\n"
             "  --breakdown: after each shape, 3 more fused calls back to back, the last one's device timestamps\n"
             "  per phase printed as ms from the count exchange's start (max over ranks).\n"
             "  --split-k N: the fused path's grouped GEMMs may split their last wave of tiles (all tiles\n"
             "  when there are fewer than SMs: decode) in up to N k-slices where a wave model says it pays;\n"
             "  -N: always; 0: off; no flag: AUTO (mk_moe_args.split_k = 0: 8 where the shape is decode-sized).\n"
             "  --graph (common flag): the fused path is timed from CUDA-graph replays (it never synchronises the\n"
             "  host); the unfused path reads the counts on the host every call, cannot be captured, and is\n"
             "  timed eagerly as without the flag (the JSON's top-level \"graph\" is true; rows pair by shape).\n");
      mk_bench_print_common_help(stdout);
      return 0;
    } else {
      fprintf(stderr, "mk-bench moe: unknown flag '%s'\n", argv[i]);
      return 2;
    }
  }
  if (!nr) nr = 1;
  if (!ns) {
    static const moe_shape models[3] = {{4096, 4096, 8, 2, 14336}, {4096, 2048, 128, 8, 768}, {8192, 7168, 256, 8, 2048}};
    for (int q = 0; q < 3; q++) shapes[ns++] = models[q];
    for (int q = 0; q < 3; q++)
      for (int d = 0; d < 2; d++) shapes[ns] = models[q], shapes[ns++].T = d ? 128 : 16;
  }
  mk_world wd;
  const int early = mk_bench_multi_rank("moe", argc, 2, &wd);
  if (early >= 0) return early;
  /* The landing and combine areas live in the symmetric heap: make room unless the user chose. */
  setenv("MK_HEAP_BYTES", "8g", 0 /* keep the user's value */);
  mk_comm_t *comm = NULL;
  mk_bench_report *r = NULL;
  cudaStream_t s = NULL;
  mk_status st;
  int rc = 1;
  MK_CHECK_GOTO(mk_comm_create(&comm), st, fail);
  o.rank = wd.rank, o.nranks = wd.size;
  MK_CHECK_GOTO(mk_comm_bcast(comm, &o.seed, sizeof o.seed, 0), st, fail);
  MK_CUDA_CHECK_GOTO(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), st, fail);
  MK_CHECK_GOTO(mk_bench_report_create(&o, &r), st, fail);
  if (o.rank == 0) /* the seed fixes the routing draw: decode timings move with it (docs/perf/NOTES.md, moe) */
    printf("MoE block, %d ranks (%d node group(s)), fused vs unfused, seed %llu\n", wd.size, wd.nnodes,
           (unsigned long long)o.seed);
  for (int q = 0; q < nr; q++)
    for (int i = 0; i < ns; i++) {
      const mk_moe_args fl = {.comm_ctas = (int)comm_ctas, .swiglu_pass = swiglu_pass, .schedule = schedule,
                              .profile = breakdown, .split_k = (int)split_k};
      st = bench_shape(comm, &o, r, &shapes[i], routings[q], &fl, s);
      if (st != MK_STATUS_OK) {
        if (o.rank == 0) mk_bench_report_fail(r, "moe shape %d (%s): %s", i, routings[q], mk_status_str(st));
        goto done;
      }
    }
done:
  rc = mk_bench_report_finish(r);
  r = NULL;
  if (st != MK_STATUS_OK) rc = 1;
fail:
  if (r) mk_bench_report_finish(r);
  if (s) cudaStreamDestroy(s);
  mk_comm_destroy(comm);
  return rc;
}
