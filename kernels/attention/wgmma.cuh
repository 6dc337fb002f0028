/* wgmma.cuh — Hopper (sm_90a) warpgroup MMA helpers for the attention kernels: shared-memory
 * matrix descriptors for the 128-byte swizzled layout, wgmma.mma_async wrappers (A from shared
 * memory or from registers), and the fence / commit / wait that order them.
 *
 * Shared-memory layout ("SW128 tile"): a [rows][cols] bf16 tile is stored as cols/64 column
 * blocks, each [rows][64] with 128-byte rows; the 16-byte chunk c of row r sits at chunk
 * c ^ (r % 8) (Swizzle<3,4,3>). Every column block starts on a 1024-byte boundary.
 *   K-major operand (k contiguous; Q for S = Q K^T, K as B[n][k]): descriptor on the column
 *     block of the k-step, start advanced by 32 bytes per 16-element k-step inside the block;
 *     SBO = 1024 (next 8 rows), LBO unused.
 *   MN-major operand (n contiguous; V as B[k = key][n = d]): start at key row 16*kk;
 *     LBO = bytes between column blocks (next 64 n), SBO = 1024 (next 8 keys).
 * Accumulator fragment of m64nNk16 (fp32), warp w of the warpgroup, g = lane/4, t = lane%4:
 *   d[4j + 0..1] = rows 16w + g, cols 8j + 2t..2t+1;  d[4j + 2..3] = rows 16w + g + 8, same cols
 * — the mma.sync C layout per n8 tile, so a pair of n8 tiles converts to a register A fragment
 * of one k16 step exactly as in attn_tile.cuh. */
#ifndef MK_ATTN_WGMMA_CUH
#define MK_ATTN_WGMMA_CUH

#include <stdint.h>

namespace mk_attn {

/* Element offset of (row r, 16-byte chunk c) in an SW128 tile of `rows` rows. */
__device__ __forceinline__ int sw128(int rows, int r, int c) {
  return (c >> 3) * rows * 64 + r * 64 + (((c & 7) ^ (r & 7)) << 3);
}

__device__ __forceinline__ uint64_t gmma_desc(uint32_t smem_addr, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  uint64_t d = 0;
  d |= (uint64_t)((smem_addr >> 4) & 0x3fff);
  d |= (uint64_t)((lbo_bytes >> 4) & 0x3fff) << 16;
  d |= (uint64_t)((sbo_bytes >> 4) & 0x3fff) << 32;
  d |= (uint64_t)1 << 62; /* layout type 1: 128-byte swizzle; base offset 0 */
  return d;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/* Keeps the compiler from moving accumulator reads/writes across a wgmma wait or issue. */
template <int N>
__device__ __forceinline__ void fence_regs(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; i++) asm volatile("" : "+f"(r[i])::"memory");
}
/* The same for register A fragments: keeps them live and in place until the wgmma that reads them has completed. */
template <int N>
__device__ __forceinline__ void fence_u32(uint32_t (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; i++)
#pragma unroll
    for (int j = 0; j < 4; j++) asm volatile("" : "+r"(r[i][j])::"memory");
}
/* Generic-proxy writes to shared memory (cp.async, st.shared) visible to wgmma's async proxy. */
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

/* Operand lists of the accumulator: 32 registers (N = 64), 64 (N = 128) or 88 (N = 176). */
#define MK_WG_REGS32 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
  "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31} "
#define MK_WG_REGS64 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
  "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, " \
  "%40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, " \
  "%59, %60, %61, %62, %63} "
#define MK_WG_OUT32(d) \
  "+f"((d)[0]), "+f"((d)[1]), "+f"((d)[2]), "+f"((d)[3]), "+f"((d)[4]), "+f"((d)[5]), "+f"((d)[6]), \
  "+f"((d)[7]), "+f"((d)[8]), "+f"((d)[9]), "+f"((d)[10]), "+f"((d)[11]), "+f"((d)[12]), \
  "+f"((d)[13]), "+f"((d)[14]), "+f"((d)[15]), "+f"((d)[16]), "+f"((d)[17]), "+f"((d)[18]), \
  "+f"((d)[19]), "+f"((d)[20]), "+f"((d)[21]), "+f"((d)[22]), "+f"((d)[23]), "+f"((d)[24]), \
  "+f"((d)[25]), "+f"((d)[26]), "+f"((d)[27]), "+f"((d)[28]), "+f"((d)[29]), "+f"((d)[30]), \
  "+f"((d)[31])
#define MK_WG_OUT64(d) MK_WG_OUT32(d), MK_WG_OUT32((d) + 32)
#define MK_WG_OUT8(d) \
  "+f"((d)[0]), "+f"((d)[1]), "+f"((d)[2]), "+f"((d)[3]), "+f"((d)[4]), "+f"((d)[5]), "+f"((d)[6]), "+f"((d)[7])
#define MK_WG_OUT88(d) MK_WG_OUT64(d), MK_WG_OUT8((d) + 64), MK_WG_OUT8((d) + 72), MK_WG_OUT8((d) + 80)
#define MK_WG_REGS88 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, " \
  "%44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, " \
  "%66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87} "
#define MK_WG_SCALE_D(i) "{\n.reg .pred p;\nsetp.ne.b32 p, %" #i ", 0;\n"

/* d[64 x 128] (+)= a (smem, K-major) * b (smem, K-major: B[n][k] with k contiguous). */
__device__ __forceinline__ void wgmma_m64n128k16_ss(float d[64], uint64_t desc_a, uint64_t desc_b, int scale_d) {
  asm volatile(MK_WG_SCALE_D(66) "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " MK_WG_REGS64
               ", %64, %65, p, 1, 1, 0, 0;\n}\n"
               : MK_WG_OUT64(d)
               : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/* d[64 x 176] (+)= a (smem, K-major) * b (smem, K-major): the 176-key tile of the non-causal kernel. */
__device__ __forceinline__ void wgmma_m64n176k16_ss(float d[88], uint64_t desc_a, uint64_t desc_b, int scale_d) {
  asm volatile(MK_WG_SCALE_D(90) "wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16 " MK_WG_REGS88
               ", %88, %89, p, 1, 1, 0, 0;\n}\n"
               : MK_WG_OUT88(d)
               : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

/* d[64 x 128] (+)= a (registers) * b (smem, MN-major: B[k][n] with n contiguous). */
__device__ __forceinline__ void wgmma_m64n128k16_rs_tb(float d[64], const uint32_t a[4], uint64_t desc_b,
                                                      int scale_d) {
  asm volatile(MK_WG_SCALE_D(69) "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " MK_WG_REGS64
               ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
               : MK_WG_OUT64(d)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

/* d[64 x 64] (+)= a (registers) * b (smem, MN-major). */
__device__ __forceinline__ void wgmma_m64n64k16_rs_tb(float d[32], const uint32_t a[4], uint64_t desc_b,
                                                     int scale_d) {
  asm volatile(MK_WG_SCALE_D(37) "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " MK_WG_REGS32
               ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
               : MK_WG_OUT32(d)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

}  // namespace mk_attn

#endif /* MK_ATTN_WGMMA_CUH */
