/* attn_tile.cuh — warp-level tile helpers shared by the attention kernels: cp.async copies,
 * ldmatrix fragment loads, the bf16 m16n8k16 tensor-core MMA, bf16 packing, and the XOR
 * swizzle of [rows][d] bf16 tiles in shared memory (16-byte chunk c of row r lives at chunk
 * c ^ (r % 8), so the 8 rows an ldmatrix reads fall in 8 different bank groups).
 *
 * Fragment layouts of mma.m16n8k16 (g = lane / 4, t = lane % 4):
 *   A 16x16 row-major: a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..)
 *   B 16x8  "col":      b0 (k 2t..2t+1, n g), b1 (k 2t+8.., n g)
 *   C 16x8  fp32:       c0 c1 (g, 2t..2t+1), c2 c3 (g+8, 2t..2t+1) */
#ifndef MK_ATTN_TILE_CUH
#define MK_ATTN_TILE_CUH

#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>

namespace mk_attn {

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* 16-byte global -> shared copy; when !pred nothing is read and the destination is zeroed. */
__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, bool pred) {
  int n = pred ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* Lanes 8i..8i+7 give the row addresses of 8x8 matrix i; register i receives matrix i. */
__device__ __forceinline__ void ldsm_x4(uint32_t r[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t r[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

/* c += a * b (bf16 in, fp32 accumulate). */
__device__ __forceinline__ void mma_16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Two floats -> bf16x2 (round to nearest even); lo goes to the lower address. */
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t *>(&v);
}
__device__ __forceinline__ float bf16_lo(uint32_t u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t u) { return __uint_as_float(u & 0xffff0000u); }

/* Merge of n partial attentions by their LSEs (lse[s * stride], -inf for a part that saw no key):
 * mx = the largest, sum = the sum of exp(lse_s - mx), so part s weighs exp(lse_s - mx) / sum and the
 * merged LSE is mx + log(sum); every part empty: mx = -inf, sum = 0. */
__device__ __forceinline__ void lse_max_sum(const float *lse, long long stride, int n, float &mx, float &sum) {
  mx = -INFINITY;
  for (int s = 0; s < n; s++) mx = fmaxf(mx, lse[s * stride]);
  sum = 0.f;
  if (mx != -INFINITY)
    for (int s = 0; s < n; s++) sum += expf(lse[s * stride] - mx);
}

/* Element offset of 16-byte chunk c of row r in a swizzled [rows][D] bf16 tile (D >= 64). */
template <int D>
__device__ __forceinline__ int swz(int r, int c) {
  static_assert(D % 64 == 0, "the swizzle needs rows of at least 8 chunks");
  return r * D + ((c ^ (r & 7)) << 3);
}

}  // namespace mk_attn

#endif /* MK_ATTN_TILE_CUH */
