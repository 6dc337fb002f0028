/* bench_fused.c — `mk-bench ag_gemm | gemm_rs | gemm_ar`, under mk-launch (every rank runs
 * it): the fused op (path "fused") against NCCL + cuBLASLt on the same inputs (path
 * "unfused"), with compute_ms = cuBLASLt alone on this rank's GEMM, comm_ms = the NCCL
 * collective alone, bound_ms = max of the two. Times are the max over ranks of each
 * percentile. Both paths are checked against the fp32 reference GEMM (+ fp32 all-reduce) on
 * every run. --autotune times the fused op at several role splits and keeps the best. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/mk_comm.h"
#include "core/check.h"
#include "kernels/mk_kernels.h"
#include "mk_bench.h"

#define FB_MAX_M 16

typedef struct fb {
  mk_fused_op op;
  const char *name;
  mk_comm_t *c;
  mk_fused_t *f;
  mk_nccl_t *nc;
  mk_cublaslt_t *lt;
  int W, me, ctas;
  int64_t m, n, k, ms;
  uint16_t *A, *Afull, *B, *C, *P;
  float *ref;
} fb;

static mk_status run_fused(void *user, int iter, void *stream) {
  fb *x = user;
  (void)iter;
  mk_fused_args a = {x->A, x->B, x->C, x->m, x->n, x->k, MK_GEMM_B_NK, x->ctas};
  if (x->op == MK_FUSED_AG_GEMM) {
    a.A = mk_ag_gemm_shard(x->f, x->m, x->k); /* the shard is produced in place (zero-copy) */
    return mk_ag_gemm(x->f, &a, stream);
  }
  if (x->op == MK_FUSED_GEMM_RS) return mk_gemm_rs(x->f, &a, stream);
  return mk_gemm_ar(x->f, &a, stream);
}

static mk_status run_gemm(void *user, int iter, void *stream) {
  fb *x = user;
  (void)iter;
  if (x->op == MK_FUSED_AG_GEMM) return mk_cublaslt_gemm_bf16(x->lt, x->Afull, x->B, x->C, x->m, x->n, x->k, MK_GEMM_B_NK, stream);
  return mk_cublaslt_gemm_bf16(x->lt, x->A, x->B, x->P, x->m, x->n, x->k, MK_GEMM_B_NK, stream);
}

static mk_status run_coll(void *user, int iter, void *stream) {
  fb *x = user;
  (void)iter;
  if (x->op == MK_FUSED_AG_GEMM) return mk_nccl_all_gather(x->nc, x->A, x->Afull, (size_t)(x->ms * x->k), MK_DTYPE_BF16, stream);
  if (x->op == MK_FUSED_GEMM_RS) return mk_nccl_reduce_scatter(x->nc, x->P, x->C, (size_t)(x->ms * x->n), MK_DTYPE_BF16, stream);
  return mk_nccl_all_reduce(x->nc, x->P, x->C, (size_t)(x->m * x->n), MK_DTYPE_BF16, stream);
}

static mk_status run_unfused(void *user, int iter, void *stream) {
  fb *x = user;
  if (x->op == MK_FUSED_AG_GEMM) {
    MK_CHECK(run_coll(user, iter, stream));
    return run_gemm(user, iter, stream);
  }
  MK_CHECK(run_gemm(user, iter, stream));
  return run_coll(user, iter, stream);
}

/* Times nf callables on every rank, in turns when nf > 1 (after a barrier); outs[f] = the max over ranks of each
 * percentile. --interleave: the four (GEMM alone, collective alone, unfused, fused) in turns, so all run at the
 * same clocks under the power cap. */
