/* test_plan_cache.c (unit, no GPU) — the cuBLASLt baseline's table of GEMM plans (plan_cache.h): a
 * shape is found where it was put, a full table gives up its least recently used shape, and on fresh
 * random sequences of shapes (fewer, as many and more distinct than slots) every hit and miss, and
 * every evicted slot, agrees with a reference LRU list kept here; the buckets of M (mk_plan_bucket_top) on
 * every M up to 70000 at several bucket counts. */
#include <string.h>

#include "core/rng.h"
#include "kernels/baseline/plan_cache.h"
#include "tests/mk_test.h"

enum { CAP = 16 };

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 30);
  const uint64_t seed = mk_test_seed();
  mk_plan_key keys[CAP];
  uint64_t used[CAP];
  for (int distinct = 4; distinct <= 64; distinct *= 2) {
    memset(keys, 0, sizeof keys), memset(used, 0, sizeof used);
    mk_plan_cache c = {.cap = CAP, .keys = keys, .used = used};
    int ref_slot_of[64]; /* reference: key id -> slot or -1; slot -> key id and last use */
    int ref_key_in[CAP];
    uint64_t ref_last[CAP] = {0};
    for (int i = 0; i < 64; i++) ref_slot_of[i] = -1;
    for (int i = 0; i < CAP; i++) ref_key_in[i] = -1;
    int filled = 0, hits = 0;
    for (int it = 0; it < 5000; it++) {
      const int id = (int)(mk_rng_hash(seed, (uint64_t)distinct * 100000 + it) % (uint64_t)distinct);
      const mk_plan_key k = {1 + id % 7, 8 * (1 + id / 7), 64, id & 1}; /* distinct ids, distinct keys */
      int hit = -1;
      const int s = mk_plan_cache_slot(&c, &k, &hit);
      ASSERT_TRUE(s >= 0 && s < CAP);
      ASSERT_TRUE(mk_plan_key_eq(&keys[s], &k));
      int want = ref_slot_of[id];
      ASSERT_EQ(hit, want >= 0);
      if (want < 0) { /* the reference's choice: the next fresh slot, else the least recently used */
        if (filled < CAP) want = filled++;
        else
          for (int i = 0; i < CAP; i++)
            if (want < 0 || ref_last[i] < ref_last[want]) want = i;
        if (ref_key_in[want] >= 0) ref_slot_of[ref_key_in[want]] = -1;
        ref_key_in[want] = id, ref_slot_of[id] = want;
      }
      ASSERT_EQ(s, want);
      ref_last[s] = (uint64_t)it + 1;
      hits += hit;
    }
    printf("%d distinct shapes in %d slots: %d hits of 5000\n", distinct, CAP, hits);
    if (distinct <= CAP) ASSERT_EQ(hits, 5000 - distinct); /* each shape missed once */
  }
  /* buckets of M: top >= M, at most max(1, M / b) above it (and exact up to b rows); the top is its own
     top; tops do not decrease with M, and a bucket is a run of consecutive M */
  static const int64_t nb[] = {0, 1, 4, 16, 100};
  for (size_t i = 0; i < sizeof nb / sizeof nb[0]; i++) {
    const int64_t b = nb[i];
    int64_t prev = 0, buckets = 0;
    for (int64_t M = 1; M <= 70000; M++) {
      const int64_t t = mk_plan_bucket_top(M, b);
      ASSERT_TRUE(t >= M);
      if (b <= 0 || M <= b) ASSERT_EQ(t, M);
      else ASSERT_TRUE(t - M <= (M / b > 1 ? M / b : 1));
      ASSERT_EQ(mk_plan_bucket_top(t, b), t);
      ASSERT_TRUE(t >= prev);
      if (t != prev) buckets++;
      ASSERT_TRUE(prev < M || t == prev); /* M beyond the last top starts a new bucket */
      prev = t;
    }
    printf("%lld buckets a doubling: %lld buckets for M <= 70000\n", (long long)b, (long long)buckets);
    if (b >= 4) ASSERT_TRUE(buckets <= b * 17 + b); /* ~b per doubling over 17 doublings */
  }
  printf("ok\n");
  return 0;
}
