/* mk_bench.h — internal to mk-bench: the subcommand table, common flags, timing, and the
 * report (table on stdout, JSON/CSV files with gpu/commit/date metadata).
 *
 * An op's run(argc, argv) (argv[0] = op name) typically:
 *   mk_bench_opts o; mk_bench_opts_default(&o);
 *   for (int i = 1; i < argc; i++) {
 *     int used = mk_bench_parse_common(&o, argc, argv, i);   // 0: not a common flag
 *     if (used < 0) return 2;                                 // bad value, message printed
 *     if (used) { i += used - 1; continue; }
 *     ... op flags (use mk_bench_parse_i64 for numbers) ...
 *   }
 *   mk_bench_report *r; mk_bench_report_create(&o, &r);
 *   ... time with mk_bench_time(), fill mk_bench_row, mk_bench_report_add(r, &row) ...
 *   return mk_bench_report_finish(r);   // prints the table, writes files, frees */
#ifndef MK_BENCH_H
#define MK_BENCH_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "comm/mk_comm.h"
#include "core/mk_core.h"

/* A subcommand: run(argc, argv) with argv[0] the subcommand name; returns a process exit code
 * (0 ok, 1 failure such as a wrong result, 2 bad usage). */
typedef struct mk_bench_cmd {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv); /* NULL: not built yet */
} mk_bench_cmd;

/* --info: GPUs, SMs, memory, peer access, driver/CUDA/NCCL versions, transports. */
int mk_bench_info(FILE *out);
/* The default job without a GPU: tiny random models generated with the fp32 reference. */
int mk_bench_cpu_demo(uint64_t seed);
/* `mk-bench attn`: flash attention prefill and paged decode (bench_attn.c). */
int mk_bench_attn(int argc, char **argv);
/* `mk-bench plot RESULTS.json -o OUT.png` (matplotlib through python3). */
int mk_bench_plot(int argc, char **argv);
/* `mk-bench serve` (bench_serve.c): load generator over HTTP against a running server. */
int mk_bench_serve(int argc, char **argv);
/* The metadata of every results JSON (gpu, gpus, driver, cuda, nccl, commit, date, host,
 * command) added to a cJSON object (report.c); for subcommands that write their own JSON. */
void mk_bench_json_meta(void *root);
/* `mk-bench comm` (bench_comm.c), under mk-launch. */
int mk_bench_comm(int argc, char **argv);
/* `mk-bench ring_attn` (bench_ring_attn.c), under mk-launch. */
int mk_bench_ring_attn(int argc, char **argv);
/* `mk-bench moe` (bench_moe.c), under mk-launch. */
int mk_bench_moe(int argc, char **argv);
/* `mk-bench layer` (bench_layer.c), under mk-launch. */
int mk_bench_layer(int argc, char **argv);

/* ---- common flags ------------------------------------------------------------------------ */
enum { MK_BENCH_PATH_FUSED = 1, MK_BENCH_PATH_UNFUSED = 2 };

typedef struct mk_bench_opts {
  int warmup;            /* --warmup N (default 10) */
  int iters;             /* --iters N (default 50) */
  int rotate;            /* --rotate N input sets cycled through (default 1) */
  int batch;             /* --batch N back-to-back calls per timed sample, reported per call (default 1) */
  int flush_l2;          /* --flush-l2: overwrite a 2xL2 buffer before every timed iteration */
  unsigned paths;        /* --path fused,unfused (default both) */
  const char *json_path; /* --json FILE */
  const char *csv_path;  /* --csv FILE */
  const char *samples_path; /* --samples FILE: every timed call's ms appended (timing.c) */
  uint64_t seed;         /* --seed N (default: fresh) */
  int autotune;          /* --autotune (ops that have a role split) */
  int interleave;        /* --interleave: time the paths alternately (ops that support it) */
  int graph;             /* --graph: capture each call (per input set) in a CUDA graph, time the replays */
  unsigned graph_eager;  /* with --graph, bit f: callable f of mk_bench_time_n timed eagerly all the same (an op's
                            path that synchronises with the host cannot be captured); 0 by default */
  int rank;              /* only rank 0 prints the table and writes files (multi-rank ops) */
  int nranks;            /* ranks of a multi-rank op (0: one process); then --samples goes to FILE.rankN */
  /* Enqueued before each timed call, outside its events (NULL: nothing): mk-bench layer's device-side barrier,
   * so that every rank starts a call together and no rank's time holds its wait for a late peer. */
  mk_status (*pre)(void *ctx, void *stream);
  void *pre_ctx;
} mk_bench_opts;

