/* linear_f32.cu — y[t, j] = sum_k x[t, k] * w[j, k] with x fp32, w bf16 (torch Linear
 * layout [out, in]) and y fp32: the small projections that must stay in fp32 (router logits,
 * the shared-expert gate, lm_head logits). One warp per output element; any sizes.
 * MK_LINEAR_F32_ROWS = R > 1 (compile-checked only, not yet run on a GPU): one warp per
 * output column and R rows, so each weight row is read n / R times instead of n (the lm_head
 * at 64 decode rows reads its 622 MB of weights 64 times otherwise); each output's sum runs
 * in the same order as with R = 1 (the same per-lane FMA chain and butterfly): bit-identical. */
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

template <int R>
__global__ void mk_linear_f32_rows_kernel(const float *__restrict__ x, int64_t n, int in, const uint16_t *__restrict__ w,
                                          int out, float *__restrict__ y) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32), nb = (n + R - 1) / R;
  for (int64_t g = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; g < nb * out; g += warps) {
    const int64_t t0 = g / out * R, j = g % out;
    const int rows = n - t0 < R ? (int)(n - t0) : R;
    const uint16_t *wr = w + j * (int64_t)in;
    float s[R];
#pragma unroll
    for (int r = 0; r < R; r++) s[r] = 0;
    for (int k = lane; k < in; k += 32) {
      const float wk = mk_ew_bf16_f(wr[k]);
#pragma unroll
      for (int r = 0; r < R; r++)
        if (r < rows) s[r] += x[(t0 + r) * in + k] * wk;
    }
#pragma unroll
    for (int r = 0; r < R; r++) {
      for (int o = 16; o; o >>= 1) s[r] += __shfl_xor_sync(0xffffffffu, s[r], o);
      if (lane == 0 && r < rows) y[(t0 + r) * out + j] = s[r];
    }
  }
}

MK_PARAM_INT(linear_f32_rows, "LINEAR_F32_ROWS", 1, 1, 16)

extern "C" mk_status mk_linear_f32out(const float *x, int64_t n, int in, const uint16_t *w, int out, float *y,
                                      mk_stream_t stream) {
  if (n == 0) return MK_STATUS_OK;
  if (!x || !w || !y || n < 0 || in < 1 || out < 1)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "linear_f32out: bad arguments (n=%lld in=%d out=%d)",
                  (long long)n, in, out);
  const int64_t R = mk_param_linear_f32_rows();
  const size_t cols = (size_t)((n + R - 1) / R) * out;
  cudaStream_t s = (cudaStream_t)stream;
  if (R >= 16) mk_linear_f32_rows_kernel<16><<<mk_ew_blocks(cols, 8), 256, 0, s>>>(x, n, in, w, out, y);
  else if (R >= 8) mk_linear_f32_rows_kernel<8><<<mk_ew_blocks(cols, 8), 256, 0, s>>>(x, n, in, w, out, y);
  else if (R >= 4) mk_linear_f32_rows_kernel<4><<<mk_ew_blocks(cols, 8), 256, 0, s>>>(x, n, in, w, out, y);
  else if (R >= 2) mk_linear_f32_rows_kernel<2><<<mk_ew_blocks(cols, 8), 256, 0, s>>>(x, n, in, w, out, y);
  else mk_linear_f32_kernel<<<mk_ew_blocks((size_t)n * out, 8), 256, 0, s>>>(x, n, in, w, out, y);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}
