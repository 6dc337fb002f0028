/* tma_map.cuh — host side of the TMA loads: the driver's cuTensorMapEncodeTiled (looked up through the runtime;
 * libcuda is never linked) and the bf16 maps with 128-byte swizzle that the GEMM core, the fused reducers and the
 * warp-specialised flash attention load their tiles through, with a per-thread cache of the last encodings. */
#ifndef MK_KERNELS_GEMM_TMA_MAP_CUH
#define MK_KERNELS_GEMM_TMA_MAP_CUH

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include "core/check.h"

/* The driver's cuTensorMapEncodeTiled, through the runtime's entry-point query (libcuda is never
 * linked); NULL where the driver lacks it. Looked up once. */
static inline PFN_cuTensorMapEncodeTiled_v12000 mk_gemm_tensor_map_encoder(void) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = NULL;
  if (!encode) {
    cudaDriverEntryPointQueryResult q;
    void *fn = NULL;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      encode = (PFN_cuTensorMapEncodeTiled_v12000)fn;
  }
  return encode;
}

/* A [d2][d1][d0] bf16 tensor whose planes lie s2 bytes apart (rows d0 * 2 bytes), boxes of b0 x b1 x 1. */
static inline mk_status mk_gemm_encode_map_planes(CUtensorMap *map, const void *base, uint64_t d0, uint64_t d1,
                                                  uint64_t d2, uint64_t s2, uint32_t b0, uint32_t b1) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = mk_gemm_tensor_map_encoder();
  if (!encode)
    MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_KERNEL, "tma: the driver has no cuTensorMapEncodeTiled");
  /* Per-thread cache of the last 16 encodings: the map is a pure function of (base, dims, stride, box),
   * so a hit is exact even where an address is freed and reused. Saves the host the encode of
   * both maps on every launch (decode calls the same few weights over and over). */
  struct entry {
    const void *base;
    uint64_t d0, d1, d2, s2;
    uint32_t b0, b1;
    CUtensorMap map;
  };
  static thread_local entry cache[16];
  static thread_local int cache_n, cache_next;
  for (int i = 0; i < cache_n; i++) {
    const entry &c = cache[i];
    if (c.base == base && c.d0 == d0 && c.d1 == d1 && c.d2 == d2 && c.s2 == s2 && c.b0 == b0 && c.b1 == b1) {
      *map = c.map;
      return MK_STATUS_OK;
    }
  }
  const cuuint64_t dims[3] = {d0, d1, d2};
  const cuuint64_t strides[2] = {d0 * 2, s2}; /* bytes, dims 1 and 2 */
  const cuuint32_t box[3] = {b0, b1, 1}, estr[3] = {1, 1, 1};
  CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, (void *)base, dims, strides, box, estr,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "tma: cuTensorMapEncodeTiled failed (%d) for dims %llu x %llu x %llu", (int)r,
                  (unsigned long long)d0, (unsigned long long)d1, (unsigned long long)d2);
  cache[cache_next] = entry{base, d0, d1, d2, s2, b0, b1, *map};
  cache_next = (cache_next + 1) % 16;
  if (cache_n < 16) cache_n++;
  return MK_STATUS_OK;
}

/* A contiguous [d2][d1][d0] bf16 tensor. */
static inline mk_status mk_gemm_encode_map(CUtensorMap *map, const void *base, uint64_t d0, uint64_t d1, uint64_t d2,
                                           uint32_t b0, uint32_t b1) {
  return mk_gemm_encode_map_planes(map, base, d0, d1, d2, d0 * d1 * 2, b0, b1);
}

#endif /* MK_KERNELS_GEMM_TMA_MAP_CUH */
