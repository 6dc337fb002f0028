/* moe_permute.cu — the unfused MoE path's data movement kernels: permute token rows into
 * expert order (one row per (token, expert) pair), copy blocks of rows between layouts (the
 * regrouping around NCCL all-to-allv), and the final weighted un-permute (fixed top-k order). */
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "core/check.h"
#include "kernels/moe/moe_common.cuh"

namespace {

/* Warp per (token, k) pair: row x[t] -> sendbuf[off[e] + atomicAdd(fill[e])]. */
__global__ void moe_permute_kernel(const int32_t *ids, int64_t T, int K, int H, const uint16_t *x, const int32_t *off,
                                   int32_t *fill, uint16_t *sendbuf, int32_t *pairpos) {
  const int64_t p = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (p >= T * K) return;
  const int e = ids[p];
  int pos = 0;
  if (lane == 0) pos = off[e] + atomicAdd(&fill[e], 1);
  pos = __shfl_sync(0xffffffffu, pos, 0);
  const uint4 *src = (const uint4 *)(x + (p / K) * H);
  uint4 *dst = (uint4 *)(sendbuf + (int64_t)pos * H);
  for (int v = lane; v < H / 8; v += 32) dst[v] = src[v];
  if (lane == 0) pairpos[p] = pos;
}

/* Warp per row; table [n][4] = {src_row, dst_row, rows, first}: first = rows of the blocks
 * before it (binary search). */
__global__ void moe_block_copy_kernel(const int32_t *table, int n, int64_t total, int H, const uint16_t *src,
                                      uint16_t *dst) {
  const int lane = threadIdx.x & 31;
  for (int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; r < total;
       r += (int64_t)gridDim.x * blockDim.x / 32) {
    int lo = 0, hi = n - 1; /* last block with first <= r */
    while (lo < hi) {
      const int mid = (lo + hi + 1) >> 1;
      if (table[4 * mid + 3] <= r) lo = mid; else hi = mid - 1;
    }
    const int64_t i = r - table[4 * lo + 3];
    const uint4 *s = (const uint4 *)(src + (table[4 * lo] + i) * H);
    uint4 *d = (uint4 *)(dst + (table[4 * lo + 1] + i) * H);
    for (int v = lane; v < H / 8; v += 32) d[v] = s[v];
  }
}

/* Warp per token: out[t] = sum_k w[t, k] * back[pairpos[t, k]] (fp32, top-k order). */
__global__ void moe_unpermute_kernel(const uint16_t *back, const int32_t *pairpos, const float *w, int64_t T, int K,
                                     int H, uint16_t *out) {
  const int64_t t = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (t >= T) return;
  for (int v = lane; v < H / 8; v += 32) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int k = 0; k < K; k++)
      moe_axpy8(acc, w[t * K + k], *(const uint4 *)(back + (int64_t)pairpos[t * K + k] * H + 8 * v));
    *(uint4 *)(out + t * H + 8 * v) = moe_pack8(acc);
  }
}

__global__ void moe_count_kernel(const int32_t *ids, int64_t n, int E, int32_t *counts) {
  const int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (p < n && (unsigned)ids[p] < (unsigned)E) atomicAdd(&counts[ids[p]], 1);
}

}  // namespace

extern "C" mk_status mk_moe_launch_count(const int32_t *ids, int64_t n, int E, int32_t *counts, void *stream) {
  MK_CUDA_CHECK(cudaMemsetAsync(counts, 0, sizeof(int32_t) * (size_t)E, (cudaStream_t)stream));
  if (n == 0) return MK_STATUS_OK;
  moe_count_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(ids, n, E, counts);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_moe_launch_permute(const int32_t *ids, int64_t T, int K, int H, const uint16_t *x,
                                           const int32_t *off, int32_t *fill, uint16_t *sendbuf, int32_t *pairpos,
                                           void *stream) {
  if (T * K == 0) return MK_STATUS_OK;
  const int64_t threads = T * K * 32;
  moe_permute_kernel<<<(unsigned)((threads + 255) / 256), 256, 0, (cudaStream_t)stream>>>(ids, T, K, H, x, off, fill,
                                                                                         sendbuf, pairpos);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_moe_launch_block_copy(const int32_t *table, int n, int64_t total_rows, int H,
                                              const uint16_t *src, uint16_t *dst, void *stream) {
  if (total_rows == 0 || n == 0) return MK_STATUS_OK;
  int64_t blocks = (total_rows * 32 + 255) / 256;
  if (blocks > 4096) blocks = 4096;
  moe_block_copy_kernel<<<(unsigned)blocks, 256, 0, (cudaStream_t)stream>>>(table, n, total_rows, H, src, dst);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_moe_launch_unpermute(const uint16_t *back, const int32_t *pairpos, const float *w, int64_t T,
                                             int K, int H, uint16_t *out, void *stream) {
  if (T == 0) return MK_STATUS_OK;
  moe_unpermute_kernel<<<(unsigned)((T * 32 + 255) / 256), 256, 0, (cudaStream_t)stream>>>(back, pairpos, w, T, K, H,
                                                                                         out);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}
