/* test_attn_merge.c (gpu) — mk_attn_merge:
 *  1. attention over K/V split into two chunks (mk_flash_attn_fwd with an explicit causal
 *     offset per chunk), merged by LSE, equals the CPU reference over the whole sequence,
 *     causal and non-causal, into a fresh output and in place;
 *  2. the merge formula element by element on random inputs, including empty parts
 *     (lse = -inf on one side or both). */
#include <cuda_runtime_api.h>
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/mk_kernels.h"
#include "tests/kernels/attn_ref.h"
#include "tests/mk_test.h"

/* One varlen batch; keys [0, split) form chunk 1 and [split, lk) chunk 2 of every sequence. */
static int chunked(const char *name, int d, int hq, int hkv, int causal, int batch, const int *len_q,
                   const int *len_k, int split, uint64_t seed) {
  int32_t cu_q[5] = {0}, cu_k[5] = {0}, cu_k1[5] = {0}, cu_k2[5] = {0};
  int max_q = 0, max_k = 0;
  for (int b = 0; b < batch; b++) {
    cu_q[b + 1] = cu_q[b] + len_q[b];
    cu_k[b + 1] = cu_k[b] + len_k[b];
    cu_k1[b + 1] = cu_k1[b] + split;
    cu_k2[b + 1] = cu_k2[b] + len_k[b] - split;
    if (len_q[b] > max_q) max_q = len_q[b];
    if (len_k[b] > max_k) max_k = len_k[b];
  }
  const int total_q = cu_q[batch], total_k = cu_k[batch];
  const size_t row = (size_t)hkv * d, nq = (size_t)total_q * hq * d, nk = (size_t)total_k * row;
  const size_t nl = (size_t)hq * total_q;
  uint16_t *hq_ = malloc(nq * 2), *hk = malloc(nk * 2), *hv = malloc(nk * 2), *ho = malloc(nq * 2);
  uint16_t *hk1 = malloc(nk * 2), *hv1 = malloc(nk * 2), *hk2 = malloc(nk * 2), *hv2 = malloc(nk * 2);
  float *oref = malloc(nq * 4), *lref = malloc(nl * 4), *hl = malloc(nl * 4);
  ASSERT_TRUE(hq_ && hk && hv && ho && hk1 && hv1 && hk2 && hv2 && oref && lref && hl);
  attn_fill_bf16(hq_, NULL, nq, seed, -2.f, 2.f);
  attn_fill_bf16(hk, NULL, nk, seed + 1, -2.f, 2.f);
  attn_fill_bf16(hv, NULL, nk, seed + 2, -1.f, 1.f);
  for (int b = 0; b < batch; b++) {
    memcpy(hk1 + cu_k1[b] * row, hk + cu_k[b] * row, (size_t)split * row * 2);
    memcpy(hv1 + cu_k1[b] * row, hv + cu_k[b] * row, (size_t)split * row * 2);
    memcpy(hk2 + cu_k2[b] * row, hk + (cu_k[b] + split) * row, (size_t)(len_k[b] - split) * row * 2);
    memcpy(hv2 + cu_k2[b] * row, hv + (cu_k[b] + split) * row, (size_t)(len_k[b] - split) * row * 2);
  }
  /* Global positions: query i of a sequence sits at i + (lk - lq) under the bottom-right
   * causal mask; all sequences here have lk - lq equal, so one offset serves the batch. */
  const int shift = len_k[0] - len_q[0];
  const float scale = 1.0f / sqrtf((float)d);
  mk_attn_fwd_args ha; /* the whole sequences, host pointers */
  memset(&ha, 0, sizeof ha);
  ha.q = hq_, ha.k = hk, ha.v = hv, ha.cu_seqlens_q = cu_q, ha.cu_seqlens_k = cu_k, ha.batch = batch;
  ha.hq = hq, ha.hkv = hkv, ha.d = d, ha.softmax_scale = scale;
  ha.mask = causal ? MK_ATTN_MASK_CAUSAL : MK_ATTN_MASK_NONE;
  attn_ref(&ha, oref, lref);

  uint16_t *dq = attn_dev(hq_, nq * 2), *dk1 = attn_dev(hk1, (size_t)cu_k1[batch] * row * 2);
  uint16_t *dv1 = attn_dev(hv1, (size_t)cu_k1[batch] * row * 2), *dk2 = attn_dev(hk2, (size_t)cu_k2[batch] * row * 2);
  uint16_t *dv2 = attn_dev(hv2, (size_t)cu_k2[batch] * row * 2);
  int32_t *dcq = attn_dev(cu_q, sizeof cu_q), *dck1 = attn_dev(cu_k1, sizeof cu_k1), *dck2 = attn_dev(cu_k2, sizeof cu_k2);
  uint16_t *do1 = attn_dev(NULL, nq * 2), *do2 = attn_dev(NULL, nq * 2), *dout = attn_dev(NULL, nq * 2);
  float *dl1 = attn_dev(NULL, nl * 4), *dl2 = attn_dev(NULL, nl * 4), *dl = attn_dev(NULL, nl * 4);

  mk_attn_fwd_args a;
  memset(&a, 0, sizeof a);
  a.q = dq;
  a.cu_seqlens_q = dcq;
  a.batch = batch;
  a.max_seqlen_q = max_q;
  a.max_seqlen_k = max_k;
  a.total_q = total_q;
  a.hq = hq;
  a.hkv = hkv;
  a.d = d;
  a.softmax_scale = scale;
  a.mask = causal ? MK_ATTN_MASK_CAUSAL_OFFSET : MK_ATTN_MASK_NONE;
  a.k = dk1, a.v = dv1, a.cu_seqlens_k = dck1, a.o = do1, a.lse = dl1, a.causal_offset = shift;
  ASSERT_OK(mk_flash_attn_fwd(&a, NULL));
  a.k = dk2, a.v = dv2, a.cu_seqlens_k = dck2, a.o = do2, a.lse = dl2, a.causal_offset = shift - split;
  ASSERT_OK(mk_flash_attn_fwd(&a, NULL));
  ASSERT_OK(mk_attn_merge(do1, dl1, do2, dl2, dout, dl, total_q, hq, d, NULL));
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(ho, dout, nq * 2, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(hl, dl, nl * 4, cudaMemcpyDeviceToHost));
  char what[160];
  snprintf(what, sizeof what, "%s: two chunks merged", name);
  int rc = attn_check(what, ho, oref, nq, hl, lref, nl, 1e-2, 1e-3);
  /* In place: (o1, lse1) <- merge((o1, lse1), (o2, lse2)). */
  ASSERT_OK(mk_attn_merge(do1, dl1, do2, dl2, do1, dl1, total_q, hq, d, NULL));
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(ho, do1, nq * 2, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(hl, dl1, nl * 4, cudaMemcpyDeviceToHost));
  snprintf(what, sizeof what, "%s: merged in place", name);
  rc |= attn_check(what, ho, oref, nq, hl, lref, nl, 1e-2, 1e-3);

  cudaFree(dq), cudaFree(dk1), cudaFree(dv1), cudaFree(dk2), cudaFree(dv2), cudaFree(dcq), cudaFree(dck1);
  cudaFree(dck2), cudaFree(do1), cudaFree(do2), cudaFree(dout), cudaFree(dl1), cudaFree(dl2), cudaFree(dl);
  free(hq_), free(hk), free(hv), free(ho), free(hk1), free(hv1), free(hk2), free(hv2);
  free(oref), free(lref), free(hl);
  return rc;
}

