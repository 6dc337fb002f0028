/* convert.cu — bf16 <-> fp32 conversion (round to nearest even; NaN stays NaN). */
#include <cuda_runtime.h>

#include "core/check.h"
#include "kernels/elementwise/ew_common.cuh"
#include "kernels/mk_kernels.h"

__global__ void mk_bf16_to_f32_kernel(const uint16_t *__restrict__ in, float *__restrict__ out, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = mk_ew_bf16_f(in[i]);
}
__global__ void mk_f32_to_bf16_kernel(const float *__restrict__ in, uint16_t *__restrict__ out, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = mk_ew_f_bf16(in[i]);
}

extern "C" mk_status mk_convert_bf16_to_f32(const uint16_t *in, float *out, int64_t n, mk_stream_t stream) {
  if (n == 0) return MK_STATUS_OK;
  if (!in || !out || n < 0) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "convert: bad arguments");
  mk_bf16_to_f32_kernel<<<mk_ew_blocks((size_t)n, 256), 256, 0, (cudaStream_t)stream>>>(in, out, n);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_convert_f32_to_bf16(const float *in, uint16_t *out, int64_t n, mk_stream_t stream) {
  if (n == 0) return MK_STATUS_OK;
  if (!in || !out || n < 0) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "convert: bad arguments");
  mk_f32_to_bf16_kernel<<<mk_ew_blocks((size_t)n, 256), 256, 0, (cudaStream_t)stream>>>(in, out, n);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}
