/* bench_mem_kernels.cu — the HBM read bandwidth of this GPU, the yardstick of memory-bound
 * kernels (`mk-bench attn --mode decode` reports its kernel against it): every SM streams
 * 16-byte loads, 8 in flight per thread, over buffers far larger than L2; the XOR of what was
 * read goes to a sink only if it is an impossible value, so the loads cannot be elided. */
#include <cuda_runtime.h>

#include "bench_mem.h"
#include "core/check.h"

__global__ void __launch_bounds__(512) hbm_read_kernel(const uint4 *a, uint64_t na, const uint4 *b, uint64_t nb,
                                                       unsigned *sink) {
  const uint64_t nthr = (uint64_t)gridDim.x * blockDim.x, tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x = 0;
  for (int buf = 0; buf < 2; buf++) {
    const uint4 *s = buf ? b : a;
    const uint64_t n = buf ? nb : na;
    uint64_t i = tid;
    for (; i + 7 * nthr < n; i += 8 * nthr) {
      uint4 v[8];
#pragma unroll
      for (int u = 0; u < 8; u++) v[u] = __ldcs(s + i + u * nthr);
#pragma unroll
      for (int u = 0; u < 8; u++) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < n; i += nthr) {
      const uint4 v = __ldcs(s + i);
      x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
  }
  if (x == 0x9e3779b9u && tid == nthr) *sink = x; /* never true: tid < nthr */
}

extern "C" mk_status mk_bench_hbm_read(const void *a, size_t a_bytes, const void *b, size_t b_bytes, void *sink,
                                       void *stream) {
  if (((uintptr_t)a | (uintptr_t)b | a_bytes | b_bytes) & 15)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "hbm_read: buffers must be 16-byte aligned and sized");
  int dev = 0, sms = 0;
  MK_CUDA_CHECK(cudaGetDevice(&dev));
  MK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  hbm_read_kernel<<<sms * 4, 512, 0, (cudaStream_t)stream>>>((const uint4 *)a, a_bytes / 16, (const uint4 *)b,
                                                              b_bytes / 16, (unsigned *)sink);
  MK_CUDA_CHECK(cudaGetLastError());
  return MK_STATUS_OK;
}
