/* report.c — collects result rows, computes fused/unfused ratios, prints the table and writes
 * JSON (cJSON) and CSV with the metadata every result file carries: gpu, gpus, driver, cuda,
 * nccl, commit, date, host, command. NaN values are written as null (JSON) / empty (CSV). */
#include <cjson/cJSON.h>
#include <cuda_runtime_api.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mk_bench.h"
#include "mk_version.h"
#if MK_HAVE_NCCL
#include <nccl.h>
#endif

struct mk_bench_report {
  mk_bench_opts opts;
  mk_bench_row *rows;
  int n, cap;
  char **fails;
  int nfail;
};

static char g_command[1024];

void mk_bench_set_command(int argc, char **argv) {
  size_t len = 0;
  g_command[0] = 0;
  for (int i = 0; i < argc && len + 2 < sizeof g_command; i++)
    len += (size_t)snprintf(g_command + len, sizeof g_command - len, "%s%s", i ? " " : "", argv[i]);
  if (len >= sizeof g_command) g_command[sizeof g_command - 1] = 0;
}

void mk_bench_row_init(mk_bench_row *row, const char *op, const char *path) {
  memset(row, 0, sizeof *row);
  row->op = op;
  row->path = path;
  strcpy(row->shape, "{}");
  row->ranks = 1;
  row->nodes = 1;
  row->t.median_ms = row->t.p10_ms = row->t.p90_ms = row->t.host_ms = NAN;
  row->tflops = row->gbps = row->rel_err = NAN;
  row->compute_ms = row->comm_ms = row->bound_ms = row->ratio = NAN;
}

mk_status mk_bench_report_create(const mk_bench_opts *o, mk_bench_report **out) {
  *out = NULL;
  mk_bench_report *r = calloc(1, sizeof *r);
  if (!r) return MK_STATUS_OUT_OF_MEMORY;
  r->opts = *o;
  *out = r;
  return MK_STATUS_OK;
}

mk_status mk_bench_report_add(mk_bench_report *r, const mk_bench_row *row) {
  cJSON *shape = cJSON_Parse(row->shape), *extra = row->extra[0] ? cJSON_Parse(row->extra) : NULL;
  int ok = shape && cJSON_IsObject(shape) && (!row->extra[0] || (extra && cJSON_IsObject(extra)));
  cJSON_Delete(shape);
  cJSON_Delete(extra);
  if (!ok) {
    fprintf(stderr, "mk-bench: internal: row shape or extra is not a JSON object: %s %s\n", row->shape,
            row->extra);
    return MK_STATUS_INTERNAL;
  }
  if (r->n == r->cap) {
    int cap = r->cap ? r->cap * 2 : 16;
    mk_bench_row *p = realloc(r->rows, sizeof *p * (size_t)cap);
    if (!p) return MK_STATUS_OUT_OF_MEMORY;
    r->rows = p;
    r->cap = cap;
  }
  r->rows[r->n++] = *row;
  return MK_STATUS_OK;
}

void mk_bench_report_fail(mk_bench_report *r, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "mk-bench: FAILED: %s\n", buf);
  char **p = realloc(r->fails, sizeof *p * (size_t)(r->nfail + 1));
  if (!p) return;
  r->fails = p;
  r->fails[r->nfail++] = strdup(buf);
}

static void compute_ratios(mk_bench_report *r) {
  for (int i = 0; i < r->n; i++) {
    mk_bench_row *a = &r->rows[i];
    for (int j = 0; j < r->n; j++) {
      mk_bench_row *b = &r->rows[j];
      if (!strcmp(b->path, "unfused") && !strcmp(a->op, b->op) && !strcmp(a->shape, b->shape) &&
          a->ranks == b->ranks && a->nodes == b->nodes && b->t.median_ms > 0) {
        a->ratio = a->t.median_ms / b->t.median_ms;
        break;
      }
    }
  }
}

/* Compact shape text for the table: {"m":8192,"n":7168} -> m=8192 n=7168 */
static void shape_compact(const char *json, char *out, size_t cap) {
  size_t k = 0;
  for (const char *p = json; *p && k + 2 < cap; p++) {
    if (*p == '{' || *p == '}') continue;
    if (*p == '"') continue;
    out[k++] = *p == ':' ? '=' : *p == ',' ? ' ' : *p;
  }
  out[k] = 0;
}

static void fmt_num(char *buf, size_t cap, const char *f, double v) {
  if (isnan(v))
    snprintf(buf, cap, "-");
  else
    snprintf(buf, cap, f, v);
}

