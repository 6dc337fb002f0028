/* test_gemm.c (gpu) — mk_gemm_bf16 on fresh random inputs: 24 shapes (M in {1, 7, 127, 1000,
 * 3000, ...}, N and K multiples of 8 that are not multiples of the tile, exact tiles, more
 * tiles than SMs), both B layouts, both tile widths (MK_GEMM_TILE_N=256 and 128). C is poisoned (bf16 NaN) with 3 extra rows: every element
 * is checked against an fp32 reference and the extra rows must stay untouched. Bad shapes are
 * refused. */
#include "tests/kernels/gemm_check.h"

typedef struct shape {
  int64_t m, n, k;
  mk_gemm_b_layout b;
} shape;

static const shape k_shapes[] = {
    {1, 8, 8, MK_GEMM_B_NK},          {1, 4096, 1024, MK_GEMM_B_KN},     {7, 264, 72, MK_GEMM_B_NK},
    {7, 1000, 200, MK_GEMM_B_KN},     {127, 520, 136, MK_GEMM_B_NK},     {127, 520, 136, MK_GEMM_B_KN},
    {128, 256, 64, MK_GEMM_B_NK},     {128, 256, 64, MK_GEMM_B_KN},      {1000, 1000, 1000, MK_GEMM_B_NK},
    {1000, 1000, 1000, MK_GEMM_B_KN}, {3000, 1544, 712, MK_GEMM_B_NK},   {3000, 1544, 712, MK_GEMM_B_KN},
    {256, 7168, 8, MK_GEMM_B_KN},     {129, 264, 4104, MK_GEMM_B_NK},    {513, 2056, 520, MK_GEMM_B_KN},
    {2048, 2048, 2048, MK_GEMM_B_NK}, {2048, 2048, 2048, MK_GEMM_B_KN},  {3000, 7168, 256, MK_GEMM_B_NK},
    {64, 8, 4096, MK_GEMM_B_KN},      {1, 7168, 8192, MK_GEMM_B_NK},     {300, 640, 8200, MK_GEMM_B_KN},
    {4096, 4096, 512, MK_GEMM_B_KN},  {5000, 3000, 1000, MK_GEMM_B_NK},  {17, 24, 24, MK_GEMM_B_KN},
};

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 600);
  mk_test_require_gpus(1);
  const uint64_t seed = mk_test_seed();
  uint16_t *dummy = NULL;
  CUDA_OK(cudaMalloc((void **)&dummy, 4096));
  ASSERT_STATUS(mk_gemm_bf16(dummy, dummy, dummy, 8, 12, 8, MK_GEMM_B_NK, NULL), MK_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS(mk_gemm_bf16(dummy, dummy, dummy, 8, 8, 0, MK_GEMM_B_NK, NULL), MK_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS(mk_gemm_bf16(dummy, dummy, dummy, -1, 8, 8, MK_GEMM_B_NK, NULL), MK_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS(mk_gemm_bf16(dummy, dummy, dummy, 8, 8, 8, (mk_gemm_b_layout)7, NULL), MK_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS(mk_gemm_bf16(dummy + 1, dummy, dummy, 8, 8, 8, MK_GEMM_B_NK, NULL), MK_STATUS_INVALID_ARGUMENT);
  ASSERT_OK(mk_gemm_bf16(dummy, dummy, dummy, 0, 8, 8, MK_GEMM_B_NK, NULL)); /* M = 0: nothing to do */
  CUDA_OK(cudaFree(dummy));

  int failed = 0;
  const int nshapes = (int)(sizeof k_shapes / sizeof k_shapes[0]);
  for (int run = 0; run < 2 * nshapes; run++) {
    const int i = run % nshapes, tile_n = run < nshapes ? 256 : 128;
    const shape s = k_shapes[i];
    setenv("MK_GEMM_TILE_N", tile_n == 256 ? "256" : "128", 1); /* both tile widths */
    mk_param_reset_cache();
    uint16_t *A = gemm_check_random((size_t)s.m * s.k, seed * 131 + 2 * i);
    uint16_t *B = gemm_check_random((size_t)s.n * s.k, seed * 131 + 2 * i + 1);
    uint16_t *C = NULL;
    const size_t extra = 3 * (size_t)s.n;
    CUDA_OK(cudaMalloc((void **)&C, ((size_t)s.m * s.n + extra) * 2));
    CUDA_OK(cudaMemset(C, 0xff, ((size_t)s.m * s.n + extra) * 2));
    float *ref = gemm_check_reference(A, B, s.m, s.n, s.k, s.b);
    ASSERT_OK(mk_gemm_bf16(A, B, C, s.m, s.n, s.k, s.b, NULL));
    CUDA_OK(cudaDeviceSynchronize());
    char what[112];
    snprintf(what, sizeof what, "M=%lld N=%lld K=%lld B=%s tile_n=%d", (long long)s.m, (long long)s.n,
             (long long)s.k, s.b == MK_GEMM_B_KN ? "[K,N]" : "[N,K]", tile_n);
    double rel;
    size_t bad = gemm_check_compare(what, C, ref, s.m, s.n, &rel);
    size_t touched = gemm_check_count_touched(C + (size_t)s.m * s.n, extra);
    if (touched) printf("  %zu elements written past row M\n", touched);
    if (bad || touched || !(rel <= 1e-2)) failed++;
    CUDA_OK(cudaFree(A));
    CUDA_OK(cudaFree(B));
    CUDA_OK(cudaFree(C));
    CUDA_OK(cudaFree(ref));
  }
  if (failed) MK_TEST_FAIL_("%d of %d shape/tile runs wrong", failed, 2 * nshapes);
  printf("ok: %d shapes x 2 tile widths\n", nshapes);
  return 0;
}
