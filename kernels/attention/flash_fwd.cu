/* flash_fwd.cu — flash attention forward (prefill): bf16 Q/K/V, fp32 accumulation, variable
 * sequence lengths in a batch (cu_seqlens), GQA, causal (bottom-right aligned or an explicit
 * offset) and non-causal; writes O (bf16) and the log-sum-exp (fp32, natural log).
 * This file: the public launcher (validation, choice of kernel) and the portable mma.sync
 * kernel (MK_ATTN_IMPL_MMA); the Hopper wgmma kernels are in flash_fwd_sm90.cu (MK_ATTN_IMPL_WGMMA) and
 * flash_fwd_ws.cu (MK_ATTN_IMPL_WGMMA_WS, the default there).
 *
 * mma.sync kernel: one CTA = 128 query rows of one (sequence, q head); 8 warps, 16 rows each. K/V tiles of 64
 * keys stream through a 2-stage cp.async ring in swizzled shared memory. Per tile, each warp:
 *   S = Q K^T        (mma.sync m16n8k16, Q fragments held in registers, K by ldmatrix)
 *   online softmax   (row max over the quad, exp2 with the scale folded in, rescale O)
 *   O += P V         (P converted to bf16 in registers as the A operand, V by ldmatrix.trans)
 * CTAs of the last query blocks (the most work under a causal mask) are launched first.
 * Split along the keys (few query blocks, long keys): each CTA takes an even share of its query
 * block's key tiles and stores fp32 partials; fwd_merge_kernel sums them by their LSE. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "core/check.h"
#include "kernels/attention/flash_fwd.cuh"

namespace mk_attn {
namespace {

struct sm80_config {
  static constexpr int kWarps = 8;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kBM = 16 * kWarps; /* query rows per CTA */
  static constexpr int kBN = 64;          /* keys per tile */
  static constexpr int kStages = 2;
  template <int D>
  static constexpr size_t smem_bytes() {
    return (size_t)(kBM * D + kStages * 2 * kBN * D) * sizeof(uint16_t);
  }
};

/* The softmax takes exp2f here, not exp2_approx: so the D 64 kernel fits in 128 registers a thread, two CTAs an SM.
 * With exp2_approx it took 132 (one CTA an SM: 3.32 against 2.46 ms at S 8192), and held to 128 by __launch_bounds__
 * it spilled (NOTES, attention/flash_fwd, session 45). */
template <int D>
__global__ void __launch_bounds__(sm80_config::kThreads) flash_fwd_sm80_kernel(const fwd_params p) {
  using C = sm80_config;
  constexpr int BM = C::kBM, BN = C::kBN, CH = D / 8;
  extern __shared__ __align__(128) uint16_t smem[];
  uint16_t *sQ = smem;
  uint16_t *sK = sQ + BM * D;              /* stage s at sK + s * BN * D */
  uint16_t *sV = sK + C::kStages * BN * D; /* stage s at sV + s * BN * D */

  const int h = blockIdx.y;
  fwd_block blk;
  if (!fwd_block_setup<D, BM, BN>(p, blockIdx.z, gridDim.x - 1 - blockIdx.x, h, blk)) return;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  auto off = [](int r, int c) { return swz<D>(r, c); };
  load_rows<BM, CH, C::kThreads>(sQ, blk.gq, blk.q_stride, blk.seqlen_q - blk.m_start, off);
  auto load_kv = [&](int nb, int stage) {
    const long long n0 = (long long)nb * BN;
    const int valid = blk.seqlen_k - nb * BN;
    load_rows<BN, CH, C::kThreads>(sK + stage * BN * D, blk.gk + n0 * blk.kv_stride, blk.kv_stride, valid, off);
    load_rows<BN, CH, C::kThreads>(sV + stage * BN * D, blk.gv + n0 * blk.kv_stride, blk.kv_stride, valid, off);
  };
  if (blk.n_blocks > blk.n_begin) load_kv(blk.n_begin, blk.n_begin & 1);
  cp_async_commit();

  uint32_t qf[D / 16][4];
  float o[D / 8][4];
#pragma unroll
  for (int j = 0; j < D / 8; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
  float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.f, 0.f};
  const int row0 = blk.m_start + warp * 16 + g; /* this thread's rows: row0, row0 + 8 */
  const int mi = lane / 8, mr = lane % 8;       /* ldmatrix: which 8x8 matrix, which row of it */

  for (int it = blk.n_begin; it < blk.n_blocks; it++) {
    const int stage = it & 1;
    if (it + 1 < blk.n_blocks) load_kv(it + 1, stage ^ 1);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    if (it == blk.n_begin) {
#pragma unroll
      for (int ks = 0; ks < D / 16; ks++)
        ldsm_x4(qf[ks], smem_u32(sQ + swz<D>(warp * 16 + (mi & 1) * 8 + mr, ks * 2 + (mi >> 1))));
    }
    const uint16_t *tK = sK + stage * BN * D, *tV = sV + stage * BN * D;

    /* S = Q K^T for this warp's 16 rows x 64 keys. */
    float s[BN / 8][4];
#pragma unroll
    for (int j = 0; j < BN / 8; j++) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
    for (int ks = 0; ks < D / 16; ks++) {
#pragma unroll
      for (int jp = 0; jp < BN / 16; jp++) {
        uint32_t bk[4];
        ldsm_x4(bk, smem_u32(tK + swz<D>(jp * 16 + (mi >> 1) * 8 + mr, ks * 2 + (mi & 1))));
        mma_16816(s[2 * jp], qf[ks], bk[0], bk[1]);
        mma_16816(s[2 * jp + 1], qf[ks], bk[2], bk[3]);
      }
    }
    mask_tile<BN / 8>(s, blk, it * BN, row0, t);
    softmax_step<BN / 8, D / 8, false>(s, o, m_r, l_r, p.scale_log2);

    /* O += P V, P from the S registers, V by ldmatrix.trans. */
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) {
      uint32_t a[4];
      p_fragment<BN / 8>(s, kk, a);
#pragma unroll
      for (int dp = 0; dp < D / 16; dp++) {
        uint32_t bv[4];
        ldsm_x4_trans(bv, smem_u32(tV + swz<D>(kk * 16 + (mi & 1) * 8 + mr, dp * 2 + (mi >> 1))));
        mma_16816(o[2 * dp], a, bv[0], bv[1]);
        mma_16816(o[2 * dp + 1], a, bv[2], bv[3]);
      }
    }
    __syncthreads(); /* this stage is refilled by the next iteration's load */
  }
  cp_async_wait<0>();
  store_out<D>(p, blk, h, row0, t, o, m_r, l_r);
}

}  // namespace

