/* test_moe_router.c (gpu) — mk_moe_route against a CPU top-k: softmax over the experts, the
 * top_k largest (ties: lower id), with and without renormalisation, the shared-expert sigmoid
 * gate, per-expert counts; odd token counts, E not a multiple of 32, top_k 1..8. */
#include <cuda_runtime_api.h>
#include <math.h>

#include "core/rng.h"
#include "kernels/mk_kernels.h"
#include "tests/mk_test.h"

static void cpu_route(const float *l, int E, int K, int renorm, int32_t *ids, float *w) {
  float mx = -INFINITY;
  for (int e = 0; e < E; e++) mx = l[e] > mx ? l[e] : mx;
  double sum = 0;
  for (int e = 0; e < E; e++) sum += exp((double)l[e] - mx);
  double tot = 0;
  for (int k = 0; k < K; k++) {
    int best = -1;
    for (int e = 0; e < E; e++) {
      int taken = 0;
      for (int j = 0; j < k; j++) taken |= ids[j] == e;
      if (!taken && (best < 0 || l[e] > l[best])) best = e;
    }
    ids[k] = best;
    w[k] = (float)(exp((double)l[best] - mx) / sum);
    tot += w[k];
  }
  if (renorm)
    for (int k = 0; k < K; k++) w[k] = (float)(w[k] / tot);
}

/* mk_moe_norm_route gives the bits of mk_rmsnorm_f32 + mk_linear_f32out (+ the shared gate's) + mk_moe_route on
 * fresh random rows: hb, ids, weights and the shared gate, every element compared exactly. */
