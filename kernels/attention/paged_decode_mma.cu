/* paged_decode_mma.cu — pass-1 kernel 2 of paged decode attention (MK_PAGED_DECODE_KERNEL=2):
 * q.k and p.v on tensor cores (mma.sync m16n8k16, bf16 in, fp32 accumulate), with the query
 * heads of one KV head as the 16 rows of the MMA (FlashDecoding++ / FlashInfer style), so the
 * work per byte of K/V is a few instructions instead of a scalar FMA per element and head.
 *
 * Grid, split plan and epilogue as kernels 0 and 1 (paged_decode.cuh): one CTA per (split, KV
 * head, sequence), 4 warps; warp w takes the 16-token tiles w, w + 4, ... of the split.
 * Per tile (g = lane / 4, t = lane % 4):
 *   S[16 x 16] = Q[16 x d] K^T: rows are the group's query heads (row g, and g + 8 when the
 *     group is larger than 8; unused rows are zero), two n-tiles of 8 tokens. The d axis is
 *     permuted the same way for Q and K so that each lane's B fragments of k-steps 2j, 2j + 1
 *     are one 16-byte load: token g (n-tile 0) or 8 + g (n-tile 1), elements 32j + 8t .. + 7.
 *   The S accumulator already has the layout of the A operand of the next MMA (FlashAttention-2
 *     register reuse): lane (g, t) holds row g at tokens 2t, 2t + 1, 8 + 2t, 9 + 2t, the
 *     online softmax (log2 units) reduces over the 4 lanes of a quad, and P packs to bf16.
 *   O[16 x d] += P V: n-tile nt covers the permuted d columns pi(nt, n) = 64 (nt / 8) + 8 n +
 *     nt % 8, so each lane loads 16-byte chunks 64c + 8g of its 4 tokens' V rows and builds
 *     the B fragments (two tokens per register) with byte permutes.
 * The block-table entries of a warp's next tile are loaded before the current tile is computed,
 * and the O rescale is skipped while no row's maximum grew (a warp vote). */
#include <cuda_runtime.h>
#include <math.h>

#include "core/check.h"
#include "kernels/attention/paged_decode.cuh"

