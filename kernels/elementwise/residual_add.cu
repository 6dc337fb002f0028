/* residual_add.cu — the fp32 residual stream: x[t, i] += s_t * y[t, i] with y bf16 (a block's
 * output) and s_t = row_scale[t] (e.g. the shared-expert gate) or 1 when row_scale is NULL. */
#include <cuda_runtime.h>

#include "core/check.h"
#include "kernels/elementwise/ew_common.cuh"
#include "kernels/mk_kernels.h"

__global__ void mk_residual_add_kernel(float *__restrict__ x, const uint16_t *__restrict__ y,
                                       const float *__restrict__ row_scale, int64_t total, int dim) {
  for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < total; g += (int64_t)gridDim.x * blockDim.x) {
    const float s = row_scale ? row_scale[g / dim] : 1.0f;
    x[g] += s * mk_ew_bf16_f(y[g]);
  }
}

extern "C" mk_status mk_residual_add(float *x, const uint16_t *y, const float *row_scale, int64_t n, int dim,
                                     mk_stream_t stream) {
  if (n == 0) return MK_STATUS_OK;
  if (!x || !y || n < 0 || dim < 1)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "residual_add: bad arguments (n=%lld dim=%d)",
                  (long long)n, dim);
  mk_residual_add_kernel<<<mk_ew_blocks((size_t)n * dim, 256), 256, 0, (cudaStream_t)stream>>>(x, y, row_scale, n * dim,
                                                                                               dim);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}
