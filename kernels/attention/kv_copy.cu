/* kv_copy.cu — rows between a paged KV cache and contiguous rows, by a slot map: the cache is
 * [num_slots, width] bf16 (num_slots = pages x block_size: the layout mk_paged_decode reads,
 * [num_blocks, block_size, hkv, d] with width = hkv d), slot = page * block_size + offset.
 *   scatter: cache[slots[t], :] = rows[t, :]   (the new tokens' K or V into their pages)
 *   gather:  rows[t, :] = cache[slots[t], :]   (a sequence's K or V, contiguous, for flash attention)
 * One warp per row, 16-byte vectors when width % 8 == 0. A slot outside [0, num_slots) is
 * skipped (scatter) or gives zeros (gather): the host checks page tables before the call. */
#include <cuda_runtime.h>

#include "core/check.h"
#include "kernels/mk_kernels.h"

template <bool SCATTER, typename V>
__global__ void mk_kv_copy_kernel(uint16_t *__restrict__ cache, uint16_t *__restrict__ rows,
                                  const int32_t *__restrict__ slots, int64_t n, int width, int64_t num_slots) {
  const int64_t t = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (t >= n) return;
  const int lane = threadIdx.x % 32, w = width / (int)(sizeof(V) / 2);
  const int64_t s = slots[t];
  const bool ok = s >= 0 && s < num_slots;
  V *c = reinterpret_cast<V *>(cache + (ok ? s : 0) * width), *r = reinterpret_cast<V *>(rows + t * width);
  for (int i = lane; i < w; i += 32) {
    if (SCATTER) {
      if (ok) c[i] = r[i];
    } else {
      V z;
      memset(&z, 0, sizeof z);
      r[i] = ok ? c[i] : z;
    }
  }
}

static mk_status kv_copy(bool scatter, uint16_t *cache, int64_t num_slots, uint16_t *rows, const int32_t *slots,
                         int64_t n, int width, mk_stream_t stream) {
  if (n == 0) return MK_STATUS_OK;
  if (!cache || !rows || !slots || n < 0 || width < 1 || num_slots < 1)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "kv_%s: bad arguments (n=%lld width=%d slots=%lld)",
                  scatter ? "scatter" : "gather", (long long)n, width, (long long)num_slots);
  const int warps = 8;
  const unsigned blocks = (unsigned)((n + warps - 1) / warps);
  const bool vec = width % 8 == 0 && ((uintptr_t)cache | (uintptr_t)rows) % 16 == 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (scatter && vec) mk_kv_copy_kernel<true, uint4><<<blocks, warps * 32, 0, s>>>(cache, rows, slots, n, width, num_slots);
  else if (scatter) mk_kv_copy_kernel<true, uint16_t><<<blocks, warps * 32, 0, s>>>(cache, rows, slots, n, width, num_slots);
  else if (vec) mk_kv_copy_kernel<false, uint4><<<blocks, warps * 32, 0, s>>>(cache, rows, slots, n, width, num_slots);
  else mk_kv_copy_kernel<false, uint16_t><<<blocks, warps * 32, 0, s>>>(cache, rows, slots, n, width, num_slots);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_kv_scatter_bf16(const uint16_t *rows, const int32_t *slots, int64_t n, int width, uint16_t *cache,
                                        int64_t num_slots, mk_stream_t stream) {
  return kv_copy(true, cache, num_slots, const_cast<uint16_t *>(rows), slots, n, width, stream);
}

extern "C" mk_status mk_kv_gather_bf16(const uint16_t *cache, int64_t num_slots, const int32_t *slots, int64_t n, int width,
                                       uint16_t *rows, mk_stream_t stream) {
  return kv_copy(false, const_cast<uint16_t *>(cache), num_slots, rows, slots, n, width, stream);
}
