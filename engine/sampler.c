/* sampler.c — next-token choice: greedy (argmax, lowest id on ties, never a NaN) at temperature 0; else
 * softmax(logits / T), cut to the smallest set of tokens whose probability reaches top_p,
 * and one draw from the counter-based generator at (seed, step): the same seed gives the
 * same tokens, whatever else the server is doing. */
#include <math.h>
#include <stdlib.h>

#include "core/rng.h"
#include "engine/mk_engine.h"

/* The lowest id of the largest logit; NaNs are never chosen (all NaN: 0). One pass over
 * blocks of 2048: each block's largest value over 16 independent lanes (no loop-carried
 * compare chain, so the compiler vectorises it), the first block holding the overall largest
 * kept; then the first id holding it, from that block on (in L1). 64 rows of 151936: 3.4 ms on
 * the development machine (docs/perf/raw/step-host/). */
static int32_t argmax(const float *v, int n) {
  enum { BLK = 2048, L = 16 };
  float best = -INFINITY;
  int bb = 0;
  for (int s = 0; s < n; s += BLK) {
    const int e = n - s < BLK ? n : s + BLK;
    float m[L];
    for (int k = 0; k < L; k++) m[k] = -INFINITY;
    int i = s;
    for (; i + L <= e; i += L)
      for (int k = 0; k < L; k++) m[k] = v[i + k] > m[k] ? v[i + k] : m[k];
    for (; i < e; i++) m[0] = v[i] > m[0] ? v[i] : m[0];
    float mx = m[0];
    for (int k = 1; k < L; k++) mx = m[k] > mx ? m[k] : mx;
    if (mx > best) best = mx, bb = s; /* earlier blocks hold only smaller values */
  }
  for (int i = bb; i < n; i++)
    if (v[i] == best) return i;
  return 0;
}

static int cmp_desc(const void *a, const void *b) {
  float x = ((const float *)a)[0], y = ((const float *)b)[0];
  if (x != y) return x < y ? 1 : -1;
  float i = ((const float *)a)[1], j = ((const float *)b)[1];
  return i < j ? -1 : i > j;
}

int32_t mk_sample(const float *logits, int vocab, const mk_sampling_t *s, uint64_t step, float *scratch) {
  if (!(s->temperature > 0.0f)) return argmax(logits, vocab);
  float mx = logits[argmax(logits, vocab)];
  double sum = 0;
  float *pr = scratch; /* pairs (prob, id) */
  for (int i = 0; i < vocab; i++) {
    float p = expf((logits[i] - mx) / s->temperature);
    pr[2 * i] = p, pr[2 * i + 1] = (float)i;
    sum += p;
  }
  /* ids up to 2^24 are exact in fp32; larger vocabularies never occur in practice */
  qsort(pr, (size_t)vocab, 2 * sizeof(float), cmp_desc);
  double top_p = s->top_p > 0.0f && s->top_p < 1.0f ? s->top_p : 1.0;
  int keep = vocab;
  double acc = 0;
  for (int i = 0; i < vocab; i++) {
    acc += pr[2 * i] / sum;
    if (acc >= top_p) {
      keep = i + 1;
      break;
    }
  }
  double kept = 0;
  for (int i = 0; i < keep; i++) kept += pr[2 * i];
  double u = (double)(mk_rng_hash(s->seed, step) >> 11) * (1.0 / 9007199254740992.0) * kept;
  for (int i = 0; i < keep; i++) {
    u -= pr[2 * i];
    if (u < 0) return (int32_t)pr[2 * i + 1];
  }
  return (int32_t)pr[2 * (keep - 1) + 1];
}
