/* flash_fwd.cuh — internal to the flash forward kernels (flash_fwd.cu: mma.sync, any sm_80+;
 * flash_fwd_sm90.cu: Hopper wgmma): the launch parameters and the per-thread pieces both share
 * — which keys a query block sees, masking of one S tile, the online-softmax step, and the
 * normalised store of O and the LSE. Fragments follow the m16n8 accumulator layout (see
 * attn_tile.cuh): a thread holds rows g and g + 8 of its warp's 16 rows, a row is spread over
 * the 4 lanes of a quad. */
#ifndef MK_ATTN_FLASH_FWD_CUH
#define MK_ATTN_FLASH_FWD_CUH

#include <cuda_runtime.h>
#include <math.h>

#include "core/check.h"
#include "kernels/attention/attn_tile.cuh"
#include "kernels/mk_kernels.h"

namespace mk_attn {

struct fwd_params {
  const uint16_t *q, *k, *v;
  uint16_t *o;
  float *lse;
  const int32_t *cu_q, *cu_k; /* both NULL: one sequence of seqlen_q x seqlen_k */
  int seqlen_q, seqlen_k;
  int total_q, hq, hkv, group;
  int mask; /* mk_attn_mask */
  int causal_offset;
  float scale, scale_log2;
  /* Split along the keys (splits > 1): blockIdx.z = sequence * splits + split, and each CTA
   * stores fp32 partials instead of O and the LSE: o_part [splits][total_q][hq][d] (O of its
   * keys, normalised by their sum), lse_part [splits][hq][total_q]; fwd_merge sums them. */
  int splits;
  float *o_part, *lse_part;
  int batch; /* sequences (the grid's z is batch x splits); seqlen_q is the longest (the grid's x) */
  /* The warp-specialised flash kernel only (set by its launcher): O through shared memory and TMA; the prefetch of a
   * later CTA's Q tile (0: none; else the CTAs resident at once); one CTA an item, its Q and K0 issued before the CTA's
   * barrier */
  int o_tma, q_prefetch, early_q;
};

/* One (sequence, query block, head): its extents, how many key tiles of BN it must visit, and
 * where its first query row and its sequence's first K/V rows are. */
struct fwd_block {
  int q0, seqlen_q, k0, seqlen_k, m_start;
  int n_begin, n_blocks; /* the key tiles [n_begin, n_blocks) of BN it visits */
  int split;             /* which split of the keys (0 unsplit) */
  long long off; /* query i sees key j iff j <= i + off (causal) */
  bool causal;
  const uint16_t *gq, *gk, *gv;   /* row m_start of Q; row 0 of K and V (head h / kv head) */
  long long q_stride, kv_stride; /* elements between consecutive tokens */
};

/* Fills s for query rows [m_start, m_start + BM) of a query sequence that starts at row q0 of
 * p.q (seqlen_q rows) against the keys at rows [k0, k0 + seqlen_k) of p.k / p.v; under a causal
 * mask query i sees key j iff j <= i + off. Counts the key tiles of BN the block must visit. */
template <int D, int BM, int BN>
__device__ __forceinline__ void fwd_block_init(const fwd_params &p, int h, int q0, int seqlen_q, int k0, int seqlen_k,
                                               int m_start, bool causal, long long off, fwd_block &s) {
  s.q0 = q0;
  s.seqlen_q = seqlen_q;
  s.k0 = k0;
  s.seqlen_k = seqlen_k;
  s.m_start = m_start;
  s.causal = causal;
  s.off = off;
  long long n_end = s.seqlen_k;
  if (s.causal) {
    const long long last_row = (long long)min(s.m_start + BM, s.seqlen_q) - 1;
    n_end = max(0LL, min((long long)s.seqlen_k, last_row + s.off + 1));
  }
  s.n_blocks = (int)((n_end + BN - 1) / BN);
  s.n_begin = 0;
  s.split = 0;
  s.q_stride = (long long)p.hq * D;
  s.kv_stride = (long long)p.hkv * D;
  const long long kv0 = ((long long)s.k0 * p.hkv + h / p.group) * D;
  s.gq = p.q + ((long long)(s.q0 + s.m_start) * p.hq + h) * D;
  s.gk = p.k + kv0;
  s.gv = p.v + kv0;
}

/* False when the block lies past the end of its sequence (nothing to do). z = blockIdx.z: the
 * sequence, times p.splits plus the split when split; a split takes an even share of the key
 * tiles its query block must visit (possibly none). */
template <int D, int BM, int BN>
__device__ __forceinline__ bool fwd_block_setup(const fwd_params &p, int z, int m_block, int h, fwd_block &s) {
  const int splits = p.splits > 1 ? p.splits : 1, b = z / splits;
  const int q0 = p.cu_q ? p.cu_q[b] : 0, seqlen_q = p.cu_q ? p.cu_q[b + 1] - q0 : p.seqlen_q;
  const int k0 = p.cu_k ? p.cu_k[b] : 0, seqlen_k = p.cu_k ? p.cu_k[b + 1] - k0 : p.seqlen_k;
  if (m_block * BM >= seqlen_q) return false;
  const long long off =
      p.mask == MK_ATTN_MASK_CAUSAL ? (long long)seqlen_k - seqlen_q : (long long)p.causal_offset;
  fwd_block_init<D, BM, BN>(p, h, q0, seqlen_q, k0, seqlen_k, m_block * BM, p.mask != MK_ATTN_MASK_NONE, off, s);
  if (splits > 1) {
    const long long n = s.n_blocks;
    s.split = z % splits;
    s.n_begin = (int)(n * s.split / splits);
    s.n_blocks = (int)(n * (s.split + 1) / splits);
  }
  return true;
}

/* cp.async of ROWS token rows of d = 8 * CH bf16 from src (stride elements apart) into a
 * shared tile; rows >= valid are zero-filled. off(r, c) is the element offset of 16-byte
 * chunk c of row r in the tile (the kernel's swizzle). */
template <int ROWS, int CH, int NTHREADS, class Off>
__device__ __forceinline__ void load_rows(uint16_t *tile, const uint16_t *src, long long stride, int valid, Off off) {
  for (int i = threadIdx.x; i < ROWS * CH; i += NTHREADS) {
    const int r = i / CH, c = i % CH;
    const bool ok = r < valid;
    cp_async16(smem_u32(tile + off(r, c)), ok ? src + r * stride + c * 8 : src, ok);
  }
}

/* Sets S to -inf for keys past the sequence, before lo (keys an earlier tile took: the tail tile of
 * flash_fwd_ws.cuh's ws_tile_start) and, under a causal mask, after the row's diagonal; only tiles
 * that can hold such keys are touched. row0 = this thread's first row (>= blk.m_start). Host-callable for
 * test_mask_tile. */
template <int NT>
__host__ __device__ __forceinline__ void mask_tile(float (&s)[NT][4], const fwd_block &blk, int n0, int row0, int t,
                                                   int lo) {
  const bool tail = n0 + NT * 8 > blk.seqlen_k || n0 < lo;
  const bool diag = blk.causal && (long long)n0 + NT * 8 - 1 > (long long)blk.m_start + blk.off;
  if (!tail && !diag) return;
#pragma unroll
  for (int j = 0; j < NT; j++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const int key = n0 + j * 8 + 2 * t + (e & 1);
      const long long row = row0 + (e >> 1) * 8;
      if (key < lo || key >= blk.seqlen_k || (blk.causal && (long long)key > row + blk.off)) s[j][e] = -INFINITY;
    }
}
template <int NT>
__host__ __device__ __forceinline__ void mask_tile(float (&s)[NT][4], const fwd_block &blk, int n0, int row0, int t) {
  mask_tile<NT>(s, blk, n0, row0, t, n0);
}

/* 2^x by the special-function unit alone (MUFU.EX2; results below 2^-126 flush to 0, -inf gives 0). exp2f without
 * fast math adds a range test and two multiplies around it, 3 of the softmax's ~9 instructions an element. */
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
template <bool kApprox>
__device__ __forceinline__ float exp2_of(float x) {
  if constexpr (kApprox) return exp2_approx(x);
  return exp2f(x);
}

/* Online softmax over one S tile, without O: new row max (quad reduce), S -> P = exp2(S*scale_log2 - m), running
 * sums l (per thread, reduced at the end); alpha = exp2(m_old - m_new), the factor O must be rescaled by (the
 * warp-specialised kernel applies it later, while its P V of the previous tile is in flight). exp2 is exp2_approx
 * when kApprox, else exp2f. The thread's two rows go together and each row's max and sum run in two chains (even and
 * odd n8 tiles), so that the dependent chains are half as long. */
template <int NT, bool kApprox = true>
__device__ __forceinline__ void softmax_rows(float (&s)[NT][4], float (&m_r)[2], float (&l_r)[2], float scale_log2,
                                             float (&alpha)[2]) {
  static_assert(NT >= 2 && NT % 2 == 0, "two chains a row");
  float mx[2][2], sum[2][2], m_use[2];
#pragma unroll
  for (int j = 0; j < NT; j++)
#pragma unroll
    for (int r = 0; r < 2; r++) {
      const float v = fmaxf(s[j][2 * r], s[j][2 * r + 1]);
      mx[r][j % 2] = j < 2 ? v : fmaxf(mx[r][j % 2], v);
    }
#pragma unroll
  for (int r = 0; r < 2; r++) mx[r][0] = fmaxf(mx[r][0], mx[r][1]);
#pragma unroll
  for (int x = 1; x <= 2; x *= 2)
#pragma unroll
    for (int r = 0; r < 2; r++) mx[r][0] = fmaxf(mx[r][0], __shfl_xor_sync(0xffffffffu, mx[r][0], x));
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const float m_new = fmaxf(m_r[r], mx[r][0]);
    m_use[r] = m_new == -INFINITY ? 0.f : m_new * scale_log2; /* all masked so far */
    alpha[r] = exp2_of<kApprox>(fmaf(m_r[r], scale_log2, -m_use[r]));
    m_r[r] = m_new;
  }
#pragma unroll
  for (int j = 0; j < NT; j++)
#pragma unroll
    for (int r = 0; r < 2; r++) {
      s[j][2 * r] = exp2_of<kApprox>(fmaf(s[j][2 * r], scale_log2, -m_use[r]));
      s[j][2 * r + 1] = exp2_of<kApprox>(fmaf(s[j][2 * r + 1], scale_log2, -m_use[r]));
      const float v = s[j][2 * r] + s[j][2 * r + 1];
      sum[r][j % 2] = j < 2 ? v : sum[r][j % 2] + v;
    }
#pragma unroll
  for (int r = 0; r < 2; r++) l_r[r] = l_r[r] * alpha[r] + (sum[r][0] + sum[r][1]);
}

