/* linear_f32.cu — y[t, j] = sum_k x[t, k] * w[j, k] with x fp32, w bf16 (torch Linear
 * layout [out, in]) and y fp32: the small projections that must stay in fp32 (router logits,
 * the shared-expert gate, lm_head logits).
 * Where in % 8 == 0 and x, w are 16-byte aligned (every model shape): one warp per output column
 * j and R rows, each lane reading 8 weights (one 16-byte load) and the R rows' 8 inputs (two
 * 16-byte loads each) per step, every load of a step in flight together; the 8 warps of a CTA take
 * 8 consecutive columns of the same R rows, so those rows come from L1. Each lane sums its 8-wide
 * slices in k order, then a butterfly: the same order for every R (bit-identical across R).
 * R: MK_LINEAR_F32_ROWS, or by default the largest of 8, 4, 2 that still gives >= 2048 warps, else 1
 * (decode's router keeps its warps; prefill's and the lm_head's read each weight row n / R times, not
 * n). Else (odd in) the scalar kernel below: one warp per output element, 4-byte loads.
 * Session 27 (docs/perf/NOTES.md, layer; run 3931000-x2), against the scalar kernel for every shape: Qwen3's
 * prefill MoE block (4096 rows a rank, 128 experts) 1.366 -> 1.306 ms; the decode MoE blocks level. */
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
__global__ void __launch_bounds__(256) mk_linear_f32_vec_kernel(const float *__restrict__ x, int64_t n, int in,
                                                                const uint16_t *__restrict__ w, int out,
                                                                float *__restrict__ y) {
  const int lane = threadIdx.x % 32, nv = in / 8;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32), nb = (n + R - 1) / R;
  for (int64_t g = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; g < nb * out; g += warps) {
    const int64_t t0 = g / out * R, j = g % out;
    const int rows = n - t0 < R ? (int)(n - t0) : R;
    const uint4 *wr = (const uint4 *)(w + j * (int64_t)in);
    float s[R];
#pragma unroll
    for (int r = 0; r < R; r++) s[r] = 0;
#pragma unroll 2
    for (int v = lane; v < nv; v += 32) {
      const uint4 wv = wr[v];
      float4 xa[R], xb[R];
#pragma unroll
      for (int r = 0; r < R; r++)
        if (r < rows) {
          const float4 *xr = (const float4 *)(x + (t0 + r) * (int64_t)in) + 2 * v;
          xa[r] = xr[0], xb[r] = xr[1];
        }
#pragma unroll
      for (int r = 0; r < R; r++)
        if (r < rows) s[r] = mk_ew_dot8(s[r], wv, xa[r], xb[r]);
    }
#pragma unroll
    for (int r = 0; r < R; r++) {
      for (int o = 16; o; o >>= 1) s[r] += __shfl_xor_sync(0xffffffffu, s[r], o);
      if (lane == 0 && r < rows) y[(t0 + r) * out + j] = s[r];
    }
  }
}

/* Rows a warp (the vector kernel): 0 (default) by the shape (see the top), else 1, 2, 4, 8 or 16 (rounded down). */
MK_PARAM_INT(linear_f32_rows, "LINEAR_F32_ROWS", 0, 0, 16)

static int64_t linear_rows(int64_t n, int out) {
  const int64_t p = mk_param_linear_f32_rows();
  if (p) return p >= 16 ? 16 : p >= 8 ? 8 : p >= 4 ? 4 : p >= 2 ? 2 : 1;
  for (int64_t R = 8; R > 1; R /= 2)
    if ((n + R - 1) / R * out >= 2048) return R;
  return 1;
}

extern "C" mk_status mk_linear_f32out(const float *x, int64_t n, int in, const uint16_t *w, int out, float *y,
                                      mk_stream_t stream) {
  if (n == 0) return MK_STATUS_OK;
  if (!x || !w || !y || n < 0 || in < 1 || out < 1)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "linear_f32out: bad arguments (n=%lld in=%d out=%d)",
                  (long long)n, in, out);
  cudaStream_t s = (cudaStream_t)stream;
  if (in % 8 || ((uintptr_t)x | (uintptr_t)w) % 16) {
    mk_linear_f32_kernel<<<mk_ew_blocks((size_t)n * out, 8), 256, 0, s>>>(x, n, in, w, out, y);
    MK_CUDA_LAUNCH_CHECK();
    return MK_STATUS_OK;
  }
  const int64_t R = linear_rows(n, out);
  const int blocks = mk_ew_blocks((size_t)((n + R - 1) / R) * out, 8);
  if (R >= 16) mk_linear_f32_vec_kernel<16><<<blocks, 256, 0, s>>>(x, n, in, w, out, y);
  else if (R >= 8) mk_linear_f32_vec_kernel<8><<<blocks, 256, 0, s>>>(x, n, in, w, out, y);
  else if (R >= 4) mk_linear_f32_vec_kernel<4><<<blocks, 256, 0, s>>>(x, n, in, w, out, y);
  else if (R >= 2) mk_linear_f32_vec_kernel<2><<<blocks, 256, 0, s>>>(x, n, in, w, out, y);
  else mk_linear_f32_vec_kernel<1><<<blocks, 256, 0, s>>>(x, n, in, w, out, y);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}
