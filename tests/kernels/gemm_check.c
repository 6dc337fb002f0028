/* gemm_check.c — see gemm_check.h. */
#include "tests/kernels/gemm_check.h"

uint16_t *gemm_check_random(size_t n, uint64_t seed) {
  uint16_t *p = NULL;
  CUDA_OK(cudaMalloc((void **)&p, (n ? n : 1) * 2));
  ASSERT_OK(mk_fill_uniform_bf16(p, n, seed, -1.0f, 1.0f, NULL));
  return p;
}

static float *to_host_f32(const uint16_t *d, size_t n) {
  uint16_t *h = malloc(n * 2);
  float *f = malloc(n * sizeof(float));
  ASSERT_TRUE(h && f);
  CUDA_OK(cudaMemcpy(h, d, n * 2, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; i++) f[i] = mk_bf16_to_float(h[i]);
  free(h);
  return f;
}

float *gemm_check_reference(const uint16_t *A, const uint16_t *B, int64_t M, int64_t N, int64_t K,
                            mk_gemm_b_layout layout) {
  float *ref = NULL;
  CUDA_OK(cudaMalloc((void **)&ref, (size_t)M * N * sizeof(float)));
  ASSERT_OK(mk_gemm_ref_f32(A, B, ref, M, N, K, layout, NULL));
  CUDA_OK(cudaDeviceSynchronize());
  /* CPU check of the GPU reference on sampled rows. */
  float *hb = to_host_f32(B, (size_t)N * K), *row = malloc(N * sizeof(float)), *got = malloc(N * sizeof(float));
  uint16_t *ha = malloc(K * 2);
  float *ak = malloc(K * sizeof(float));
  ASSERT_TRUE(row && got && ha && ak);
  const int all = (double)M * N * K <= 5e7;
  const int64_t step = all ? 1 : (M > 16 ? M / 16 : 1);
  for (int64_t i = 0;; i++) {
    const int64_t m = i * step < M ? i * step : M - 1;
    CUDA_OK(cudaMemcpy(ha, A + m * K, K * 2, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(got, ref + m * N, N * sizeof(float), cudaMemcpyDeviceToHost));
    for (int64_t n = 0; n < N; n++) row[n] = 0;
    if (layout == MK_GEMM_B_KN) {
      for (int64_t k = 0; k < K; k++) {
        const float a = mk_bf16_to_float(ha[k]);
        for (int64_t n = 0; n < N; n++) row[n] += a * hb[k * N + n];
      }
    } else { /* B [N, K]: one contiguous dot product per column (a strided walk over B is ~10x slower) */
      for (int64_t k = 0; k < K; k++) ak[k] = mk_bf16_to_float(ha[k]);
      for (int64_t n = 0; n < N; n++) {
        const float *b = hb + n * K;
        float s = 0;
        for (int64_t k = 0; k < K; k++) s += ak[k] * b[k];
        row[n] = s;
      }
    }
    double e = mk_test_rel_err_f32(got, row, N);
    if (!(e <= 1e-5)) MK_TEST_FAIL_("GPU reference disagrees with the CPU on row %lld: rel err %.3g", (long long)m, e);
    if (m == M - 1) break;
  }
  free(hb);
  free(row);
  free(got);
  free(ha);
  free(ak);
  return ref;
}

size_t gemm_check_compare(const char *what, const uint16_t *C, const float *ref, int64_t M, int64_t N, double *rel) {
  const size_t n = (size_t)M * N;
  uint16_t *hc = malloc(n * 2);
  float *hr = malloc(n * sizeof(float));
  ASSERT_TRUE(hc && hr);
  CUDA_OK(cudaMemcpy(hc, C, n * 2, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(hr, ref, n * sizeof(float), cudaMemcpyDeviceToHost));
  double ss = 0;
  for (size_t i = 0; i < n; i++) ss += (double)hr[i] * hr[i];
  const double rms = n ? sqrt(ss / n) : 0;
  size_t bad = 0, first = (size_t)-1;
  for (size_t i = 0; i < n; i++) {
    const double c = mk_bf16_to_float(hc[i]), r = hr[i];
    if (!isfinite(c) || !(fabs(c - r) <= 2e-2 * fabs(r) + 1e-2 * rms)) {
      if (!bad) first = i;
      bad++;
    }
  }
  *rel = mk_test_rel_err_bf16(hc, hr, n);
  printf("%-40s rel err %.3e  wrong %zu / %zu", what, *rel, bad, n);
  if (bad)
    printf("  (first at row %zu col %zu: got %g want %g)", first / N, first % N, mk_bf16_to_float(hc[first]),
           hr[first]);
  printf("\n");
  free(hc);
  free(hr);
  return bad;
}

size_t gemm_check_count_touched(const uint16_t *p, size_t n) {
  if (!n) return 0;
  uint16_t *h = malloc(n * 2);
  ASSERT_TRUE(h);
  CUDA_OK(cudaMemcpy(h, p, n * 2, cudaMemcpyDeviceToHost));
  size_t t = 0;
  for (size_t i = 0; i < n; i++) t += h[i] != 0xffff;
  free(h);
  return t;
}

int gemm_check_run(int64_t m, int64_t n, int64_t k, mk_gemm_b_layout b, uint64_t seed, const char *mode, int twice) {
  const struct {
    int64_t m, n, k;
    mk_gemm_b_layout b;
  } s = {m, n, k, b};
  uint16_t *A = gemm_check_random((size_t)s.m * s.k, seed);
  uint16_t *B = gemm_check_random((size_t)s.n * s.k, seed + 1);
  uint16_t *C[2] = {NULL, NULL};
  const size_t extra = 3 * (size_t)s.n, elems = (size_t)s.m * s.n + extra;
  int wrong = 0;
  float *ref = gemm_check_reference(A, B, s.m, s.n, s.k, s.b);
  for (int r = 0; r < 1 + twice; r++) {
    CUDA_OK(cudaMalloc((void **)&C[r], elems * 2));
    CUDA_OK(cudaMemset(C[r], 0xff, elems * 2));
    ASSERT_OK(mk_gemm_bf16(A, B, C[r], s.m, s.n, s.k, s.b, NULL));
    CUDA_OK(cudaDeviceSynchronize());
    char what[160];
    snprintf(what, sizeof what, "M=%lld N=%lld K=%lld B=%s %s%s", (long long)s.m, (long long)s.n, (long long)s.k,
             s.b == MK_GEMM_B_KN ? "[K,N]" : "[N,K]", mode, r ? " (again)" : "");
    double rel;
    size_t bad = gemm_check_compare(what, C[r], ref, s.m, s.n, &rel);
    size_t touched = gemm_check_count_touched(C[r] + (size_t)s.m * s.n, extra);
    if (touched) printf("  %zu elements written past row M\n", touched);
    if (bad || touched || !(rel <= 1e-2)) wrong = 1;
  }
  if (twice) {
    const size_t bytes = (size_t)s.m * s.n * 2;
    uint16_t *h0 = malloc(bytes), *h1 = malloc(bytes);
    if (!h0 || !h1) MK_TEST_FAIL_("out of host memory");
    CUDA_OK(cudaMemcpy(h0, C[0], bytes, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(h1, C[1], bytes, cudaMemcpyDeviceToHost));
    if (memcmp(h0, h1, bytes)) {
      printf("  two runs differ\n");
      wrong = 1;
    }
    free(h0);
    free(h1);
  }
  CUDA_OK(cudaFree(A));
  CUDA_OK(cudaFree(B));
  for (int r = 0; r < 2; r++)
    if (C[r]) CUDA_OK(cudaFree(C[r]));
  CUDA_OK(cudaFree(ref));
  return wrong;
}
