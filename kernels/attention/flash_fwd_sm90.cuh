/* flash_fwd_sm90.cuh — internal: the Hopper (sm_90a, wgmma) flash-attention tile loop, shared by
 * the flash forward kernel (flash_fwd_sm90.cu) and the fused ring attention (ring_attn.cu).
 *
 * A CTA of 256 threads = 2 warpgroups owns 128 query rows (64 per warpgroup) held in shared
 * memory; K/V tiles of 128 keys stream through a 2-stage cp.async ring in 128-byte-swizzled
 * shared memory (the canonical wgmma layout, see wgmma.cuh). Per tile, each warpgroup:
 *   S = Q K^T     wgmma m64n128k16, both operands from shared memory (K-major), d/16 steps
 *   softmax       online, in registers (exp2, scale folded in), shared with the mma.sync kernel
 *   O += P V      wgmma m64n{d}k16 with P as bf16 register fragments (A) and V from shared
 *                 memory read MN-major (transposed B), 8 steps of 16 keys
 * The two warpgroups run independently between the CTA barriers, so one's softmax overlaps the
 * other's tensor-core work. All 256 threads issue the cp.async loads of the next tile before
 * computing on the current one.
 *
 * Use: sm90_tiles t(smem); sm90_load_q(t, blk); sm90_acc_init(acc);
 *      sm90_attend(blk_1, t, scale_log2, acc); sm90_attend(blk_2, ...);   (any number of key
 *      ranges against the same query rows: the online softmax carries over)
 *      cp_async_wait<0>(); store_out(..., acc.o, acc.m, acc.l);
 * A call that visits at least one tile ends with a CTA barrier after its last read of shared
 * memory, so the next call (or the next query block's sm90_load_q) may refill it. */
#ifndef MK_ATTN_FLASH_FWD_SM90_CUH
#define MK_ATTN_FLASH_FWD_SM90_CUH

#include "kernels/attention/flash_fwd.cuh"
#include "kernels/attention/wgmma.cuh"

namespace mk_attn {

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

/* The Q tile and the K/V stages, carved from the dynamic shared memory (aligned to 1024). */
template <int D>
struct sm90_tiles {
  uint16_t *sQ, *sK, *sV; /* stage s of K at sK + s * BN * D, of V at sV + s * BN * D */
  __device__ __forceinline__ explicit sm90_tiles(uint8_t *smem_raw) {
    sQ = reinterpret_cast<uint16_t *>(smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023));
    sK = sQ + sm90_config::kBM * D;
    sV = sK + sm90_config::kStages * sm90_config::kBN * D;
  }
};

/* This thread's share of O (m16n8 accumulator layout), row maxima and partial row sums. */
template <int D>
struct sm90_acc {
  float o[D / 8][4];
  float m[2], l[2];
};

template <int D>
__device__ __forceinline__ void sm90_acc_init(sm90_acc<D> &a) {
#pragma unroll
  for (int j = 0; j < D / 8; j++) a.o[j][0] = a.o[j][1] = a.o[j][2] = a.o[j][3] = 0.f;
  a.m[0] = a.m[1] = -INFINITY;
  a.l[0] = a.l[1] = 0.f;
}

/* This thread's first query row (relative to the query sequence): rows row0 and row0 + 8. */
__device__ __forceinline__ int sm90_row0(const fwd_block &blk) {
  const int tid = threadIdx.x;
  return blk.m_start + (tid / 128) * 64 + ((tid % 128) / 32) * 16 + (tid % 32) / 4;
}

/* Issues (does not wait for) the cp.async loads of the block's query rows; they are committed
 * with the first K/V tile of the next sm90_attend. */
template <int D>
__device__ __forceinline__ void sm90_load_q(const sm90_tiles<D> &t, const fwd_block &blk) {
  constexpr int BM = sm90_config::kBM;
  load_rows<BM, D / 8, sm90_config::kThreads>(t.sQ, blk.gq, blk.q_stride, blk.seqlen_q - blk.m_start,
                                              [](int r, int c) { return sw128(BM, r, c); });
}

/* The tile loop over the key tiles [blk.n_begin, blk.n_blocks) of blk, accumulating into acc. */
template <int D>
__device__ __forceinline__ void sm90_attend(const fwd_block &blk, const sm90_tiles<D> &t, float scale_log2,
                                            sm90_acc<D> &acc) {
  using C = sm90_config;
  constexpr int BM = C::kBM, BN = C::kBN, CH = D / 8, NT = BN / 8, ND = D / 8;
  const int tid = threadIdx.x, wg = tid / 128, lane = tid % 32, tq = lane % 4;
  auto load_kv = [&](int nb, int stage) {
    const long long n0 = (long long)nb * BN;
    const int valid = blk.seqlen_k - nb * BN;
    auto off = [](int r, int c) { return sw128(BN, r, c); };
    load_rows<BN, CH, C::kThreads>(t.sK + stage * BN * D, blk.gk + n0 * blk.kv_stride, blk.kv_stride, valid, off);
    load_rows<BN, CH, C::kThreads>(t.sV + stage * BN * D, blk.gv + n0 * blk.kv_stride, blk.kv_stride, valid, off);
  };
  if (blk.n_blocks > blk.n_begin) load_kv(blk.n_begin, blk.n_begin & 1);
  cp_async_commit();

  float(&of)[ND * 4] = *reinterpret_cast<float(*)[ND * 4]>(&acc.o[0][0]);
  const int row0 = sm90_row0(blk);
  const uint32_t q_addr = smem_u32(t.sQ) + (uint32_t)(wg * 64 * 64 * 2); /* this warpgroup's 64 rows */

  for (int it = blk.n_begin; it < blk.n_blocks; it++) {
    const int stage = it & 1;
    if (it + 1 < blk.n_blocks) load_kv(it + 1, stage ^ 1);
    cp_async_commit();
    cp_async_wait<1>();
    fence_proxy_async(); /* the cp.async data is read by wgmma (async proxy) */
    __syncthreads();
    const uint32_t k_addr = smem_u32(t.sK + stage * BN * D), v_addr = smem_u32(t.sV + stage * BN * D);

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

    mask_tile<NT>(s, blk, it * BN, row0, tq);
    softmax_step<NT, ND>(s, acc.o, acc.m, acc.l, scale_log2);

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
}

}  // namespace mk_attn

#endif /* MK_ATTN_FLASH_FWD_SM90_CUH */
