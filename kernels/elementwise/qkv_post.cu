/* qkv_post.cu — what follows the merged q/k/v projection on the fused path (layers/model_gpu.c): from
 * qkv [n, (nh + 2 nkv) hd] (this rank's q heads, then k heads, then v heads; one GEMM over the
 * layer's contiguous [wq; wk; wv]) to q [n, nh hd], k [n, nkv hd] and v [n, nkv hd] (the KV cache's
 * rows at the call's position), with on the way the bias (bq/bk/bv), the per-head RMSNorm of q and k
 * (q_norm/k_norm [hd]) and rotate-half RoPE of q and k at position pos0 + t. Each step rounds to bf16
 * as the separate kernels do (mk_bias_add_bf16, mk_rmsnorm_bf16, mk_rope_neox_bf16), so the results
 * match theirs but for the order of the norm's sum of squares. One launch instead of up to seven
 * (three bias adds, two norms, two RoPEs) and the copies of k and v.
 * One warp per (token, head slot): slot s < nh a q head, < nh + nkv a k head, else a v head; lane l
 * holds the pairs (i, i + hd / 2) for i = l, l + 32, ... (hd even, hd / 2 <= 128). */
#include <cuda_runtime.h>

#include "core/check.h"
#include "kernels/elementwise/ew_common.cuh"
#include "kernels/mk_kernels.h"

namespace {
constexpr int kWarps = 8, kPairs = kMkRopeMaxHalf / 32; /* pairs a lane, at most */

__device__ __forceinline__ float rnd(float v) { return mk_ew_bf16_f(mk_ew_f_bf16(v)); }

__global__ void __launch_bounds__(kWarps * 32) qkv_post_kernel(const uint16_t *__restrict__ qkv, int64_t n, int nh,
                                                               int nkv, int hd, const float *bq, const float *bk,
                                                               const float *bv, const float *qn, const float *kn,
                                                               float eps, int64_t pos0, double theta, uint16_t *q,
                                                               uint16_t *k, uint16_t *v) {
  __shared__ float tab[kMkRopeMaxHalf];
  mk_ew_rope_table(tab, hd, theta);
  const int lane = threadIdx.x & 31, h2 = hd / 2, slots = nh + 2 * nkv;
  const int64_t units = n * slots;
  for (int64_t u = (int64_t)blockIdx.x * kWarps + threadIdx.x / 32; u < units; u += (int64_t)gridDim.x * kWarps) {
    const int64_t t = u / slots;
    const int s = (int)(u - t * slots);
    const int kind = s < nh ? 0 : s < nh + nkv ? 1 : 2, head = kind == 0 ? s : kind == 1 ? s - nh : s - nh - nkv;
    const float *bias = kind == 0 ? bq : kind == 1 ? bk : bv, *nw = kind == 0 ? qn : kind == 1 ? kn : NULL;
    const uint16_t *src = qkv + t * slots * hd + (int64_t)s * hd;
    uint16_t *dst = kind == 0 ? q + (t * nh + head) * hd : (kind == 1 ? k : v) + (t * nkv + head) * hd;
    float a[kPairs], b[kPairs], ss = 0.f;
#pragma unroll
    for (int j = 0; j < kPairs; j++) {
      const int i = lane + 32 * j;
      a[j] = b[j] = 0.f;
      if (i >= h2) continue;
      a[j] = mk_ew_bf16_f(src[i]), b[j] = mk_ew_bf16_f(src[i + h2]);
      if (bias) a[j] = rnd(a[j] + bias[head * hd + i]), b[j] = rnd(b[j] + bias[head * hd + i + h2]);
      ss += a[j] * a[j] + b[j] * b[j];
    }
    if (nw) { /* whole warps: the same slot on every lane */
      for (int o = 16; o; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
      const float inv = 1.0f / sqrtf(ss / hd + eps);
#pragma unroll
      for (int j = 0; j < kPairs; j++) {
        const int i = lane + 32 * j;
        if (i < h2) a[j] = rnd(nw[i] * (a[j] * inv)), b[j] = rnd(nw[i + h2] * (b[j] * inv));
      }
    }
#pragma unroll
    for (int j = 0; j < kPairs; j++) {
      const int i = lane + 32 * j;
      if (i >= h2) continue;
      if (kind < 2) {
        const float ang = (float)(pos0 + t) * tab[i], c = cosf(ang), sn = sinf(ang);
        const float x = a[j], y = b[j];
        a[j] = x * c - y * sn, b[j] = y * c + x * sn;
      }
      dst[i] = mk_ew_f_bf16(a[j]), dst[i + h2] = mk_ew_f_bf16(b[j]);
    }
  }
}
}  // namespace

extern "C" mk_status mk_qkv_post_bf16(const uint16_t *qkv, int64_t n, int nh, int nkv, int hd, const float *bq,
                                      const float *bk, const float *bv, const float *q_norm, const float *k_norm,
                                      float eps, int64_t pos0, double theta, uint16_t *q, uint16_t *k, uint16_t *v,
                                      mk_stream_t stream) {
  if (n == 0) return MK_STATUS_OK;
  if (!qkv || !q || !k || !v || n < 0 || nh < 1 || nkv < 0 || hd < 2 || hd % 2 || hd / 2 > kMkRopeMaxHalf ||
      pos0 < 0 || !(theta > 0) || !q_norm != !k_norm)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "qkv_post: bad arguments (n=%lld nh=%d nkv=%d hd=%d (even, <= %d) pos0=%lld; q_norm and k_norm "
                  "both or neither)",
                  (long long)n, nh, nkv, hd, 2 * kMkRopeMaxHalf, (long long)pos0);
  const int64_t units = n * (nh + 2 * nkv), blocks = (units + kWarps - 1) / kWarps;
  qkv_post_kernel<<<(unsigned)(blocks < 4096 ? blocks : 4096), kWarps * 32, 0, (cudaStream_t)stream>>>(
      qkv, n, nh, nkv, hd, bq, bk, bv, q_norm, k_norm, eps, pos0, theta, q, k, v);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}
