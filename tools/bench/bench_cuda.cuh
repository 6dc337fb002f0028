/* bench_cuda.cuh — what the stand-alone CUDA benchmarks of tools/bench share (tma_stream.cu, tma_gather.cu,
 * group_rows.cu): a checked runtime call, the median of event-timed launches, cuTensorMapEncodeTiled through the
 * runtime's driver entry point (libcuda is never linked), and the consumer that drains a TMA ring. */
#ifndef MK_TOOLS_BENCH_CUDA_CUH
#define MK_TOOLS_BENCH_CUDA_CUH

#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/gemm/sm90_ptx.cuh"

#define CK(x)                                                                     \
  do {                                                                            \
    cudaError_t e_ = (x);                                                         \
    if (e_ != cudaSuccess) {                                                      \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

/* The median of 30 event-timed calls of launch() after 5 warm-up calls, in ms. */
template <typename F>
static float median_ms(F launch) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 5; i++) launch();
  std::vector<float> t;
  for (int i = 0; i < 30; i++) {
    CK(cudaEventRecord(a));
    launch();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  CK(cudaGetLastError());
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

static PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  void *fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q));
  return (PFN_cuTensorMapEncodeTiled_v12000)fn;
}

/* One thread: waits for each of the units x ksteps stages of a ring of `stages` stages of stage_bytes at smem (full
 * barriers), reads one word of it and frees it (empty barriers), in the producer's order; the sum goes to *sink only
 * if it hits a constant, so that the reads are not optimised away. */
__device__ __forceinline__ void bench_drain_ring(const uint8_t *smem, int stage_bytes, int stages, int units,
                                                 int ksteps, uint64_t *full, uint64_t *empty, unsigned *sink) {
  int s = 0;
  uint32_t ph = 0;
  unsigned acc = 0;
  for (int u = blockIdx.x; u < units; u += gridDim.x)
    for (int k = 0; k < ksteps; k++) {
      mk_sm90::mbar_wait(&full[s], ph);
      acc += *(volatile const unsigned *)(smem + s * stage_bytes);
      mk_sm90::mbar_arrive(&empty[s]);
      if (++s == stages) s = 0, ph ^= 1;
    }
  if (acc == 0x9e3779b9u) *sink = acc;
}

#endif
