/* bench_cuda.cuh — what the stand-alone CUDA benchmarks of tools/bench share (tma_stream.cu, tma_gather.cu): a
 * checked runtime call, the median of event-timed launches, and cuTensorMapEncodeTiled through the runtime's
 * driver entry point (libcuda is never linked). */
#ifndef MK_TOOLS_BENCH_CUDA_CUH
#define MK_TOOLS_BENCH_CUDA_CUH

#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

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

#endif
