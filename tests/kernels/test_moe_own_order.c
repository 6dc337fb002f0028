/* test_moe_own_order.c (unit) — own mode's GEMM1 tile order (dispatch_gemm.cu,
 * moe_own_tile_order, checked on the host by mk_moe_check_own_order): for every tile index of a
 * grouped GEMM of El experts, the order is a bijection onto (tile-row, column) and its first
 * tiles are exactly the tile-rows that only this rank's own rows fill (each expert's first
 * own_rows / 128), at the benchmark shapes, with empty experts, all-own and no-own experts, and
 * random row counts, column counts and group sizes. */
#include "core/rng.h"
#include "kernels/moe/moe_internal.h"
#include "tests/mk_test.h"

static int check(int El, const int32_t *rows, const int32_t *own, int tiles_n, int group_m, const char *what) {
  const int got = mk_moe_check_own_order(El, rows, own, tiles_n, group_m);
  if (got) fprintf(stderr, "%s (El=%d tiles_n=%d group_m=%d): check %d\n", what, El, tiles_n, group_m, got);
  return got;
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 30);
  int32_t rows[512], own[512];
  /* (4096, 4096, 8, 2, 14336) on 4 ranks: 2 experts of ~4096 rows, 1024 own each, 112 columns */
  rows[0] = 4101, rows[1] = 4090, own[0] = 1030, own[1] = 1019;
  ASSERT_EQ(check(2, rows, own, 112, 16, "shape 1"), 0);
  /* (4096, 2048, 128, 8, 768): 32 experts of ~1024 rows, 256 own each, 6 columns */
  for (int e = 0; e < 32; e++) rows[e] = 1000 + 3 * e, own[e] = 240 + e;
  ASSERT_EQ(check(32, rows, own, 6, 16, "shape 2"), 0);
  /* empty experts, all rows own, no full own tile, one expert */
  const int32_t r3[5] = {0, 300, 128, 0, 77}, o3[5] = {0, 300, 127, 0, 77};
  ASSERT_EQ(check(5, r3, o3, 3, 16, "edge experts"), 0);
  ASSERT_EQ(check(5, r3, o3, 1, 1, "edge experts, group 1"), 0);
  const int32_t r1[1] = {1024}, o1[1] = {1024};
  ASSERT_EQ(check(1, r1, o1, 4, 16, "one expert, all own"), 0);
  const int32_t z[2] = {0, 0};
  ASSERT_EQ(check(2, z, z, 4, 16, "no rows"), 0);
  ASSERT_EQ(mk_moe_check_own_order(1, r1, r1, 0, 16), 3); /* bad arguments are reported */
  const int32_t over[1] = {1025};
  ASSERT_EQ(mk_moe_check_own_order(1, r1, over, 4, 16), 3);
  /* random shapes */
  const uint64_t seed = mk_test_seed();
  for (int c = 0; c < 300; c++) {
    const uint64_t s = seed + 1000003ull * (uint64_t)c;
    const int El = 1 + (int)mk_rng_uniform(s, 0, 0.f, 40.f), tiles_n = 1 + (int)mk_rng_uniform(s, 1, 0.f, 9.f);
    const int group_m = 1 + (int)mk_rng_uniform(s, 2, 0.f, 20.f);
    for (int e = 0; e < El; e++) {
      rows[e] = (int)mk_rng_uniform(s, 10 + (uint64_t)e, 0.f, 1200.f);
      own[e] = (int)(rows[e] * mk_rng_uniform(s, 1000 + (uint64_t)e, 0.f, 1.f));
    }
    ASSERT_EQ(check(El, rows, own, tiles_n, group_m, "random"), 0);
  }
  printf("test_moe_own_order: ok (seed %llu)\n", (unsigned long long)seed);
  return 0;
}