/* O's rows (g and g + 8 of the thread) times alpha. */
template <int ND>
__device__ __forceinline__ void rescale_o(float (&o)[ND][4], const float (&alpha)[2]) {
#pragma unroll
  for (int j = 0; j < ND; j++) {
    o[j][0] *= alpha[0];
    o[j][1] *= alpha[0];
    o[j][2] *= alpha[1];
    o[j][3] *= alpha[1];
  }
}

/* Online softmax over one S tile with O rescaled at once. */
template <int NT, int ND, bool kApprox = true>
__device__ __forceinline__ void softmax_step(float (&s)[NT][4], float (&o)[ND][4], float (&m_r)[2], float (&l_r)[2],
                                             float scale_log2) {
  float alpha[2];
  softmax_rows<NT, kApprox>(s, m_r, l_r, scale_log2, alpha);
  rescale_o<ND>(o, alpha);
}

/* P of n8 tiles 2kk and 2kk+1 as the A fragment (bf16) of k-step kk. */
template <int NT>
__device__ __forceinline__ void p_fragment(const float (&s)[NT][4], int kk, uint32_t (&a)[4]) {
  a[0] = pack_bf16x2(s[2 * kk][0], s[2 * kk][1]);
  a[1] = pack_bf16x2(s[2 * kk][2], s[2 * kk][3]);
  a[2] = pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]);
  a[3] = pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
}

