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
/* Threads of mk_rmsnorm_f32's CTA for rows of dim (its sum of squares depends on it; moe_norm_route_kernel
 * takes the same to give the same bits). */
static inline int mk_ew_rmsnorm_threads(int dim) { return dim >= 1024 ? 1024 : dim > 128 ? 256 : 128; }
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
/* a + the dot product of 8 fp32 inputs (xa, xb) with 8 bf16 weights (one 16-byte load w), one FMA after the other
 * in k order: the sum order of mk_linear_f32_vec_kernel, which moe_norm_route_kernel keeps for the same bits. */
__device__ __forceinline__ float mk_ew_dot8(float a, uint4 w, float4 xa, float4 xb) {
  a = fmaf(xa.x, mk_ew_bf16_f((uint16_t)(w.x & 0xffff)), a), a = fmaf(xa.y, mk_ew_bf16_f((uint16_t)(w.x >> 16)), a);
  a = fmaf(xa.z, mk_ew_bf16_f((uint16_t)(w.y & 0xffff)), a), a = fmaf(xa.w, mk_ew_bf16_f((uint16_t)(w.y >> 16)), a);
  a = fmaf(xb.x, mk_ew_bf16_f((uint16_t)(w.z & 0xffff)), a), a = fmaf(xb.y, mk_ew_bf16_f((uint16_t)(w.z >> 16)), a);
  a = fmaf(xb.z, mk_ew_bf16_f((uint16_t)(w.w & 0xffff)), a), a = fmaf(xb.w, mk_ew_bf16_f((uint16_t)(w.w >> 16)), a);
  return a;
}
/* RoPE's inverse frequencies theta^(-2i/hd), i < hd / 2, as the fp32 reference computes them (in double,
 * rounded to float), into a CTA's shared table inv[hd / 2] (hd / 2 <= kMaxHalf), then a barrier. The
 * double pow once per pair and thread made mk_rope_kernel take 141 us for the 8192 x 16 heads of q at
 * Mixtral's prefill on 2 ranks (run 7fa1977-x2). */
constexpr int kMkRopeMaxHalf = 128;
__device__ __forceinline__ void mk_ew_rope_table(float *inv, int hd, double theta) {
  for (int i = threadIdx.x; i < hd / 2; i += blockDim.x) inv[i] = (float)(1.0 / pow(theta, (double)(2 * i) / hd));
  __syncthreads();
}
/* RMSNorm of one fp32 row r [dim] by the whole CTA: ob[i] = bf16(v), of[i] = v (either NULL) with v = w[i] * (r[i] /
 * rms). mk_rmsnorm_f32 and moe_norm_route_kernel both call it, with the same block size, for the same bits. */
__device__ __forceinline__ void mk_ew_rmsnorm_row(const float *r, const float *w, int dim, float eps, uint16_t *ob,
                                                  float *of) {
  float s = 0;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) s += r[i] * r[i];
  s = mk_ew_block_sum(s);
  const float inv = 1.0f / sqrtf(s / dim + eps);
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    const float v = w[i] * (r[i] * inv);
    if (ob) ob[i] = mk_ew_f_bf16(v);
    if (of) of[i] = v;
  }
}
#endif
