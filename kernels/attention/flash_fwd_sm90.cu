/* flash_fwd_sm90.cu — the Hopper (sm_90a) flash attention forward kernel, wgmma-based; the
 * same contract as the mma.sync kernel in flash_fwd.cu (which holds the public launcher).
 * One CTA = 128 query rows of one (sequence, q head[, split of the keys]); the tile loop (wgmma S = Q K^T, online
 * softmax, wgmma O += P V over a 2-stage cp.async K/V ring) is in flash_fwd_sm90.cuh, shared
 * with the fused ring attention. */
#include <cuda_runtime.h>
#include <math.h>

#include "core/check.h"
#include "kernels/attention/flash_fwd_sm90.cuh"

namespace mk_attn {
namespace {

template <int D>
__global__ void __launch_bounds__(sm90_config::kThreads, 1) flash_fwd_sm90_kernel(const fwd_params p) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __trap(); /* built for a GPU without wgmma: the launcher never starts this kernel there */
#else
  using C = sm90_config;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const sm90_tiles<D> t(smem_raw);
  const int h = blockIdx.y;
  fwd_block blk;
  if (!fwd_block_setup<D, C::kBM, C::kBN>(p, blockIdx.z, gridDim.x - 1 - blockIdx.x, h, blk)) return;
  sm90_load_q<D>(t, blk);
  sm90_acc<D> acc;
  sm90_acc_init(acc);
  sm90_attend<D>(blk, t, p.scale_log2, acc);
  cp_async_wait<0>();
  store_out<D>(p, blk, h, sm90_row0(blk), threadIdx.x % 4, acc.o, acc.m, acc.l);
#endif
}

}  // namespace

mk_status flash_fwd_launch_sm90(const fwd_params &p, int d, cudaStream_t stream) {
  using C = sm90_config;
  static_assert(C::kBN == kSm90TileN && C::kBM == kFwdTileM, "the split's choice assumes these tiles");
  if (d == 64)
    return flash_fwd_start(flash_fwd_sm90_kernel<64>, C::kThreads, C::kBM, C::smem_bytes<64>(), p, d, 0, stream);
  return flash_fwd_start(flash_fwd_sm90_kernel<128>, C::kThreads, C::kBM, C::smem_bytes<128>(), p, d, 0, stream);
}

}  // namespace mk_attn
