/* test_paged_decode.c (gpu) — mk_paged_decode against the CPU reference on fresh random
 * inputs: shuffled block tables, context lengths of 0, 1, block-size multiples and
 * non-multiples, odd block sizes, GQA groups 1 to 16, long contexts on the split path (chosen
 * automatically and forced), and the unsplit path. O and LSE poisoned first, every element
 * checked: O rel Frobenius error <= 1e-2, LSE abs error <= 1e-3. ctest runs it once per pass-1
 * kernel (test_paged_decode, _pipe, _mma: MK_PAGED_DECODE_KERNEL = 0, 1, 2). */
#include <cuda_runtime_api.h>
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/mk_kernels.h"
#include "tests/kernels/attn_ref.h"
#include "tests/mk_test.h"

typedef struct pd_case {
  const char *name;
  int d, hq, hkv, block_size, num_splits, batch;
  int ctx[8];
} pd_case;

static const pd_case k_cases[] = {
    {"d128 gqa4 bs16, lengths 0 1 15 16 17 1000 5000, auto split", 128, 32, 8, 16, 0, 7,
     {0, 1, 15, 16, 17, 1000, 5000}},
    {"d128 gqa4 bs16, 5000 tokens, forced 1 split", 128, 32, 8, 16, 1, 2, {5000, 333}},
    {"d128 gqa4 bs16, 4097 tokens, forced 3 splits", 128, 32, 8, 16, 3, 2, {4097, 64}},
    {"d64 gqa8 bs7, lengths 1 6 7 8 300 2049", 64, 8, 1, 7, 0, 6, {1, 6, 7, 8, 300, 2049}},
    {"d128 gqa1 bs32, lengths 33 3000 1", 128, 4, 4, 32, 0, 3, {33, 3000, 1}},
    {"d64 gqa16 bs16, lengths 100 2000", 64, 16, 1, 16, 0, 2, {100, 2000}},
    {"d128 gqa2 bs64, 16384 tokens, auto split", 128, 4, 2, 64, 0, 1, {16384}},
};

static uint64_t g_rng;
static uint32_t next_u32(void) {
  g_rng++;
  return (uint32_t)(mk_rng_hash(0x5eed, g_rng) >> 32);
}