static void print_table(const mk_bench_report *r) {
  printf("%-10s %-9s %-34s %5s %9s %9s %9s %8s %8s %8s %9s %7s\n", "op", "path", "shape", "ranks", "median_ms",
         "p10_ms", "p90_ms", "TFLOP/s", "GB/s", "rel_err", "bound_ms", "ratio");
  for (int i = 0; i < r->n; i++) {
    const mk_bench_row *w = &r->rows[i];
    char shape[128], c[8][32];
    shape_compact(w->shape, shape, sizeof shape);
    fmt_num(c[0], 32, "%.4f", w->t.median_ms);
    fmt_num(c[1], 32, "%.4f", w->t.p10_ms);
    fmt_num(c[2], 32, "%.4f", w->t.p90_ms);
    fmt_num(c[3], 32, "%.1f", w->tflops);
    fmt_num(c[4], 32, "%.1f", w->gbps);
    fmt_num(c[5], 32, "%.2e", w->rel_err);
    fmt_num(c[6], 32, "%.4f", w->bound_ms);
    fmt_num(c[7], 32, "%.3f", w->ratio);
    printf("%-10s %-9s %-34s %5d %9s %9s %9s %8s %8s %8s %9s %7s\n", w->op, w->path, shape, w->ranks, c[0], c[1],
           c[2], c[3], c[4], c[5], c[6], c[7]);
  }
}

typedef struct meta {
  char gpu[256], driver[32], cuda[32], nccl[32], date[32], host[64];
  int gpus;
} meta;

static void version_str(char *buf, size_t cap, int v) {
  if (v > 0)
    snprintf(buf, cap, "%d.%d", v / 1000, (v % 1000) / 10);
  else
    snprintf(buf, cap, "none");
}

