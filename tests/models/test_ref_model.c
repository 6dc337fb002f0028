/* test_ref_model.c — the fp32 reference model on mk_model_gen models of every family:
 *  - mk-gen -> load -> generate is deterministic (two runs, two instances: identical bits);
 *  - sharded (3 files + index) and unsharded checkpoints, and fused 3-D vs per-expert expert
 *    tensors, give identical logits;
 *  - decode with the KV cache equals re-running the whole prefix (rel. error <= 1e-5);
 *  - mk_ref_route_margin is in [0, 1] at every position run, NAN past them;
 *  - mk_ref_moe_block equals a direct double-precision evaluation of its definition. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "models/mk_models.h"
#include "tests/mk_test.h"

enum { NP = 5, NEW = 6, TOT = NP + NEW - 1 };

float *fill(float *p, int n, float sc, uint64_t seed, uint64_t *idx);

static float *run(const char *dir, int32_t *ids) {
  mk_model_t *m;
  mk_ref_t *r;
  ASSERT_OK(mk_model_open(dir, &m));
  int V = mk_model_config(m)->vocab;
  ASSERT_OK(mk_ref_create(m, 64, &r));
  int32_t prompt[NP] = {3, 17, 1, 200, 42};
  float *lg = malloc(sizeof(float) * TOT * V);
  ASSERT_OK(mk_ref_generate(r, prompt, NP, NEW, ids, lg));
  /* decode == prefix: re-run prompt + generated[0..i) from scratch, compare the last row */
  int32_t seq[TOT];
  memcpy(seq, prompt, sizeof prompt);
  memcpy(seq + NP, ids, sizeof(int32_t) * (NEW - 1));
  float *full = malloc(sizeof(float) * TOT * V);
  for (int len = NP + 1; len <= TOT; len++) {
    mk_ref_reset(r);
    ASSERT_OK(mk_ref_forward(r, seq, len, full));
    double e = mk_test_rel_err_f32(lg + (size_t)(len - 1) * V, full + (size_t)(len - 1) * V, (size_t)V);
    if (!(e <= 1e-5)) MK_TEST_FAIL_("%s: decode step at %d differs from the full prefix: rel err %g", dir, len, e);
  }
  ASSERT_EQ(mk_ref_position(r), TOT);
  /* routing margins: in [0, 1] for every position run (every family here has MoE layers),
   * NAN past the end; a decode step's margin equals the full-prefix run's */
  for (int p = 0; p < TOT; p++) {
    const float mg = mk_ref_route_margin(r, p);
    if (!(mg >= 0.f && mg <= 1.f)) MK_TEST_FAIL_("%s: routing margin of position %d is %g", dir, p, mg);
  }
  ASSERT_TRUE(isnan(mk_ref_route_margin(r, TOT)));
  int32_t bad = V;
  ASSERT_STATUS(mk_ref_forward(r, &bad, 1, NULL), MK_STATUS_INVALID_ARGUMENT);
  free(full);
  mk_ref_destroy(r);
  mk_ref_destroy(NULL);
  mk_model_close(m);
  return lg;
}

static void same_bits(const char *what, const float *a, const float *b, size_t n, const int32_t *ia, const int32_t *ib) {
  if (memcmp(a, b, n * sizeof(float)) || memcmp(ia, ib, NEW * sizeof(int32_t)))
    MK_TEST_FAIL_("%s: logits or tokens differ (rel err %g)", what, mk_test_rel_err_f32(a, b, n));
}