static int run_case(const pd_case *c, uint64_t seed) {
  const int d = c->d, bs = c->block_size, batch = c->batch;
  int max_ctx = 0, max_blocks = 0, used = 0;
  for (int b = 0; b < batch; b++) {
    if (c->ctx[b] > max_ctx) max_ctx = c->ctx[b];
    const int nb = (c->ctx[b] + bs - 1) / bs;
    if (nb > max_blocks) max_blocks = nb;
    used += nb;
  }
  if (max_blocks == 0) max_blocks = 1;
  const int num_blocks = used + 5; /* a few blocks no sequence uses */
  const size_t row = (size_t)c->hkv * d, nkv = (size_t)num_blocks * bs * row;
  const size_t nq = (size_t)batch * c->hq * d, nl = (size_t)c->hq * batch;

  /* Shuffled block ids; unused table entries point past the cache (must never be read). */
  int32_t *perm = malloc(sizeof(int32_t) * (size_t)num_blocks), *table = malloc(sizeof(int32_t) * (size_t)batch * max_blocks);
  ASSERT_TRUE(perm && table);
  g_rng = seed;
  for (int i = 0; i < num_blocks; i++) perm[i] = i;
  for (int i = num_blocks - 1; i > 0; i--) {
    int j = (int)(next_u32() % (uint32_t)(i + 1)), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  int taken = 0;
  for (int b = 0; b < batch; b++)
    for (int i = 0; i < max_blocks; i++)
      table[(size_t)b * max_blocks + i] = i < (c->ctx[b] + bs - 1) / bs ? perm[taken++] : num_blocks + 1000;

  uint16_t *hq = malloc(nq * 2), *hk = malloc(nkv * 2), *hv = malloc(nkv * 2), *ho = malloc(nq * 2);
  float *hl = malloc(nl * 4);
  ASSERT_TRUE(hq && hk && hv && ho && hl);
  attn_fill_bf16(hq, NULL, nq, seed, -2.f, 2.f);
  attn_fill_bf16(hk, NULL, nkv, seed + 1, -2.f, 2.f);
  attn_fill_bf16(hv, NULL, nkv, seed + 2, -1.f, 1.f);

  /* Reference: gather each sequence's tokens into contiguous K/V, one query row each. */
  int32_t cu_q[9] = {0}, cu_k[9] = {0};
  for (int b = 0; b < batch; b++) {
    cu_q[b + 1] = b + 1;
    cu_k[b + 1] = cu_k[b] + c->ctx[b];
  }
  const size_t total_k = (size_t)cu_k[batch];
  uint16_t *gk = malloc(total_k * row * 2 + 2), *gv = malloc(total_k * row * 2 + 2);
  float *oref = malloc(nq * 4), *lref = malloc(nl * 4);
  ASSERT_TRUE(gk && gv && oref && lref);
  for (int b = 0; b < batch; b++)
    for (int t = 0; t < c->ctx[b]; t++) {
      const size_t src = ((size_t)table[(size_t)b * max_blocks + t / bs] * bs + t % bs) * row;
      memcpy(gk + (cu_k[b] + t) * row, hk + src, row * 2);
      memcpy(gv + (cu_k[b] + t) * row, hv + src, row * 2);
    }
  const float scale = 1.0f / sqrtf((float)d);
  mk_attn_fwd_args ha; /* one query row per sequence over its gathered tokens, no mask */
  memset(&ha, 0, sizeof ha);
  ha.q = hq, ha.k = gk, ha.v = gv, ha.cu_seqlens_q = cu_q, ha.cu_seqlens_k = cu_k, ha.batch = batch;
  ha.hq = c->hq, ha.hkv = c->hkv, ha.d = d, ha.softmax_scale = scale, ha.mask = MK_ATTN_MASK_NONE;
  attn_ref(&ha, oref, lref);

  uint16_t *dq = attn_dev(hq, nq * 2), *dk = attn_dev(hk, nkv * 2), *dv = attn_dev(hv, nkv * 2);
  uint16_t *dout = attn_dev(NULL, nq * 2);
  float *dl = attn_dev(NULL, nl * 4);
  int32_t *dtable = attn_dev(table, sizeof(int32_t) * (size_t)batch * max_blocks);
  int32_t *dctx = attn_dev(c->ctx, sizeof(int32_t) * (size_t)batch);
  void *ws = NULL;

  mk_paged_decode_args a = {.q = dq, .k_cache = dk, .v_cache = dv, .block_table = dtable, .context_lens = dctx,
                          .o = dout, .lse = dl, .batch = batch, .hq = c->hq, .hkv = c->hkv, .d = d,
                          .block_size = bs, .max_blocks_per_seq = max_blocks, .max_context_len = max_ctx,
                          .num_blocks = num_blocks, .num_splits = c->num_splits, .softmax_scale = scale};
  size_t ws_bytes = 0;
  ASSERT_OK(mk_paged_decode_workspace_size(&a, &ws_bytes));
  if (ws_bytes) {
    ASSERT_STATUS(mk_paged_decode(&a, NULL), MK_STATUS_INVALID_ARGUMENT); /* split path without a workspace */
    a.workspace = ws = attn_dev(NULL, ws_bytes);
  }
  ASSERT_OK(mk_paged_decode(&a, NULL));
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(ho, dout, nq * 2, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(hl, dl, nl * 4, cudaMemcpyDeviceToHost));
  char what[160];
  snprintf(what, sizeof what, "%s (workspace %zu B)", c->name, ws_bytes);
  int rc = attn_check(what, ho, oref, nq, hl, lref, nl, 1e-2, 1e-3);

  cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dout), cudaFree(dl), cudaFree(dtable), cudaFree(dctx);
  if (ws) cudaFree(ws);
  free(perm), free(table), free(hq), free(hk), free(hv), free(ho), free(hl);
  free(gk), free(gv), free(oref), free(lref);
  return rc;
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 600);
  mk_test_require_gpus(1);
  const uint64_t seed = mk_test_seed();
  int fails = 0;
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) fails += run_case(&k_cases[i], seed + 3 * i);

  mk_paged_decode_args bad;
  memset(&bad, 0, sizeof bad);
  bad.batch = 1, bad.hq = 32, bad.hkv = 1, bad.d = 128, bad.block_size = 16, bad.max_blocks_per_seq = 1;
  bad.max_context_len = 16, bad.softmax_scale = 1.f;
  ASSERT_STATUS(mk_paged_decode(&bad, NULL), MK_STATUS_INVALID_ARGUMENT); /* group 32 > 16 */
  bad.hkv = 8, bad.max_context_len = 17;
  ASSERT_STATUS(mk_paged_decode(&bad, NULL), MK_STATUS_INVALID_ARGUMENT); /* context past the table */
  bad.max_context_len = 16, bad.d = 80;
  ASSERT_STATUS(mk_paged_decode(&bad, NULL), MK_STATUS_UNSUPPORTED);
  ASSERT_EQ(fails, 0);
  printf("ok\n");
  return 0;
}