static void collect_meta(meta *m) {
  memset(m, 0, sizeof *m);
  int drv = 0, rt = 0;
  if (cudaDriverGetVersion(&drv) != cudaSuccess) drv = 0;
  if (cudaRuntimeGetVersion(&rt) != cudaSuccess) rt = 0;
  cudaGetLastError();
  version_str(m->driver, sizeof m->driver, drv);
  version_str(m->cuda, sizeof m->cuda, rt);
  strcpy(m->nccl, "not built");
#if MK_HAVE_NCCL
  int nv = 0;
  if (ncclGetVersion(&nv) == ncclSuccess)
    snprintf(m->nccl, sizeof m->nccl, "%d.%d.%d", nv / 10000, (nv % 10000) / 100, nv % 100);
#endif
  strcpy(m->gpu, "none");
  if (mk_device_count(&m->gpus) == MK_STATUS_OK) {
    struct cudaDeviceProp p;
    int dev = 0;
    cudaGetDevice(&dev);
    if (cudaGetDeviceProperties(&p, dev) == cudaSuccess) snprintf(m->gpu, sizeof m->gpu, "%s", p.name);
    cudaGetLastError();
  }
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(m->date, sizeof m->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (gethostname(m->host, sizeof m->host) != 0) strcpy(m->host, "?");
  m->host[sizeof m->host - 1] = 0;
}

static void add_num(cJSON *o, const char *k, double v) {
  if (isnan(v) || isinf(v))
    cJSON_AddNullToObject(o, k);
  else
    cJSON_AddNumberToObject(o, k, v);
}

static void add_meta(cJSON *root, const meta *m) {
  cJSON_AddStringToObject(root, "gpu", m->gpu);
  cJSON_AddNumberToObject(root, "gpus", m->gpus);
  cJSON_AddStringToObject(root, "driver", m->driver);
  cJSON_AddStringToObject(root, "cuda", m->cuda);
  cJSON_AddStringToObject(root, "nccl", m->nccl);
  cJSON_AddStringToObject(root, "commit", MK_GIT_COMMIT);
  cJSON_AddStringToObject(root, "date", m->date);
  cJSON_AddStringToObject(root, "host", m->host);
  cJSON_AddStringToObject(root, "command", g_command);
}

void mk_bench_json_meta(void *root) {
  meta m;
  collect_meta(&m);
  add_meta((cJSON *)root, &m);
}

static int write_json(const mk_bench_report *r, const meta *m, const char *path) {
  cJSON *root = cJSON_CreateObject();
  add_meta(root, m);
  cJSON_AddNumberToObject(root, "warmup", r->opts.warmup);
  cJSON_AddNumberToObject(root, "iters", r->opts.iters);
  cJSON_AddNumberToObject(root, "rotate", r->opts.rotate);
  cJSON_AddNumberToObject(root, "batch", r->opts.batch);
  cJSON_AddBoolToObject(root, "flush_l2", r->opts.flush_l2);
  cJSON_AddBoolToObject(root, "graph", r->opts.graph);
  cJSON_AddBoolToObject(root, "interleave", r->opts.interleave);
  cJSON_AddNumberToObject(root, "seed", (double)r->opts.seed);
  cJSON *res = cJSON_AddArrayToObject(root, "results");
  for (int i = 0; i < r->n; i++) {
    const mk_bench_row *w = &r->rows[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "op", w->op);
    cJSON_AddStringToObject(o, "path", w->path);
    cJSON_AddItemToObject(o, "shape", cJSON_Parse(w->shape));
    cJSON_AddNumberToObject(o, "ranks", w->ranks);
    cJSON_AddNumberToObject(o, "nodes", w->nodes);
    add_num(o, "median_ms", w->t.median_ms);
    add_num(o, "p10_ms", w->t.p10_ms);
    add_num(o, "p90_ms", w->t.p90_ms);
    add_num(o, "host_ms", w->t.host_ms);
    add_num(o, "tflops", w->tflops);
    add_num(o, "gbps", w->gbps);
    add_num(o, "rel_err", w->rel_err);
    add_num(o, "compute_ms", w->compute_ms);
    add_num(o, "comm_ms", w->comm_ms);
    add_num(o, "bound_ms", w->bound_ms);
    add_num(o, "ratio", w->ratio);
    cJSON *x = w->extra[0] ? cJSON_Parse(w->extra) : NULL;
    while (x && x->child) {
      cJSON *it = cJSON_DetachItemViaPointer(x, x->child);
      cJSON_AddItemToObject(o, it->string, it); /* the key is copied before the old one is freed */
    }
    cJSON_Delete(x);
    cJSON_AddItemToArray(res, o);
  }
  cJSON *fails = cJSON_AddArrayToObject(root, "failures");
  for (int i = 0; i < r->nfail; i++) cJSON_AddItemToArray(fails, cJSON_CreateString(r->fails[i]));
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return -1;
  FILE *f = fopen(path, "w");
  int rc = -1;
  if (f) {
    rc = (fputs(text, f) < 0 || fputc('\n', f) == EOF) ? -1 : 0;
    if (fclose(f) != 0) rc = -1;
  }
  free(text);
  if (rc) fprintf(stderr, "mk-bench: cannot write %s\n", path);
  return rc;
}

static void csv_num(FILE *f, double v) {
  if (!isnan(v) && !isinf(v)) fprintf(f, "%.9g", v);
  fputc(',', f);
}

static int write_csv(const mk_bench_report *r, const meta *m, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "mk-bench: cannot write %s\n", path);
    return -1;
  }
  fprintf(f, "# gpu=%s\n# gpus=%d\n# driver=%s\n# cuda=%s\n# nccl=%s\n# commit=%s\n# date=%s\n# command=%s\n", m->gpu,
          m->gpus, m->driver, m->cuda, m->nccl, MK_GIT_COMMIT, m->date, g_command);
  fprintf(f, "op,path,shape,ranks,nodes,median_ms,p10_ms,p90_ms,tflops,gbps,rel_err,compute_ms,comm_ms,bound_ms,ratio\n");
  for (int i = 0; i < r->n; i++) {
    const mk_bench_row *w = &r->rows[i];
    char shape[300];
    size_t k = 0;
    for (const char *p = w->shape; *p && k + 2 < sizeof shape; p++)
      if (*p != '"') shape[k++] = *p == ',' ? ';' : *p; /* one CSV field: {m:1;n:2} */
    shape[k] = 0;
    fprintf(f, "%s,%s,%s,%d,%d,", w->op, w->path, shape, w->ranks, w->nodes);
    double v[] = {w->t.median_ms, w->t.p10_ms, w->t.p90_ms, w->tflops, w->gbps, w->rel_err,
                  w->compute_ms, w->comm_ms, w->bound_ms};
    for (size_t j = 0; j < sizeof v / sizeof v[0]; j++) csv_num(f, v[j]);
    if (!isnan(w->ratio)) fprintf(f, "%.9g", w->ratio);
    fputc('\n', f);
  }
  if (fclose(f) != 0) {
    fprintf(stderr, "mk-bench: cannot write %s\n", path);
    return -1;
  }
  return 0;
}

int mk_bench_report_finish(mk_bench_report *r) {
  if (!r) return 1;
  int rc = r->nfail ? 1 : 0;
  compute_ratios(r);
  if (r->opts.rank == 0) {
    print_table(r);
    meta m;
    if (r->opts.json_path || r->opts.csv_path) collect_meta(&m);
    if (r->opts.json_path && write_json(r, &m, r->opts.json_path)) rc = 1;
    if (r->opts.csv_path && write_csv(r, &m, r->opts.csv_path)) rc = 1;
    if (r->nfail) printf("mk-bench: %d failure(s)\n", r->nfail);
  }
  for (int i = 0; i < r->nfail; i++) free(r->fails[i]);
  free(r->fails);
  free(r->rows);
  free(r);
  return rc;
}
