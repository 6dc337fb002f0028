/* bench_gemm.c — `mk-bench gemm`: the mkernel Hopper GEMM core (path "fused") against cuBLASLt
 * (path "unfused"), bf16 in, fp32 accumulate, bf16 out, on the same random inputs; each path's
 * result is checked against the fp32 reference GEMM on every run. --groups G times the
 * grouped (MoE) variant instead, with M rows split unevenly over G groups, some empty;
 * --group-rows R,R,... gives each group's rows (M of every shape must be their sum). */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "kernels/mk_kernels.h"
#include "mk_bench.h"

#define GEMM_MAX_SHAPES 64
#define GEMM_MAX_GROUPS 512 /* the core's kMaxGroups */

typedef struct gemm_shape {
  int64_t m, n, k;
} gemm_shape;

typedef struct gemm_cfg {
  gemm_shape shapes[GEMM_MAX_SHAPES];
  int nshapes;
  mk_gemm_b_layout layout;
  int groups; /* 0: plain GEMM */
  int32_t group_rows[GEMM_MAX_GROUPS]; /* --group-rows (set_rows): each group's rows; else split_rows */
  int64_t rows_sum;
  int set_rows;
} gemm_cfg;

/* The acceptance set: 8192^3, and M in {16, 128, 2048, 8192, 16384} x (N, K) of the
 * projections of a large MoE layer. */
static const gemm_shape k_default[] = {
    {8192, 8192, 8192},  {16, 7168, 8192},    {128, 7168, 8192},   {2048, 7168, 8192},  {8192, 7168, 8192},
    {16384, 7168, 8192}, {16, 8192, 7168},    {128, 8192, 7168},   {2048, 8192, 7168},  {8192, 8192, 7168},
    {16384, 8192, 7168}, {16, 2560, 8192},    {128, 2560, 8192},   {2048, 2560, 8192},  {8192, 2560, 8192},
    {16384, 2560, 8192},
};

static void usage(FILE *out) {
  fprintf(out,
          "usage: mk-bench gemm [--shape MxNxK]... [--layout nk|kn] [--groups G] [common flags]\n"
          "  --shape MxNxK   a problem (repeatable; default: 8192x8192x8192 and M in {16,128,2048,8192,16384}\n"
          "                  x (N,K) in {(7168,8192),(8192,7168),(2560,8192)}); M >= 1, N and K multiples of 8\n"
          "  --layout L      how B is stored: nk ([N,K], checkpoints; default) or kn ([K,N])\n"
          "  --groups G      grouped GEMM: M rows split unevenly over G groups (1..512), B is G x [N,K]\n"
          "  --group-rows R,R,...  grouped GEMM with these rows per group (1..512 groups, each >= 0);\n"
          "                  every --shape's M must be their sum\n"
          "paths: fused = mkernel GEMM core, unfused = cuBLASLt (heuristic algorithm, 32 MiB workspace)\n");
  mk_bench_print_common_help(out);
}

static int parse_shape(const char *text, gemm_shape *s) {
  if (!text) {
    fprintf(stderr, "mk-bench gemm: --shape needs a value MxNxK\n");
    return -1;
  }
  char buf[96], *save = NULL, *part[4];
  int n = 0;
  if (strlen(text) >= sizeof buf) {
    fprintf(stderr, "mk-bench gemm: --shape '%s' is too long\n", text);
    return -1;
  }
  strcpy(buf, text);
  for (char *t = strtok_r(buf, "x", &save); t && n < 4; t = strtok_r(NULL, "x", &save)) part[n++] = t;
  if (n != 3 || text[0] == 'x' || text[strlen(text) - 1] == 'x' || strstr(text, "xx")) {
    fprintf(stderr, "mk-bench gemm: --shape '%s' is not MxNxK\n", text);
    return -1;
  }
  const int64_t lim = (int64_t)1 << 30;
  if (mk_bench_parse_i64("--shape M", part[0], 1, lim, &s->m) || mk_bench_parse_i64("--shape N", part[1], 8, lim, &s->n) ||
      mk_bench_parse_i64("--shape K", part[2], 8, lim, &s->k))
    return -1;
  if (s->n % 8 || s->k % 8) {
    fprintf(stderr, "mk-bench gemm: --shape '%s': N and K must be multiples of 8\n", text);
    return -1;
  }
  return 0;
}

