/* test_shard_plan.c — sharding plans: for several layouts (world, tp, ep) and every family
 * (per-expert and fused expert tensors), the slices all ranks read reassemble every tensor:
 * each value lands where it belongs, split tensors are covered exactly once by the ranks of
 * one tp (or ep) group, replicated tensors are read whole by every rank, and each rank reads
 * fewer bytes than the whole checkpoint when anything is split. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/mk_models.h"
#include "tests/mk_test.h"

static void check_layout(const mk_model_t *m, mk_layout_t L) {
  const mk_st_t *st = mk_model_checkpoint(m);
  int nt = mk_st_count(st);
  uint64_t total = 0;
  for (int i = 0; i < nt; i++) total += mk_st_get(st, i)->nbytes;
  for (int ti = 0; ti < nt; ti++) {
    const mk_st_tensor *t = mk_st_get(st, ti);
    float *full = malloc(sizeof(float) * (t->numel + 1));
    int *cover = calloc(t->numel + 1, sizeof(int));
    ASSERT_OK(mk_st_read_f32(st, t, NULL, NULL, full));
    int holders = 0;
    mk_split kind = MK_SPLIT_NONE;
    for (int r = 0; r < L.world; r++) {
      mk_shard_plan_t *p;
      ASSERT_OK(mk_shard_plan_create(m, &L, r, &p));
      if (ti == 0 && (L.tp > 1 || L.ep > 1)) ASSERT_LT(mk_shard_plan_bytes(p), total);
      for (int i = 0; i < mk_shard_plan_count(p); i++) {
        const mk_shard_slice *s = mk_shard_plan_get(p, i);
        if (s->tensor != t) continue;
        holders++;
        kind = s->split;
        int64_t n = 1, idx[MK_ST_MAX_DIMS];
        for (int d = 0; d < t->ndim; d++) n *= s->end[d] - s->begin[d], idx[d] = s->begin[d];
        float *box = malloc(sizeof(float) * (size_t)(n + 1));
        ASSERT_OK(mk_shard_plan_read_f32(p, m, i, box));
        for (int64_t k = 0; k < n; k++) {
          uint64_t lin = 0;
          for (int d = 0; d < t->ndim; d++) lin = lin * (uint64_t)t->shape[d] + (uint64_t)idx[d];
          if (box[k] != full[lin]) MK_TEST_FAIL_("%s: rank %d slice value %lld misplaced", t->name, r, (long long)k);
          int group = s->split == MK_SPLIT_EXPERTS ? L.ep : L.tp;
          if (s->split == MK_SPLIT_NONE || r < group) cover[lin]++;
          for (int d = t->ndim - 1; d >= 0; d--) {
            if (++idx[d] < s->end[d]) break;
            idx[d] = s->begin[d];
          }
        }
        free(box);
      }
      mk_shard_plan_destroy(p);
    }
    ASSERT_GT(holders, 0);
    int want = kind == MK_SPLIT_NONE ? L.world : 1;
    for (uint64_t k = 0; k < t->numel; k++)
      if (cover[k] != want) MK_TEST_FAIL_("%s (split %d): element %llu covered %d times, want %d (world %d tp %d ep %d)",
                                          t->name, (int)kind, (unsigned long long)k, cover[k], want, L.world, L.tp, L.ep);
    free(full), free(cover);
  }
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 120);
  uint64_t seed = mk_test_seed();
  char base[] = "/tmp/mk_test_plan_XXXXXX", dir[600];
  ASSERT_TRUE(mkdtemp(base) != NULL);
  static const mk_layout_t layouts[] = {{1, 1, 1}, {2, 2, 1}, {2, 1, 2}, {4, 4, 4}, {4, 2, 4}, {4, 4, 2}, {8, 2, 8}, {8, 4, 8}};
  for (int f = 0; f < MK_FAMILY_COUNT_; f++)
    for (int fused = 0; fused < 2; fused++) {
      mk_gen_params p;
      mk_gen_params_default((mk_model_family)f, &p);
      p.heads = 8, p.kv_heads = 4, p.hidden = 128, p.experts = 8, p.vocab = 250, p.seed = seed;
      p.fused_experts = fused, p.shards = 2;
      if (f == MK_FAMILY_QWEN2_MOE) p.mlp_only_layer = 0, p.shared_inter = 40; /* uneven splits */
      snprintf(dir, sizeof dir, "%s/f%d_%d", base, f, fused);
      ASSERT_OK(mk_model_gen(&p, dir));
      mk_model_t *m;
      ASSERT_OK(mk_model_open(dir, &m));
      for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) check_layout(m, layouts[l]);
      mk_layout_t bad = {8, 8, 1}; /* 4 kv heads over tp 8 */
      mk_shard_plan_t *pl;
      ASSERT_STATUS(mk_shard_plan_create(m, &bad, 0, &pl), MK_STATUS_UNSUPPORTED);
      bad = (mk_layout_t){4, 3, 1};
      ASSERT_STATUS(mk_shard_plan_create(m, &bad, 0, &pl), MK_STATUS_INVALID_ARGUMENT);
      mk_model_close(m);
      printf("%s (%s experts): ok\n", mk_model_family_name((mk_model_family)f), fused ? "fused" : "per-expert");
    }
  int first, count;
  mk_shard_experts(60, 8, 7, &first, &count);
  ASSERT_EQ(first, 52);
  ASSERT_EQ(count, 8);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  ASSERT_EQ(system(cmd), 0);
  printf("ok\n");
  return 0;
}
