/* swiglu.cu — out = bf16(silu(gate) * up) in fp32 arithmetic, silu(a) = a / (1 + exp(-a)). */
#include <cuda_runtime.h>

#include "core/check.h"
#include "kernels/elementwise/ew_common.cuh"
#include "kernels/mk_kernels.h"

__global__ void mk_swiglu_kernel(const uint16_t *g, const uint16_t *u, uint16_t *o, /* o may alias g or u */
                                 int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float a = mk_ew_bf16_f(g[i]);
    o[i] = mk_ew_f_bf16(a / (1.0f + expf(-a)) * mk_ew_bf16_f(u[i]));
  }
}

extern "C" mk_status mk_swiglu_bf16(const uint16_t *gate, const uint16_t *up, uint16_t *out, int64_t n,
                                    mk_stream_t stream) {
  if (n == 0) return MK_STATUS_OK;
  if (!gate || !up || !out || n < 0)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "swiglu: bad arguments (n=%lld)", (long long)n);
  mk_swiglu_kernel<<<mk_ew_blocks((size_t)n, 256), 256, 0, (cudaStream_t)stream>>>(gate, up, out, n);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}
