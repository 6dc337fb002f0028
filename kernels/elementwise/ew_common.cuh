/* ew_common.cuh — small helpers shared by the elementwise kernels: bf16 bit conversions
 * (round to nearest even, as core/bf16.c) and a launch-size helper. */
#ifndef MK_KERNELS_ELEMENTWISE_EW_COMMON_CUH
#define MK_KERNELS_ELEMENTWISE_EW_COMMON_CUH
#include <stdint.h>

__device__ __forceinline__ float mk_ew_bf16_f(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
__device__ __forceinline__ uint16_t mk_ew_f_bf16(float f) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* NaN stays NaN */
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static inline int mk_ew_blocks(size_t n, int threads) {
  size_t b = (n + threads - 1) / threads;
  return (int)(b < 65535 ? (b ? b : 1) : 65535);
}
/* Block-wide sum of one float per thread (blockDim.x a multiple of 32, <= 1024). */
__device__ __forceinline__ float mk_ew_block_sum(float v) {
  __shared__ float part[32];
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  int w = threadIdx.x / 32, l = threadIdx.x % 32, nw = blockDim.x / 32;
  __syncthreads(); /* part[] may still be read by a previous call */
  if (l == 0) part[w] = v;
  __syncthreads();
  v = l < nw ? part[l] : 0.0f;
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
#endif
