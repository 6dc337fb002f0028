/* bench_comm_kernels.cu — kernels of `mk-bench comm`: NVLink puts (SM copies, TMA bulk
 * copies) spread over all SMs, signal ping-pong (NVLink or proxy), proxied put round trip. */
#include <cuda_runtime.h>

#include "bench_comm.h"
#include "comm/mk_device.cuh"
#include "core/check.h"
#include "kernels/fused/fused_common.cuh"

enum { TMA_CHUNK = 16384, TMA_STAGES = 4 };

__global__ void put_sm_kernel(char *dst, const char *src, uint64_t bytes) {
  mk_copy_range(dst, src, bytes, (uint64_t)blockIdx.x * blockDim.x + threadIdx.x, (uint64_t)gridDim.x * blockDim.x);
}

/* --per-cta's launch options (mk_bench_comm_per_cta_opts): dynamic shared memory of the per-CTA kernels (a
 * fused kernel's CTAs hold ~200 KiB of it, which leaves the L1 the rest), loads that bypass L1 (ld.global.cg). */
static int g_smem_bytes, g_ldcg;

/* dst[i] = src[i] for n 16-byte vectors with `ctas` CTAs of 512 threads, 8 loads in flight per
 * thread (the fused reducers' depth): pull when src is a peer's memory, push when dst is. */