static mk_status time_all_n(fb *x, const mk_bench_opts *o, int nf, const mk_bench_fn *fns, void *stream,
                            mk_bench_stats *outs) {
  void *const users[MK_BENCH_MAX_FNS] = {x, x, x, x};
  mk_bench_stats t[MK_BENCH_MAX_FNS], all[64][MK_BENCH_MAX_FNS];
  MK_CHECK(mk_comm_barrier(x->c));
  MK_CHECK(mk_bench_time_n(o, nf, fns, users, stream, t));
  MK_CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)stream));
  MK_CHECK(mk_comm_check(x->c));
  MK_CHECK(mk_comm_allgather(x->c, t, all, sizeof t));
  for (int f = 0; f < nf; f++) {
    outs[f] = all[0][f];
    for (int p = 1; p < x->W; p++) {
      if (all[p][f].median_ms > outs[f].median_ms) outs[f].median_ms = all[p][f].median_ms;
      if (all[p][f].p10_ms > outs[f].p10_ms) outs[f].p10_ms = all[p][f].p10_ms;
      if (all[p][f].p90_ms > outs[f].p90_ms) outs[f].p90_ms = all[p][f].p90_ms;
      if (all[p][f].host_ms > outs[f].host_ms) outs[f].host_ms = all[p][f].host_ms;
    }
  }
  return MK_STATUS_OK;
}

static mk_status time_all(fb *x, const mk_bench_opts *o, mk_bench_fn fn, void *stream, mk_bench_stats *out) {
  return time_all_n(x, o, 1, &fn, stream, out);
}

/* --breakdown (GEMM+AR's small-M path): 3 more fused calls back to back (so the ranks start
 * each call as they do in a stream, not after the host skew of a lone launch), the last one's
 * phase stamps (mk_fused_ar_phases) on every rank; rank 0 prints each phase in us from that
 * rank's own first entry, the latest over the ranks (%globaltimer differs between GPUs by up to
 * ~0.3 ms on 4 x H200, run 2a5f721: only stamps of one GPU are compared), then the host's time to
 * issue one call (fused, unfused: max over ranks). */
static mk_status ar_breakdown(fb *x, void *stream, const mk_bench_stats *tf, const mk_bench_stats *tu) {
  enum { P = MK_FUSED_AR_PHASES };
  uint64_t ph[P], *all = calloc((size_t)x->W * P, sizeof(uint64_t));
  if (!all) MK_ERR_RETURN(MK_STATUS_OUT_OF_MEMORY, MK_SUBSYS_BENCH, "gemm_ar --breakdown: out of host memory");
  mk_status st = mk_fused_ar_profile(x->f, 1);
  for (int q = 0; q < 3 && st == MK_STATUS_OK; q++) st = run_fused(x, 0, stream);
  if (st == MK_STATUS_OK) st = mk_fused_ar_phases(x->f, ph);
  if (st == MK_STATUS_OK) st = mk_fused_ar_profile(x->f, 0);
  if (st == MK_STATUS_OK) st = mk_comm_check(x->c);
  if (st == MK_STATUS_OK) st = mk_comm_allgather(x->c, ph, all, sizeof ph);
  if (st == MK_STATUS_OK && x->me == 0 && all[MK_FUSED_AR_PH_ENTRY]) { /* no stamps: not the small-M path */
    printf("    phases us from each rank's entry (max over ranks):");
    for (int i = 1; i < P; i++) {
      double v = -1;
      for (int q = 0; q < x->W; q++)
        if (all[P * q + i] && all[P * q + MK_FUSED_AR_PH_ENTRY])
          v = fmax(v, (double)(int64_t)(all[P * q + i] - all[P * q + MK_FUSED_AR_PH_ENTRY]) * 1e-3);
      printf(" %s %.1f", mk_fused_ar_phase_name(i), v);
    }
    printf("\n    host us per call: fused %.1f unfused %.1f\n", tf->host_ms * 1e3, tu->host_ms * 1e3);
  }
  free(all);
  return st;
}

/* Relative error of this rank's output against the reference, max over ranks. */
static mk_status rel_err_all(fb *x, void *stream, double *out) {
  const int64_t rows = x->op == MK_FUSED_GEMM_RS ? x->ms : x->m;
  const float *ref = x->ref + (x->op == MK_FUSED_GEMM_RS ? (size_t)(x->me * x->ms * x->n) : 0);
  double e = 0, all[64];
  MK_CHECK(mk_gemm_rel_err(x->C, ref, rows * x->n, &e, stream));
  if (e != e) e = INFINITY;
  MK_CHECK(mk_comm_allgather(x->c, &e, all, sizeof e));
  *out = 0;
  for (int p = 0; p < x->W; p++)
    if (!(all[p] <= *out)) *out = all[p];
  return MK_STATUS_OK;
}

