/* test_gemm_grouped.c (gpu) — mk_gemm_grouped_bf16 on fresh random inputs: empty groups,
 * uneven groups (1 row, tile-sized, not tile-sized), many groups, both B layouts, counts read
 * on the device, MoE decode counts (1..64 and 129..150 rows: an idle second warpgroup), both tile
 * widths with MK_GEMM_WG_SKIP=1 and 256 wide with 0, fixed tiles and dynamic claims (MK_GEMM_CLAIM=1:
 * 128 wide, and 256 wide with the skip); each group checked against its own fp32
 * reference, rows past the sum of the counts (poisoned) untouched. Bad arguments are refused. */
#include "tests/kernels/gemm_check.h"

typedef struct grouped_case {
  int groups;
  int64_t n, k;
  mk_gemm_b_layout b;
  int32_t rows[64]; /* all zero: random counts in [0, 300), a third of them 0 */
} grouped_case;

static const grouped_case k_cases[] = {
    {8, 520, 264, MK_GEMM_B_NK, {0, 1, 300, 0, 129, 7, 1000, 0}},
    {8, 520, 264, MK_GEMM_B_KN, {0, 1, 300, 0, 129, 7, 1000, 0}},
    {3, 256, 64, MK_GEMM_B_NK, {128, 256, 0}},
    {1, 1032, 136, MK_GEMM_B_KN, {0}},
    {4, 7168, 512, MK_GEMM_B_KN, {0, 0, 0, 3000}},
    {64, 1024, 512, MK_GEMM_B_NK, {0}},
    {64, 1024, 512, MK_GEMM_B_KN, {0}},
    /* MoE decode: experts of 1..64 rows (one tile-row, the second warpgroup idle) and of
     * 129..150 (a second tile-row of 1..22 rows) */
    {8, 1024, 512, MK_GEMM_B_NK, {16, 16, 64, 65, 150, 1, 63, 140}},
    {8, 1032, 520, MK_GEMM_B_KN, {129, 150, 0, 32, 4, 128, 192, 193}},
};

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 600);
  mk_test_require_gpus(1);
  const uint64_t seed = mk_test_seed();
  int32_t *drows = NULL;
  uint16_t *dummy = NULL;
  CUDA_OK(cudaMalloc((void **)&drows, 64 * sizeof(int32_t)));
  CUDA_OK(cudaMalloc((void **)&dummy, 4096));
  ASSERT_STATUS(mk_gemm_grouped_bf16(dummy, dummy, dummy, NULL, 1, 8, 8, 8, MK_GEMM_B_NK, NULL),
                MK_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS(mk_gemm_grouped_bf16(dummy, dummy, dummy, drows, 0, 8, 8, 8, MK_GEMM_B_NK, NULL),
                MK_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS(mk_gemm_grouped_bf16(dummy, dummy, dummy, drows, 513, 8, 8, 8, MK_GEMM_B_NK, NULL),
                MK_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS(mk_gemm_grouped_bf16(dummy, dummy, dummy, drows, 2, 8, 8, 20, MK_GEMM_B_NK, NULL),
                MK_STATUS_INVALID_ARGUMENT);
  CUDA_OK(cudaFree(dummy));

  int failed = 0;
  const int ncases = (int)(sizeof k_cases / sizeof k_cases[0]);
  const int nruns = 4 * ncases;
  for (int run = 0; run < nruns; run++) {
    /* 256 and 128 wide with the idle warpgroup skip, then 256 wide without it, then with it again;
       passes 1 and 3 claim tiles dynamically */
    const int pass = run / ncases, c = run % ncases, tile_n = pass == 1 ? 128 : 256, wg_skip = pass != 2;
    grouped_case gc = k_cases[c];
    setenv("MK_GEMM_TILE_N", tile_n == 256 ? "256" : "128", 1); /* both tile widths */
    setenv("MK_GEMM_WG_SKIP", wg_skip ? "1" : "0", 1);
    setenv("MK_GEMM_CLAIM", pass % 2 ? "1" : "0", 1);
    mk_param_reset_cache();
    int random = 1;
    for (int g = 0; g < gc.groups; g++) random &= gc.rows[g] == 0;
    if (random && gc.groups > 1)
      for (int g = 0; g < gc.groups; g++) {
        uint64_t h = seed * 977 + (uint64_t)c * 64 + g;
        h ^= h >> 29;
        h *= 0xbf58476d1ce4e5b9ull;
        h ^= h >> 32;
        gc.rows[g] = (h % 3 == 0) ? 0 : (int32_t)(h % 300);
      }
    int64_t total = 0;
    for (int g = 0; g < gc.groups; g++) total += gc.rows[g];
    const int64_t m_cap = total + 5; /* 5 rows no group owns: must stay poisoned */
    uint16_t *A = gemm_check_random((size_t)m_cap * gc.k, seed * 7 + 2 * c);
    uint16_t *B = gemm_check_random((size_t)gc.groups * gc.n * gc.k, seed * 7 + 2 * c + 1);
    uint16_t *C = NULL;
    float *ref = NULL;
    CUDA_OK(cudaMalloc((void **)&C, (size_t)m_cap * gc.n * 2));
    CUDA_OK(cudaMemset(C, 0xff, (size_t)m_cap * gc.n * 2));
    CUDA_OK(cudaMemcpy(drows, gc.rows, gc.groups * sizeof(int32_t), cudaMemcpyHostToDevice));
    ASSERT_OK(mk_gemm_grouped_bf16(A, B, C, drows, gc.groups, m_cap, gc.n, gc.k, gc.b, NULL));
    CUDA_OK(cudaDeviceSynchronize());
    int64_t off = 0;
    int bad_groups = 0;
    double worst = 0;
    for (int g = 0; g < gc.groups; g++) {
      const int64_t rows = gc.rows[g];
      if (!rows) continue;
      ref = gemm_check_reference(A + off * gc.k, B + (size_t)g * gc.n * gc.k, rows, gc.n, gc.k, gc.b);
      char what[96];
      snprintf(what, sizeof what, "case %d group %d: %lld rows N=%lld K=%lld B=%s", c, g, (long long)rows,
               (long long)gc.n, (long long)gc.k, gc.b == MK_GEMM_B_KN ? "[K,N]" : "[N,K]");
      double rel;
      size_t bad = gemm_check_compare(what, C + off * gc.n, ref, rows, gc.n, &rel);
      if (bad || !(rel <= 1e-2)) bad_groups++;
      if (rel > worst) worst = rel;
      CUDA_OK(cudaFree(ref));
      off += rows;
    }
    size_t touched = gemm_check_count_touched(C + total * gc.n, (size_t)(m_cap - total) * gc.n);
    printf("case %d (tile_n %d, wg_skip %d): %d groups, %lld rows, worst rel err %.3e, %zu elements written past "
           "the groups\n",
           c, tile_n, wg_skip, gc.groups, (long long)total, worst, touched);
    if (bad_groups || touched) failed++;
    CUDA_OK(cudaFree(A));
    CUDA_OK(cudaFree(B));
    CUDA_OK(cudaFree(C));
  }
  CUDA_OK(cudaFree(drows));
  unsetenv("MK_GEMM_TILE_N");
  unsetenv("MK_GEMM_WG_SKIP");
  unsetenv("MK_GEMM_CLAIM");
  mk_param_reset_cache();
  if (failed) MK_TEST_FAIL_("%d of %d case/mode runs wrong", failed, nruns);
  printf("ok: %d cases\n", ncases);
  return 0;
}
