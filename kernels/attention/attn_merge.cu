/* attn_merge.cu — merge two partial attention results by their log-sum-exp:
 *   lse = log(e^lse1 + e^lse2),  o = e^(lse1 - lse) o1 + e^(lse2 - lse) o2
 * (exact for attention over the union of two disjoint key sets). A part with lse = -inf is
 * empty and gets weight 0; both empty gives o = 0, lse = -inf. One warp per (row, head), a
 * lane per 16-byte chunk of the row; fp32 arithmetic. */
#include <cuda_runtime.h>
#include <math.h>

#include "core/check.h"
#include "kernels/attention/attn_tile.cuh"
#include "kernels/mk_kernels.h"

namespace {

using namespace mk_attn;

__global__ void attn_merge_kernel(const uint16_t *o1, const float *lse1, const uint16_t *o2, const float *lse2,
                                  uint16_t *o, float *lse, int n, int h, int d) {
  const int chunks = d / 8, lane = threadIdx.x % 32;
  const long long rows = (long long)n * h; /* (row, head) pairs, one warp each */
  const long long warps = (long long)gridDim.x * blockDim.x / 32;
  for (long long rh = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32; rh < rows; rh += warps) {
    const int head = (int)(rh % h);
    const long long row = rh / h;
    const long long li = (long long)head * n + row;
    const float a = lse1[li], b = lse2[li];
    const float m = fmaxf(a, b);
    float w1 = 0.f, w2 = 0.f, out_lse = -INFINITY;
    if (m != -INFINITY) {
      const float e1 = expf(a - m), e2 = expf(b - m);
      const float sum = e1 + e2;
      w1 = e1 / sum;
      w2 = e2 / sum;
      out_lse = m + logf(sum);
    }
    for (int c = lane; c < chunks; c += 32) {
      const uint4 x = reinterpret_cast<const uint4 *>(o1)[rh * chunks + c];
      const uint4 y = reinterpret_cast<const uint4 *>(o2)[rh * chunks + c];
      const uint32_t xs[4] = {x.x, x.y, x.z, x.w}, ys[4] = {y.x, y.y, y.z, y.w};
      uint32_t r[4];
#pragma unroll
      for (int k = 0; k < 4; k++)
        r[k] = pack_bf16x2(w1 * bf16_lo(xs[k]) + w2 * bf16_lo(ys[k]), w1 * bf16_hi(xs[k]) + w2 * bf16_hi(ys[k]));
      reinterpret_cast<uint4 *>(o)[rh * chunks + c] = make_uint4(r[0], r[1], r[2], r[3]);
    }
    __syncwarp(); /* every lane has read lse1/lse2 before an aliased lse is overwritten */
    if (lane == 0 && lse) lse[li] = out_lse;
  }
}

}  // namespace

extern "C" mk_status mk_attn_merge(const uint16_t *o1, const float *lse1, const uint16_t *o2, const float *lse2,
                                   uint16_t *o, float *lse, int n, int h, int d, mk_stream_t stream) {
  if (n < 0 || h <= 0 || d <= 0 || d % 8 || d > 256)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "attn_merge: n %d, h %d, d %d (d a multiple of 8 up to 256)", n, h, d);
  if (n == 0) return MK_STATUS_OK;
  if (!o1 || !lse1 || !o2 || !lse2 || !o)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "attn_merge: a NULL pointer");
  if (((uintptr_t)o1 | (uintptr_t)o2 | (uintptr_t)o) % 16)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "attn_merge: o1, o2, o must be 16-byte aligned");
  const long long total = (long long)n * h * 32; /* threads: a warp per (row, head) */
  const int threads = 256;
  const long long want = (total + threads - 1) / threads;
  const int blocks = (int)(want < 65536 ? want : 65536);
  attn_merge_kernel<<<blocks, threads, 0, (cudaStream_t)stream>>>(o1, lse1, o2, lse2, o, lse, n, h, d);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}
