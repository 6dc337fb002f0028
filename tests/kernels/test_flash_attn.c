/* test_flash_attn.c (gpu) — mk_flash_attn_fwd, all three kernels (Hopper wgmma warp-specialised and not, mma.sync),
 * against the CPU reference (double accumulation) on fresh random inputs: head dim 64 and 128, GQA ratios 1, 4, 8,
 * causal (bottom-right and explicit offset) and non-causal, varlen batches with odd lengths, seqlen_q != seqlen_k,
 * empty sequences; each also split along the keys (forced 3 and 7 splits, more than some blocks have key tiles, and
 * the automatic choice with a workspace), and a decode of 64 tokens of one sequence against 4160 keys, the model's
 * case the automatic split is for; every one-sequence case also with both cu_seqlens NULL (the model's form); and
 * keys whose scale grows along the sequence, so that the row max moves often and by much (scores up to ~60 nats). K
 * and V are followed by a tile of NaN rows, which no kernel may let into O (a key tile past the last key is
 * zero-filled). Outputs are poisoned first and every element is checked: O rel Frobenius error <= 1e-2, LSE abs
 * error <= 1e-3 (-inf exactly where a row sees no key); the row after the last one must stay untouched. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <string.h>

#include "kernels/mk_kernels.h"
#include "tests/kernels/attn_ref.h"
#include "tests/mk_test.h"

typedef struct fa_case {
  const char *name;
  int d, hq, hkv, mask, causal_offset, batch;
  int lq[8], lk[8];
  float k_ramp; /* > 0: key j of a sequence scaled by 1 + k_ramp * (j / 128), so the scores' max keeps growing */
} fa_case;

static const fa_case k_cases[] = {
    {"d128 gqa1 causal, lengths 1 7 127 1000 3000", 128, 2, 2, MK_ATTN_MASK_CAUSAL, 0, 5,
     {1, 7, 127, 1000, 3000}, {1, 7, 127, 1000, 3000}, 0.f},
    {"d64 gqa8 non-causal, seqlen_q != seqlen_k", 64, 8, 1, MK_ATTN_MASK_NONE, 0, 4, {7, 127, 1000, 1},
     {1, 300, 1000, 129}, 0.f},
    {"d128 gqa4 causal, seqlen_q != seqlen_k, empty sequences", 128, 8, 2, MK_ATTN_MASK_CAUSAL, 0, 7,
     {1, 7, 127, 500, 130, 0, 5}, {1, 100, 127, 1000, 60, 10, 0}, 0.f},
    {"d64 gqa4 causal, lengths 1000 129 7", 64, 4, 1, MK_ATTN_MASK_CAUSAL, 0, 3, {1000, 129, 7}, {1000, 129, 7}, 0.f},
    {"d128 gqa8 non-causal, long keys", 128, 8, 1, MK_ATTN_MASK_NONE, 0, 2, {127, 1}, {1000, 3000}, 0.f},
    {"d64 gqa1 causal offset -5", 64, 2, 2, MK_ATTN_MASK_CAUSAL_OFFSET, -5, 2, {200, 64}, {150, 64}, 0.f},
    {"d128 gqa1 causal offset +37", 128, 2, 2, MK_ATTN_MASK_CAUSAL_OFFSET, 37, 1, {100}, {300}, 0.f},
    {"d128 gqa1 non-causal 1000 x 3000", 128, 1, 1, MK_ATTN_MASK_NONE, 0, 1, {1000}, {3000}, 0.f},
    {"d128 gqa8 causal, 64 queries x 4160 keys (decode of one sequence)", 128, 8, 1, MK_ATTN_MASK_CAUSAL, 0, 1,
     {64}, {4160}, 0.f},
    {"d64 gqa4 causal, 1 / 33 / 130 queries x 2000 / 77 / 5000 keys", 64, 4, 1, MK_ATTN_MASK_CAUSAL, 0, 3,
     {1, 33, 130}, {2000, 77, 5000}, 0.f},
    /* the row max keeps moving, by small and large steps */
    {"d128 gqa4 non-causal, keys growing along the sequence", 128, 8, 2, MK_ATTN_MASK_NONE, 0, 2, {300, 129},
     {3000, 1000}, 0.5f},
    {"d64 gqa1 causal, keys growing along the sequence", 64, 2, 2, MK_ATTN_MASK_CAUSAL, 0, 1, {2000}, {2000}, 0.25f},
};

