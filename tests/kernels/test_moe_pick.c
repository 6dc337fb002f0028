/* test_moe_pick.c (unit) — the fused MoE path's split-K choice from the shape at create
 * (mk_moe_pick_split_k): AUTO splits in 8 k-slices where a local expert expects at most 256
 * rows (decode), not above (prefill-sized handles); +-1 turns it off; explicit values pass. */
#include "kernels/moe/moe_internal.h"
#include "tests/mk_test.h"

static int pick(int64_t T, int E, int K, int split_k, int W) {
  const mk_moe_args a = {.hidden = 4096, .inter = 14336, .n_experts = E, .top_k = K, .max_tokens = T,
                         .split_k = split_k};
  return mk_moe_pick_split_k(&a, W);
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 30);
  /* the decode shapes of issue #7 at EP 4 (T tokens per rank): AUTO gives 8 */
  ASSERT_EQ(pick(16, 8, 2, 0, 4), 8);
  ASSERT_EQ(pick(128, 8, 2, 0, 4), 8);     /* 128 * 2 / 2 = 128 rows per local expert */
  ASSERT_EQ(pick(16, 128, 8, 0, 4), 8);
  ASSERT_EQ(pick(128, 128, 8, 0, 4), 8);
  ASSERT_EQ(pick(16, 256, 8, 0, 4), 8);
  ASSERT_EQ(pick(128, 256, 8, 0, 4), 8);
  /* the prefill shapes: off */
  ASSERT_EQ(pick(4096, 8, 2, 0, 4), 0);
  ASSERT_EQ(pick(4096, 128, 8, 0, 4), 0);
  ASSERT_EQ(pick(8192, 256, 8, 0, 4), 0);
  /* the edge: 256 rows per local expert splits, 257 does not */
  ASSERT_EQ(pick(256, 8, 2, 0, 4), 8);
  ASSERT_EQ(pick(257, 8, 2, 0, 4), 0);
  /* EP 8 halves the local experts: twice the rows per expert */
  ASSERT_EQ(pick(128, 8, 2, 0, 8), 8);
  ASSERT_EQ(pick(256, 8, 2, 0, 8), 0);
  /* explicit choices win over AUTO */
  ASSERT_EQ(pick(16, 8, 2, 1, 4), 0);
  ASSERT_EQ(pick(16, 8, 2, -1, 4), 0);
  ASSERT_EQ(pick(4096, 8, 2, 4, 4), 4);
  ASSERT_EQ(pick(16, 8, 2, -16, 4), -16);
  ASSERT_EQ(pick(16, 8, 2, 16, 4), 16);
  printf("test_moe_pick: ok\n");
  return 0;
}
