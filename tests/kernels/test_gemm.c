/* test_gemm.c (gpu) — mk_gemm_bf16 on fresh random inputs: 24 shapes (M in {1, 7, 127, 1000,
 * 3000, ...}, N and K multiples of 8 that are not multiples of the tile, exact tiles, more
 * tiles than SMs), both B layouts, in ten modes: data-parallel with each tile width
 * (MK_GEMM_TILE_N=256, 128, 224, 160; MK_GEMM_SPLIT_K=0), the last wave split in 3 k-slices
 * (MK_GEMM_SPLIT_K=3) and in 2 with 128-wide tiles (MK_GEMM_SPLIT_K=2, MK_GEMM_TILE_N=128),
 * each split run twice: the two results must be bit-identical; 256 and 224 data-parallel and the 128 split
 * again with the direct epilogue (MK_GEMM_EPI=0; the others stage C in shared memory). All of them with the
 * idle warpgroup skip (MK_GEMM_WG_SKIP=1: M % 128 in 1..64 at M = 1, 7, 17, 64, 129, 300, 513, 3000,
 * 5000 leaves the last tile-row's second warpgroup idle, split or not), and 256 wide data-parallel
 * without it (MK_GEMM_WG_SKIP=0). Then, with the defaults (also
 * twice), the shapes where the model picks a split or a width other than 256 on an H200:
 * 2048 x 2560 x 8192 (160 wide), 2048 x 7168 x 8192 (224), M = 16 and 128 (split), both
 * layouts. The mode passes set MK_GEMM_SKINNY=0 (the core on its M <= 64 shapes too; the
 * skinny kernel has test_gemm_skinny), the defaults pass does not. A tile width the core lacks is refused. C is
 * poisoned (bf16 NaN) with 3 extra rows: every element is checked against an fp32 reference
 * and the extra rows must stay untouched. Bad shapes are refused. */
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

/* MK_GEMM_TILE_N, MK_GEMM_SPLIT_K, MK_GEMM_EPI, MK_GEMM_WG_SKIP of each pass over k_shapes (every width stores
 * through shared memory unless MK_GEMM_EPI=0; 224 and 160 end with a half slab). */
static const char *const k_modes[][4] = {
    {"256", "0", "1", "1"}, {"128", "0", "1", "1"}, {"224", "0", "1", "1"}, {"160", "0", "1", "1"}, {"0", "3", "1", "1"},
    {"128", "2", "1", "1"}, {"256", "0", "0", "1"}, {"128", "2", "0", "1"}, {"224", "0", "0", "1"}, {"256", "0", "1", "0"}};
#define NMODES ((int)(sizeof k_modes / sizeof k_modes[0]))

/* Shapes where the default model splits the last wave or narrows the tile (on 132 SMs). */
static const shape k_auto[] = {
    {2048, 2560, 8192, MK_GEMM_B_NK}, {2048, 7168, 8192, MK_GEMM_B_NK}, {2048, 2560, 8192, MK_GEMM_B_KN},
    {2048, 7168, 8192, MK_GEMM_B_KN}, {128, 7168, 8192, MK_GEMM_B_KN},  {16, 2560, 8192, MK_GEMM_B_NK},
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
  setenv("MK_GEMM_TILE_N", "192", 1); /* not a width the core has */
  mk_param_reset_cache();
  ASSERT_STATUS(mk_gemm_bf16(dummy, dummy, dummy, 8, 8, 8, MK_GEMM_B_NK, NULL), MK_STATUS_INVALID_ARGUMENT);
  CUDA_OK(cudaFree(dummy));

  int failed = 0;
  const int nshapes = (int)(sizeof k_shapes / sizeof k_shapes[0]), nauto = (int)(sizeof k_auto / sizeof k_auto[0]);
  for (int run = 0; run < NMODES * nshapes; run++) {
    const int i = run % nshapes, m = run / nshapes;
    setenv("MK_GEMM_TILE_N", k_modes[m][0], 1);
    setenv("MK_GEMM_SPLIT_K", k_modes[m][1], 1);
    setenv("MK_GEMM_SKINNY", "0", 1);
    setenv("MK_GEMM_EPI", k_modes[m][2], 1);
    setenv("MK_GEMM_WG_SKIP", k_modes[m][3], 1);
    mk_param_reset_cache();
    char mode[80];
    snprintf(mode, sizeof mode, "tile_n=%s split_k=%s epi=%s wg_skip=%s", k_modes[m][0], k_modes[m][1], k_modes[m][2],
             k_modes[m][3]);
    failed += gemm_check_run(k_shapes[i].m, k_shapes[i].n, k_shapes[i].k, k_shapes[i].b, seed * 131 + 2 * i, mode,
                             atoi(k_modes[m][1]) >= 2);
  }
  unsetenv("MK_GEMM_TILE_N");
  unsetenv("MK_GEMM_SPLIT_K");
  unsetenv("MK_GEMM_SKINNY");
  unsetenv("MK_GEMM_EPI");
  unsetenv("MK_GEMM_WG_SKIP");
  mk_param_reset_cache();
  for (int i = 0; i < nauto; i++)
    failed += gemm_check_run(k_auto[i].m, k_auto[i].n, k_auto[i].k, k_auto[i].b, seed * 137 + 2 * i, "defaults", 1);
  if (failed) MK_TEST_FAIL_("%d of %d shape/mode runs wrong", failed, NMODES * nshapes + nauto);
  printf("ok: %d shapes x %d modes, %d shapes with the defaults\n", nshapes, NMODES, nauto);
  return 0;
}
