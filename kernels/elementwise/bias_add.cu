/* bias_add.cu — x[r, c] = bf16(x[r, c] + b[c]) on bf16 rows, fp32 bias (q/k/v biases). */
#include <cuda_runtime.h>

#include "core/check.h"
#include "kernels/elementwise/ew_common.cuh"
#include "kernels/mk_kernels.h"

__global__ void mk_bias_add_kernel(uint16_t *__restrict__ x, int64_t total, int cols, const float *__restrict__ b) {
  for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < total; g += (int64_t)gridDim.x * blockDim.x)
    x[g] = mk_ew_f_bf16(mk_ew_bf16_f(x[g]) + b[g % cols]);
}

extern "C" mk_status mk_bias_add_bf16(uint16_t *x, int64_t rows, int cols, const float *b, mk_stream_t stream) {
  if (rows == 0) return MK_STATUS_OK;
  if (!x || !b || rows < 0 || cols < 1)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "bias_add: bad arguments (rows=%lld cols=%d)",
                  (long long)rows, cols);
  mk_bias_add_kernel<<<mk_ew_blocks((size_t)rows * cols, 256), 256, 0, (cudaStream_t)stream>>>(x, rows * cols, cols, b);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}
