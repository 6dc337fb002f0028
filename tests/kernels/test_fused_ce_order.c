/* test_fused_ce_order.c (unit, no GPU) — the push order of GEMM+AR's overlapped copy-engine
 * mode (mk_fused_ce_push_step, MK_FUSED_CE_OVERLAP=1): for 1..40 pieces, every piece has one
 * first shot and one second shot, the second after its own first, the order is F0, F1, S0, F2,
 * S1, ..., S(np-1), and before the first shot of piece k only steps of pieces below k come (the
 * condition under which the ranks' side streams cannot wait on each other in a cycle). */
#include "kernels/fused/fused_internal.h"
#include "tests/mk_test.h"

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 30);
  for (int64_t np = 1; np <= 40; np++) {
    int first_at[40], second_at[40];
    for (int i = 0; i < 40; i++) first_at[i] = second_at[i] = -1;
    for (int64_t t = 0; t < 2 * np; t++) {
      int second = -1;
      const int i = mk_fused_ce_push_step(np, t, &second);
      ASSERT_TRUE(i >= 0 && i < np);
      ASSERT_TRUE(second == 0 || second == 1);
      int *at = second ? second_at : first_at;
      ASSERT_EQ(at[i], -1); /* each shot of each piece once */
      at[i] = (int)t;
      if (!second) /* everything before F(i) belongs to pieces < i */
        for (int64_t u = 0; u < t; u++) {
          int s2;
          ASSERT_TRUE(mk_fused_ce_push_step(np, u, &s2) < i);
        }
    }
    for (int i = 0; i < np; i++) {
      ASSERT_TRUE(first_at[i] >= 0 && second_at[i] > first_at[i]);
      ASSERT_EQ(first_at[i], i == 0 ? 0 : 2 * i - 1); /* F(i) at 2i - 1 */
      ASSERT_EQ(second_at[i], i == np - 1 ? (int)(2 * np - 1) : 2 * i + 2); /* S(i) one piece later */
    }
  }
  printf("ok\n");
  return 0;
}