/* --group-rows R,R,...: the groups' row counts (c->groups, c->group_rows, c->rows_sum). */
static int parse_group_rows(const char *text, gemm_cfg *c) {
  if (!text || !*text) {
    fprintf(stderr, "mk-bench gemm: --group-rows needs a value R,R,...\n");
    return -1;
  }
  char buf[4096], *save = NULL;
  if (strlen(text) >= sizeof buf) {
    fprintf(stderr, "mk-bench gemm: --group-rows '%.40s...' is too long\n", text);
    return -1;
  }
  strcpy(buf, text);
  if (text[0] == ',' || text[strlen(text) - 1] == ',' || strstr(text, ",,")) {
    fprintf(stderr, "mk-bench gemm: --group-rows '%s' has an empty entry\n", text);
    return -1;
  }
  c->groups = 0, c->rows_sum = 0;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int64_t r;
    if (c->groups == GEMM_MAX_GROUPS) {
      fprintf(stderr, "mk-bench gemm: --group-rows: at most %d groups\n", GEMM_MAX_GROUPS);
      return -1;
    }
    if (mk_bench_parse_i64("--group-rows entry", t, 0, (int64_t)1 << 30, &r)) return -1;
    c->group_rows[c->groups++] = (int32_t)r;
    c->rows_sum += r;
  }
  c->set_rows = 1;
  return 0;
}

/* Parses everything; returns 0, 1 after --help, or -1 after printing what was wrong. */
static int parse(int argc, char **argv, mk_bench_opts *o, gemm_cfg *c) {
  mk_bench_opts_default(o);
  memset(c, 0, sizeof *c);
  c->layout = MK_GEMM_B_NK;
  for (int i = 1; i < argc; i++) {
    int used = mk_bench_parse_common(o, argc, argv, i);
    if (used < 0) return -1;
    if (used) {
      i += used - 1;
      continue;
    }
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 1;
    } else if (!strcmp(a, "--shape")) {
      if (c->nshapes == GEMM_MAX_SHAPES) {
        fprintf(stderr, "mk-bench gemm: at most %d --shape flags\n", GEMM_MAX_SHAPES);
        return -1;
      }
      if (parse_shape(v, &c->shapes[c->nshapes])) return -1;
      c->nshapes++;
      i++;
    } else if (!strcmp(a, "--layout")) {
      if (v && !strcmp(v, "nk")) c->layout = MK_GEMM_B_NK;
      else if (v && !strcmp(v, "kn")) c->layout = MK_GEMM_B_KN;
      else {
        fprintf(stderr, "mk-bench gemm: --layout '%s' is not nk or kn\n", v ? v : "");
        return -1;
      }
      i++;
    } else if ((!strcmp(a, "--groups") || !strcmp(a, "--group-rows")) && c->groups) {
      fprintf(stderr, "mk-bench gemm: give --groups or --group-rows, once\n");
      return -1;
    } else if (!strcmp(a, "--groups")) {
      int64_t g;
      if (mk_bench_parse_i64("--groups", v, 1, GEMM_MAX_GROUPS, &g)) return -1;
      c->groups = (int)g;
      i++;
    } else if (!strcmp(a, "--group-rows")) {
      if (parse_group_rows(v, c)) return -1;
      i++;
    } else {
      fprintf(stderr, "mk-bench gemm: unknown flag '%s' (see mk-bench gemm --help)\n", a);
      return -1;
    }
  }
  if (!c->nshapes) {
    c->nshapes = (int)(sizeof k_default / sizeof k_default[0]);
    memcpy(c->shapes, k_default, sizeof k_default);
  }
  for (int i = 0; c->set_rows && i < c->nshapes; i++)
    if (c->shapes[i].m != c->rows_sum) {
      fprintf(stderr, "mk-bench gemm: --shape M %lld is not the sum of --group-rows (%lld)\n",
              (long long)c->shapes[i].m, (long long)c->rows_sum);
      return -1;
    }
  return 0;
}

/* ---- one shape ---- */
typedef struct gemm_run {
  const gemm_cfg *cfg;
  gemm_shape s;
  int sets;
  uint16_t **A, **B, *C;
  int32_t *rows;       /* device, grouped only */
  int32_t *rows_host;  /* grouped only */
  mk_cublaslt_t *lt;
} gemm_run;

static mk_status run_fused(void *user, int iter, void *stream) {
  gemm_run *r = user;
  if (r->cfg->groups)
    return mk_gemm_grouped_bf16(r->A[iter], r->B[iter], r->C, r->rows, r->cfg->groups, r->s.m, r->s.n, r->s.k,
                                r->cfg->layout, stream);
  return mk_gemm_bf16(r->A[iter], r->B[iter], r->C, r->s.m, r->s.n, r->s.k, r->cfg->layout, stream);
}

static mk_status run_unfused(void *user, int iter, void *stream) {
  gemm_run *r = user;
  if (r->cfg->groups)
    return mk_cublaslt_gemm_grouped_bf16(r->lt, r->A[iter], r->B[iter], r->C, r->rows, r->cfg->groups, r->s.m, r->s.n,
                                         r->s.k, r->cfg->layout, stream);
  return mk_cublaslt_gemm_bf16(r->lt, r->A[iter], r->B[iter], r->C, r->s.m, r->s.n, r->s.k, r->cfg->layout, stream);
}