mk_status flash_fwd_launch_sm80(const fwd_params &p, int d, cudaStream_t stream) {
  using C = sm80_config;
  static_assert(C::kBN == kSm80TileN && C::kBM == kFwdTileM, "the split's choice assumes these tiles");
  if (d == 64)
    return flash_fwd_start(flash_fwd_sm80_kernel<64>, C::kThreads, C::kBM, C::smem_bytes<64>(), p, d, 0, stream);
  return flash_fwd_start(flash_fwd_sm80_kernel<128>, C::kThreads, C::kBM, C::smem_bytes<128>(), p, d, 0, stream);
}

/* One warp per (query row, head): the splits' LSEs give the weights, O = sum of the weighted
 * fp32 partials (bf16 out), LSE = the merged one; no split saw a key: O = 0, LSE = -inf. */
__global__ void fwd_merge_kernel(const fwd_params p, int d) {
  const int lane = threadIdx.x % 32;
  const long long rows = (long long)p.total_q * p.hq, warps = (long long)gridDim.x * blockDim.x / 32;
  const long long split_o = (long long)p.total_q * p.hq * d; /* floats between two splits' O */
  for (long long rh = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32; rh < rows; rh += warps) {
    const int h = (int)(rh % p.hq);
    const long long row = rh / p.hq;
    const float *lse = p.lse_part + (long long)h * p.total_q + row;
    const long long split_l = (long long)p.hq * p.total_q;
    float m, sum;
    lse_max_sum(lse, split_l, p.splits, m, sum);
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    const bool mine = lane * 4 < d;
    if (mine && sum > 0.f) {
      const float *o = p.o_part + rh * d + lane * 4;
      for (int s = 0; s < p.splits; s++) {
        const float w = expf(lse[s * split_l] - m); /* 0 for an empty split */
        if (w > 0.f) {
          const float4 x = *reinterpret_cast<const float4 *>(o + s * split_o);
          acc.x += w * x.x, acc.y += w * x.y, acc.z += w * x.z, acc.w += w * x.w;
        }
      }
    }
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    if (mine) {
      uint16_t *dst = p.o + rh * d + lane * 4;
      *reinterpret_cast<uint2 *>(dst) = make_uint2(pack_bf16x2(acc.x * inv, acc.y * inv), pack_bf16x2(acc.z * inv, acc.w * inv));
    }
    if (p.lse && lane == 0) p.lse[(long long)h * p.total_q + row] = sum > 0.f ? m + logf(sum) : -INFINITY;
  }
}

