/* sm90_ptx.cuh — thin wrappers over the Hopper (sm_90a) instructions the GEMM core uses:
 * mbarriers, TMA tensor loads and stores, wgmma (descriptors, fence/commit/wait, m64nNk16 bf16 for the
 * core's tile widths and the skinny GEMM's token widths 16, 32, 64), setmaxnreg and the
 * release/acquire flags of the split-K fix-up. Device-only; included by gemm_core.cuh. */
#ifndef MK_KERNELS_GEMM_SM90_PTX_CUH
#define MK_KERNELS_GEMM_SM90_PTX_CUH

#include <cuda.h> /* CUtensorMap (type only; libcuda is never linked) */
#include <stdint.h>

namespace mk_sm90 {

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

/* ---- mbarrier ------------------------------------------------------------------------- */
__device__ __forceinline__ void mbar_init(uint64_t *bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t *bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}
/* Wait until the phase with parity `parity` has completed. */
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred P1;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
      "@!P1 bra WAIT_%=;\n"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}

/* ---- TMA ------------------------------------------------------------------------------ */
/* 3-D tiled load of the box at (c0 innermost, c1, c2) into shared memory; completes on bar. */
__device__ __forceinline__ void tma_load_3d(void *dst, const CUtensorMap *map, uint64_t *bar, int c0, int c1,
                                            int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(smem_u32(dst)),
      "l"((uint64_t)map), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
/* 2-D tiled load of the box at (c0 innermost, c1) into shared memory; completes on bar. */
__device__ __forceinline__ void tma_load_2d(void *dst, const CUtensorMap *map, uint64_t *bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];" ::"r"(smem_u32(dst)),
      "l"((uint64_t)map), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}
/* 3-D tiled store of the shared-memory box at src to (c0 innermost, c1, c2) of map's tensor (elements past its
 * bounds are not written), in this thread's bulk group; src must be written and fenced (fence.proxy.async) first. */
__device__ __forceinline__ void tma_store_3d(const CUtensorMap *map, const void *src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
                   (uint64_t)map),
               "r"(smem_u32(src)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
/* Waits until at most N of this thread's bulk groups still read their shared memory. */
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
/* Prefetch of the box at (c0 innermost, c1, c2) of map's tensor into L2 (no shared memory, no completion). */
__device__ __forceinline__ void tma_prefetch_3d(const CUtensorMap *map, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];" ::"l"((uint64_t)map), "r"(c0),
               "r"(c1), "r"(c2)
               : "memory");
}
__device__ __forceinline__ void tma_prefetch_desc(const CUtensorMap *map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)map) : "memory");
}

/* ---- register reallocation ------------------------------------------------------------ */
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}

/* ---- wgmma ---------------------------------------------------------------------------- */
/* Shared-memory matrix descriptor, 128-byte swizzle. Byte offsets: lbo (leading dimension:
 * unused for K-major; for MN-major the step between 64-element MN chunks), sbo (the step
 * between 8-row groups: 8 rows x 128 B = 1024 for our tiles). Tiles are 1024-byte aligned,
 * so the base-offset field stays 0. */