namespace mk_attn {
namespace {

/* Where a warp's tile starts: block-table entry q, slot r (0 <= r < block_size). */
struct mma_pos {
  int q, r;
};

/* Cache rows (block id * block_size + slot) of this lane's tokens of the tile at `base`:
 * rk for its K tokens g, 8 + g and rv for its V (and S) tokens 2t, 2t + 1, 8 + 2t, 9 + 2t;
 * -1 when the token is past t_end or its block-table entry is out of range (dropped). With
 * block_size a multiple of 16 a tile lies in one block: one table entry per tile. */
__device__ __forceinline__ void mma_tile_rows(const decode_params &p, const int32_t *table, int base, mma_pos pos,
                                              int t_end, int g, int t, int (&rk)[2], int (&rv)[4]) {
  const int toks[6] = {g, 8 + g, 2 * t, 2 * t + 1, 8 + 2 * t, 9 + 2 * t};
  int rows[6];
  if (p.block_size % 16 == 0) {
    const int blk = base < t_end ? __ldg(table + pos.q) : -1;
    const bool ok = blk >= 0 && blk < p.num_blocks;
#pragma unroll
    for (int i = 0; i < 6; i++) rows[i] = ok && base + toks[i] < t_end ? blk * p.block_size + pos.r + toks[i] : -1;
  } else {
#pragma unroll
    for (int i = 0; i < 6; i++) {
      rows[i] = -1;
      if (base + toks[i] < t_end) {
        int q = pos.q, r = pos.r + toks[i];
        while (r >= p.block_size) {
          r -= p.block_size;
          q++;
        }
        const int blk = __ldg(table + q);
        if (blk >= 0 && blk < p.num_blocks) rows[i] = blk * p.block_size + r;
      }
    }
  }
  rk[0] = rows[0], rk[1] = rows[1];
#pragma unroll
  for (int i = 0; i < 4; i++) rv[i] = rows[2 + i];
}

/* Start of KV head kvh's d-vector in cache row `row` of `cache`; for a dropped token (row < 0)
 * the query row instead, any finite data: its scores are masked and its P is 0. */
template <int D>
__device__ __forceinline__ const uint16_t *mma_row_ptr(const decode_params &p, const uint16_t *cache, int row,
                                                       int kvh) {
  return row >= 0 ? cache + (long long)row * (p.hkv * D) + kvh * D : p.q;
}

/* 16-byte load of K/V data read once: not kept in L1 (the block table is). */
__device__ __forceinline__ uint4 mma_ld16(const uint16_t *ptr) {
  uint4 r;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(ptr));
  return r;
}

/* Online-softmax update of one MMA row (accumulator half r: c[2r], c[2r + 1]) from the S tiles;
 * returns the row's rescale factor and writes its P as two bf16x2 A-fragment registers. */
__device__ __forceinline__ float mma_softmax_row(const float (&s)[2][4], int r, unsigned valid, float scale,
                                                 float &m, float &l, uint32_t &p_lo, uint32_t &p_hi) {
  float x[4] = {s[0][2 * r], s[0][2 * r + 1], s[1][2 * r], s[1][2 * r + 1]};
  float mx = -INFINITY;
#pragma unroll
  for (int i = 0; i < 4; i++) {
    x[i] = (valid >> i) & 1u ? x[i] * scale : -INFINITY;
    mx = fmaxf(mx, x[i]);
  }
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
  const float mnew = fmaxf(m, mx), base = mnew == -INFINITY ? 0.f : mnew;
  const float alpha = exp2f(m - base); /* 0 while m is -inf */
  m = mnew;
  float pr[4], sum = 0.f;
#pragma unroll
  for (int i = 0; i < 4; i++) {
    pr[i] = exp2f(x[i] - base);
    sum += pr[i];
  }
  l = l * alpha + sum;
  p_lo = pack_bf16x2(pr[0], pr[1]);
  p_hi = pack_bf16x2(pr[2], pr[3]);
  return alpha;
}

/* Physical d of value v (0 .. D/8 - 1) of lane group g's V chunks 64 (v / 8) + 8 g + (v % 8). */
template <int D>
__device__ __forceinline__ int mma_v_col(int g, int v) {
  return 64 * (v / 8) + 8 * g + v % 8;
}

/* bf16 element e of two 16-byte chunks (tokens a and b) as one bf16x2 register (a low). */
__device__ __forceinline__ uint32_t mma_pair(const uint4 &a, const uint4 &b, int e) {
  const uint32_t wa = e / 2 == 0 ? a.x : e / 2 == 1 ? a.y : e / 2 == 2 ? a.z : a.w;
  const uint32_t wb = e / 2 == 0 ? b.x : e / 2 == 1 ? b.y : e / 2 == 2 ? b.z : b.w;
  return __byte_perm(wa, wb, e % 2 ? 0x7632u : 0x5410u);
}

template <int D, int G>
__global__ void __launch_bounds__(decode_config::kThreads, G > 8 ? 2 : 3) paged_decode_mma_kernel(const decode_params p) {
  using C = decode_config;
  constexpr int KC = D / 32, VC = D / 64, MT = D / 16, T = C::kMmaTile;
  constexpr int R = G > 8 ? 2 : 1; /* 8-head tiles: heads g (and g + 8) */
  static_assert(T == 16 && G <= 16, "one m16n8k16 tile of 16 tokens, at most 16 heads");
  __shared__ float sm_acc[C::kWarps][G][D];
  __shared__ float sm_m[C::kWarps][G], sm_l[C::kWarps][G];

  decode_cta cta;
  if (!decode_cta_range(p, cta)) return;
  const int split = cta.split, kvh = cta.kvh, b = cta.b, t_begin = cta.t_begin, t_end = cta.t_end;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

  /* Q A fragments with the d permutation of the K loads: k-step 2j takes elements 32j + 8t + 0..3
   * (a0, a2: head g; a1, a3: head g + 8), k-step 2j + 1 elements 32j + 8t + 4..7. */
  uint32_t qa[2 * KC][4];
#pragma unroll
  for (int j = 0; j < KC; j++) {
    uint4 r0 = make_uint4(0, 0, 0, 0), r1 = make_uint4(0, 0, 0, 0);
    const uint16_t *qb = p.q + ((long long)b * p.hq + (long long)kvh * p.group) * D + 32 * j + 8 * t;
    if (g < p.group) r0 = __ldg(reinterpret_cast<const uint4 *>(qb + (long long)g * D));
    if (R == 2 && g + 8 < p.group) r1 = __ldg(reinterpret_cast<const uint4 *>(qb + (long long)(g + 8) * D));
    qa[2 * j][0] = r0.x, qa[2 * j][1] = r1.x, qa[2 * j][2] = r0.y, qa[2 * j][3] = r1.y;
    qa[2 * j + 1][0] = r0.z, qa[2 * j + 1][1] = r1.z, qa[2 * j + 1][2] = r0.w, qa[2 * j + 1][3] = r1.w;
  }
  /* O^T accumulators: acc[r][mt] rows d = mma_v_col(g, mt) and (g, MT + mt), columns heads
   * 8r + 2t, 8r + 2t + 1. */
  float acc[R][MT][4];
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int i = 0; i < MT; i++) acc[r][i][0] = acc[r][i][1] = acc[r][i][2] = acc[r][i][3] = 0.f;
  float m[R], l[R]; /* softmax state of head g + 8r (the quad shares it; l in four parts) */
#pragma unroll
  for (int r = 0; r < R; r++) m[r] = -INFINITY, l[r] = 0.f;

