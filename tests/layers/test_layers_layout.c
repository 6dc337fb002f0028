/* test_layers_layout.c (unit) — the layout choice: defaults (largest tp that fits the node and
 * the heads), explicit tp accepted or refused with a status, experts not dividing the world. */
#include "layers/mk_layers.h"
#include "tests/mk_test.h"

static mk_model_config_t cfg(int heads, int kv, int hd, int experts, int shared) {
  mk_model_config_t c;
  memset(&c, 0, sizeof c);
  c.hidden = 64, c.n_heads = heads, c.n_kv_heads = kv, c.head_dim = hd, c.n_experts = experts, c.top_k = 2;
  c.moe_inter = 32, c.shared_inter = shared, c.n_layers = 2, c.vocab = 256;
  return c;
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 30);
  mk_world w = {.rank = 0, .size = 4, .local_rank = 0, .local_size = 4, .node = 0, .nnodes = 1};
  mk_layout_t l;
  mk_model_config_t c = cfg(4, 2, 16, 4, 0);
  ASSERT_OK(mk_layers_layout_choose(&c, &w, 0, &l)); /* kv heads 2: tp 4 does not fit -> 2 */
  ASSERT_EQ(l.tp, 2);
  ASSERT_EQ(l.ep, 4);
  ASSERT_EQ(l.world, 4);
  c = cfg(4, 4, 16, 4, 0);
  ASSERT_OK(mk_layers_layout_choose(&c, &w, 0, &l));
  ASSERT_EQ(l.tp, 4);
  ASSERT_OK(mk_layers_layout_choose(&c, &w, 1, &l));
  ASSERT_EQ(l.tp, 1);
  ASSERT_STATUS(mk_layers_layout_choose(&c, &w, 3, &l), MK_STATUS_INVALID_ARGUMENT); /* not a divisor */
  c = cfg(4, 2, 16, 4, 0);
  ASSERT_STATUS(mk_layers_layout_choose(&c, &w, 4, &l), MK_STATUS_INVALID_ARGUMENT); /* kv heads */
  c = cfg(4, 4, 16, 4, 48); /* shared expert 48 / 4 = 12: not a multiple of 8 -> tp 2 */
  ASSERT_OK(mk_layers_layout_choose(&c, &w, 0, &l));
  ASSERT_EQ(l.tp, 2);
  c = cfg(4, 4, 4, 4, 0); /* q width per rank 4 x 4 / tp: tp 2 gives 8, tp 4 gives 4 */
  ASSERT_OK(mk_layers_layout_choose(&c, &w, 0, &l));
  ASSERT_EQ(l.tp, 2);
  c = cfg(4, 2, 16, 6, 0); /* 6 experts over 4 ranks */
  ASSERT_STATUS(mk_layers_layout_choose(&c, &w, 0, &l), MK_STATUS_INVALID_ARGUMENT);
  mk_world w2 = {.rank = 0, .size = 4, .local_rank = 0, .local_size = 2, .node = 0, .nnodes = 2}; /* 2 nodes x 2 */
  c = cfg(4, 4, 16, 4, 0);
  ASSERT_OK(mk_layers_layout_choose(&c, &w2, 0, &l));
  ASSERT_EQ(l.tp, 2); /* TP stays inside a node */
  ASSERT_STATUS(mk_layers_layout_choose(&c, &w2, 4, &l), MK_STATUS_INVALID_ARGUMENT);
  printf("ok\n");
  return 0;
}
