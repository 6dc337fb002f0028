/* mk_bench.h — internal to mk-bench: the subcommand table and shared helpers. */
#ifndef MK_BENCH_H
#define MK_BENCH_H

#include <stdio.h>

#include "core/mk_core.h"

/* A subcommand: run(argc, argv) with argv[0] the subcommand name; returns a process exit code. */
typedef struct mk_bench_cmd {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv); /* NULL: not built yet */
} mk_bench_cmd;

/* --info: GPUs, SMs, memory, peer access, driver/CUDA/NCCL versions, transports. */
int mk_bench_info(FILE *out);

#endif /* MK_BENCH_H */