void mk_bench_opts_default(mk_bench_opts *o);
/* Try argv[i] as a common flag. Returns the number of argv entries consumed (1 or 2), 0 when
 * argv[i] is not a common flag, -1 after printing what was wrong with its value. */
int mk_bench_parse_common(mk_bench_opts *o, int argc, char **argv, int i);
/* Strict integer parse of a flag value in [lo, hi]; prints "mk-bench: FLAG ..." and returns -1
 * on a bad value. */
int mk_bench_parse_i64(const char *flag, const char *text, int64_t lo, int64_t hi, int64_t *out);
/* A comma list of at most `max` integers in [lo, hi] into out[], *n of them; -1 after printing
 * what was wrong. */
int mk_bench_parse_list(const char *flag, const char *text, int64_t lo, int64_t hi, int max, int64_t *out, int *n);
/* For an op that runs under mk-launch: the world from the environment (at least min_ranks ranks)
 * and a GPU check. Returns -1 when it can run; else the exit code after saying why (0 with
 * "skipped" for the default suite, argc == 1, which runs outside a launcher; 2 for a bad
 * invocation; 1 without GPUs). */
int mk_bench_multi_rank(const char *op, int argc, int min_ranks, mk_world *wd);
/* Help text of the common flags, for an op's --help. */
void mk_bench_print_common_help(FILE *out);

/* ---- timing ------------------------------------------------------------------------------ */
/* One call of the thing being timed, on `stream`; `iter` selects the rotating input set. */
typedef mk_status (*mk_bench_fn)(void *user, int iter, void *stream);

/* Runs o->warmup untimed calls, then o->iters calls each bracketed by CUDA events (with the
 * L2 flush outside the events when o->flush_l2). Writes the per-iteration times (ms) to
 * ms_out[o->iters] and the median/p10/p90 to the stats. */
typedef struct mk_bench_stats {
  double median_ms, p10_ms, p90_ms;
  double host_ms; /* host time to issue one timed call (mean over the timed loop; a graph launch with --graph):
                   * when it is near median_ms the GPU waited for the host and the timing measures the host */
} mk_bench_stats;
mk_status mk_bench_time(const mk_bench_opts *o, mk_bench_fn fn, void *user, void *stream, mk_bench_stats *out);
/* Up to MK_BENCH_MAX_FNS calls taking turns (fns[0], fns[1], ..., fns[0], ...; warm-up too): outs[f] per callable.
 * Under the GPU's power cap all then run at the same clocks (--interleave). */
#define MK_BENCH_MAX_FNS 4
mk_status mk_bench_time_n(const mk_bench_opts *o, int nf, const mk_bench_fn *fns, void *const *users, void *stream,
                          mk_bench_stats *outs);
/* Percentiles of n samples (sorted copy; linear interpolation). */
void mk_bench_stats_from(const double *ms, int n, mk_bench_stats *out);

/* ---- report ------------------------------------------------------------------------------ */
typedef struct mk_bench_row {
  const char *op;        /* "gemm" */
  const char *path;      /* "fused", "unfused", "torch_async_tp", ... */
  char shape[256];       /* JSON object text: {"m":8192,"n":8192,"k":8192} */
  int ranks, nodes;
  mk_bench_stats t;      /* max over ranks where several ranks ran */
  double tflops;         /* NAN when not meaningful */
  double gbps;           /* NAN when not meaningful */
  double rel_err;        /* vs the reference on this run; NAN if not checked */
  double compute_ms;     /* the compute part alone (cuBLASLt / attention) or NAN */
  double comm_ms;        /* the communication part alone (NCCL) or NAN */
  double bound_ms;       /* max(compute_ms, comm_ms) or NAN */
  double ratio;          /* filled by the report: this path's median / unfused median, same op+shape */
  char extra[256];       /* JSON object text whose members join the row's JSON (op-specific fields,
                            e.g. a per-block breakdown); "" = none. Not in the table or CSV. */
} mk_bench_row;

void mk_bench_row_init(mk_bench_row *row, const char *op, const char *path); /* NAN-fills */

typedef struct mk_bench_report mk_bench_report;
mk_status mk_bench_report_create(const mk_bench_opts *o, mk_bench_report **out);
mk_status mk_bench_report_add(mk_bench_report *r, const mk_bench_row *row);
/* A failure (wrong result, error) to record in the files and make finish() return 1. */
void mk_bench_report_fail(mk_bench_report *r, const char *fmt, ...);
/* Prints the table, writes JSON/CSV if asked, frees r. Returns 0, or 1 if anything failed. */
int mk_bench_report_finish(mk_bench_report *r);
/* The command line recorded in the result files (called once by main). */
void mk_bench_set_command(int argc, char **argv);

#endif /* MK_BENCH_H */