/* The formula itself on random (o, lse) pairs; every 5th lse is -inf on one side, every
 * 7th on the other (so some rows have both parts empty). */
static int formula(uint64_t seed) {
  const int n = 333, h = 3, d = 72;
  const size_t no = (size_t)n * h * d, nl = (size_t)n * h;
  uint16_t *o1 = malloc(no * 2), *o2 = malloc(no * 2), *ho = malloc(no * 2);
  float *f1 = malloc(no * 4), *f2 = malloc(no * 4), *l1 = malloc(nl * 4), *l2 = malloc(nl * 4);
  float *oref = malloc(no * 4), *lref = malloc(nl * 4), *hl = malloc(nl * 4);
  ASSERT_TRUE(o1 && o2 && ho && f1 && f2 && l1 && l2 && oref && lref && hl);
  attn_fill_bf16(o1, f1, no, seed, -1.f, 1.f);
  attn_fill_bf16(o2, f2, no, seed + 1, -1.f, 1.f);
  for (size_t i = 0; i < nl; i++) {
    l1[i] = i % 5 == 0 ? -INFINITY : mk_rng_uniform(seed + 2, i, -20.f, 40.f);
    l2[i] = i % 7 == 0 ? -INFINITY : mk_rng_uniform(seed + 3, i, -20.f, 40.f);
  }
  for (int r = 0; r < n; r++)
    for (int hh = 0; hh < h; hh++) {
      const size_t li = (size_t)hh * n + r;
      const double a = l1[li], b = l2[li], m = a > b ? a : b;
      double w1 = 0, w2 = 0;
      lref[li] = -INFINITY;
      if (!isinf(m)) {
        const double e1 = exp(a - m), e2 = exp(b - m);
        w1 = e1 / (e1 + e2), w2 = e2 / (e1 + e2);
        lref[li] = (float)(m + log(e1 + e2));
      }
      for (int x = 0; x < d; x++) {
        const size_t oi = ((size_t)r * h + hh) * d + x;
        oref[oi] = (float)(w1 * f1[oi] + w2 * f2[oi]);
      }
    }
  uint16_t *d1 = attn_dev(o1, no * 2), *d2 = attn_dev(o2, no * 2), *dout = attn_dev(NULL, no * 2);
  float *dl1 = attn_dev(l1, nl * 4), *dl2 = attn_dev(l2, nl * 4), *dl = attn_dev(NULL, nl * 4);
  ASSERT_OK(mk_attn_merge(d1, dl1, d2, dl2, dout, dl, n, h, d, NULL));
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(ho, dout, no * 2, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(hl, dl, nl * 4, cudaMemcpyDeviceToHost));
  int rc = attn_check("merge formula, random parts, empty parts", ho, oref, no, hl, lref, nl, 1e-2, 1e-4);
  ASSERT_STATUS(mk_attn_merge(d1, dl1, d2, dl2, dout, dl, n, h, 12, NULL), MK_STATUS_INVALID_ARGUMENT);
  cudaFree(d1), cudaFree(d2), cudaFree(dout), cudaFree(dl1), cudaFree(dl2), cudaFree(dl);
  free(o1), free(o2), free(ho), free(f1), free(f2), free(l1), free(l2), free(oref), free(lref), free(hl);
  return rc;
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 300);
  mk_test_require_gpus(1);
  const uint64_t seed = mk_test_seed();
  int fails = 0;
  const int q1[] = {777, 300}, k1[] = {777, 300};
  fails += chunked("d128 gqa4 causal, lengths 777 300, split at 150", 128, 8, 2, 1, 2, q1, k1, 150, seed);
  const int q2[] = {100, 7, 1}, k2[] = {1000, 907, 901};
  fails += chunked("d64 gqa1 causal, seqlen_q < seqlen_k, split at 1", 64, 4, 4, 1, 3, q2, k2, 1, seed + 3);
  const int q3[] = {100, 33}, k3[] = {1000, 64};
  fails += chunked("d64 gqa8 non-causal, split at 40", 64, 8, 1, 0, 2, q3, k3, 40, seed + 6);
  fails += formula(seed + 9);
  ASSERT_EQ(fails, 0);
  printf("ok\n");
  return 0;
}
