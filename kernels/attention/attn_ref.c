/* attn_ref.c — CPU reference of attention, one output row at a time (double accumulation,
 * online softmax), for the tests and for mk-bench's sampled checks. Same masks and layouts
 * as mk_flash_attn_fwd; the pointers in the args are host pointers. */
#include <math.h>
#include <string.h>

#include "kernels/mk_kernels.h"

static inline double bf16_at(const uint16_t *p, size_t i) {
  union {
    uint32_t u;
    float f;
  } c;
  c.u = (uint32_t)p[i] << 16;
  return c.f;
}

void mk_attn_ref_row(const mk_attn_fwd_args *a, int b, int h, int i, float *o_row, float *lse) {
  const int d = a->d, hk = h / (a->hq / a->hkv);
  const int q0 = a->cu_seqlens_q[b], lq = a->cu_seqlens_q[b + 1] - q0;
  const int k0 = a->cu_seqlens_k[b], lk = a->cu_seqlens_k[b + 1] - k0;
  long long last = lk - 1; /* the last key row i sees */
  if (a->mask == MK_ATTN_MASK_CAUSAL) last = (long long)i + (lk - lq);
  if (a->mask == MK_ATTN_MASK_CAUSAL_OFFSET) last = (long long)i + a->causal_offset;
  if (last > lk - 1) last = lk - 1;
  const size_t qi = ((size_t)(q0 + i) * a->hq + h) * d;
  double acc[256], m = -INFINITY, sum = 0;
  for (int x = 0; x < d; x++) acc[x] = 0;
  for (long long j = 0; j <= last; j++) {
    const size_t kj = ((size_t)(k0 + j) * a->hkv + hk) * d;
    double s = 0;
    for (int x = 0; x < d; x++) s += bf16_at(a->q, qi + x) * bf16_at(a->k, kj + x);
    s *= a->softmax_scale;
    if (s > m) {
      const double r = exp(m - s); /* 0 when m = -inf */
      sum *= r;
      for (int x = 0; x < d; x++) acc[x] *= r;
      m = s;
    }
    const double p = exp(s - m);
    sum += p;
    for (int x = 0; x < d; x++) acc[x] += p * bf16_at(a->v, kj + x);
  }
  for (int x = 0; x < d; x++) o_row[x] = sum > 0 ? (float)(acc[x] / sum) : 0.f;
  *lse = sum > 0 ? (float)(m + log(sum)) : -INFINITY;
}