/* A row's sum over the 4 lanes of its quad (every lane must call it). */
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}
/* The LSE of a row from the running max m of its raw scores and its sum l of exp(scale (s - m)); -inf for a row that
 * saw no key. */
__device__ __forceinline__ float row_lse(float m, float l, float scale) {
  return l > 0.f ? m * scale + logf(l) : -INFINITY;
}

/* O / l as bf16 and the LSE for this thread's two rows; rows that saw no key get O = 0 and
 * LSE = -inf. Split (p.splits > 1): the same as fp32 partials of blk.split. Every lane must
 * call it (quad shuffles). */
template <int D>
__device__ __forceinline__ void store_out(const fwd_params &p, const fwd_block &blk, int h, int row0, int t,
                                          const float (&o)[D / 8][4], const float (&m_r)[2], float (&l_r)[2]) {
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const float l = quad_sum(l_r[r]);
    const int row = row0 + r * 8;
    if (row >= blk.seqlen_q) continue;
    const float inv = l > 0.f ? 1.f / l : 0.f;
    if (p.splits > 1) {
      const long long qi = (long long)blk.split * p.total_q + blk.q0 + row;
      float *dst = p.o_part + (qi * p.hq + h) * D + 2 * t;
#pragma unroll
      for (int j = 0; j < D / 8; j++)
        *reinterpret_cast<float2 *>(dst + j * 8) = make_float2(o[j][2 * r] * inv, o[j][2 * r + 1] * inv);
      if (t == 0)
        p.lse_part[((long long)blk.split * p.hq + h) * p.total_q + blk.q0 + row] = row_lse(m_r[r], l, p.scale);
      continue;
    }
    uint16_t *dst = p.o + ((long long)(blk.q0 + row) * p.hq + h) * D + 2 * t;
#pragma unroll
    for (int j = 0; j < D / 8; j++)
      *reinterpret_cast<uint32_t *>(dst + j * 8) = pack_bf16x2(o[j][2 * r] * inv, o[j][2 * r + 1] * inv);
    if (p.lse && t == 0)
      p.lse[(long long)h * p.total_q + blk.q0 + row] = row_lse(m_r[r], l, p.scale);
  }
}