template <bool kCg>
__global__ void __launch_bounds__(512) xfer_kernel(uint4 *dst, const uint4 *src, uint64_t n) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 7 * stride < n; i += 8 * stride) {
    uint4 v[8];
#pragma unroll
    for (int u = 0; u < 8; u++) v[u] = kCg ? __ldcg(src + i + u * stride) : src[i + u * stride];
#pragma unroll
    for (int u = 0; u < 8; u++) dst[i + u * stride] = v[u];
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

/* The fused reducers' inner loop alone: 128 x 128 blocks of four [tiles_m x 128][n] bf16 sources
 * (this rank's and local peers 1..3's) summed by mk_fused_reduce_block into dst, one block at a
 * time per CTA with a CTA barrier before each (as the reducers' flag check), nothing beside it. */
__global__ void __launch_bounds__(384) reduce_alone_kernel(uint16_t *dst, const uint16_t *s0, const uint16_t *s1,
                                                            const uint16_t *s2, const uint16_t *s3, int tiles_m, int ncb,
                                                            int64_t n) {
  for (int b = blockIdx.x; b < tiles_m * ncb; b += gridDim.x) {
    const int64_t off = (int64_t)(b / ncb) * 128 * n + (int64_t)(b % ncb) * 128;
    const uint16_t *src[4] = {s0 + off, s1 + off, s2 + off, s3 + off};
    __syncthreads();
    mk_fused_reduce_block(dst + off, src, 4, 128, 128, n, nullptr, threadIdx.x, blockDim.x);
  }
}

extern "C" mk_status mk_bench_comm_reduce4(const mk_dev_world *w, int ctas, uint64_t src_off, uint64_t dst_off,
                                           int64_t rows, int64_t n, void *stream) {
  const uint16_t *s[4];
  for (int p = 0; p < 4; p++) s[p] = (const uint16_t *)(w->peer_heap[p] + src_off);
  reduce_alone_kernel<<<ctas, 384, g_smem_bytes, (cudaStream_t)stream>>>((uint16_t *)(w->heap + dst_off), s[0], s[1], s[2], s[3],
                                                               (int)(rows / 128), (int)(n / 128), n);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

__global__ void put_tma_kernel(char *dst, const char *src, uint64_t bytes) {
  extern __shared__ __align__(128) char smem[];
  __shared__ uint64_t bars[TMA_STAGES];
  uint64_t slice = ((bytes + gridDim.x - 1) / gridDim.x + 15) & ~(uint64_t)15;
  uint64_t off = slice * blockIdx.x;
  if (off >= bytes) return;
  uint64_t len = bytes - off < slice ? bytes - off : slice;
  mk_copy_tma_cta(dst + off, src + off, len, smem, TMA_CHUNK, TMA_STAGES, bars);
}

extern "C" mk_status mk_bench_comm_put(const mk_dev_world *w, int method, int lp, uint64_t src_off, uint64_t dst_off,
                                       uint64_t bytes, void *stream) {
  static int sms;
  if (!sms) {
    int dev;
    MK_CUDA_CHECK(cudaGetDevice(&dev));
    MK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    MK_CUDA_CHECK(cudaFuncSetAttribute(put_tma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, TMA_CHUNK * TMA_STAGES));
  }
  char *dst = w->peer_heap[lp] + dst_off, *src = w->heap + src_off;
  cudaStream_t s = (cudaStream_t)stream;
  if (method == MK_BENCH_PUT_SM) {
    uint64_t want = (bytes / 16 + 511) / 512;
    int blocks = (int)(want < (uint64_t)sms * 2 ? (want ? want : 1) : (uint64_t)sms * 2);
    put_sm_kernel<<<blocks, 512, 0, s>>>(dst, src, bytes);
  } else {
    uint64_t want = (bytes + TMA_CHUNK - 1) / TMA_CHUNK;
    int blocks = (int)(want < 2ull * sms ? (want ? want : 1) : 2ull * sms); /* 2 CTAs of 64 KiB per SM */
    put_tma_kernel<<<blocks, 128, TMA_CHUNK * TMA_STAGES, s>>>(dst, src, bytes);
  }
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_bench_comm_xfer(const mk_dev_world *w, int lp, int pull, int ctas, uint64_t src_off,
                                        uint64_t dst_off, uint64_t bytes, void *stream) {
  const uint4 *src = (const uint4 *)((pull ? w->peer_heap[lp] : w->heap) + src_off);
  uint4 *dst = (uint4 *)((pull ? w->heap : w->peer_heap[lp]) + dst_off);
  auto kern = g_ldcg ? xfer_kernel<true> : xfer_kernel<false>;
  kern<<<ctas, 512, g_smem_bytes, (cudaStream_t)stream>>>(dst, src, bytes / 16);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_bench_comm_per_cta_opts(int smem_bytes, int ldcg) {
  const int attr = cudaFuncAttributeMaxDynamicSharedMemorySize;
  MK_CUDA_CHECK(cudaFuncSetAttribute(xfer_kernel<false>, (cudaFuncAttribute)attr, smem_bytes));
  MK_CUDA_CHECK(cudaFuncSetAttribute(xfer_kernel<true>, (cudaFuncAttribute)attr, smem_bytes));
  MK_CUDA_CHECK(cudaFuncSetAttribute(reduce_alone_kernel, (cudaFuncAttribute)attr, smem_bytes));
  g_smem_bytes = smem_bytes, g_ldcg = ldcg;
  return MK_STATUS_OK;
}

__device__ __forceinline__ bool send_signal(const mk_dev_world &w, uint64_t sig, int peer, int via_proxy) {
  if (via_proxy) return mk_post(w, MK_CMD_SIGNAL, peer, 0, 0, 0, sig + 8ull * w.rank, 1);
  mk_signal_add(w, peer % w.local_size, sig + 8ull * w.rank, 1);
  return true;
}

__global__ void pingpong_kernel(mk_dev_world w, uint64_t sig, int peer, int initiator, uint64_t base, int n,
                                int via_proxy, int *fail) {
  for (int k = 1; k <= n; k++) {
    if (initiator && !send_signal(w, sig, peer, via_proxy)) break;
    if (!mk_wait_ge(w, sig + 8ull * peer, base + k, MK_OP_COMM_BENCH, peer, k)) break;
    if (!initiator && !send_signal(w, sig, peer, via_proxy)) break;
    if (k == n) return;
  }
  atomicAdd(fail, 1);
}

extern "C" mk_status mk_bench_comm_pingpong(const mk_dev_world *w, uint64_t sig, int peer, int initiator, uint64_t base,
                                            int n, int via_proxy, int *fail, void *stream) {
  pingpong_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(*w, sig, peer, initiator, base, n, via_proxy, fail);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

__global__ void proxy_put_kernel(mk_dev_world w, uint64_t sig, uint64_t src_off, uint64_t dst_off, uint64_t bytes,
                                 int peer, int initiator, uint64_t base, int *fail) {
  bool ok;
  if (initiator) {
    ok = mk_post(w, MK_CMD_PUT_SIGNAL, peer, src_off, dst_off, bytes, sig + 8ull * w.rank, 1) &&
         mk_wait_ge(w, sig + 8ull * peer, base + 1, MK_OP_COMM_BENCH, peer, 0);
  } else {
    ok = mk_wait_ge(w, sig + 8ull * peer, base + 1, MK_OP_COMM_BENCH, peer, 0) &&
         mk_post(w, MK_CMD_SIGNAL, peer, 0, 0, 0, sig + 8ull * w.rank, 1);
  }
  if (!ok) atomicAdd(fail, 1);
}

extern "C" mk_status mk_bench_comm_proxy_put(const mk_dev_world *w, uint64_t sig, uint64_t src_off, uint64_t dst_off,
                                             uint64_t bytes, int peer, int initiator, uint64_t base, int *fail,
                                             void *stream) {
  proxy_put_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(*w, sig, src_off, dst_off, bytes, peer, initiator, base, fail);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}