/* One call of fn on an output poisoned first, then its relative error (max over ranks). */
static mk_status check_one(fb *x, mk_bench_fn fn, void *stream, double *err) {
  MK_CUDA_CHECK(cudaMemsetAsync(x->C, 0xff, (size_t)(x->m * x->n) * 2, (cudaStream_t)stream));
  MK_CHECK(fn(x, 0, stream));
  return rel_err_all(x, stream, err);
}

static void usage(FILE *out, const char *name) {
  fprintf(out,
          "usage: mk-launch -n N -- mk-bench %s [--m M]... [--n N] [--k K] [--ctas C] [--autotune] [common flags]\n"
          "  --m M      rows of the full product (repeatable; default: the acceptance set)\n"
          "  --n N, --k K  this rank's GEMM is M x N x K (AG: gathered A [M,K] @ B_r; RS/AR: A_r [M,K] @ B_r)\n"
          "  --ctas C   role split: communication/reduction CTAs beside the GEMM (default: per shape)\n"
          "  --autotune time the fused op at several splits and report the best\n"
          "  --breakdown  AR: after each small-M shape, 3 more fused calls, the last one's phase stamps\n"
          "             (us from each rank's kernel entry, max over ranks) and the host's time per call\n"
          "  --interleave  time the GEMM alone, the collective alone, unfused and fused in turns, call by\n"
          "             call, so all four run at the same clocks under the power cap (default: one after another)\n"
          "  --ce-overlap-ab  RS/AR on copy engines: path fused with MK_FUSED_CE_OVERLAP=0, path\n"
          "             fused_ceov with =1 (the owner's reduce beside the GEMM), same inputs\n"
          "paths: fused = one mkernel launch (AG: the shard written in place, mk_ag_gemm_shard);\n"
          "unfused = NCCL + cuBLASLt; compute_ms = cuBLASLt alone,\n"
          "comm_ms = the NCCL collective alone, bound_ms = max(compute_ms, comm_ms)\n",
          name);
  mk_bench_print_common_help(out);
}

