/* attn_ref.c — CPU attention reference and checks for the attention tests (see attn_ref.h). */
#include "tests/kernels/attn_ref.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/rng.h"
#include "tests/mk_test.h"

typedef struct ref_job {
  const float *q, *k, *v;
  const int32_t *cu_q, *cu_k;
  int batch, hq, hkv, d, mask, causal_offset;
  float scale;
  float *o, *lse;
  int next; /* next (sequence, head) item, taken under lock */
  pthread_mutex_t lock;
} ref_job;

static void ref_item(ref_job *j, int b, int h, double *s, double *acc) {
  const int d = j->d, hk = h / (j->hq / j->hkv);
  const int q0 = j->cu_q[b], lq = j->cu_q[b + 1] - q0, k0 = j->cu_k[b], lk = j->cu_k[b + 1] - k0;
  const long long total_q = j->cu_q[j->batch];
  for (int i = 0; i < lq; i++) {
    long long last = lk - 1; /* last key row i sees */
    if (j->mask == 1) last = (long long)i + (lk - lq);
    if (j->mask == 2) last = (long long)i + j->causal_offset;
    if (last > lk - 1) last = lk - 1;
    const float *qi = j->q + ((size_t)(q0 + i) * j->hq + h) * d;
    float *oi = j->o + ((size_t)(q0 + i) * j->hq + h) * d;
    double mx = -INFINITY;
    for (long long kk = 0; kk <= last; kk++) {
      const float *kr = j->k + ((size_t)(k0 + kk) * j->hkv + hk) * d;
      double dot = 0;
      for (int x = 0; x < d; x++) dot += (double)qi[x] * kr[x];
      s[kk] = dot * j->scale;
      if (s[kk] > mx) mx = s[kk];
    }
    for (int x = 0; x < d; x++) acc[x] = 0;
    double sum = 0;
    for (long long kk = 0; kk <= last; kk++) {
      const double p = exp(s[kk] - mx);
      const float *vr = j->v + ((size_t)(k0 + kk) * j->hkv + hk) * d;
      sum += p;
      for (int x = 0; x < d; x++) acc[x] += p * vr[x];
    }
    for (int x = 0; x < d; x++) oi[x] = sum > 0 ? (float)(acc[x] / sum) : 0.f;
    j->lse[(size_t)h * total_q + q0 + i] = sum > 0 ? (float)(mx + log(sum)) : -INFINITY;
  }
}

static void *ref_worker(void *arg) {
  ref_job *j = arg;
  int max_lk = 1;
  for (int b = 0; b < j->batch; b++)
    if (j->cu_k[b + 1] - j->cu_k[b] > max_lk) max_lk = j->cu_k[b + 1] - j->cu_k[b];
  double *s = malloc(sizeof(double) * (size_t)max_lk), *acc = malloc(sizeof(double) * (size_t)j->d);
  if (!s || !acc) MK_TEST_FAIL_("attn_ref: out of memory");
  for (;;) {
    pthread_mutex_lock(&j->lock);
    int it = j->next++;
    pthread_mutex_unlock(&j->lock);
    if (it >= j->batch * j->hq) break;
    ref_item(j, it / j->hq, it % j->hq, s, acc);
  }
  free(s);
  free(acc);
  return NULL;
}

void attn_ref(const float *q, const float *k, const float *v, const int32_t *cu_q, const int32_t *cu_k, int batch,
              int hq, int hkv, int d, int mask, int causal_offset, float scale, float *o, float *lse) {
  ref_job j = {q, k, v, cu_q, cu_k, batch, hq, hkv, d, mask, causal_offset, scale, o, lse, 0,
               PTHREAD_MUTEX_INITIALIZER};
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int nt = ncpu < 1 ? 1 : ncpu > 32 ? 32 : (int)ncpu;
  pthread_t th[32];
  for (int i = 0; i < nt; i++)
    if (pthread_create(&th[i], NULL, ref_worker, &j)) MK_TEST_FAIL_("attn_ref: pthread_create failed");
  for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
}

void attn_fill_bf16(uint16_t *h, float *f, size_t n, uint64_t seed, float lo, float hi) {
  for (size_t i = 0; i < n; i++) {
    h[i] = mk_rng_bf16_bits(mk_rng_uniform(seed, i, lo, hi - lo));
    f[i] = mk_bf16_to_float(h[i]);
  }
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
  return ok ? 0 : 1;
}