mk_status fwd_merge(const fwd_params &p, int d, cudaStream_t stream) {
  const long long warps = (long long)p.total_q * p.hq, threads = 256;
  const long long want = (warps * 32 + threads - 1) / threads;
  fwd_merge_kernel<<<(unsigned)(want < 65536 ? want : 65536), (unsigned)threads, 0, stream>>>(p, d);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

}  // namespace mk_attn

namespace {

/* fp32 partials of s splits: O [s][total_q][hq][d], then the LSEs [s][hq][total_q]. */
size_t fwd_split_bytes(const mk_attn_fwd_args *a, int s) {
  const size_t rows = (size_t)s * (size_t)a->total_q * (size_t)a->hq;
  return rows * (size_t)a->d * sizeof(float) + (rows * sizeof(float) + 15) / 16 * 16;
}

mk_status fwd_validate(const mk_attn_fwd_args *a) {
  if (!a) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "flash_attn_fwd: args is NULL");
  if (a->d != 64 && a->d != 128)
    MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_KERNEL, "flash_attn_fwd: head dim %d (supported: 64, 128)", a->d);
  if (a->hq <= 0 || a->hkv <= 0 || a->hq % a->hkv != 0 || a->hq > 65535)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "flash_attn_fwd: hq %d must be a positive multiple of hkv %d (and <= 65535)", a->hq, a->hkv);
  if (a->batch < 0 || a->batch > 65535 || a->max_seqlen_q < 0 || a->max_seqlen_k < 0 || a->total_q < 0)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "flash_attn_fwd: batch %d (<= 65535), max_seqlen_q %d, max_seqlen_k %d, total_q %d must be >= 0",
                  a->batch, a->max_seqlen_q, a->max_seqlen_k, a->total_q);
  if (a->mask != MK_ATTN_MASK_NONE && a->mask != MK_ATTN_MASK_CAUSAL && a->mask != MK_ATTN_MASK_CAUSAL_OFFSET)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "flash_attn_fwd: unknown mask %d", (int)a->mask);
  if (!(a->softmax_scale == a->softmax_scale) || isinf(a->softmax_scale))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "flash_attn_fwd: softmax_scale is not finite");
  if (a->impl != MK_ATTN_IMPL_AUTO && a->impl != MK_ATTN_IMPL_MMA && a->impl != MK_ATTN_IMPL_WGMMA &&
      a->impl != MK_ATTN_IMPL_WGMMA_WS)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "flash_attn_fwd: unknown impl %d", (int)a->impl);
  if (a->num_splits < 0 || a->num_splits > 1024)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "flash_attn_fwd: num_splits %d (0: automatic, 1: none, up to 1024)", a->num_splits);
  if (!a->cu_seqlens_q != !a->cu_seqlens_k ||
      (!a->cu_seqlens_q && (a->batch != 1 || a->total_q != a->max_seqlen_q)))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "flash_attn_fwd: cu_seqlens_q and cu_seqlens_k are both set, or both NULL for one sequence (batch 1, "
                  "total_q = max_seqlen_q); got %s / %s, batch %d, total_q %d, max_seqlen_q %d",
                  a->cu_seqlens_q ? "set" : "NULL", a->cu_seqlens_k ? "set" : "NULL", a->batch, a->total_q,
                  a->max_seqlen_q);
  if ((uintptr_t)a->workspace % 16 || (!a->workspace && a->workspace_bytes))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "flash_attn_fwd: workspace %p must be 16-byte aligned, and not NULL with %zu bytes", a->workspace,
                  a->workspace_bytes);
  return MK_STATUS_OK;
}

/* The device's compute capability major and SM count. */
mk_status fwd_device(int *major, int *sms) {
  int dev = 0;
  MK_CUDA_CHECK(cudaGetDevice(&dev));
  MK_CUDA_CHECK(cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, dev));
  MK_CUDA_CHECK(cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev));
  return MK_STATUS_OK;
}

/* Splits of the keys for this call; limit = the workspace's bytes (SIZE_MAX: unlimited).
 * Automatic: none where the (query block, head, sequence) CTAs already fill half the SMs; else
 * as many as leave every split >= 2 key tiles, keep splits x CTAs within one wave, and fit the
 * limit. Forced: as asked, the limit checked by the caller. */
