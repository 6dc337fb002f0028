/* test_elementwise.c (gpu) — each model elementwise op against its CPU twin, every element,
 * fresh random inputs, poisoned outputs:  test_elementwise OP  with OP one of
 * embed rmsnorm qknorm rope rope_pos qkv bias residual swiglu argmax convert linear attn.
 * bf16 outputs: relative Frobenius error <= 1e-2 (the twin works in fp32/double on the same
 * bf16 inputs); integer outputs (argmax) exactly. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/mk_kernels.h"
#include "tests/mk_test.h"

static uint64_t g_seed;
static uint64_t g_ctr;

static float *rnd_f(size_t n, float lo, float hi) {
  float *p = malloc(n * 4);
  ASSERT_TRUE(p);
  for (size_t i = 0; i < n; i++) p[i] = mk_rng_uniform(g_seed, g_ctr++, lo, hi - lo);
  return p;
}
static uint16_t *rnd_b(size_t n, float lo, float hi) {
  uint16_t *p = malloc(n * 2);
  ASSERT_TRUE(p);
  for (size_t i = 0; i < n; i++) p[i] = mk_bf16_from_float(mk_rng_uniform(g_seed, g_ctr++, lo, hi - lo));
  return p;
}
static float bf(uint16_t h) { return mk_bf16_to_float(h); }
static void *dev(const void *h, size_t bytes) {
  void *d = NULL;
  CUDA_OK(cudaMalloc(&d, bytes ? bytes : 16));
  if (h) CUDA_OK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
  else CUDA_OK(cudaMemset(d, 0xff, bytes)); /* poison: NaN */
  return d;
}
static void *host(const void *d, size_t bytes) {
  void *h = malloc(bytes ? bytes : 16);
  ASSERT_TRUE(h);
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
  return h;
}
static void check_bf16(const char *what, const uint16_t *got, const float *want, size_t n) {
  double e = mk_test_rel_err_bf16(got, want, n);
  printf("%s: %zu elements, rel err %.3g\n", what, n, e);
  ASSERT_DBL_LE(e, 1e-2);
}
static void check_f32(const char *what, const float *got, const float *want, size_t n, double tol) {
  double e = mk_test_rel_err_f32(got, want, n);
  printf("%s: %zu elements, rel err %.3g\n", what, n, e);
  ASSERT_DBL_LE(e, tol);
}

