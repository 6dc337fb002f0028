/* linear_f32.cu — y[t, j] = sum_k x[t, k] * w[j, k] with x fp32, w bf16 (torch Linear
 * layout [out, in]) and y fp32: the small projections that must stay in fp32 (router logits,
 * the shared-expert gate, lm_head logits). One warp per output element; any sizes. */
#include <cuda_runtime.h>

#include "core/check.h"
#include "kernels/elementwise/ew_common.cuh"
#include "kernels/mk_kernels.h"

__global__ void mk_linear_f32_kernel(const float *__restrict__ x, int64_t n, int in, const uint16_t *__restrict__ w,
                                     int out, float *__restrict__ y) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
  for (int64_t g = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; g < n * out; g += warps) {
    const int64_t t = g / out, j = g % out;
    const float *xr = x + t * in;
    const uint16_t *wr = w + j * (int64_t)in;
    float s = 0;
    for (int k = lane; k < in; k += 32) s += xr[k] * mk_ew_bf16_f(wr[k]);
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) y[g] = s;
  }
}

extern "C" mk_status mk_linear_f32out(const float *x, int64_t n, int in, const uint16_t *w, int out, float *y,
                                      mk_stream_t stream) {
  if (n == 0) return MK_STATUS_OK;
  if (!x || !w || !y || n < 0 || in < 1 || out < 1)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "linear_f32out: bad arguments (n=%lld in=%d out=%d)",
                  (long long)n, in, out);
  mk_linear_f32_kernel<<<mk_ew_blocks((size_t)n * out, 8), 256, 0, (cudaStream_t)stream>>>(x, n, in, w, out, y);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}
