/* mk_bench.c — mk-bench: kernel- and layer-level benchmarks, fused vs unfused side by side.
 *   mk-bench                 the default suite: --info, then every built op at its default shapes
 *   mk-bench --info          machine and build facts
 *   mk-bench OP [flags]      one op (see --help for which are built)  */
#include <stdio.h>
#include <string.h>

#include "mk_bench.h"
#include "mk_version.h"

int mk_bench_gemm(int argc, char **argv); /* bench_gemm.c */
int mk_bench_ag_gemm(int argc, char **argv); /* bench_fused.c */
int mk_bench_gemm_rs(int argc, char **argv);
int mk_bench_gemm_ar(int argc, char **argv);

static const mk_bench_cmd k_cmds[] = {
    {"gemm", "GEMM: mkernel Hopper core (fused) vs cuBLASLt (unfused)", mk_bench_gemm},
    {"ag_gemm", "AllGather + GEMM: fused vs NCCL + cuBLASLt (under mk-launch)", mk_bench_ag_gemm},
    {"gemm_rs", "GEMM + ReduceScatter: fused vs cuBLASLt + NCCL (under mk-launch)", mk_bench_gemm_rs},
    {"gemm_ar", "GEMM + AllReduce: fused vs cuBLASLt + NCCL (under mk-launch)", mk_bench_gemm_ar},
    {"moe", "MoE dispatch + grouped GEMM + combine (expert parallel)", mk_bench_moe},
    {"ring_attn", "ring attention across ranks (under mk-launch)", mk_bench_ring_attn},
    {"attn", "flash attention (prefill) and paged decode", mk_bench_attn},
    {"layer", "one decoder layer (attention + MoE block), prefill and decode (under mk-launch)", mk_bench_layer},
    {"comm", "NVLink put, proxied put and signal latency", mk_bench_comm},
#if MK_HAVE_SERVE
    {"serve", "load generator for an OpenAI-compatible server: TTFT, TPOT, ITL, throughput", mk_bench_serve},
#else
    {"serve", "load generator for an OpenAI-compatible server (needs libmicrohttpd + PCRE2)", NULL},
#endif
};
enum { k_ncmds = sizeof k_cmds / sizeof k_cmds[0] };

static void usage(FILE *out) {
  fprintf(out,
          "usage: mk-bench [--info | --help | --version]\n"
          "       mk-bench OP [flags]     (mk-bench OP --help for the op's flags)\n"
          "       mk-bench plot RESULTS.json -o OUT.png\n"
          "With no arguments: print --info, then run every built op at its default shapes; on a\n"
          "machine without a GPU, the CPU reference demo (tiny random models, greedy generation).\n\nops:\n");
  for (int i = 0; i < k_ncmds; i++)
    fprintf(out, "  %-10s %s%s\n", k_cmds[i].name, k_cmds[i].summary, k_cmds[i].run ? "" : "  [not built yet]");
}

int main(int argc, char **argv) {
  mk_bench_set_command(argc, argv);
  if (argc == 1) {
    mk_bench_info(stdout);
    int ngpu = 0;
    if (mk_device_count(&ngpu) != MK_STATUS_OK) {
      mk_bench_opts o;
      mk_bench_opts_default(&o);
      return mk_bench_cpu_demo(o.seed) ? 1 : 0;
    }
    int ran = 0, rc = 0;
    for (int i = 0; i < k_ncmds; i++) {
      if (!k_cmds[i].run || !strcmp(k_cmds[i].name, "serve")) continue; /* serve needs a server */
      char *sub[] = {(char *)k_cmds[i].name, NULL};
      printf("\n== mk-bench %s (default shapes)\n", k_cmds[i].name);
      rc |= k_cmds[i].run(1, sub);
      ran++;
    }
    printf("\nmk-bench: ran %d op benchmark(s); not built yet:", ran);
    for (int i = 0; i < k_ncmds; i++)
      if (!k_cmds[i].run) printf(" %s", k_cmds[i].name);
    printf("\n");
    return rc ? 1 : 0;
  }
  const char *a = argv[1];
  if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(a, "--version")) {
    printf("mk-bench %s (commit %s)\n", MK_VERSION_STRING, MK_GIT_COMMIT);
    return 0;
  }
  if (!strcmp(a, "--info")) {
    if (argc > 2) {
      fprintf(stderr, "mk-bench: --info takes no arguments (got '%s')\n", argv[2]);
      return 2;
    }
    return mk_bench_info(stdout);
  }
  if (!strcmp(a, "plot")) return mk_bench_plot(argc - 1, argv + 1);
  for (int i = 0; i < k_ncmds; i++) {
    if (strcmp(a, k_cmds[i].name) != 0) continue;
    if (!k_cmds[i].run) {
      fprintf(stderr, "mk-bench: op '%s' is not built yet\n", a);
      return 2;
    }
    return k_cmds[i].run(argc - 1, argv + 1);
  }
  fprintf(stderr, "mk-bench: unknown op or flag '%s'\n\n", a);
  usage(stderr);
  return 2;
}