/* Uneven split of m rows over g groups: weights 1,2,3,4,0 repeating (every fifth group empty),
 * the remainder to group 0. */
static void split_rows(int64_t m, int g, int32_t *rows) {
  int64_t wsum = 0, given = 0;
  for (int i = 0; i < g; i++) wsum += (i % 5 == 4) ? 0 : 1 + i % 4;
  for (int i = 0; i < g; i++) {
    rows[i] = wsum ? (int32_t)(m * ((i % 5 == 4) ? 0 : 1 + i % 4) / wsum) : 0;
    given += rows[i];
  }
  rows[0] += (int32_t)(m - given);
}

/* fp32 reference of set 0, group by group. */
static mk_status reference(const gemm_run *r, float *ref, cudaStream_t s) {
  const gemm_shape sh = r->s;
  if (!r->cfg->groups) return mk_gemm_ref_f32(r->A[0], r->B[0], ref, sh.m, sh.n, sh.k, r->cfg->layout, s);
  int64_t off = 0;
  for (int g = 0; g < r->cfg->groups; g++) {
    if (r->rows_host[g])
      MK_CHECK(mk_gemm_ref_f32(r->A[0] + off * sh.k, r->B[0] + (size_t)g * sh.n * sh.k, ref + off * sh.n,
                               r->rows_host[g], sh.n, sh.k, r->cfg->layout, s));
    off += r->rows_host[g];
  }
  return MK_STATUS_OK;
}

