/* test_gemm_skinny.c (gpu) — the small-M GEMM (kernels/gemm/gemm_skinny.cuh, mk_gemm_bf16 with
 * M <= 128 and B [N, K]) on fresh random inputs: M in {1, 7, 16, 33, 64, 65, 100, 128} (all
 * four token widths 16, 32, 64, 128, full and partial) x (N, K) in {(8192, 7168): 128 tiles of 64 rows unsplit (BN =
 * 128: 64 x 2 k-slices) on 132 SMs, (4096, 1024): k-sliced, (1000, 776): a partial last tile
 * (N % 64 = 40) and 13 k-steps in 3 uneven slices (odd counts: the two warpgroups of a 64-row
 * tile take unequal shares), (200, 72): N and K tails, one slice, 2 k-steps}. Each shape runs
 * with MK_GEMM_SKINNY=-1 (auto), 1 (on) and 0 (the core): every element against the fp32
 * reference (rel. Frobenius <= 1e-2, NaN fails), poisoned C with 3 extra rows left untouched,
 * and the skinny runs twice, bit-identical. The tile height is the environment's
 * MK_GEMM_SKINNY_BN (ctest: test_gemm_skinny at the default 64, test_gemm_skinny_bn128 at
 * 128); argument "skinny" runs MK_GEMM_SKINNY=1 only (the variant: the core and auto are
 * covered by the default run). MK_GEMM_SKINNY_SPLIT_KB=0 (split wherever the tiles leave SMs idle), so
 * the small shapes keep their k-slices; then (4096, 1024) and (1000, 776) once more at the default
 * (256 KiB: unsplit). */
#include <string.h>

#include "tests/kernels/gemm_check.h"

static const int64_t k_m[] = {1, 7, 16, 33, 64, 65, 100, 128};
static const int64_t k_nk[][2] = {{8192, 7168}, {4096, 1024}, {1000, 776}, {200, 72}};

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 600);
  mk_test_require_gpus(1);
  const uint64_t seed = mk_test_seed();
  const int only_skinny = argc > 1 && !strcmp(argv[1], "skinny");
  static const char *const modes[] = {"-1", "1", "0"};
  int failed = 0, runs = 0;
  printf("MK_GEMM_SKINNY_BN in effect: %lld\n", (long long)mk_param_gemm_skinny_bn());
  setenv("MK_GEMM_SKINNY_SPLIT_KB", "0", 1);
  for (int i = 0; i < (int)(sizeof k_nk / sizeof k_nk[0]); i++)
    for (int j = 0; j < (int)(sizeof k_m / sizeof k_m[0]); j++)
      for (int md = 0; md < 3; md++) {
        if (only_skinny && md != 1) continue;
        setenv("MK_GEMM_SKINNY", modes[md], 1);
        mk_param_reset_cache();
        char mode[32];
        snprintf(mode, sizeof mode, "skinny=%s", modes[md]);
        failed += gemm_check_run(k_m[j], k_nk[i][0], k_nk[i][1], MK_GEMM_B_NK, seed * 139 + 16 * i + j, mode, md != 2);
        runs++;
      }
  unsetenv("MK_GEMM_SKINNY_SPLIT_KB");
  setenv("MK_GEMM_SKINNY", "1", 1);
  mk_param_reset_cache();
  for (int i = 1; i < 3; i++)
    for (int j = 0; j < (int)(sizeof k_m / sizeof k_m[0]); j++, runs++)
      failed += gemm_check_run(k_m[j], k_nk[i][0], k_nk[i][1], MK_GEMM_B_NK, seed * 149 + 16 * i + j,
                               "skinny=1 split_kb=256", 1);
  unsetenv("MK_GEMM_SKINNY");
  mk_param_reset_cache();
  if (failed) MK_TEST_FAIL_("%d of %d shape/mode runs wrong", failed, runs);
  printf("ok: %d shape/mode runs\n", runs);
  return 0;
}
