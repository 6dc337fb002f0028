/* rope.cu — rotate-half ("neox", the HF default) rotary embedding in place on bf16 rows
 * x [n, heads * hd]: token t is at position pos0 + t (mk_rope_neox_bf16) or pos[t]
 * (mk_rope_neox_pos_bf16: rows of many sequences in one launch); pairs (i, i + hd/2) of each head are
 * rotated by angle pos * theta^(-2i/hd), computed as the fp32 reference does (frequency in
 * double rounded to float, once per CTA into a shared table, mk_ew_rope_table; angle in float,
 * cosf/sinf). One thread per (token, head, pair). */
#include <cuda_runtime.h>

#include "core/check.h"
#include "kernels/elementwise/ew_common.cuh"
#include "kernels/mk_kernels.h"

__global__ void mk_rope_kernel(uint16_t *__restrict__ x, int64_t n, int heads, int hd, int64_t pos0,
                               const int32_t *__restrict__ pos, double theta) {
  __shared__ float tab[kMkRopeMaxHalf];
  const int h2 = hd / 2, table = h2 <= kMkRopeMaxHalf;
  if (table) mk_ew_rope_table(tab, hd, theta); /* every thread of the CTA reaches it (before the loop) */
  const int64_t total = n * heads * h2;
  for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < total; g += (int64_t)gridDim.x * blockDim.x) {
    const int i = (int)(g % h2);
    const int64_t th = g / h2, t = th / heads;
    const float inv = table ? tab[i] : (float)(1.0 / pow(theta, (double)(2 * i) / hd));
    const float ang = (float)(pos ? (int64_t)pos[t] : pos0 + t) * inv, c = cosf(ang), s = sinf(ang);
    uint16_t *r = x + th * hd;
    const float a = mk_ew_bf16_f(r[i]), b = mk_ew_bf16_f(r[i + h2]);
    r[i] = mk_ew_f_bf16(a * c - b * s);
    r[i + h2] = mk_ew_f_bf16(b * c + a * s);
  }
}

/* At most 2048 CTAs (grid-stride): each computes the table once. */
static int rope_blocks(int64_t n, int heads, int hd) {
  const int b = mk_ew_blocks((size_t)n * heads * (hd / 2), 256);
  return b < 2048 ? b : 2048;
}

extern "C" mk_status mk_rope_neox_bf16(uint16_t *x, int64_t n, int heads, int hd, int64_t pos0, double theta,
                                       mk_stream_t stream) {
  if (n == 0) return MK_STATUS_OK;
  if (!x || n < 0 || heads < 1 || hd < 2 || hd % 2 || pos0 < 0 || !(theta > 0))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "rope: bad arguments (n=%lld heads=%d hd=%d pos0=%lld)",
                  (long long)n, heads, hd, (long long)pos0);
  mk_rope_kernel<<<rope_blocks(n, heads, hd), 256, 0, (cudaStream_t)stream>>>(x, n, heads, hd,
                                                                                                    pos0, NULL, theta);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_rope_neox_pos_bf16(uint16_t *x, int64_t n, int heads, int hd, const int32_t *pos, double theta,
                                           mk_stream_t stream) {
  if (n == 0) return MK_STATUS_OK;
  if (!x || !pos || n < 0 || heads < 1 || hd < 2 || hd % 2 || !(theta > 0))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "rope: bad arguments (n=%lld heads=%d hd=%d pos=%p)",
                  (long long)n, heads, hd, (const void *)pos);
  mk_rope_kernel<<<rope_blocks(n, heads, hd), 256, 0, (cudaStream_t)stream>>>(x, n, heads, hd, 0,
                                                                                                    pos, theta);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}