static int bench_shape(const mk_bench_opts *o, const gemm_cfg *c, gemm_shape sh, mk_cublaslt_t *lt,
                       mk_bench_report *rep, cudaStream_t stream) {
  const int groups = c->groups, gb = groups ? groups : 1, sets = o->rotate > 0 ? o->rotate : 1;
  const size_t a_el = (size_t)sh.m * sh.k, b_el = (size_t)gb * sh.n * sh.k, c_el = (size_t)sh.m * sh.n;
  const double need = (double)sets * (a_el + b_el) * 2 + (double)c_el * (2 + 4) + (o->flush_l2 ? 256e6 : 0);
  size_t free_b = 0, total_b = 0;
  char shape_txt[64];
  snprintf(shape_txt, sizeof shape_txt, "%lldx%lldx%lld", (long long)sh.m, (long long)sh.n, (long long)sh.k);
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) return 1;
  if (need > 0.95 * (double)free_b) {
    fprintf(stderr, "mk-bench gemm: shape %s with --rotate %d needs %.1f GiB of GPU memory, %.1f GiB are free\n",
            shape_txt, sets, need / (1 << 30), (double)free_b / (1 << 30));
    return 2;
  }
  gemm_run r = {c, sh, sets, NULL, NULL, NULL, NULL, NULL, lt};
  float *ref = NULL;
  int rc = 1;
  mk_status st = MK_STATUS_OK;
  r.A = calloc(sets, sizeof *r.A);
  r.B = calloc(sets, sizeof *r.B);
  r.rows_host = calloc(gb, sizeof *r.rows_host);
  if (!r.A || !r.B || !r.rows_host) goto done;
  for (int i = 0; i < sets; i++) {
    if (cudaMalloc((void **)&r.A[i], a_el * 2) != cudaSuccess || cudaMalloc((void **)&r.B[i], b_el * 2) != cudaSuccess)
      goto done;
    MK_CHECK_GOTO(mk_fill_uniform_bf16(r.A[i], a_el, o->seed + 2 * i, -1.0f, 1.0f, stream), st, done);
    MK_CHECK_GOTO(mk_fill_uniform_bf16(r.B[i], b_el, o->seed + 2 * i + 1, -1.0f, 1.0f, stream), st, done);
  }
  if (cudaMalloc((void **)&r.C, c_el * 2) != cudaSuccess || cudaMalloc((void **)&ref, c_el * 4) != cudaSuccess)
    goto done;
  if (groups) {
    if (c->set_rows) memcpy(r.rows_host, c->group_rows, (size_t)groups * sizeof *r.rows_host);
    else split_rows(sh.m, groups, r.rows_host);
    if (cudaMalloc((void **)&r.rows, gb * sizeof(int32_t)) != cudaSuccess ||
        cudaMemcpy(r.rows, r.rows_host, gb * sizeof(int32_t), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess) /* the copy's last DMA (legacy stream) before the stream's work */
      goto done;
  }
  MK_CHECK_GOTO(reference(&r, ref, stream), st, done);
  const mk_bench_fn fns[2] = {run_fused, run_unfused};
  mk_bench_row rows[2];
  int have[2] = {0, 0};
  for (int p = 0; p < 2; p++) {
    const unsigned bit = p == 0 ? MK_BENCH_PATH_FUSED : MK_BENCH_PATH_UNFUSED;
    if (!(o->paths & bit)) continue;
    mk_bench_row *row = &rows[p];
    mk_bench_row_init(row, "gemm", p == 0 ? "fused" : "unfused");
    if (groups)
      snprintf(row->shape, sizeof row->shape, "{\"m\":%lld,\"n\":%lld,\"k\":%lld,\"b\":\"%s\",\"groups\":%d}",
               (long long)sh.m, (long long)sh.n, (long long)sh.k, c->layout == MK_GEMM_B_KN ? "kn" : "nk", groups);
    else
      snprintf(row->shape, sizeof row->shape, "{\"m\":%lld,\"n\":%lld,\"k\":%lld,\"b\":\"%s\"}", (long long)sh.m,
               (long long)sh.n, (long long)sh.k, c->layout == MK_GEMM_B_KN ? "kn" : "nk");
    row->ranks = row->nodes = 1;
    /* Correctness on this run: poisoned C, one call on set 0, error against the reference. */
    if (cudaMemsetAsync(r.C, 0xff, c_el * 2, stream) != cudaSuccess) goto done;
    MK_CHECK_GOTO(fns[p](&r, 0, stream), st, done);
    MK_CHECK_GOTO(mk_gemm_rel_err(r.C, ref, (int64_t)c_el, &row->rel_err, stream), st, done);
    if (!(row->rel_err <= 1e-2))
      mk_bench_report_fail(rep, "gemm %s %s: rel err %.3g > 1e-2", row->path, shape_txt, row->rel_err);
    have[p] = 1;
  }
  if (o->interleave && have[0] && have[1]) {
    void *const users[2] = {&r, &r};
    mk_bench_stats t[2];
    MK_CHECK_GOTO(mk_bench_time_n(o, 2, fns, users, stream, t), st, done);
    rows[0].t = t[0], rows[1].t = t[1];
  } else {
    for (int p = 0; p < 2; p++)
      if (have[p]) MK_CHECK_GOTO(mk_bench_time(o, fns[p], &r, stream, &rows[p].t), st, done);
  }
  for (int p = 0; p < 2; p++) {
    if (!have[p]) continue;
    rows[p].tflops = 2.0 * (double)sh.m * sh.n * sh.k / (rows[p].t.median_ms * 1e-3) / 1e12;
    rows[p].compute_ms = rows[p].t.median_ms;
    MK_CHECK_GOTO(mk_bench_report_add(rep, &rows[p]), st, done);
  }
  rc = 0;
done:
  if (st != MK_STATUS_OK || rc) {
    mk_bench_report_fail(rep, "gemm %s: %s", shape_txt, st ? mk_status_str(st) : "allocation failed");
    rc = 1;
  }
  for (int i = 0; r.A && i < sets; i++) cudaFree(r.A[i]);
  for (int i = 0; r.B && i < sets; i++) cudaFree(r.B[i]);
  cudaFree(r.C);
  cudaFree(ref);
  cudaFree(r.rows);
  free(r.A);
  free(r.B);
  free(r.rows_host);
  return rc;
}

int mk_bench_gemm(int argc, char **argv) {
  mk_bench_opts o;
  static gemm_cfg c;
  int pr = parse(argc, argv, &o, &c);
  if (pr) return pr > 0 ? 0 : 2;
  int ngpu = 0;
  if (mk_device_count(&ngpu) != MK_STATUS_OK || ngpu < 1) {
    printf("mk-bench gemm: skipped: no GPU (%s)\n", mk_device_absent_reason());
    return 0;
  }
  mk_bench_report *rep = NULL;
  mk_cublaslt_t *lt = NULL;
  cudaStream_t stream = NULL;
  if (mk_bench_report_create(&o, &rep) != MK_STATUS_OK) return 1;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess || mk_cublaslt_create(&lt) != MK_STATUS_OK) {
    mk_bench_report_fail(rep, "gemm: could not create a stream or the cuBLASLt handle");
  } else {
    for (int i = 0; i < c.nshapes; i++) {
      int rc = bench_shape(&o, &c, c.shapes[i], lt, rep, stream);
      if (rc == 2) {
        mk_cublaslt_destroy(lt);
        cudaStreamDestroy(stream);
        mk_bench_report_finish(rep);
        return 2;
      }
    }
  }
  mk_cublaslt_destroy(lt);
  if (stream) cudaStreamDestroy(stream);
  return mk_bench_report_finish(rep);
}