/* Merges the splits' partials (p.splits > 1) into O and the LSE (flash_fwd.cu). */
mk_status fwd_merge(const fwd_params &p, int d, cudaStream_t stream);

/* Grid: query blocks of bm (the last first) x hq x batch (x splits), one CTA an item; or, persistent > 0, a 1-D
 * grid of that many CTAs at most (fewer where there are fewer items), which walk the items themselves. `smem` bytes
 * of dynamic shared memory; the kernel's parameters are maps... (its TMA descriptors, if any), then p; then the merge
 * of the splits. */
template <class Kernel, class... Maps>
mk_status flash_fwd_start(Kernel kernel, int threads, int bm, size_t smem, const fwd_params &p, int d, int persistent,
                          cudaStream_t stream, const Maps &...maps) {
  /* Set on every call: cheap, and correct for whichever device is current. */
  MK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  const int splits = p.splits > 1 ? p.splits : 1;
  dim3 grid((unsigned)((p.seqlen_q + bm - 1) / bm), (unsigned)p.hq, (unsigned)(p.batch * splits));
  if (persistent > 0) {
    const long long items = (long long)grid.x * grid.y * grid.z;
    grid = dim3((unsigned)(items < persistent ? items : persistent));
  }
  kernel<<<grid, threads, smem, stream>>>(maps..., p);
  MK_CUDA_LAUNCH_CHECK();
  return splits > 1 ? fwd_merge(p, d, stream) : MK_STATUS_OK;
}

/* Key tiles (BN) of the two kernels, for the split's choice. */
constexpr int kSm80TileN = 64, kSm90TileN = 128, kFwdTileM = 128;

/* Launchers of the three kernels. The warp-specialised one also takes the SM count (its persistent grid). */
mk_status flash_fwd_launch_sm80(const fwd_params &p, int d, cudaStream_t stream);
mk_status flash_fwd_launch_sm90(const fwd_params &p, int d, cudaStream_t stream);
mk_status flash_fwd_launch_ws(const fwd_params &p, int d, int sms, cudaStream_t stream);

}  // namespace mk_attn

#endif /* MK_ATTN_FLASH_FWD_CUH */