static int bench_fused(mk_fused_op op, int argc, char **argv) {
  static const char *const names[3] = {"ag_gemm", "gemm_rs", "gemm_ar"};
  fb x;
  memset(&x, 0, sizeof x);
  x.op = op;
  x.name = names[op];
  mk_bench_opts o;
  mk_bench_opts_default(&o);
  int64_t ms_list[FB_MAX_M];
  int nm = 0;
  int64_t n = op == MK_FUSED_AG_GEMM ? 7168 : 8192, k = op == MK_FUSED_AG_GEMM ? 8192 : 7168, ctas = 0;
  int ov_ab = 0, breakdown = 0;
  for (int i = 1; i < argc; i++) {
    int used = mk_bench_parse_common(&o, argc, argv, i);
    if (used < 0) return 2;
    if (used) {
      i += used - 1;
      continue;
    }
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout, x.name);
      return 0;
    } else if (!strcmp(a, "--m") && nm < FB_MAX_M) {
      if (mk_bench_parse_i64("--m", v, 1, 1 << 24, &ms_list[nm++])) return 2;
      i++;
    } else if (!strcmp(a, "--n") || !strcmp(a, "--k")) {
      if (mk_bench_parse_i64(a, v, 8, 1 << 20, a[2] == 'n' ? &n : &k)) return 2;
      i++;
    } else if (!strcmp(a, "--breakdown") && op == MK_FUSED_GEMM_AR) {
      breakdown = 1;
    } else if (!strcmp(a, "--ce-overlap-ab") && op != MK_FUSED_AG_GEMM) {
      ov_ab = 1;
    } else if (!strcmp(a, "--ctas")) {
      if (mk_bench_parse_i64("--ctas", v, 0, 66, &ctas)) return 2;
      i++;
    } else {
      fprintf(stderr, "mk-bench %s: unknown flag '%s' (see --help)\n", x.name, a);
      return 2;
    }
  }
  if (n % 8 || k % 8) {
    fprintf(stderr, "mk-bench %s: N and K must be multiples of 8\n", x.name);
    return 2;
  }
  if (!nm) {
    static const int64_t d_ag[] = {2048, 8192, 16384}, d_ar[] = {16, 128, 1024, 4096};
    const int64_t *d = op == MK_FUSED_GEMM_AR ? d_ar : d_ag;
    nm = op == MK_FUSED_GEMM_AR ? 4 : 3;
    memcpy(ms_list, d, (size_t)nm * sizeof *d);
  }
  mk_world wd;
  if (mk_world_from_env(&wd) != MK_STATUS_OK || wd.size < 2) {
    fprintf(argc == 1 ? stdout : stderr, "mk-bench %s: %sneeds at least 2 ranks: run it under mk-launch -n N\n", x.name,
            argc == 1 ? "skipped: " : "");
    return argc == 1 ? 0 : 2;
  }
  int64_t mmax = 0;
  for (int i = 0; i < nm; i++) {
    if (op != MK_FUSED_GEMM_AR && ms_list[i] % wd.size) {
      fprintf(stderr, "mk-bench %s: --m %lld is not a multiple of the %d ranks\n", x.name, (long long)ms_list[i], wd.size);
      return 2;
    }
    if (ms_list[i] > mmax) mmax = ms_list[i];
  }
  mk_bench_report *r = NULL;
  cudaStream_t s = NULL;
  mk_status st;
  int rc = 1;
  /* P, the copy engines' staging and the push mode's PX live in the symmetric heap: make room unless the user
   * chose (16384 x 8192: 512 + 256 + 512 MiB). */
  setenv("MK_HEAP_BYTES", "4g", 0);
  MK_CHECK_GOTO(mk_comm_create(&x.c), st, fail);
  o.rank = wd.rank, o.nranks = wd.size;
  x.W = wd.size;
  x.me = wd.rank;
  MK_CHECK_GOTO(mk_nccl_create(x.c, &x.nc), st, fail);
  MK_CHECK_GOTO(mk_cublaslt_create(&x.lt), st, fail);
  MK_CHECK_GOTO(mk_fused_create(x.c, 1u << op, mmax, n, k, &x.f), st, fail);
  MK_CUDA_CHECK_GOTO(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&x.A, (size_t)(mmax * k) * 2), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&x.B, (size_t)(n * k) * 2), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&x.C, (size_t)(mmax * n) * 2), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&x.ref, (size_t)(mmax * n) * 4), st, fail);
  if (op == MK_FUSED_AG_GEMM) MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&x.Afull, (size_t)(mmax * k) * 2), st, fail);
  else MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&x.P, (size_t)(mmax * n) * 2), st, fail);
  MK_CHECK_GOTO(mk_bench_report_create(&o, &r), st, fail);
  uint64_t seed = o.seed;
  MK_CHECK_GOTO(mk_comm_bcast(x.c, &seed, sizeof seed, 0), st, fail);
  for (int i = 0; i < nm; i++) {
    x.m = ms_list[i];
    x.n = n;
    x.k = k;
    x.ms = x.m / x.W;
    const int64_t a_rows = op == MK_FUSED_AG_GEMM ? x.ms : x.m;
    MK_CHECK_GOTO(mk_fill_uniform_bf16(x.A, (size_t)(a_rows * k), seed + 17ull * (uint64_t)i + (uint64_t)x.me, -1.0f, 1.0f, s),
                  st, fail);
    if (op == MK_FUSED_AG_GEMM) /* the same shard where the fused op reads it in place */
      MK_CHECK_GOTO(mk_fill_uniform_bf16(mk_ag_gemm_shard(x.f, x.m, k), (size_t)(a_rows * k),
                                         seed + 17ull * (uint64_t)i + (uint64_t)x.me, -1.0f, 1.0f, s),
                    st, fail);
    MK_CHECK_GOTO(mk_fill_uniform_bf16(x.B, (size_t)(n * k), seed + 1000 + 17ull * (uint64_t)i + (uint64_t)x.me, -1.0f, 1.0f, s),
                  st, fail);
    /* Reference: AG: gathered A (NCCL) @ B_r; RS/AR: sum over ranks of A_r @ B_r in fp32. */
    if (op == MK_FUSED_AG_GEMM) {
      MK_CHECK_GOTO(run_coll(&x, 0, s), st, fail);
      MK_CHECK_GOTO(mk_gemm_ref_f32(x.Afull, x.B, x.ref, x.m, n, k, MK_GEMM_B_NK, s), st, fail);
    } else {
      MK_CHECK_GOTO(mk_gemm_ref_f32(x.A, x.B, x.ref, x.m, n, k, MK_GEMM_B_NK, s), st, fail);
      MK_CHECK_GOTO(mk_nccl_all_reduce(x.nc, x.ref, x.ref, (size_t)(x.m * n), MK_DTYPE_F32, s), st, fail);
    }
    char shape[256];
    snprintf(shape, sizeof shape, "{\"m\":%lld,\"n\":%lld,\"k\":%lld}", (long long)x.m, (long long)n, (long long)k);
    mk_bench_stats tc, tn, tu, tf;
    x.ctas = (int)ctas;
    double err_u = 0, err_f = 0;
    if (!o.interleave) {
      MK_CHECK_GOTO(time_all(&x, &o, run_gemm, s, &tc), st, fail);
      MK_CHECK_GOTO(time_all(&x, &o, run_coll, s, &tn), st, fail);
      MK_CUDA_CHECK_GOTO(cudaMemsetAsync(x.C, 0xff, (size_t)(x.m * n) * 2, s), st, fail);
      MK_CHECK_GOTO(time_all(&x, &o, run_unfused, s, &tu), st, fail);
      MK_CHECK_GOTO(rel_err_all(&x, s, &err_u), st, fail);
    }
    /* The fused op: the given or default split, or the best of a sweep (--autotune). */
    int best = (int)ctas;
    if (o.autotune) {
      static const int cand[] = {2, 4, 8, 12, 16, 24, 32, 48, 64};
      double best_ms = INFINITY;
      for (size_t c = 0; c < sizeof cand / sizeof cand[0]; c++) {
        mk_bench_stats t;
        x.ctas = cand[c];
        MK_CHECK_GOTO(time_all(&x, &o, run_fused, s, &t), st, fail);
        if (x.me == 0) printf("  autotune %s M=%lld: ctas %2d  %.4f ms\n", x.name, (long long)x.m, cand[c], t.median_ms);
        if (t.median_ms < best_ms) best_ms = t.median_ms, best = cand[c];
      }
    }
    x.ctas = best;
    /* --ce-overlap-ab on copy engines: fused = the reduce after the GEMM, fused_ceov = beside it. */
    const int ab = ov_ab && mk_fused_uses_ce(x.f, op, x.m, n);
    mk_bench_stats tv;
    double err_v = NAN;
    if (ab) {
      setenv("MK_FUSED_CE_OVERLAP", "1", 1);
      mk_param_reset_cache();
      MK_CUDA_CHECK_GOTO(cudaMemsetAsync(x.C, 0xff, (size_t)(x.m * n) * 2, s), st, fail);
      MK_CHECK_GOTO(time_all(&x, &o, run_fused, s, &tv), st, fail);
      MK_CHECK_GOTO(rel_err_all(&x, s, &err_v), st, fail);
      setenv("MK_FUSED_CE_OVERLAP", "0", 1);
      mk_param_reset_cache();
    }
    if (o.interleave) { /* all four in turns; then each path checked on its own poisoned output */
      static const mk_bench_fn four[4] = {run_gemm, run_coll, run_unfused, run_fused};
      mk_bench_stats t4[4];
      MK_CHECK_GOTO(time_all_n(&x, &o, 4, four, s, t4), st, fail);
      tc = t4[0], tn = t4[1], tu = t4[2], tf = t4[3];
      MK_CHECK_GOTO(check_one(&x, run_unfused, s, &err_u), st, fail);
      MK_CHECK_GOTO(check_one(&x, run_fused, s, &err_f), st, fail);
    } else {
      MK_CUDA_CHECK_GOTO(cudaMemsetAsync(x.C, 0xff, (size_t)(x.m * n) * 2, s), st, fail);
      MK_CHECK_GOTO(time_all(&x, &o, run_fused, s, &tf), st, fail);
      MK_CHECK_GOTO(rel_err_all(&x, s, &err_f), st, fail);
    }
    if (x.me == 0 && mk_fused_fold(x.f, op, x.m, n))
      printf("  %s M=%lld: fused in fold mode (MK_FUSED_FOLD; own rows last, the peers' partials summed in their "
             "epilogue; no comm CTAs)\n", x.name, (long long)x.m);
    else if (x.me == 0 && mk_fused_uses_ce(x.f, op, x.m, n))
      printf("  %s M=%lld: fused on copy engines (MK_FUSED_%s_COPY; no comm CTAs)\n", x.name, (long long)x.m,
             op == MK_FUSED_AG_GEMM ? "AG" : op == MK_FUSED_GEMM_RS ? "RS" : "AR");
    else if (x.me == 0 && op == MK_FUSED_GEMM_AR && mk_fused_ar_two_shot(x.f, x.m, n))
      printf("  %s M=%lld: fused two-shot on SM roles, split %d comm CTAs (%s; half reduce, half gather)\n", x.name,
             (long long)x.m, best ? best : mk_fused_default_ctas(op, x.m, n, k, x.W),
             best ? (o.autotune ? "autotuned" : "--ctas") : "default");
    else if (x.me == 0 && op == MK_FUSED_GEMM_AR &&
             mk_fused_ar_small_m(x.f, &(mk_fused_args){.m = x.m, .n = n, .k = k, .b_layout = MK_GEMM_B_NK}))
      printf("  %s M=%lld: fused on the small-M path (skinny GEMM pushing its slabs; no comm CTAs)\n", x.name,
             (long long)x.m);
    else if (x.me == 0)
      printf("  %s M=%lld: fused on SM roles, split %d comm CTAs (%s)\n", x.name, (long long)x.m,
             best ? best : mk_fused_default_ctas(op, x.m, n, k, x.W), best ? (o.autotune ? "autotuned" : "--ctas") : "default");
    if (breakdown && mk_fused_ar_small_m(x.f, &(mk_fused_args){.m = x.m, .n = n, .k = k, .b_layout = MK_GEMM_B_NK}))
      MK_CHECK_GOTO(ar_breakdown(&x, s, &tf, &tu), st, fail);
    const double flops = 2.0 * (double)x.m * (double)n * (double)k;
    const mk_bench_stats *ts[3] = {&tf, &tu, &tv};
    const char *paths[3] = {"fused", "unfused", "fused_ceov"};
    const double errs[3] = {err_f, err_u, err_v};
    for (int p = 0; p < (ab ? 3 : 2); p++) {
      if (!(o.paths & (p == 1 ? MK_BENCH_PATH_UNFUSED : MK_BENCH_PATH_FUSED))) continue;
      mk_bench_row row;
      mk_bench_row_init(&row, x.name, paths[p]);
      snprintf(row.shape, sizeof row.shape, "%s", shape);
      row.ranks = x.W;
      row.nodes = wd.nnodes;
      row.t = *ts[p];
      row.tflops = flops / (row.t.median_ms * 1e-3) / 1e12;
      row.rel_err = errs[p];
      row.compute_ms = tc.median_ms;
      row.comm_ms = tn.median_ms;
      row.bound_ms = tc.median_ms > tn.median_ms ? tc.median_ms : tn.median_ms;
      if (!(errs[p] <= 1e-2)) mk_bench_report_fail(r, "%s %s %s: rel err %.3g > 1e-2", x.name, paths[p], shape, errs[p]);
      mk_bench_report_add(r, &row);
    }
  }
  MK_CHECK_GOTO(mk_comm_barrier(x.c), st, fail);
  rc = mk_bench_report_finish(r);
  r = NULL;
fail:
  if (r) {
    mk_bench_report_fail(r, "rank %d: setup, timing or a collective failed", wd.rank);
    mk_bench_report_finish(r);
    rc = 1;
  }
  cudaFree(x.A);
  cudaFree(x.Afull);
  cudaFree(x.B);
  cudaFree(x.C);
  cudaFree(x.P);
  cudaFree(x.ref);
  if (s) cudaStreamDestroy(s);
  mk_fused_destroy(x.f);
  mk_cublaslt_destroy(x.lt);
  mk_nccl_destroy(x.nc);
  mk_comm_destroy(x.c);
  return rc;
}

int mk_bench_ag_gemm(int argc, char **argv) { return bench_fused(MK_FUSED_AG_GEMM, argc, argv); }
int mk_bench_gemm_rs(int argc, char **argv) { return bench_fused(MK_FUSED_GEMM_RS, argc, argv); }
int mk_bench_gemm_ar(int argc, char **argv) { return bench_fused(MK_FUSED_GEMM_AR, argc, argv); }
