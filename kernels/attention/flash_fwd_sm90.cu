/* flash_fwd_sm90.cu — the Hopper (sm_90a) flash attention forward kernel, wgmma-based; the
 * same contract as the mma.sync kernel in flash_fwd.cu (which holds the public launcher).
 *
 * One CTA = 128 query rows of one (sequence, q head) = 2 warpgroups of 64 rows. K/V tiles of
 * 128 keys stream through a 2-stage cp.async ring in 128-byte-swizzled shared memory (the
 * canonical wgmma layout, see wgmma.cuh); Q stays in shared memory. Per tile, each warpgroup:
 *   S = Q K^T     wgmma m64n128k16, both operands from shared memory (K-major), d/16 steps
 *   softmax       online, in registers (exp2, scale folded in), shared with the mma.sync kernel
 *   O += P V      wgmma m64n{d}k16 with P as bf16 register fragments (A) and V from shared
 *                 memory read MN-major (transposed B), 8 steps of 16 keys
 * The two warpgroups run independently between the CTA barriers, so one's softmax overlaps the
 * other's tensor-core work. All 256 threads issue the cp.async loads of the next tile before
 * computing on the current one. */
#include <cuda_runtime.h>
#include <math.h>

#include "core/check.h"
#include "kernels/attention/flash_fwd.cuh"
#include "kernels/attention/wgmma.cuh"

namespace mk_attn {
namespace {

struct sm90_config {
  static constexpr int kWarpgroups = 2;
  static constexpr int kThreads = 128 * kWarpgroups;
  static constexpr int kBM = 64 * kWarpgroups; /* query rows per CTA */
  static constexpr int kBN = 128;              /* keys per tile */
  static constexpr int kStages = 2;
  template <int D>
  static constexpr size_t smem_bytes() { /* + 1 KiB to align the tiles to 1024 bytes */
    return (size_t)(kBM * D + kStages * 2 * kBN * D) * sizeof(uint16_t) + 1024;
  }
};

template <int N>
__device__ __forceinline__ void fence_u32(uint32_t (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; i++)
#pragma unroll
    for (int j = 0; j < 4; j++) asm volatile("" : "+r"(r[i][j])::"memory");
}

template <int D>
__global__ void __launch_bounds__(sm90_config::kThreads, 1) flash_fwd_sm90_kernel(const fwd_params p) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __trap(); /* built for a GPU without wgmma: the launcher never starts this kernel there */
#else
  using C = sm90_config;
  constexpr int BM = C::kBM, BN = C::kBN, CH = D / 8, NT = BN / 8, ND = D / 8;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint16_t *sQ = reinterpret_cast<uint16_t *>(smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023));
  uint16_t *sK = sQ + BM * D;              /* stage s at sK + s * BN * D */
  uint16_t *sV = sK + C::kStages * BN * D; /* stage s at sV + s * BN * D */

  const int h = blockIdx.y;
  fwd_block blk;
  if (!fwd_block_setup<D, BM, BN>(p, blockIdx.z, gridDim.x - 1 - blockIdx.x, h, blk)) return;
  const int tid = threadIdx.x, wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  load_rows<BM, CH, C::kThreads>(sQ, blk.gq, blk.q_stride, blk.seqlen_q - blk.m_start,
                                 [](int r, int c) { return sw128(BM, r, c); });
  auto load_kv = [&](int nb, int stage) {
    const long long n0 = (long long)nb * BN;
    const int valid = blk.seqlen_k - nb * BN;
    auto off = [](int r, int c) { return sw128(BN, r, c); };
    load_rows<BN, CH, C::kThreads>(sK + stage * BN * D, blk.gk + n0 * blk.kv_stride, blk.kv_stride, valid, off);
    load_rows<BN, CH, C::kThreads>(sV + stage * BN * D, blk.gv + n0 * blk.kv_stride, blk.kv_stride, valid, off);
  };
  if (blk.n_blocks > 0) load_kv(0, 0);
  cp_async_commit();

  float o[ND][4];
#pragma unroll
  for (int j = 0; j < ND; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
  float(&of)[ND * 4] = *reinterpret_cast<float(*)[ND * 4]>(&o[0][0]);
  float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.f, 0.f};
  const int row0 = blk.m_start + wg * 64 + warp * 16 + g; /* this thread's rows: row0, row0 + 8 */
  const uint32_t q_addr = smem_u32(sQ) + (uint32_t)(wg * 64 * 64 * 2); /* this warpgroup's 64 rows */

  for (int it = 0; it < blk.n_blocks; it++) {
    const int stage = it & 1;
    if (it + 1 < blk.n_blocks) load_kv(it + 1, stage ^ 1);
    cp_async_commit();
    cp_async_wait<1>();
    fence_proxy_async(); /* the cp.async data is read by wgmma (async proxy) */
    __syncthreads();
    const uint32_t k_addr = smem_u32(sK + stage * BN * D), v_addr = smem_u32(sV + stage * BN * D);

    /* S = Q K^T: 64 rows x 128 keys per warpgroup. */
    float s[NT][4];
#pragma unroll
    for (int j = 0; j < NT; j++) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
    float(&sf)[NT * 4] = *reinterpret_cast<float(*)[NT * 4]>(&s[0][0]);
    fence_regs(sf);
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < D / 16; ks++) {
      const uint32_t col = (uint32_t)((ks / 4) * 64), kofs = (uint32_t)((ks % 4) * 16 * 2); /* bytes */
      const uint64_t da = gmma_desc(q_addr + col * BM * 2 + kofs, 16, 1024);
      const uint64_t db = gmma_desc(k_addr + col * BN * 2 + kofs, 16, 1024);
      wgmma_m64n128k16_ss(sf, da, db, ks > 0);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(sf);

    mask_tile<NT>(s, blk, it * BN, row0, t);
    softmax_step<NT, ND>(s, o, m_r, l_r, p.scale_log2);

    /* O += P V: all P fragments first (they must stay intact until the wgmmas complete). */
    uint32_t pa[BN / 16][4];
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) p_fragment<NT>(s, kk, pa[kk]);
    fence_u32(pa);
    fence_regs(of);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) {
      const uint64_t dv = gmma_desc(v_addr + (uint32_t)(kk * 16 * 64 * 2), BN * 64 * 2, 1024);
      if constexpr (D == 128)
        wgmma_m64n128k16_rs_tb(of, pa[kk], dv, 1);
      else
        wgmma_m64n64k16_rs_tb(of, pa[kk], dv, 1);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(of);
    fence_u32(pa);
    __syncthreads(); /* this stage is refilled by the next iteration's load */
  }
  cp_async_wait<0>();
  store_out<D>(p, blk, h, row0, t, o, m_r, l_r);
#endif
}

}  // namespace

mk_status flash_fwd_launch_sm90(const fwd_params &p, int d, int batch, int max_seqlen_q, cudaStream_t stream) {
  using C = sm90_config;
  if (d == 64)
    return flash_fwd_start(flash_fwd_sm90_kernel<64>, C::kThreads, C::kBM, C::smem_bytes<64>(), p, batch, max_seqlen_q,
                           stream);
  return flash_fwd_start(flash_fwd_sm90_kernel<128>, C::kThreads, C::kBM, C::smem_bytes<128>(), p, batch, max_seqlen_q,
                         stream);
}

}  // namespace mk_attn
