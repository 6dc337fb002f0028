/* test_layers_moe_dec.c (unit) — which MoE handle a layer call uses (layout.c): the decode-sized,
 * fused-only second handle exists only where MK_MOE_DECODE_TOKENS asks for one smaller than the
 * layer's handle (max_seq tokens; -1: ceil(64 / tp) tokens), and takes exactly the fused calls whose
 * per-rank share of the tokens, ceil(n / tp), fits it. */
#include "layers/layers_internal.h"
#include "tests/mk_test.h"

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 30);
  /* cap: none when off, or when the layer's handle is not larger */
  ASSERT_EQ(mk_layers_moe_dec_cap_(4097, 64, 1), 64); /* mk-bench layer --decode batch: max_tokens 4097 */
  ASSERT_EQ(mk_layers_moe_dec_cap_(4097, 0, 1), 0);
  ASSERT_EQ(mk_layers_moe_dec_cap_(64, 64, 1), 0);
  ASSERT_EQ(mk_layers_moe_dec_cap_(38, 64, 1), 0); /* test_model_gpu: 7 + 32 - 1 positions */
  ASSERT_EQ(mk_layers_moe_dec_cap_(38, 1, 1), 1);  /* its MK_MOE_DECODE_TOKENS=1 variant: decode steps only */
  ASSERT_EQ(mk_layers_moe_dec_cap_(38, -3, 1), 0);
  /* -1 (the default): a decode batch of 64 over the TP group, ceil(64 / tp) a rank */
  ASSERT_EQ(mk_layers_moe_dec_cap_(4097, -1, 1), 64);
  ASSERT_EQ(mk_layers_moe_dec_cap_(4097, -1, 2), 32);
  ASSERT_EQ(mk_layers_moe_dec_cap_(4097, -1, 3), 22);
  ASSERT_EQ(mk_layers_moe_dec_cap_(4097, -1, 4), 16);
  ASSERT_EQ(mk_layers_moe_dec_cap_(38, -1, 2), 32); /* test_model_gpu at tp 2: a decode handle of 32 */
  ASSERT_EQ(mk_layers_moe_dec_cap_(32, -1, 2), 0);
  /* use: fused only, per-rank share ceil(n / tp) <= cap */
  ASSERT_TRUE(mk_layers_moe_use_dec_(64, 1, 64, 4));   /* batch 64 over tp 4: 16 a rank */
  ASSERT_TRUE(mk_layers_moe_use_dec_(64, 1, 256, 4));  /* 64 a rank */
  ASSERT_FALSE(mk_layers_moe_use_dec_(64, 1, 257, 4)); /* 65 on rank 0 */
  ASSERT_FALSE(mk_layers_moe_use_dec_(64, 0, 64, 4));  /* unfused: the layer's handle, as before */
  ASSERT_FALSE(mk_layers_moe_use_dec_(0, 1, 1, 4));    /* no second handle */
  ASSERT_TRUE(mk_layers_moe_use_dec_(1, 1, 1, 1));     /* decode of one token, tp 1 */
  ASSERT_TRUE(mk_layers_moe_use_dec_(1, 1, 4, 4));     /* one token a rank */
  ASSERT_FALSE(mk_layers_moe_use_dec_(1, 1, 7, 4));    /* prefill of 7 over tp 4: 2 a rank */
  ASSERT_FALSE(mk_layers_moe_use_dec_(1, 1, 2, 1));
  ASSERT_FALSE(mk_layers_moe_use_dec_(8, 1, 0, 4));    /* no tokens */
  printf("ok\n");
  return 0;
}
