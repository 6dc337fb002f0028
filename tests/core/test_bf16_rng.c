/* test_bf16_rng.c — host bf16 rounding against a double-precision reference on fresh random
 * floats; the counter-based RNG is deterministic, in range and roughly uniform. */
#include <string.h>

#include "core/rng.h"
#include "tests/mk_test.h"

/* Reference: the nearest bf16 (ties to even) chosen by comparing distances in double. */
static uint16_t ref_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
  double dlo = fabs((double)mk_bf16_to_float(lo) - f), dhi = fabs((double)mk_bf16_to_float(hi) - f);
  if (dlo < dhi) return lo;
  if (dhi < dlo) return hi;
  return (lo & 1) ? hi : lo;
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 30);
  uint64_t seed = mk_test_seed();
  size_t bad = 0;
  for (uint64_t i = 0; i < 2000000; i++) {
    uint32_t u = (uint32_t)mk_rng_hash(seed, i);
    float f;
    memcpy(&f, &u, 4);
    if (!isfinite(f) || fabsf(f) > 3.0e38f) continue;
    uint16_t got = mk_bf16_from_float(f);
    if (got != ref_bf16(f) || got != mk_rng_bf16_bits(f)) bad++;
  }
  ASSERT_EQ(bad, 0);
  ASSERT_TRUE(isnan(mk_bf16_to_float(mk_bf16_from_float(NAN))));
  ASSERT_TRUE(isinf(mk_bf16_to_float(mk_bf16_from_float(INFINITY))));
  ASSERT_UEQ(mk_bf16_from_float(1.0f), 0x3f80);
  ASSERT_UEQ(mk_bf16_from_float(-2.0f), 0xc000);

  /* RNG: same (seed, i) same value; in [lo, hi); mean and variance of U(-1, 1). */
  const size_t n = 1 << 20;
  double sum = 0, sq = 0;
  for (size_t i = 0; i < n; i++) {
    float x = mk_rng_uniform(seed, i, -1.0f, 2.0f);
    ASSERT_TRUE(x >= -1.0f && x < 1.0f);
    ASSERT_TRUE(x == mk_rng_uniform(seed, i, -1.0f, 2.0f));
    sum += x;
    sq += (double)x * x;
  }
  ASSERT_NEAR(sum / n, 0.0, 0.01);
  ASSERT_NEAR(sq / n, 1.0 / 3.0, 0.01);
  ASSERT_TRUE(mk_rng_hash(seed, 0) != mk_rng_hash(seed + 1, 0));
  printf("ok\n");
  return 0;
}