static void rms_row(const float *x, const float *w, int dim, double ss, int norm_dim, float eps, float *out) {
  float inv = 1.0f / sqrtf((float)(ss / norm_dim) + eps);
  for (int i = 0; i < dim; i++) out[i] = w[i] * (x[i] * inv);
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 120);
  if (argc < 2) MK_TEST_FAIL_("usage: test_elementwise OP");
  mk_test_require_gpus(1);
  g_seed = mk_test_seed();
  const char *op = argv[1];
  const int n = 37, dim = 200, V = 101;
  if (!strcmp(op, "embed")) {
    uint16_t *tab = rnd_b((size_t)V * dim, -1, 1);
    int32_t ids[37];
    for (int t = 0; t < n; t++) ids[t] = (int32_t)(mk_rng_uniform(g_seed, g_ctr++, 0, V) ) % V;
    float *want = malloc(sizeof(float) * n * dim);
    for (int t = 0; t < n; t++)
      for (int i = 0; i < dim; i++) want[t * dim + i] = bf(tab[(size_t)ids[t] * dim + i]);
    void *dt = dev(tab, (size_t)V * dim * 2), *di = dev(ids, sizeof ids), *dout = dev(NULL, sizeof(float) * n * dim);
    ASSERT_OK(mk_embed_gather(di, n, dt, V, dim, dout, NULL));
    float *got = host(dout, sizeof(float) * n * dim);
    check_f32("embed", got, want, (size_t)n * dim, 0);
  } else if (!strcmp(op, "rmsnorm")) {
    float *x = rnd_f((size_t)n * dim, -3, 3), *w = rnd_f(dim, 0.5f, 1.5f), *want = malloc(sizeof(float) * n * dim);
    for (int t = 0; t < n; t++) {
      double ss = 0;
      for (int i = 0; i < dim; i++) ss += (double)x[t * dim + i] * x[t * dim + i];
      rms_row(x + t * dim, w, dim, ss, dim, 1e-6f, want + t * dim);
    }
    void *dx = dev(x, sizeof(float) * n * dim), *dw = dev(w, sizeof(float) * dim);
    void *ob = dev(NULL, (size_t)n * dim * 2), *of = dev(NULL, sizeof(float) * n * dim);
    ASSERT_OK(mk_rmsnorm_f32(dx, dw, n, dim, 1e-6f, ob, of, NULL));
    check_bf16("rmsnorm bf16", host(ob, (size_t)n * dim * 2), want, (size_t)n * dim);
    check_f32("rmsnorm f32", host(of, sizeof(float) * n * dim), want, (size_t)n * dim, 1e-5);
  } else if (!strcmp(op, "qknorm")) { /* per row, then with an external sum of squares */
    const int rows = 3 * n, d = 16, full = 4 * d;
    uint16_t *x = rnd_b((size_t)rows * d, -2, 2);
    float *w = rnd_f(d, 0.5f, 1.5f), *want = malloc(sizeof(float) * rows * d), *ss = malloc(sizeof(float) * rows);
    float *xf = malloc(sizeof(float) * rows * d);
    for (int i = 0; i < rows * d; i++) xf[i] = bf(x[i]);
    for (int r = 0; r < rows; r++) {
      double s = 0;
      for (int i = 0; i < d; i++) s += (double)xf[r * d + i] * xf[r * d + i];
      ss[r] = (float)(s * 3.5); /* as if the other ranks' slices added more */
      rms_row(xf + r * d, w, d, s, d, 1e-6f, want + r * d);
    }
    void *dx = dev(x, (size_t)rows * d * 2), *dw = dev(w, sizeof(float) * d), *dss = dev(NULL, sizeof(float) * rows);
    ASSERT_OK(mk_rowsumsq_bf16(dx, rows, d, dss, NULL));
    float *gss = host(dss, sizeof(float) * rows);
    double e = 0, nrm = 0;
    for (int r = 0; r < rows; r++) e += fabs(gss[r] * 3.5 - ss[r]), nrm += fabs(ss[r]);
    printf("rowsumsq: rel err %.3g\n", e / nrm);
    ASSERT_DBL_LE(e / nrm, 1e-5);
    ASSERT_OK(mk_rmsnorm_bf16(dx, rows, d, dw, NULL, d, 1e-6f, NULL));
    check_bf16("qknorm own", host(dx, (size_t)rows * d * 2), want, (size_t)rows * d);
    for (int r = 0; r < rows; r++) {
      double s = 0;
      for (int i = 0; i < d; i++) s += (double)xf[r * d + i] * xf[r * d + i];
      rms_row(xf + r * d, w, d, s * 3.5, full, 1e-6f, want + r * d);
    }
    CUDA_OK(cudaMemcpy(dx, x, (size_t)rows * d * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dss, ss, sizeof(float) * rows, cudaMemcpyHostToDevice));
    ASSERT_OK(mk_rmsnorm_bf16(dx, rows, d, dw, dss, full, 1e-6f, NULL));
    check_bf16("qknorm split", host(dx, (size_t)rows * d * 2), want, (size_t)rows * d);
    ASSERT_STATUS(mk_rmsnorm_bf16(dx, rows, d, dw, NULL, full, 1e-6f, NULL), MK_STATUS_INVALID_ARGUMENT);
  } else if (!strcmp(op, "rope") || !strcmp(op, "rope_pos")) { /* rope_pos: a random position per row */
    const int heads = 3, hd = 32, pos0 = 1000, by_row = !strcmp(op, "rope_pos");
    uint16_t *x = rnd_b((size_t)n * heads * hd, -1, 1);
    float *want = malloc(sizeof(float) * n * heads * hd);
    int32_t *pos = malloc(sizeof(int32_t) * n);
    ASSERT_TRUE(want && pos);
    for (int t = 0; t < n; t++) pos[t] = by_row ? (int32_t)mk_rng_uniform(g_seed, g_ctr++, 0, 100000) : pos0 + t;
    for (int i = 0; i < n * heads * hd; i++) want[i] = bf(x[i]);
    for (int t = 0; t < n; t++)
      for (int i = 0; i < hd / 2; i++) {
        float inv = (float)(1.0 / pow(1e6, (double)(2 * i) / hd)), ang = (float)pos[t] * inv, c = cosf(ang), s = sinf(ang);
        for (int h = 0; h < heads; h++) {
          float *r = want + ((size_t)t * heads + h) * hd, a = r[i], b = r[i + hd / 2];
          r[i] = a * c - b * s, r[i + hd / 2] = b * c + a * s;
        }
      }
    void *dx = dev(x, (size_t)n * heads * hd * 2);
    if (by_row) ASSERT_OK(mk_rope_neox_pos_bf16(dx, n, heads, hd, dev(pos, sizeof(int32_t) * n), 1e6, NULL));
    else ASSERT_OK(mk_rope_neox_bf16(dx, n, heads, hd, pos0, 1e6, NULL));
    check_bf16(op, host(dx, (size_t)n * heads * hd * 2), want, (size_t)n * heads * hd);
  } else if (!strcmp(op, "qkv")) { /* mk_qkv_post_bf16, then mk_rope_neox_bf16 on more rows than its grid */
    static const int cases[][6] = {/* n, nh, nkv, hd, bias, norm */
                                   {67, 4, 2, 128, 1, 1},
                                   {37, 3, 1, 64, 1, 0},
                                   {9, 2, 2, 256, 0, 1},
                                   {130, 8, 1, 128, 0, 0}};
    const int pos0 = 4000;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      const int rows = cases[c][0], nh = cases[c][1], nkv = cases[c][2], hd = cases[c][3], h2 = hd / 2;
      const int slots = nh + 2 * nkv, wq = nh * hd, wk = nkv * hd;
      uint16_t *x = rnd_b((size_t)rows * slots * hd, -2, 2);
      float *b = cases[c][4] ? rnd_f((size_t)slots * hd, -0.5f, 0.5f) : NULL;
      float *nw = cases[c][5] ? rnd_f(2 * (size_t)hd, 0.5f, 1.5f) : NULL;
      float *want = malloc(sizeof(float) * rows * slots * hd); /* [t][q | k | v] */
      ASSERT_TRUE(want);
      for (int t = 0; t < rows; t++)
        for (int sl = 0; sl < slots; sl++) {
          float *r = want + ((size_t)t * slots + sl) * hd;
          const int kind = sl < nh ? 0 : sl < nh + nkv ? 1 : 2;
          for (int i = 0; i < hd; i++) {
            r[i] = bf(x[((size_t)t * slots + sl) * hd + i]);
            if (b) r[i] = bf(mk_bf16_from_float(r[i] + b[sl * hd + i])); /* bq | bk | bv laid end to end */
          }
          if (nw && kind < 2) {
            double ss = 0;
            for (int i = 0; i < hd; i++) ss += (double)r[i] * r[i];
            rms_row(r, nw + kind * hd, hd, ss, hd, 1e-6f, r);
            for (int i = 0; i < hd; i++) r[i] = bf(mk_bf16_from_float(r[i]));
          }
          for (int i = 0; kind < 2 && i < h2; i++) {
            float inv = (float)(1.0 / pow(1e6, (double)(2 * i) / hd)), ang = (float)(pos0 + t) * inv;
            float cs = cosf(ang), sn = sinf(ang), a = r[i], bb = r[i + h2];
            r[i] = a * cs - bb * sn, r[i + h2] = bb * cs + a * sn;
          }
        }
      void *dx = dev(x, (size_t)rows * slots * hd * 2), *db = b ? dev(b, sizeof(float) * slots * hd) : NULL;
      void *dn = nw ? dev(nw, sizeof(float) * 2 * hd) : NULL;
      uint16_t *dq = dev(NULL, (size_t)rows * wq * 2), *dk = dev(NULL, (size_t)rows * wk * 2);
      uint16_t *dv = dev(NULL, (size_t)rows * wk * 2);
      float *fb = db, *fn = dn;
      ASSERT_OK(mk_qkv_post_bf16(dx, rows, nh, nkv, hd, fb, fb ? fb + wq : NULL, fb ? fb + wq + wk : NULL, fn,
                                 fn ? fn + hd : NULL, 1e-6f, pos0, 1e6, dq, dk, dv, NULL));
      uint16_t *got[3] = {host(dq, (size_t)rows * wq * 2), host(dk, (size_t)rows * wk * 2),
                          host(dv, (size_t)rows * wk * 2)};
      const int width[3] = {wq, wk, wk}, first[3] = {0, wq, wq + wk};
      for (int p = 0; p < 3; p++) { /* the part's columns of want, row by row */
        float *wp = malloc(sizeof(float) * rows * width[p]);
        ASSERT_TRUE(wp);
        for (int t = 0; t < rows; t++)
          memcpy(wp + (size_t)t * width[p], want + (size_t)t * slots * hd + first[p], sizeof(float) * width[p]);
        char what[96];
        snprintf(what, sizeof what, "qkv n=%d nh=%d nkv=%d hd=%d bias=%d norm=%d: %c", rows, nh, nkv, hd, !!b, !!nw,
                 "qkv"[p]);
        check_bf16(what, got[p], wp, (size_t)rows * width[p]);
        free(wp), free(got[p]);
      }
      ASSERT_STATUS(mk_qkv_post_bf16(dx, rows, nh, nkv, 514, NULL, NULL, NULL, NULL, NULL, 1e-6f, 0, 1e6, dq, dk, dv,
                                     NULL), MK_STATUS_INVALID_ARGUMENT);
      free(x), free(b), free(nw), free(want);
      cudaFree(dx), cudaFree(db), cudaFree(dn), cudaFree(dq), cudaFree(dk), cudaFree(dv);
    }
    { /* RoPE over 3000 x 40 heads x 32 pairs: more than its 2048 CTAs of 256 threads take at once */
      const int rows = 3000, heads = 40, hd = 64;
      const size_t cnt = (size_t)rows * heads * hd;
      uint16_t *x = rnd_b(cnt, -1, 1);
      float *want = malloc(sizeof(float) * cnt);
      ASSERT_TRUE(want);
      for (size_t i = 0; i < cnt; i++) want[i] = bf(x[i]);
      for (int t = 0; t < rows; t++)
        for (int i = 0; i < hd / 2; i++) {
          float inv = (float)(1.0 / pow(1e6, (double)(2 * i) / hd)), ang = (float)(7 + t) * inv;
          float cs = cosf(ang), sn = sinf(ang);
          for (int h = 0; h < heads; h++) {
            float *r = want + ((size_t)t * heads + h) * hd, a = r[i], bb = r[i + hd / 2];
            r[i] = a * cs - bb * sn, r[i + hd / 2] = bb * cs + a * sn;
          }
        }
      void *dx = dev(x, cnt * 2);
      ASSERT_OK(mk_rope_neox_bf16(dx, rows, heads, hd, 7, 1e6, NULL));
      check_bf16("rope 3000 x 40 heads", host(dx, cnt * 2), want, cnt);
    }
  } else if (!strcmp(op, "bias") || !strcmp(op, "residual") || !strcmp(op, "swiglu") || !strcmp(op, "convert")) {
    size_t N = (size_t)n * dim;
    uint16_t *a = rnd_b(N, -4, 4), *b = rnd_b(N, -2, 2);
    float *bias = rnd_f(dim, -1, 1), *sc = rnd_f(n, 0, 1), *x = rnd_f(N, -3, 3), *want = malloc(sizeof(float) * N);
    void *da = dev(a, N * 2), *db = dev(b, N * 2), *dbias = dev(bias, sizeof(float) * dim), *dsc = dev(sc, sizeof(float) * n);
    void *dx = dev(x, sizeof(float) * N), *dout = dev(NULL, N * 2), *df = dev(NULL, sizeof(float) * N);
    if (!strcmp(op, "bias")) {
      for (size_t i = 0; i < N; i++) want[i] = bf(a[i]) + bias[i % dim];
      ASSERT_OK(mk_bias_add_bf16(da, n, dim, dbias, NULL));
      check_bf16("bias", host(da, N * 2), want, N);
    } else if (!strcmp(op, "residual")) {
      for (size_t i = 0; i < N; i++) want[i] = x[i] + sc[i / dim] * bf(a[i]);
      ASSERT_OK(mk_residual_add(dx, da, dsc, n, dim, NULL));
      check_f32("residual scaled", host(dx, sizeof(float) * N), want, N, 1e-6);
      for (size_t i = 0; i < N; i++) want[i] += bf(b[i]);
      ASSERT_OK(mk_residual_add(dx, db, NULL, n, dim, NULL));
      check_f32("residual", host(dx, sizeof(float) * N), want, N, 1e-6);
    } else if (!strcmp(op, "swiglu")) {
      for (size_t i = 0; i < N; i++) want[i] = bf(a[i]) / (1.0f + expf(-bf(a[i]))) * bf(b[i]);
      ASSERT_OK(mk_swiglu_bf16(da, db, dout, (int64_t)N, NULL));
      check_bf16("swiglu", host(dout, N * 2), want, N);
    } else {
      ASSERT_OK(mk_convert_f32_to_bf16(dx, dout, (int64_t)N, NULL));
      uint16_t *g = host(dout, N * 2);
      size_t bad = 0;
      for (size_t i = 0; i < N; i++) bad += g[i] != mk_bf16_from_float(x[i]);
      ASSERT_OK(mk_convert_bf16_to_f32(da, df, (int64_t)N, NULL));
      float *gf = host(df, sizeof(float) * N);
      for (size_t i = 0; i < N; i++) bad += gf[i] != bf(a[i]);
      printf("convert: %zu mismatches of %zu\n", bad, 2 * N);
      ASSERT_EQ(bad, 0);
    }
  } else if (!strcmp(op, "argmax")) {
    const int cols = 1000;
    float *x = rnd_f((size_t)n * cols, -1, 1);
    for (int t = 0; t < n; t += 3) x[(size_t)t * cols + 7 * t % cols] = x[(size_t)t * cols + (7 * t + 500) % cols] = 2.0f; /* ties */
    void *dx = dev(x, sizeof(float) * n * cols), *dout = dev(NULL, sizeof(int32_t) * n);
    ASSERT_OK(mk_argmax_f32(dx, n, cols, dout, NULL));
    int32_t *g = host(dout, sizeof(int32_t) * n);
    for (int t = 0; t < n; t++) {
      int b = 0;
      for (int i = 1; i < cols; i++)
        if (x[(size_t)t * cols + i] > x[(size_t)t * cols + b]) b = i;
      ASSERT_EQ(g[t], b);
    }
    printf("argmax: %d rows ok\n", n);
  } else if (!strcmp(op, "linear")) {
    /* the vector kernel (in % 8 == 0) at the decode routers' shapes (R = 1 and 4 warps' rows), a prefill-like
       one (R = 8, a tail of rows) and the odd case; the scalar kernel (in % 8 != 0) */
    const int shapes[5][3] = {{n, 96, 77}, {64, 4096, 8}, {64, 2048, 128}, {1003, 1024, 64}, {n, 100, 33}};
    for (int c = 0; c < 5; c++) {
      const int rows = shapes[c][0], in = shapes[c][1], out = shapes[c][2];
      float *x = rnd_f((size_t)rows * in, -1, 1), *want = malloc(sizeof(float) * rows * out);
      uint16_t *w = rnd_b((size_t)out * in, -1, 1);
      for (int t = 0; t < rows; t++)
        for (int j = 0; j < out; j++) {
          double s = 0;
          for (int k = 0; k < in; k++) s += (double)x[(size_t)t * in + k] * bf(w[(size_t)j * in + k]);
          want[(size_t)t * out + j] = (float)s;
        }
      void *dx = dev(x, sizeof(float) * rows * in), *dw = dev(w, (size_t)out * in * 2);
      void *dy = dev(NULL, sizeof(float) * rows * out); /* poisoned (NaN): every output must be written */
      ASSERT_OK(mk_linear_f32out(dx, rows, in, dw, out, dy, NULL));
      float *got = host(dy, sizeof(float) * rows * out);
      check_f32("linear_f32out", got, want, (size_t)rows * out, 1e-5);
      if (in % 8 == 0) /* every rows-a-warp value gives the same bits (each lane's sum runs in the same order) */
        for (int r = 1; r <= 16; r *= 2) {
          char v[8];
          snprintf(v, sizeof v, "%d", r);
          setenv("MK_LINEAR_F32_ROWS", v, 1);
          mk_param_reset_cache();
          CUDA_OK(cudaMemset(dy, 0xff, sizeof(float) * rows * out));
          ASSERT_OK(mk_linear_f32out(dx, rows, in, dw, out, dy, NULL));
          float *again = host(dy, sizeof(float) * rows * out);
          ASSERT_TRUE(memcmp(again, got, sizeof(float) * rows * out) == 0);
          free(again);
        }
      unsetenv("MK_LINEAR_F32_ROWS");
      mk_param_reset_cache();
    }
  } else if (!strcmp(op, "attn")) {
    const int hq = 4, hkv = 2, pos0 = 11, ctx = pos0 + n;
    for (int d = 16; d <= 128; d *= 8) {
      uint16_t *q = rnd_b((size_t)n * hq * d, -1, 1), *k = rnd_b((size_t)ctx * hkv * d, -1, 1), *v = rnd_b((size_t)ctx * hkv * d, -1, 1);
      float *want = malloc(sizeof(float) * n * hq * d), *sc = malloc(sizeof(double) * ctx * 2);
      float scale = 1.0f / sqrtf((float)d);
      for (int t = 0; t < n; t++)
        for (int h = 0; h < hq; h++) {
          int g = h / (hq / hkv), len = pos0 + t + 1;
          double mx = -INFINITY, sum = 0;
          for (int s = 0; s < len; s++) {
            double dot = 0;
            for (int c = 0; c < d; c++) dot += (double)bf(q[((size_t)t * hq + h) * d + c]) * bf(k[((size_t)s * hkv + g) * d + c]);
            sc[s] = (float)(dot * scale);
            mx = fmax(mx, sc[s]);
          }
          for (int s = 0; s < len; s++) sum += exp(sc[s] - mx);
          for (int c = 0; c < d; c++) {
            double o = 0;
            for (int s = 0; s < len; s++) o += exp(sc[s] - mx) / sum * bf(v[((size_t)s * hkv + g) * d + c]);
            want[((size_t)t * hq + h) * d + c] = (float)o;
          }
        }
      void *dq = dev(q, (size_t)n * hq * d * 2), *dk = dev(k, (size_t)ctx * hkv * d * 2), *dv = dev(v, (size_t)ctx * hkv * d * 2);
      void *dout = dev(NULL, (size_t)n * hq * d * 2);
      ASSERT_OK(mk_attn_cache_fwd(dq, dk, dv, dout, n, pos0, hq, hkv, d, scale, NULL));
      check_bf16(d == 16 ? "attn_cache d=16" : "attn_cache d=128", host(dout, (size_t)n * hq * d * 2), want, (size_t)n * hq * d);
    }
  } else {
    MK_TEST_FAIL_("unknown op '%s'", op);
  }
  printf("ok\n");
  return 0;
}
