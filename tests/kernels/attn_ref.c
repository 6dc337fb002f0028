/* attn_ref.c — CPU attention reference and checks for the attention tests (see attn_ref.h). */
#include "tests/kernels/attn_ref.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/rng.h"
#include "tests/mk_test.h"

typedef struct ref_job {
  const mk_attn_fwd_args *a;
  float *o, *lse;
  int next; /* next (sequence, head) item, taken under the lock */
  pthread_mutex_t lock;
} ref_job;

static void *ref_worker(void *arg) {
  ref_job *j = arg;
  const mk_attn_fwd_args *a = j->a;
  const int total_q = a->cu_seqlens_q[a->batch];
  for (;;) {
    pthread_mutex_lock(&j->lock);
    const int it = j->next++;
    pthread_mutex_unlock(&j->lock);
    if (it >= a->batch * a->hq) break;
    const int b = it / a->hq, h = it % a->hq, q0 = a->cu_seqlens_q[b];
    for (int i = 0; i < a->cu_seqlens_q[b + 1] - q0; i++)
      mk_attn_ref_row(a, b, h, i, j->o + ((size_t)(q0 + i) * a->hq + h) * a->d,
                      j->lse + (size_t)h * total_q + q0 + i);
  }
  return NULL;
}

void attn_ref(const mk_attn_fwd_args *a, float *o, float *lse) {
  ref_job j = {a, o, lse, 0, PTHREAD_MUTEX_INITIALIZER};
  const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  const int nt = ncpu < 1 ? 1 : ncpu > 32 ? 32 : (int)ncpu;
  pthread_t th[32];
  for (int i = 0; i < nt; i++)
    if (pthread_create(&th[i], NULL, ref_worker, &j)) MK_TEST_FAIL_("attn_ref: pthread_create failed");
  for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
}

void attn_fill_bf16(uint16_t *h, float *f, size_t n, uint64_t seed, float lo, float hi) {
  for (size_t i = 0; i < n; i++) {
    h[i] = mk_rng_bf16_bits(mk_rng_uniform(seed, i, lo, hi - lo));
    if (f) f[i] = mk_bf16_to_float(h[i]);
  }
}

void *attn_dev(const void *h, size_t bytes) {
  void *d = NULL;
  cudaError_t e = cudaMalloc(&d, bytes ? bytes : 16);
  if (e == cudaSuccess) e = h ? cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice) : cudaMemset(d, 0xff, bytes);
  /* Both run on the legacy stream and may still be in flight on return (the memset always, the copy's last DMA
   * from pageable memory): a later copy or kernel on a non-blocking stream is not ordered after them. */
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e != cudaSuccess) MK_TEST_FAIL_("attn_dev(%zu bytes): %s", bytes, cudaGetErrorString(e));
  return d;
}

int attn_check(const char *what, const uint16_t *o, const float *o_ref, size_t n_o, const float *lse,
               const float *lse_ref, size_t n_lse, double o_tol, double lse_tol) {
  const double err = mk_test_rel_err_bf16(o, o_ref, n_o);
  double lse_err = 0;
  size_t lse_bad = 0;
  for (size_t i = 0; lse && i < n_lse; i++) {
    if (isinf(lse_ref[i])) {
      lse_bad += !(isinf(lse[i]) && lse[i] < 0);
      continue;
    }
    const double e = fabs((double)lse[i] - lse_ref[i]);
    if (!(e <= lse_err)) lse_err = isnan(e) ? INFINITY : e; /* NaN never passes */
  }
  const int ok = err <= o_tol && lse_err <= lse_tol && lse_bad == 0;
  printf("%-58s o rel err %.3e (<= %.0e)  lse max abs err %.3e (<= %.0e), -inf mismatches %zu  %s\n", what, err,
         o_tol, lse_err, lse_tol, lse_bad, ok ? "ok" : "FAIL");
  if (!ok) { /* where: the non-finite outputs (the poison left, or NaN), the first of them */
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n_o; i++)
      if ((o[i] & 0x7f80) == 0x7f80 && !bad++) first = i;
    printf("  %zu of %zu O elements not finite%s", bad, n_o, bad ? "" : "\n");
    if (bad) printf(" (the first at element %zu)\n", first);
  }
  return ok ? 0 : 1;
}
