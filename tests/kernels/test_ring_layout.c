/* test_ring_layout.c (unit) — the sequence layout of ring attention (mk_ring_attn_position):
 * for 1..8 ranks and 1..70 rows per rank, every global position is held by exactly one
 * (rank, row); non-causal shards are contiguous in rank order; causal (zigzag) shards are two
 * contiguous chunks, r and 2W-1-r of the 2W chunks, and with an even row count every rank has
 * the same causal work (sum over its rows of the keys each sees). Bad calls are errors. */
#include <stdlib.h>
#include <string.h>

#include "kernels/mk_kernels.h"
#include "tests/mk_test.h"

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 60);
  for (int w = 1; w <= 8; w++)
    for (int s = 1; s <= 70; s++)
      for (int causal = 0; causal < 2; causal++) {
        const int n = w * s, s1 = (s + 1) / 2;
        unsigned char *seen = calloc((size_t)n, 1);
        ASSERT_TRUE(seen != NULL);
        long long work0 = -1;
        for (int r = 0; r < w; r++) {
          long long work = 0;
          for (int i = 0; i < s; i++) {
            const int64_t p = mk_ring_attn_position(r, w, s, causal, i);
            ASSERT_TRUE(p >= 0 && p < n);
            ASSERT_EQ(seen[p], 0);
            seen[p] = 1;
            work += p + 1;
            if (!causal) ASSERT_EQ(p, (int64_t)r * s + i);
            if (causal && i > 0 && i != s1) ASSERT_EQ(p, mk_ring_attn_position(r, w, s, causal, i - 1) + 1);
          }
          if (causal) {
            ASSERT_EQ(mk_ring_attn_position(r, w, s, 1, 0), (int64_t)r * s1);
            if (s % 2 == 0) {
              if (work0 < 0) work0 = work;
              ASSERT_EQ(work, work0);
            }
          }
        }
        free(seen);
      }
  ASSERT_STATUS(mk_ring_attn_create(NULL, 16, 2, 128, NULL), MK_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS(mk_ring_attn_kv(NULL, NULL, NULL), MK_STATUS_INVALID_ARGUMENT);
  mk_ring_attn_destroy(NULL);
  printf("ok\n");
  return 0;
}