static int run_case(const fa_case *c, uint64_t seed) {
  int32_t cu_q[9] = {0}, cu_k[9] = {0};
  int max_q = 0, max_k = 0;
  for (int b = 0; b < c->batch; b++) {
    cu_q[b + 1] = cu_q[b] + c->lq[b];
    cu_k[b + 1] = cu_k[b] + c->lk[b];
    if (c->lq[b] > max_q) max_q = c->lq[b];
    if (c->lk[b] > max_k) max_k = c->lk[b];
  }
  const int total_q = cu_q[c->batch], total_k = cu_k[c->batch], d = c->d;
  const size_t nq = (size_t)total_q * c->hq * d, nk = (size_t)total_k * c->hkv * d, nl = (size_t)c->hq * total_q;
  const size_t row_q = (size_t)c->hq * d; /* one guard row after o, one guard value after lse */
  const size_t pad = (size_t)128 * c->hkv * d; /* NaN rows after the last key */
  uint16_t *hq = malloc(nq * 2 + 2), *hk = malloc((nk + pad) * 2), *hv = malloc((nk + pad) * 2);
  uint16_t *ho = malloc((nq + row_q) * 2);
  float *oref = malloc(nq * 4 + 4), *lref = malloc(nl * 4 + 4), *hl = malloc((nl + 1) * 4);
  ASSERT_TRUE(hq && hk && hv && ho && oref && lref && hl);
  attn_fill_bf16(hq, NULL, nq, seed, -2.f, 2.f);
  attn_fill_bf16(hk, NULL, nk, seed + 1, -2.f, 2.f);
  attn_fill_bf16(hv, NULL, nk, seed + 2, -1.f, 1.f);
  if (c->k_ramp > 0.f)
    for (int b = 0; b < c->batch; b++)
      for (int j = 0; j < c->lk[b]; j++) {
        uint16_t *row = hk + (size_t)(cu_k[b] + j) * c->hkv * d;
        const float f = 1.f + c->k_ramp * (float)(j / 128);
        for (int e = 0; e < c->hkv * d; e++) row[e] = mk_bf16_from_float(mk_bf16_to_float(row[e]) * f);
      }
  memset(hk + nk, 0xff, pad * 2);
  memset(hv + nk, 0xff, pad * 2);

  uint16_t *dq = attn_dev(hq, nq * 2), *dk = attn_dev(hk, (nk + pad) * 2), *dv = attn_dev(hv, (nk + pad) * 2);
  uint16_t *dout = attn_dev(NULL, (nq + row_q) * 2);
  float *dl = attn_dev(NULL, (nl + 1) * 4);
  int32_t *dcq = attn_dev(cu_q, sizeof cu_q), *dck = attn_dev(cu_k, sizeof cu_k);
  mk_attn_fwd_args a = {.q = dq, .k = dk, .v = dv, .o = dout, .lse = dl, .cu_seqlens_q = dcq, .cu_seqlens_k = dck,
                        .batch = c->batch, .max_seqlen_q = max_q, .max_seqlen_k = max_k, .total_q = total_q,
                        .hq = c->hq, .hkv = c->hkv, .d = d, .mask = (mk_attn_mask)c->mask,
                        .causal_offset = c->causal_offset, .softmax_scale = 1.0f / sqrtf((float)d)};
  mk_attn_fwd_args ha = a; /* the same call on host copies */
  ha.q = hq, ha.k = hk, ha.v = hv, ha.cu_seqlens_q = cu_q, ha.cu_seqlens_k = cu_k;
  attn_ref(&ha, oref, lref);

  int rc = 0;
  static const struct {
    mk_attn_impl impl;
    int splits; /* -1: automatic with a workspace */
    const char *name;
  } impls[] = {{MK_ATTN_IMPL_WGMMA_WS, 0, "wgmma-ws"},    {MK_ATTN_IMPL_WGMMA, 0, "wgmma"},
               {MK_ATTN_IMPL_MMA, 0, "mma.sync"},         {MK_ATTN_IMPL_WGMMA_WS, 3, "wgmma-ws/3"},
               {MK_ATTN_IMPL_WGMMA_WS, 7, "wgmma-ws/7"},  {MK_ATTN_IMPL_WGMMA, 3, "wgmma/3"},
               {MK_ATTN_IMPL_WGMMA, 7, "wgmma/7"},        {MK_ATTN_IMPL_MMA, 3, "mma.sync/3"},
               {MK_ATTN_IMPL_AUTO, -1, "auto/auto"},      {MK_ATTN_IMPL_WGMMA, -1, "wgmma/auto"},
               {MK_ATTN_IMPL_MMA, -1, "mma.sync/auto"}};
  /* one sequence: every kernel again with both cu_seqlens NULL (max_seqlen_q x max_seqlen_k, the model's call) */
  const size_t nimpl = sizeof impls / sizeof impls[0];
  for (size_t k = 0; k < (c->batch == 1 ? 2 : 1) * nimpl; k++) {
    const int nocu = k >= nimpl;
    const int splits = impls[k % nimpl].splits;
    a.cu_seqlens_q = nocu ? NULL : dcq, a.cu_seqlens_k = nocu ? NULL : dck;
    CUDA_OK(cudaMemset(dout, 0xff, (nq + row_q) * 2)); /* poison: bf16 NaN */
    CUDA_OK(cudaMemset(dl, 0xff, (nl + 1) * 4));       /* poison: fp32 NaN */
    a.impl = impls[k % nimpl].impl;
    a.num_splits = splits > 0 ? splits : 0;
    a.workspace = NULL, a.workspace_bytes = 0;
    void *ws = NULL;
    if (splits) {
      size_t bytes = 0;
      ASSERT_OK(mk_flash_attn_fwd_workspace_size(&a, &bytes));
      if (splits > 0) ASSERT_TRUE(bytes > 0);
      if (bytes) {
        CUDA_OK(cudaMalloc(&ws, bytes));
        CUDA_OK(cudaMemset(ws, 0xff, bytes)); /* poison the partials too */
      }
      a.workspace = ws, a.workspace_bytes = bytes;
      if (splits > 0) { /* one byte short is refused */
        a.workspace_bytes = bytes - 1;
        ASSERT_STATUS(mk_flash_attn_fwd(&a, NULL), MK_STATUS_INVALID_ARGUMENT);
        a.workspace_bytes = bytes;
      }
    }
    ASSERT_OK(mk_flash_attn_fwd(&a, NULL));
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(ho, dout, (nq + row_q) * 2, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(hl, dl, (nl + 1) * 4, cudaMemcpyDeviceToHost));
    size_t guard_bad = 0;
    for (size_t i = 0; i < row_q; i++) guard_bad += ho[nq + i] != 0xffff;
    uint32_t lguard;
    memcpy(&lguard, &hl[nl], 4);
    guard_bad += lguard != 0xffffffffu;
    char what[160];
    snprintf(what, sizeof what, "%-13s %s%s", impls[k % nimpl].name, c->name, nocu ? " (no cu_seqlens)" : "");
    if (ws) CUDA_OK(cudaFree(ws));
    rc |= attn_check(what, ho, oref, nq, hl, lref, nl, 1e-2, 1e-3);
    if (guard_bad) {
      printf("  %zu values past the end of o/lse were overwritten\n", guard_bad);
      rc = 1;
    }
  }
  cudaFree(dq);
  cudaFree(dk);
  cudaFree(dv);
  cudaFree(dout);
  cudaFree(dl);
  cudaFree(dcq);
  cudaFree(dck);
  free(hq), free(hk), free(hv), free(ho), free(oref), free(lref), free(hl);
  return rc;
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 600);
  mk_test_require_gpus(1);
  const uint64_t seed = mk_test_seed();
  int fails = 0;
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) fails += run_case(&k_cases[i], seed + 3 * i);

  /* Bad arguments are errors with a message, not launches. */
  mk_attn_fwd_args bad;
  memset(&bad, 0, sizeof bad);
  bad.batch = 1, bad.max_seqlen_q = 1, bad.hq = 4, bad.hkv = 3, bad.d = 128, bad.softmax_scale = 1.f;
  ASSERT_STATUS(mk_flash_attn_fwd(&bad, NULL), MK_STATUS_INVALID_ARGUMENT);
  bad.hkv = 2, bad.d = 96;
  ASSERT_STATUS(mk_flash_attn_fwd(&bad, NULL), MK_STATUS_UNSUPPORTED);
  bad.d = 64;
  ASSERT_STATUS(mk_flash_attn_fwd(&bad, NULL), MK_STATUS_INVALID_ARGUMENT); /* NULL tensors */
  ASSERT_STATUS(mk_flash_attn_fwd(NULL, NULL), MK_STATUS_INVALID_ARGUMENT);
  bad.impl = (mk_attn_impl)7;
  ASSERT_STATUS(mk_flash_attn_fwd(&bad, NULL), MK_STATUS_INVALID_ARGUMENT);
  bad.impl = MK_ATTN_IMPL_AUTO, bad.num_splits = -1;
  ASSERT_STATUS(mk_flash_attn_fwd(&bad, NULL), MK_STATUS_INVALID_ARGUMENT);
  bad.num_splits = 0, bad.workspace = (void *)(uintptr_t)8, bad.workspace_bytes = 64; /* misaligned */
  ASSERT_STATUS(mk_flash_attn_fwd(&bad, NULL), MK_STATUS_INVALID_ARGUMENT);
  bad.workspace = NULL; /* NULL with bytes */
  ASSERT_STATUS(mk_flash_attn_fwd(&bad, NULL), MK_STATUS_INVALID_ARGUMENT);
  /* cu_seqlens: both or neither, and neither only for one sequence with total_q = max_seqlen_q */
  mk_attn_fwd_args one = {.q = (const uint16_t *)(uintptr_t)16, .k = (const uint16_t *)(uintptr_t)16,
                          .v = (const uint16_t *)(uintptr_t)16, .o = (uint16_t *)(uintptr_t)16, .batch = 2,
                          .max_seqlen_q = 4, .max_seqlen_k = 4, .total_q = 4, .hq = 2, .hkv = 1, .d = 64,
                          .softmax_scale = 1.f};
  ASSERT_STATUS(mk_flash_attn_fwd(&one, NULL), MK_STATUS_INVALID_ARGUMENT); /* batch 2 */
  one.batch = 1, one.total_q = 3;
  ASSERT_STATUS(mk_flash_attn_fwd(&one, NULL), MK_STATUS_INVALID_ARGUMENT); /* total_q != max_seqlen_q */
  one.total_q = 4, one.cu_seqlens_q = (const int32_t *)(uintptr_t)16;
  ASSERT_STATUS(mk_flash_attn_fwd(&one, NULL), MK_STATUS_INVALID_ARGUMENT); /* one of the two */
  size_t wsb = 1;
  ASSERT_STATUS(mk_flash_attn_fwd_workspace_size(&bad, &wsb), MK_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(fails, 0);
  printf("ok\n");
  return 0;
}
