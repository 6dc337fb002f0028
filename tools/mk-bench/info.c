/* info.c — `mk-bench --info`: what this machine and this build offer. Exits 0 on a machine
 * without a GPU, saying so. */
#include <cuda_runtime_api.h>
#include <string.h>

#include "comm/mk_comm.h"
#include "mk_bench.h"
#include "mk_version.h"
#if MK_HAVE_NCCL
#include <nccl.h>
#endif

static void print_version(FILE *out, const char *what, int v) {
  if (v <= 0)
    fprintf(out, "%-14s none\n", what);
  else
    fprintf(out, "%-14s %d.%d\n", what, v / 1000, (v % 1000) / 10);
}

int mk_bench_info(FILE *out) {
  fprintf(out, "mkernel        %s (commit %s)\n", MK_VERSION_STRING, MK_GIT_COMMIT);
  int drv = 0, rt = 0;
  if (cudaDriverGetVersion(&drv) != cudaSuccess) drv = 0;
  if (cudaRuntimeGetVersion(&rt) != cudaSuccess) rt = 0;
  cudaGetLastError();
  print_version(out, "CUDA driver", drv);
  print_version(out, "CUDA runtime", rt);
#if MK_HAVE_NCCL
  int nv = 0;
  if (ncclGetVersion(&nv) == ncclSuccess)
    fprintf(out, "%-14s %d.%d.%d\n", "NCCL", nv / 10000, (nv % 10000) / 100, nv % 100);
#else
  fprintf(out, "%-14s not built\n", "NCCL");
#endif

  int n = 0;
  if (mk_device_count(&n) != MK_STATUS_OK) {
    fprintf(out, "%-14s 0: no GPU on this machine: %s\n", "GPUs", mk_device_absent_reason());
  } else {
    fprintf(out, "%-14s %d\n", "GPUs", n);
    for (int d = 0; d < n; d++) {
      struct cudaDeviceProp p;
      if (cudaGetDeviceProperties(&p, d) != cudaSuccess) {
        fprintf(out, "  [%d] properties unavailable: %s\n", d, cudaGetErrorString(cudaGetLastError()));
        continue;
      }
      char bus[32] = "?";
      cudaDeviceGetPCIBusId(bus, sizeof bus, d);
      fprintf(out, "  [%d] %s  sm_%d%d  %d SMs  %.1f GiB  L2 %d MiB  smem/block %zu KiB  bus %s\n", d, p.name,
              p.major, p.minor, p.multiProcessorCount, (double)p.totalGlobalMem / (1u << 30), p.l2CacheSize >> 20,
              p.sharedMemPerBlockOptin >> 10, bus);
    }
    if (n > 1) {
      fprintf(out, "peer access (P2P ok / perf rank; '-' = no peer access)\n      ");
      for (int j = 0; j < n; j++) fprintf(out, "  [%d]  ", j);
      fprintf(out, "\n");
      for (int i = 0; i < n; i++) {
        fprintf(out, "  [%d] ", i);
        for (int j = 0; j < n; j++) {
          int can = 0, rank = 0;
          if (i == j) {
            fprintf(out, "   .   ");
            continue;
          }
          cudaDeviceCanAccessPeer(&can, i, j);
          cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, i, j);
          cudaGetLastError();
          if (can)
            fprintf(out, "  ok/%d ", rank);
          else
            fprintf(out, "   -   ");
        }
        fprintf(out, "\n");
      }
    }
  }

  mk_transport_info t[MK_TRANSPORT_COUNT_];
  mk_comm_transport_info(t);
  fprintf(out, "transports\n");
  for (int i = 0; i < MK_TRANSPORT_COUNT_; i++)
    fprintf(out, "  %-9s built: %-3s usable: %-3s %s\n", t[i].name, t[i].built ? "yes" : "no",
            t[i].usable ? "yes" : "no", t[i].detail);
  return 0;
}