static void moe_block_check(uint64_t seed) {
  enum { H = 24, E = 5, K = 2, I = 12, S = 8, N = 7 };
  float *buf = malloc(sizeof(float) * 100000), *p = buf;
  uint64_t idx = 0;
#define RND(n, sc) (p += (n), fill(p - (n), (n), (sc), seed, &idx))
  float *x = RND(N * H, 1.0f), *router = RND(E * H, 0.5f), *sg = RND(S * H, 0.3f), *su = RND(S * H, 0.3f);
  float *sd = RND(H * S, 0.3f), *sgate = RND(H, 0.3f);
  const float *g[E], *u[E], *d[E];
  for (int e = 0; e < E; e++) g[e] = RND(I * H, 0.3f), u[e] = RND(I * H, 0.3f), d[e] = RND(H * I, 0.3f);
  for (int norm = 0; norm < 2; norm++)
    for (int shared = 0; shared < 2; shared++) {
      mk_ref_moe_weights w = {.hidden = H, .n_experts = E, .top_k = K, .inter = I, .norm_topk_prob = norm,
                              .router = router, .gate = g, .up = u, .down = d, .shared_inter = shared ? S : 0,
                              .shared_gate = sg, .shared_up = su, .shared_down = sd, .shared_expert_gate = sgate};
      float out[N * H], ref[N * H];
      int32_t ids[N * K];
      ASSERT_OK(mk_ref_moe_block(&w, x, N, out, ids, NULL));
      for (int t = 0; t < N; t++) {
        const float *xt = x + t * H;
        double pr[E], mx = -1e300, sum = 0;
        for (int e = 0; e < E; e++) {
          pr[e] = 0;
          for (int h = 0; h < H; h++) pr[e] += (double)router[e * H + h] * xt[h];
          mx = fmax(mx, pr[e]);
        }
        for (int e = 0; e < E; e++) sum += pr[e] = exp(pr[e] - mx);
        int top[K];
        double tw = 0;
        for (int k = 0; k < K; k++) {
          top[k] = -1;
          for (int e = 0; e < E; e++)
            if ((k == 0 || e != top[0]) && (top[k] < 0 || pr[e] > pr[top[k]])) top[k] = e;
          tw += pr[top[k]] / sum;
          ASSERT_EQ(ids[t * K + k], top[k]);
        }
        for (int h = 0; h < H; h++) ref[t * H + h] = 0;
        for (int k = 0; k <= K; k++) {
          int shared_row = k == K;
          if (shared_row && !shared) break;
          int e = shared_row ? 0 : top[k], In = shared_row ? S : I;
          const float *G = shared_row ? sg : g[e], *U = shared_row ? su : u[e], *D = shared_row ? sd : d[e];
          double wk;
          if (shared_row) {
            double z = 0;
            for (int h = 0; h < H; h++) z += (double)sgate[h] * xt[h];
            wk = 1 / (1 + exp(-z));
          } else {
            wk = pr[e] / sum / (norm ? tw : 1);
          }
          double act[16];
          for (int i = 0; i < In; i++) {
            double a = 0, b = 0;
            for (int h = 0; h < H; h++) a += (double)G[i * H + h] * xt[h], b += (double)U[i * H + h] * xt[h];
            act[i] = a / (1 + exp(-a)) * b;
          }
          for (int h = 0; h < H; h++) {
            double y = 0;
            for (int i = 0; i < In; i++) y += (double)D[h * In + i] * act[i];
            ref[t * H + h] += (float)(wk * y);
          }
        }
      }
      double e = mk_test_rel_err_f32(out, ref, N * H);
      if (!(e <= 1e-5)) MK_TEST_FAIL_("moe block (norm %d, shared %d): rel err %g", norm, shared, e);
    }
  free(buf);
}

float *fill(float *p, int n, float sc, uint64_t seed, uint64_t *idx) {
  for (int i = 0; i < n; i++) p[i] = mk_rng_uniform(seed, (*idx)++, -sc, 2 * sc);
  return p;
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 120);
  uint64_t seed = mk_test_seed();
  moe_block_check(seed);
  char base[] = "/tmp/mk_test_ref_XXXXXX", dir[600];
  ASSERT_TRUE(mkdtemp(base) != NULL);
  for (int f = 0; f < MK_FAMILY_COUNT_; f++) {
    mk_gen_params p;
    mk_gen_params_default((mk_model_family)f, &p);
    p.seed = seed + (uint64_t)f;
    p.layers = 3;
    if (f == MK_FAMILY_QWEN2_MOE) p.mlp_only_layer = 1;
    if (f == MK_FAMILY_OLMOE) p.tie_embeddings = 1;
    int V = p.vocab;
    snprintf(dir, sizeof dir, "%s/one", base);
    ASSERT_OK(mk_model_gen(&p, dir));
    int32_t i1[NEW], i2[NEW], i3[NEW], i4[NEW];
    float *a = run(dir, i1), *b = run(dir, i2);
    same_bits("two runs", a, b, (size_t)TOT * V, i1, i2);
    p.shards = 3;
    snprintf(dir, sizeof dir, "%s/three", base);
    ASSERT_OK(mk_model_gen(&p, dir));
    float *c = run(dir, i3);
    same_bits("sharded vs unsharded", a, c, (size_t)TOT * V, i1, i3);
    p.shards = 1, p.fused_experts = 1;
    snprintf(dir, sizeof dir, "%s/fused", base);
    ASSERT_OK(mk_model_gen(&p, dir));
    float *d = run(dir, i4);
    same_bits("fused vs per-expert", a, d, (size_t)TOT * V, i1, i4);
    int finite = 1;
    for (size_t i = 0; i < (size_t)TOT * V; i++) finite &= isfinite(a[i]);
    ASSERT_TRUE(finite);
    printf("%s: ok, tokens %d %d %d %d %d %d\n", mk_model_family_name((mk_model_family)f), i1[0], i1[1], i1[2], i1[3],
           i1[4], i1[5]);
    free(a), free(b), free(c), free(d);
  }
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  ASSERT_EQ(system(cmd), 0);
  printf("ok\n");
  return 0;
}