int fwd_splits(const mk_attn_fwd_args *a, int sm90, int sms, size_t limit) {
  if (a->num_splits >= 1) return a->num_splits;
  const long long ctas = (long long)((a->max_seqlen_q + mk_attn::kFwdTileM - 1) / mk_attn::kFwdTileM) * a->hq * a->batch;
  if (ctas <= 0 || 2 * ctas > sms) return 1;
  const int bn = sm90 ? mk_attn::kSm90TileN : mk_attn::kSm80TileN;
  long long s = sms / ctas;
  const long long by_keys = ((long long)a->max_seqlen_k + bn - 1) / bn / 2;
  if (s > by_keys) s = by_keys;
  if (s > 65535 / a->batch) s = 65535 / a->batch;
  while (s > 1 && fwd_split_bytes(a, (int)s) > limit) s--;
  return s > 1 ? (int)s : 1;
}

}  // namespace

extern "C" mk_status mk_flash_attn_fwd_workspace_size(const mk_attn_fwd_args *a, size_t *bytes) {
  MK_CHECK(fwd_validate(a));
  if (!bytes) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "flash_attn_fwd_workspace_size: bytes is NULL");
  *bytes = 0;
  if (a->batch == 0 || a->max_seqlen_q == 0) return MK_STATUS_OK;
  int major = 0, sms = 0;
  MK_CHECK(fwd_device(&major, &sms));
  const int sm90 = a->impl != MK_ATTN_IMPL_MMA && major == 9;
  const int s = fwd_splits(a, sm90, sms, SIZE_MAX);
  if (s > 1) *bytes = fwd_split_bytes(a, s);
  return MK_STATUS_OK;
}

extern "C" mk_status mk_flash_attn_fwd(const mk_attn_fwd_args *a, mk_stream_t stream) {
  MK_CHECK(fwd_validate(a));
  if (a->batch == 0 || a->max_seqlen_q == 0) return MK_STATUS_OK;
  if (!a->q || !a->k || !a->v || !a->o)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "flash_attn_fwd: a NULL tensor pointer");
  if (((uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->v | (uintptr_t)a->o) % 16)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "flash_attn_fwd: q, k, v, o must be 16-byte aligned");
  int major = 0, sms = 0;
  MK_CHECK(fwd_device(&major, &sms));
  if ((a->impl == MK_ATTN_IMPL_WGMMA || a->impl == MK_ATTN_IMPL_WGMMA_WS) && major != 9)
    MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_KERNEL,
                  "flash_attn_fwd: the wgmma kernels need a Hopper GPU (this one is sm_%d0)", major);
  const int sm90 = a->impl != MK_ATTN_IMPL_MMA && major == 9;
  const int splits = fwd_splits(a, sm90, sms, a->workspace_bytes); /* 0 without a workspace (validated) */
  if (splits > 1 && (long long)splits * a->batch > 65535)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "flash_attn_fwd: num_splits %d x batch %d is more than 65535 grid slices", splits, a->batch);
  if (splits > 1 && fwd_split_bytes(a, splits) > a->workspace_bytes)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "flash_attn_fwd: num_splits %d needs %zu bytes of workspace, %zu given (mk_flash_attn_fwd_workspace_size)",
                  splits, fwd_split_bytes(a, splits), a->workspace_bytes);
  mk_attn::fwd_params p;
  p.q = a->q;
  p.k = a->k;
  p.v = a->v;
  p.o = a->o;
  p.lse = a->lse;
  p.cu_q = a->cu_seqlens_q;
  p.cu_k = a->cu_seqlens_k;
  p.seqlen_q = a->max_seqlen_q, p.seqlen_k = a->max_seqlen_k;
  p.total_q = a->total_q;
  p.hq = a->hq;
  p.hkv = a->hkv;
  p.group = a->hq / a->hkv;
  p.mask = (int)a->mask;
  p.causal_offset = a->causal_offset;
  p.scale = a->softmax_scale;
  p.scale_log2 = a->softmax_scale * 1.4426950408889634f;
  p.splits = splits;
  p.batch = a->batch;
  p.o_tma = 0, p.q_prefetch = 0, p.early_q = 0;
  p.o_part = splits > 1 ? (float *)a->workspace : NULL;
  p.lse_part = splits > 1 ? p.o_part + (size_t)splits * a->total_q * a->hq * a->d : NULL;
  cudaStream_t s = (cudaStream_t)stream;
  if (!sm90) return mk_attn::flash_fwd_launch_sm80(p, a->d, s);
  /* AUTO: the warp-specialised kernel, except for a call that splits along the keys (a few query rows against a
   * long cache: two or three key tiles a CTA, where its start-up costs more than its pipeline saves). */
  if (a->impl == MK_ATTN_IMPL_WGMMA || (a->impl == MK_ATTN_IMPL_AUTO && splits > 1))
    return mk_attn::flash_fwd_launch_sm90(p, a->d, s);
  return mk_attn::flash_fwd_launch_ws(p, a->d, sms, s);
}