__device__ __forceinline__ uint64_t desc_sw128(const void *smem, uint32_t lbo, uint32_t sbo) {
  uint64_t d = 0;
  d |= (uint64_t)((smem_u32(smem) & 0x3FFFF) >> 4);
  d |= (uint64_t)((lbo & 0x3FFFF) >> 4) << 16;
  d |= (uint64_t)((sbo & 0x3FFFF) >> 4) << 32;
  d |= 1ull << 62;
  return d;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
/* Keeps the compiler from moving accesses of an accumulator across a wgmma wait. */
__device__ __forceinline__ void fence_operand(float &r) { asm volatile("" : "+f"(r)::"memory"); }

#define MK_WG_R8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), \
                    "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define MK_WG_R32(i) MK_WG_R8(i), MK_WG_R8(i + 8), MK_WG_R8(i + 16), MK_WG_R8(i + 24)

/* D[64 x N] (fp32, N/2 registers a thread) += A[64x16] (smem, K-major) * B[16 x N] (smem;
 * K-major when kTransB is 0, N-major when 1): wgmma_m64n<N>k16_bf16 for each tile width N of
 * the core. Operands: %0 .. %(N/2 - 1) the accumulators (MK_WG_S* spell them 16 at a time),
 * then desc_a, desc_b, kTransB and the scale-d flag, whose numbers (IA..IP) follow N / 2. */
#define MK_WG_S0 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define MK_WG_S1 ", %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define MK_WG_S2 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
#define MK_WG_S3 ", %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define MK_WG_S4 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79"
#define MK_WG_S5 ", %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define MK_WG_S6 ", %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111"
#define MK_WG_S7 ", %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
/* the first half of S4 / S5 (widths 144 and 176) */
#define MK_WG_H4 ", %64, %65, %66, %67, %68, %69, %70, %71"
#define MK_WG_H5 ", %80, %81, %82, %83, %84, %85, %86, %87"
#define MK_WG_DEF(N, IA, IB, IT, IP, REGS, ...)                                                              \
  template <int kTransB>                                                                                    \
  __device__ __forceinline__ void wgmma_m64n##N##k16_bf16(float(&d)[N / 2], uint64_t desc_a, uint64_t desc_b) { \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #IP ", 0;\n"                                           \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 {" REGS "}, %" #IA ", %" #IB        \
                 ", p, 1, 1, 0, %" #IT ";\n}\n"                                                                \
                 : __VA_ARGS__                                                                                \
                 : "l"(desc_a), "l"(desc_b), "n"(kTransB), "r"(1));                                           \
  }
MK_WG_DEF(256, 128, 129, 130, 131, MK_WG_S0 MK_WG_S1 MK_WG_S2 MK_WG_S3 MK_WG_S4 MK_WG_S5 MK_WG_S6 MK_WG_S7,
          MK_WG_R32(0), MK_WG_R32(32), MK_WG_R32(64), MK_WG_R32(96))
MK_WG_DEF(224, 112, 113, 114, 115, MK_WG_S0 MK_WG_S1 MK_WG_S2 MK_WG_S3 MK_WG_S4 MK_WG_S5 MK_WG_S6,
          MK_WG_R32(0), MK_WG_R32(32), MK_WG_R32(64), MK_WG_R8(96), MK_WG_R8(104))
/* The swapped MoE gate/up GEMM's token widths (moe_skinny.cuh) add 192, 176, 144 and 96. */
MK_WG_DEF(192, 96, 97, 98, 99, MK_WG_S0 MK_WG_S1 MK_WG_S2 MK_WG_S3 MK_WG_S4 MK_WG_S5, MK_WG_R32(0), MK_WG_R32(32),
          MK_WG_R32(64))
MK_WG_DEF(176, 88, 89, 90, 91, MK_WG_S0 MK_WG_S1 MK_WG_S2 MK_WG_S3 MK_WG_S4 MK_WG_H5, MK_WG_R32(0), MK_WG_R32(32),
          MK_WG_R8(64), MK_WG_R8(72), MK_WG_R8(80))
MK_WG_DEF(160, 80, 81, 82, 83, MK_WG_S0 MK_WG_S1 MK_WG_S2 MK_WG_S3 MK_WG_S4, MK_WG_R32(0), MK_WG_R32(32),
          MK_WG_R8(64), MK_WG_R8(72))
MK_WG_DEF(144, 72, 73, 74, 75, MK_WG_S0 MK_WG_S1 MK_WG_S2 MK_WG_S3 MK_WG_H4, MK_WG_R32(0), MK_WG_R32(32),
          MK_WG_R8(64))
MK_WG_DEF(128, 64, 65, 66, 67, MK_WG_S0 MK_WG_S1 MK_WG_S2 MK_WG_S3, MK_WG_R32(0), MK_WG_R32(32))
MK_WG_DEF(96, 48, 49, 50, 51, MK_WG_S0 MK_WG_S1 MK_WG_S2, MK_WG_R32(0), MK_WG_R8(32), MK_WG_R8(40))
/* The skinny GEMM's token widths (gemm_skinny.cuh): N = 64, 32, 16. */
MK_WG_DEF(64, 32, 33, 34, 35, MK_WG_S0 MK_WG_S1, MK_WG_R32(0))
MK_WG_DEF(32, 16, 17, 18, 19, MK_WG_S0, MK_WG_R8(0), MK_WG_R8(8))
MK_WG_DEF(16, 8, 9, 10, 11, "%0, %1, %2, %3, %4, %5, %6, %7", MK_WG_R8(0))
#undef MK_WG_DEF

