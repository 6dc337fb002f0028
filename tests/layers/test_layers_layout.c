/* test_layers_layout.c (unit) — the layout choice: defaults (largest tp that fits the node and
 * the heads), explicit tp accepted or refused with a status, experts not dividing the world;
 * 8 ranks in one node and 2 nodes x 4. */
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
  /* 8 ranks (issue 11): one node of 8 and 2 nodes x 4, with the real models' attention and
   * expert counts (Mixtral-8x7B 32/8 heads, 8 experts; Qwen3-30B-A3B 32/4, 128; OLMoE 16/16, 64). */
  mk_world w8 = {.rank = 5, .size = 8, .local_rank = 5, .local_size = 8, .node = 0, .nnodes = 1};
  mk_world w24 = {.rank = 5, .size = 8, .local_rank = 1, .local_size = 4, .node = 1, .nnodes = 2};
  const struct { int heads, kv, hd, experts, tp8, tp24; } real[] = {
      {32, 8, 128, 8, 8, 4}, {32, 4, 128, 128, 4, 4}, {16, 16, 128, 64, 8, 4}};
  for (int i = 0; i < 3; i++) {
    c = cfg(real[i].heads, real[i].kv, real[i].hd, real[i].experts, 0);
    c.hidden = 4096, c.moe_inter = 768;
    ASSERT_OK(mk_layers_layout_choose(&c, &w8, 0, &l));
    ASSERT_EQ(l.tp, real[i].tp8);
    ASSERT_EQ(l.ep, 8);
    ASSERT_EQ(l.world, 8);
    ASSERT_OK(mk_layers_layout_choose(&c, &w24, 0, &l));
    ASSERT_EQ(l.tp, real[i].tp24); /* TP stays inside a node of 4 */
    ASSERT_EQ(l.ep, 8);            /* EP spans both nodes */
    ASSERT_STATUS(mk_layers_layout_choose(&c, &w24, 8, &l), MK_STATUS_INVALID_ARGUMENT);
  }
  c = cfg(32, 8, 128, 4, 0); /* 4 experts over 8 ranks */
  ASSERT_STATUS(mk_layers_layout_choose(&c, &w8, 0, &l), MK_STATUS_INVALID_ARGUMENT);
  /* the tiny models of test_model_gpu_*_tp8 (8 heads, 8 KV heads, head_dim 16, experts raised to
   * 8): tp 8; Qwen's dense MLP 96 (96 / 8 = 12) keeps it at 4, Qwen2's shared expert 48 at 2 */
  c = cfg(8, 8, 16, 8, 0);
  ASSERT_OK(mk_layers_layout_choose(&c, &w8, 0, &l));
  ASSERT_EQ(l.tp, 8);
  c.dense_inter = 96;
  ASSERT_OK(mk_layers_layout_choose(&c, &w8, 0, &l));
  ASSERT_EQ(l.tp, 4);
  c.shared_inter = 48;
  ASSERT_OK(mk_layers_layout_choose(&c, &w8, 0, &l));
  ASSERT_EQ(l.tp, 2);
  printf("ok\n");
  return 0;
}