static void norm_route_check(uint64_t seed) {
  static const int cases[][5] = {/* T, H, E, top_k, seg */
                                 {37, 4096, 8, 2, 0},
                                 {64, 2048, 128, 8, 1},
                                 {5, 200, 60, 4, 1},
                                 {9, 1024, 256, 8, 0}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const int T = cases[c][0], H = cases[c][1], E = cases[c][2], K = cases[c][3], seg = cases[c][4];
    const size_t nx = (size_t)T * H;
    float *x = malloc(sizeof(float) * nx), *nw = malloc(sizeof(float) * H);
    uint16_t *rw = malloc(2 * ((size_t)E + 1) * H);
    ASSERT_TRUE(x && nw && rw);
    for (size_t i = 0; i < nx; i++) x[i] = mk_rng_uniform(seed + 500 + c, i, -2.0f, 4.0f);
    for (int i = 0; i < H; i++) nw[i] = mk_rng_uniform(seed + 600 + c, (uint64_t)i, 0.5f, 1.0f);
    for (size_t i = 0; i < ((size_t)E + 1) * H; i++)
      rw[i] = mk_rng_bf16_bits(mk_rng_uniform(seed + 700 + c, i, -0.1f, 0.2f));
    float *dx, *dn, *dhf, *dl, *dsl, *dw[2], *dsw[2];
    uint16_t *dr, *dhb[2];
    int32_t *did[2];
    CUDA_OK(cudaMalloc((void **)&dx, sizeof(float) * nx));
    CUDA_OK(cudaMalloc((void **)&dn, sizeof(float) * H));
    CUDA_OK(cudaMalloc((void **)&dhf, sizeof(float) * nx));
    CUDA_OK(cudaMalloc((void **)&dl, sizeof(float) * T * E));
    CUDA_OK(cudaMalloc((void **)&dsl, sizeof(float) * T));
    CUDA_OK(cudaMalloc((void **)&dr, 2 * ((size_t)E + 1) * H));
    for (int v = 0; v < 2; v++) { /* 0: the separate kernels, 1: mk_moe_norm_route; poisoned */
      CUDA_OK(cudaMalloc((void **)&dw[v], sizeof(float) * T * K));
      CUDA_OK(cudaMalloc((void **)&dsw[v], sizeof(float) * T));
      CUDA_OK(cudaMalloc((void **)&dhb[v], 2 * nx));
      CUDA_OK(cudaMalloc((void **)&did[v], sizeof(int32_t) * T * K));
      CUDA_OK(cudaMemset(dw[v], 0xff, sizeof(float) * T * K));
      CUDA_OK(cudaMemset(dsw[v], 0xff, sizeof(float) * T));
      CUDA_OK(cudaMemset(dhb[v], 0xff, 2 * nx));
      CUDA_OK(cudaMemset(did[v], 0xff, sizeof(int32_t) * T * K));
    }
    CUDA_OK(cudaMemcpy(dx, x, sizeof(float) * nx, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dn, nw, sizeof(float) * H, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dr, rw, 2 * ((size_t)E + 1) * H, cudaMemcpyHostToDevice));
    const uint16_t *segw = seg ? dr + (size_t)E * H : NULL;
    ASSERT_OK(mk_rmsnorm_f32(dx, dn, T, H, 1e-6f, dhb[0], dhf, NULL));
    ASSERT_OK(mk_linear_f32out(dhf, T, H, dr, E, dl, NULL));
    if (seg) ASSERT_OK(mk_linear_f32out(dhf, T, H, segw, 1, dsl, NULL));
    ASSERT_OK(mk_moe_route(dl, T, E, K, 1, seg ? dsl : NULL, did[0], dw[0], seg ? dsw[0] : NULL, NULL, NULL));
    ASSERT_TRUE(mk_moe_norm_route_fits(H, E, K));
    ASSERT_OK(mk_moe_norm_route(dx, dn, T, H, 1e-6f, dr, E, segw, K, 1, dhb[1], did[1], dw[1], seg ? dsw[1] : NULL,
                                NULL));
    CUDA_OK(cudaDeviceSynchronize());
    size_t bad = 0;
    const size_t bytes[4] = {2 * nx, sizeof(int32_t) * T * K, sizeof(float) * T * K, seg ? sizeof(float) * T : 0};
    const void *p0[4] = {dhb[0], did[0], dw[0], dsw[0]}, *p1[4] = {dhb[1], did[1], dw[1], dsw[1]};
    for (int q = 0; q < 4; q++) {
      unsigned char *a = malloc(bytes[q] + 1), *b = malloc(bytes[q] + 1);
      ASSERT_TRUE(a && b);
      CUDA_OK(cudaMemcpy(a, p0[q], bytes[q], cudaMemcpyDeviceToHost));
      CUDA_OK(cudaMemcpy(b, p1[q], bytes[q], cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < bytes[q]; i++) bad += a[i] != b[i];
      free(a), free(b);
    }
    printf("norm_route T=%d H=%d E=%d top_k=%d seg=%d: %zu bytes differ from the separate kernels\n", T, H, E, K, seg,
           bad);
    ASSERT_EQ(bad, 0);
    cudaFree(dx), cudaFree(dn), cudaFree(dhf), cudaFree(dl), cudaFree(dsl), cudaFree(dr);
    for (int v = 0; v < 2; v++) cudaFree(dw[v]), cudaFree(dsw[v]), cudaFree(dhb[v]), cudaFree(did[v]);
    free(x), free(nw), free(rw);
  }
  ASSERT_TRUE(!mk_moe_norm_route_fits(4100, 8, 2) && !mk_moe_norm_route_fits(4096, 300, 8));
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 120);
  mk_test_require_gpus(1);
  const uint64_t seed = mk_test_seed();
  const int T = 1001;
  /* E <= 256: the kernel with the row in registers (1, 2, 4 or 8 logits a lane); 300: the generic one */
  static const int cases[][3] = {{8, 2, 1},  {8, 2, 0}, {60, 4, 1}, {128, 8, 1},
                                 {256, 8, 0}, {16, 1, 0}, {8, 8, 1},  {300, 8, 1}};
  float *dl, *dw, *dsl, *dsw;
  int32_t *did, *dc;
  CUDA_OK(cudaMalloc((void **)&dl, sizeof(float) * T * 320));
  CUDA_OK(cudaMalloc((void **)&dw, sizeof(float) * T * 8));
  CUDA_OK(cudaMalloc((void **)&did, sizeof(int32_t) * T * 8));
  CUDA_OK(cudaMalloc((void **)&dc, sizeof(int32_t) * 320));
  CUDA_OK(cudaMalloc((void **)&dsl, sizeof(float) * T));
  CUDA_OK(cudaMalloc((void **)&dsw, sizeof(float) * T));
  float *l = malloc(sizeof(float) * T * 320), *w = malloc(sizeof(float) * T * 8), *rw = malloc(sizeof(float) * T * 8);
  float *sl = malloc(sizeof(float) * T), *sw = malloc(sizeof(float) * T), *rsw = malloc(sizeof(float) * T);
  int32_t *ids = malloc(sizeof(int32_t) * T * 8), *rid = malloc(sizeof(int32_t) * T * 8), cnt[320], rcnt[320];
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const int E = cases[c][0], K = cases[c][1], renorm = cases[c][2];
    for (int i = 0; i < T * E; i++) l[i] = mk_rng_uniform(seed + c, (uint64_t)i, -4.0f, 8.0f);
    for (int i = 0; i < 40; i++) l[i] = 1.0f; /* ties in the first tokens: lower id wins */
    for (int t = 0; t < T; t++) sl[t] = mk_rng_uniform(seed + 100 + c, (uint64_t)t, -6.0f, 12.0f);
    CUDA_OK(cudaMemcpy(dl, l, sizeof(float) * T * E, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dsl, sl, sizeof(float) * T, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(did, 0xff, sizeof(int32_t) * T * 8));
    CUDA_OK(cudaMemset(dw, 0xff, sizeof(float) * T * 8));
    CUDA_OK(cudaMemset(dc, 0x7f, sizeof(int32_t) * 320));
    ASSERT_OK(mk_moe_route(dl, T, E, K, renorm, dsl, did, dw, dsw, dc, NULL));
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(ids, did, sizeof(int32_t) * T * K, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(w, dw, sizeof(float) * T * K, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(sw, dsw, sizeof(float) * T, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(cnt, dc, sizeof(int32_t) * E, cudaMemcpyDeviceToHost));
    memset(rcnt, 0, sizeof rcnt);
    int bad = 0;
    for (int t = 0; t < T; t++) {
      cpu_route(l + (size_t)t * E, E, K, renorm, rid + t * K, rw + t * K);
      for (int k = 0; k < K; k++) {
        bad += ids[t * K + k] != rid[t * K + k];
        rcnt[rid[t * K + k]]++;
      }
      rsw[t] = 1.0f / (1.0f + expf(-sl[t]));
    }
    for (int e = 0; e < E; e++) bad += cnt[e] != rcnt[e];
    const double ew = mk_test_rel_err_f32(w, rw, (size_t)T * K), es = mk_test_rel_err_f32(sw, rsw, T);
    printf("E=%d top_k=%d renorm=%d: %d wrong ids/counts, weight rel err %.3g, shared gate rel err %.3g\n", E, K,
           renorm, bad, ew, es);
    ASSERT_EQ(bad, 0);
    ASSERT_DBL_LE(ew, 1e-5);
    ASSERT_DBL_LE(es, 1e-5);
  }
  norm_route_check(seed);
  /* bad arguments are refused */
  ASSERT_STATUS(mk_moe_route(dl, T, 8, 9, 1, NULL, did, dw, NULL, NULL, NULL), MK_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS(mk_moe_route(dl, T, 2048, 2, 1, NULL, did, dw, NULL, NULL, NULL), MK_STATUS_INVALID_ARGUMENT);
  printf("OK\n");
  return 0;
}