/* The instruction for a tile width. */
template <int kN, int kTransB>
__device__ __forceinline__ void wgmma_m64nk16_bf16(float (&d)[kN / 2], uint64_t desc_a, uint64_t desc_b) {
  static_assert(kN == 256 || kN == 224 || kN == 192 || kN == 176 || kN == 160 || kN == 144 || kN == 128 ||
                    kN == 96 || kN == 64 || kN == 32 || kN == 16,
                "no wgmma wrapper for this tile width");
  if constexpr (kN == 256) wgmma_m64n256k16_bf16<kTransB>(d, desc_a, desc_b);
  else if constexpr (kN == 224) wgmma_m64n224k16_bf16<kTransB>(d, desc_a, desc_b);
  else if constexpr (kN == 192) wgmma_m64n192k16_bf16<kTransB>(d, desc_a, desc_b);
  else if constexpr (kN == 176) wgmma_m64n176k16_bf16<kTransB>(d, desc_a, desc_b);
  else if constexpr (kN == 160) wgmma_m64n160k16_bf16<kTransB>(d, desc_a, desc_b);
  else if constexpr (kN == 144) wgmma_m64n144k16_bf16<kTransB>(d, desc_a, desc_b);
  else if constexpr (kN == 128) wgmma_m64n128k16_bf16<kTransB>(d, desc_a, desc_b);
  else if constexpr (kN == 96) wgmma_m64n96k16_bf16<kTransB>(d, desc_a, desc_b);
  else if constexpr (kN == 64) wgmma_m64n64k16_bf16<kTransB>(d, desc_a, desc_b);
  else if constexpr (kN == 32) wgmma_m64n32k16_bf16<kTransB>(d, desc_a, desc_b);
  else wgmma_m64n16k16_bf16<kTransB>(d, desc_a, desc_b);
}
#undef MK_WG_R32
#undef MK_WG_R8
#undef MK_WG_S0
#undef MK_WG_S1
#undef MK_WG_S2
#undef MK_WG_S3
#undef MK_WG_S4
#undef MK_WG_S5
#undef MK_WG_S6
#undef MK_WG_S7
#undef MK_WG_H4
#undef MK_WG_H5

/* ---- epilogue staging ------------------------------------------------------------------- */
/* stmatrix .x4: four 8x8 b16 matrices from the mma fragment layout (thread l holds row l / 4,
 * columns 2 (l % 4), +1 of matrix k in r_k) to shared memory; thread i gives the address of
 * row i % 8 of matrix i / 8. */
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0), "r"(r1),
               "r"(r2), "r"(r3)
               : "memory");
}
__device__ __forceinline__ uint4 lds128(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr)
               : "memory");
  return v;
}
/* Two floats as bf16x2 (round to nearest even), a in the low half. */
__device__ __forceinline__ uint32_t pack_bf16x2(float a, float b) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
  return r;
}

/* ---- flags between CTAs (split-K fix-up) ----------------------------------------------- */
/* Adds 1 with release semantics at GPU scope: this thread's earlier writes are visible to a
 * thread that observes the sum with ld_acquire_gpu. */
__device__ __forceinline__ void red_release_gpu_add(uint32_t *p, uint32_t v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ uint32_t ld_acquire_gpu(const uint32_t *p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

/* Named barrier among `count` threads (ids 1..15; 0 is __syncthreads). */
__device__ __forceinline__ void named_bar_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}
/* Arrives at named barrier `id` (of `count` threads) without waiting for it. */
__device__ __forceinline__ void named_bar_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
}

}  // namespace mk_sm90

#endif /* MK_KERNELS_GEMM_SM90_PTX_CUH */
