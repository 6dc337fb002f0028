/* plan_cache.h — which slot of a fixed-size table holds a GEMM shape's plan (cublaslt_gemm.c), least
 * recently used out first. Host only, no CUDA: test_plan_cache checks it on the CPU. */
#ifndef MK_KERNELS_BASELINE_PLAN_CACHE_H
#define MK_KERNELS_BASELINE_PLAN_CACHE_H

#include <stdint.h>

typedef struct mk_plan_key {
  int64_t m, n, k;
  int layout;
} mk_plan_key;

/* cap slots, filled in order ([0, n) so far); used[i] = 0: empty, else the tick of slot i's last use. */
typedef struct mk_plan_cache {
  int cap, n, last; /* last: the slot returned last (checked first) */
  uint64_t tick;
  mk_plan_key *keys;
  uint64_t *used;
} mk_plan_cache;

static inline int mk_plan_key_eq(const mk_plan_key *a, const mk_plan_key *b) {
  return a->m == b->m && a->n == b->n && a->k == b->k && a->layout == b->layout;
}

/* The slot of key: *hit = 1 where it is there; else *hit = 0 and the slot to fill (an empty one, or
 * the least recently used, whose plan the caller drops), its key set. Either way marked used now. */
static inline int mk_plan_cache_slot(mk_plan_cache *c, const mk_plan_key *key, int *hit) {
  int s = -1;
  if (c->used[c->last] && mk_plan_key_eq(&c->keys[c->last], key)) s = c->last;
  for (int i = 0; s < 0 && i < c->n; i++)
    if (c->used[i] && mk_plan_key_eq(&c->keys[i], key)) s = i;
  *hit = s >= 0;
  if (s < 0 && c->n < c->cap) s = c->n++; /* a fresh slot */
  else if (s < 0) {                       /* full: an emptied slot, else the least recently used */
    s = 0;
    for (int i = 0; i < c->cap; i++) {
      if (!c->used[i]) {
        s = i;
        break;
      }
      if (c->used[i] < c->used[s]) s = i;
    }
  }
  if (!*hit) c->keys[s] = *key;
  c->used[s] = ++c->tick;
  c->last = s;
  return s;
}

/* The largest M of M's bucket, about b buckets per doubling of M (MK_LT_M_BUCKETS): M itself where M <= b
 * or b <= 0, else M rounded up to a multiple of w, the largest power of two <= 2^floor(log2 M) / b, so at
 * most M / b above M. Every M of a bucket maps to its top, and the top to itself (a power-of-two width
 * divides the next doubling's first M). */
static inline int64_t mk_plan_bucket_top(int64_t M, int64_t b) {
  if (b <= 0 || M <= b) return M;
  int64_t p = 1, w = 1;
  while (p <= M / 2) p *= 2; /* 2^floor(log2 M) */
  while (w * 2 * b <= p) w *= 2;
  return (M + w - 1) / w * w;
}

#endif /* MK_KERNELS_BASELINE_PLAN_CACHE_H */
