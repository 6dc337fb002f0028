/* attn_cache.cu — causal attention of n new tokens over a contiguous per-sequence KV cache
 * (the model's first GPU path; any head dim up to 256, GQA). Token t of the call sits at
 * position pos0 + t and sees cache rows 0 .. pos0 + t. One warp per (token, head): lanes own
 * head dims lane, lane + 32, ...; keys are scanned in order with an online softmax in fp32.
 *   q [n, hq, d] bf16, k_cache / v_cache [>= pos0 + n, hkv, d] bf16, o [n, hq, d] bf16. */
#include <cuda_runtime.h>

#include "core/check.h"
#include "kernels/elementwise/ew_common.cuh"
#include "kernels/mk_kernels.h"

#define MK_ATTN_CACHE_MAX_D 256

__global__ void mk_attn_cache_kernel(const uint16_t *__restrict__ q, const uint16_t *__restrict__ kc,
                                     const uint16_t *__restrict__ vc, uint16_t *__restrict__ o, int n, int pos0, int hq,
                                     int hkv, int d, float scale) {
  constexpr int kPer = MK_ATTN_CACHE_MAX_D / 32;
  const int lane = threadIdx.x % 32, grp = hq / hkv;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
  for (int64_t g = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; g < (int64_t)n * hq; g += warps) {
    const int t = (int)(g / hq), h = (int)(g % hq), kvh = h / grp, len = pos0 + t + 1;
    float qv[kPer], acc[kPer];
#pragma unroll
    for (int j = 0; j < kPer; j++) {
      const int c = lane + 32 * j;
      qv[j] = c < d ? mk_ew_bf16_f(q[g * d + c]) : 0.0f;
      acc[j] = 0.0f;
    }
    float m = -__int_as_float(0x7f800000), l = 0.0f;
    for (int s = 0; s < len; s++) {
      const uint16_t *kr = kc + ((int64_t)s * hkv + kvh) * d;
      const uint16_t *vr = vc + ((int64_t)s * hkv + kvh) * d;
      float dot = 0.0f;
#pragma unroll
      for (int j = 0; j < kPer; j++) {
        const int c = lane + 32 * j;
        if (c < d) dot += qv[j] * mk_ew_bf16_f(kr[c]);
      }
      for (int off = 16; off; off >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, off);
      const float sc = dot * scale, mn = fmaxf(m, sc), corr = expf(m - mn), p = expf(sc - mn);
      l = l * corr + p;
#pragma unroll
      for (int j = 0; j < kPer; j++) {
        const int c = lane + 32 * j;
        if (c < d) acc[j] = acc[j] * corr + p * mk_ew_bf16_f(vr[c]);
      }
      m = mn;
    }
#pragma unroll
    for (int j = 0; j < kPer; j++) {
      const int c = lane + 32 * j;
      if (c < d) o[g * d + c] = mk_ew_f_bf16(acc[j] / l);
    }
  }
}

extern "C" mk_status mk_attn_cache_fwd(const uint16_t *q, const uint16_t *k_cache, const uint16_t *v_cache, uint16_t *o,
                                       int n, int pos0, int hq, int hkv, int d, float scale, mk_stream_t stream) {
  if (n == 0) return MK_STATUS_OK;
  if (!q || !k_cache || !v_cache || !o || n < 0 || pos0 < 0 || hkv < 1 || hq < hkv || hq % hkv || d < 1 ||
      d > MK_ATTN_CACHE_MAX_D)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "attn_cache: bad arguments (n=%d pos0=%d hq=%d hkv=%d d=%d; need hq %% hkv == 0, d <= %d)", n, pos0,
                  hq, hkv, d, MK_ATTN_CACHE_MAX_D);
  mk_attn_cache_kernel<<<mk_ew_blocks((size_t)n * hq, 4), 128, 0, (cudaStream_t)stream>>>(q, k_cache, v_cache, o, n, pos0,
                                                                                           hq, hkv, d, scale);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}