  const int32_t *table = p.block_table + (long long)b * p.max_blocks;
  const int step = C::kWarps * T, adv_q = step / p.block_size, adv_r = step - adv_q * p.block_size;
  int base = t_begin + warp * T;
  mma_pos pos = {base / p.block_size, base % p.block_size};
  int rk[2], rv[4];
  mma_tile_rows(p, table, base, pos, t_end, g, t, rk, rv);
  for (; base < t_end; base += step) {
    uint4 kr[2][KC], vr[4][VC];
#pragma unroll
    for (int n = 0; n < 2; n++) {
      const uint16_t *kp = mma_row_ptr<D>(p, p.k, rk[n], kvh) + 8 * t;
#pragma unroll
      for (int j = 0; j < KC; j++) kr[n][j] = mma_ld16(kp + 32 * j);
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const uint16_t *vp = mma_row_ptr<D>(p, p.v, rv[i], kvh) + 8 * g;
#pragma unroll
      for (int c = 0; c < VC; c++) vr[i][c] = mma_ld16(vp + 64 * c);
    }
    const unsigned valid = (rv[0] >= 0) | (rv[1] >= 0) << 1 | (rv[2] >= 0) << 2 | (rv[3] >= 0) << 3;
    pos.q += adv_q, pos.r += adv_r;
    if (pos.r >= p.block_size) pos.q++, pos.r -= p.block_size;
    mma_tile_rows(p, table, base + step, pos, t_end, g, t, rk, rv); /* next tile's table entries in flight */

    float s[2][4]; /* S tile n: heads g, g + 8 x tokens 8n + 2t, 8n + 2t + 1 */
#pragma unroll
    for (int n = 0; n < 2; n++) {
      s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
      for (int j = 0; j < KC; j++) {
        mma_16816(s[n], qa[2 * j], kr[n][j].x, kr[n][j].y);
        mma_16816(s[n], qa[2 * j + 1], kr[n][j].z, kr[n][j].w);
      }
    }
    /* P^T B fragments straight from the S accumulators: b0 tokens 2t, 2t + 1, b1 8 + 2t, 9 + 2t. */
    uint32_t pb[R][2];
    float alpha[R];
    bool grew = false;
#pragma unroll
    for (int r = 0; r < R; r++) {
      alpha[r] = mma_softmax_row(s, r, valid, p.scale_log2, m[r], l[r], pb[r][0], pb[r][1]);
      grew |= alpha[r] != 1.f;
    }
    if (__any_sync(0xffffffffu, grew)) { /* rescale O; columns 2t, 2t + 1 take heads' alphas */
#pragma unroll
      for (int r = 0; r < R; r++) {
        const float a0 = __shfl_sync(0xffffffffu, alpha[r], 8 * t), a1 = __shfl_sync(0xffffffffu, alpha[r], 8 * t + 4);
#pragma unroll
        for (int i = 0; i < MT; i++) acc[r][i][0] *= a0, acc[r][i][1] *= a1, acc[r][i][2] *= a0, acc[r][i][3] *= a1;
      }
    }
    /* O^T += V^T P^T: A rows are this lane's V values mt and MT + mt of tokens 2t, 2t + 1 (a0,
     * a1) and 8 + 2t, 9 + 2t (a2, a3). */
#pragma unroll
    for (int i = 0; i < MT; i++) {
      constexpr int E = 8; /* values per chunk */
      const int v0 = i, v1 = MT + i;
      uint32_t va[4];
      va[0] = mma_pair(vr[0][v0 / E], vr[1][v0 / E], v0 % E);
      va[1] = mma_pair(vr[0][v1 / E], vr[1][v1 / E], v1 % E);
      va[2] = mma_pair(vr[2][v0 / E], vr[3][v0 / E], v0 % E);
      va[3] = mma_pair(vr[2][v1 / E], vr[3][v1 / E], v1 % E);
#pragma unroll
      for (int r = 0; r < R; r++) mma_16816(acc[r][i], va, pb[r][0], pb[r][1]);
    }
  }

#pragma unroll
  for (int r = 0; r < R; r++) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    const int h = 8 * r + 2 * t;
#pragma unroll
    for (int i = 0; i < MT; i++) {
      const int d0 = mma_v_col<D>(g, i), d1 = mma_v_col<D>(g, MT + i);
      if (h < p.group) sm_acc[warp][h][d0] = acc[r][i][0], sm_acc[warp][h][d1] = acc[r][i][2];
      if (h + 1 < p.group) sm_acc[warp][h + 1][d0] = acc[r][i][1], sm_acc[warp][h + 1][d1] = acc[r][i][3];
    }
    if (t == 0 && g + 8 * r < p.group) {
      sm_m[warp][g + 8 * r] = m[r];
      sm_l[warp][g + 8 * r] = l[r];
    }
  }
  __syncthreads();
  decode_write<D, G>(p, split, kvh, b, sm_acc, sm_m, sm_l);
}

}  // namespace

template <int D>
mk_status paged_decode_mma_pass1(const decode_params &p, cudaStream_t stream) {
  dim3 grid((unsigned)p.splits, (unsigned)p.hkv, (unsigned)p.batch);
  if (p.group <= 8)
    paged_decode_mma_kernel<D, 8><<<grid, decode_config::kThreads, 0, stream>>>(p);
  else
    paged_decode_mma_kernel<D, 16><<<grid, decode_config::kThreads, 0, stream>>>(p);
  return MK_STATUS_OK;
}
template mk_status paged_decode_mma_pass1<64>(const decode_params &, cudaStream_t);
template mk_status paged_decode_mma_pass1<128>(const decode_params &, cudaStream_t);

}  // namespace mk_attn
