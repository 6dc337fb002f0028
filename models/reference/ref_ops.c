/* ref_ops.c — fp32 building blocks of the reference model: a small thread pool (static
 * chunks, every output element computed by one thread in a fixed order, so results never
 * depend on scheduling), linear layers, RMSNorm, RoPE, and the attention and MoE blocks. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "models/mk_models.h"
#include "models/reference/ref_internal.h"

MK_PARAM_INT(ref_threads, "REF_THREADS", 0, 0, 256)

#define POOL_MAX 64
static struct {
  pthread_mutex_t mu, run_mu;
  pthread_cond_t go, done;
  int n;          /* threads including the caller */
  uint64_t gen;
  int pending;
  mk_ref_task_fn fn;
  void *ctx;
  int64_t items;
} g_pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .run_mu = PTHREAD_MUTEX_INITIALIZER, .go = PTHREAD_COND_INITIALIZER,
            .done = PTHREAD_COND_INITIALIZER};
static pthread_once_t g_pool_once = PTHREAD_ONCE_INIT;

static void chunk(int part, int parts, int64_t n, int64_t *b, int64_t *e) {
  *b = n * part / parts;
  *e = n * (part + 1) / parts;
}

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  uint64_t seen = 0;
  pthread_mutex_lock(&g_pool.mu);
  for (;;) {
    while (g_pool.gen == seen) pthread_cond_wait(&g_pool.go, &g_pool.mu);
    seen = g_pool.gen;
    mk_ref_task_fn fn = g_pool.fn;
    void *ctx = g_pool.ctx;
    int64_t b, e;
    chunk(id, g_pool.n, g_pool.items, &b, &e);
    pthread_mutex_unlock(&g_pool.mu);
    if (b < e) fn(ctx, b, e);
    pthread_mutex_lock(&g_pool.mu);
    if (--g_pool.pending == 0) pthread_cond_signal(&g_pool.done);
  }
  return NULL;
}

static void pool_init(void) {
  int64_t n = mk_param_ref_threads();
  if (n <= 0) n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  if (n > POOL_MAX) n = POOL_MAX;
  g_pool.n = 1;
  for (int i = 1; i < n; i++) {
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &a, worker, (void *)(intptr_t)i) == 0) g_pool.n++;
    pthread_attr_destroy(&a);
    if (g_pool.n != i + 1) break;
  }
}

int mk_ref_threads_(void) {
  pthread_once(&g_pool_once, pool_init);
  return g_pool.n;
}

void mk_ref_parallel_(int64_t items, double work, mk_ref_task_fn fn, void *ctx) {
  int n = mk_ref_threads_();
  if (n == 1 || items < 2 || work < 2e5) {
    fn(ctx, 0, items);
    return;
  }
  pthread_mutex_lock(&g_pool.run_mu); /* one job at a time */
  pthread_mutex_lock(&g_pool.mu);
  g_pool.fn = fn, g_pool.ctx = ctx, g_pool.items = items;
  g_pool.pending = n - 1;
  g_pool.gen++;
  pthread_cond_broadcast(&g_pool.go);
  pthread_mutex_unlock(&g_pool.mu);
  int64_t b, e;
  chunk(0, n, items, &b, &e);
  if (b < e) fn(ctx, b, e);
  pthread_mutex_lock(&g_pool.mu);
  while (g_pool.pending) pthread_cond_wait(&g_pool.done, &g_pool.mu);
  pthread_mutex_unlock(&g_pool.mu);
  pthread_mutex_unlock(&g_pool.run_mu);
}

/* ---- linear: y[n, out] = x[n, in] @ W[out, in]^T + b ------------------------------------ */
typedef struct {
  const float *x, *w, *b;
  float *y;
  int64_t n, in, out;
} lin_ctx;

static float dot(const float *a, const float *b, int64_t n) {
  float s[8] = {0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; k++) s[k] += a[i + k] * b[i + k];
  for (; i < n; i++) s[0] += a[i] * b[i];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

static void lin_task(void *p, int64_t b, int64_t e) {
  const lin_ctx *c = p;
  for (int64_t j = b; j < e; j++) {
    const float *w = c->w + j * c->in;
    float bias = c->b ? c->b[j] : 0.0f;
    for (int64_t t = 0; t < c->n; t++) c->y[t * c->out + j] = dot(c->x + t * c->in, w, c->in) + bias;
  }
}

void mk_ref_linear_(const float *x, int64_t n, int64_t in, const float *w, const float *b, int64_t out, float *y) {
  lin_ctx c = {x, w, b, y, n, in, out};
  mk_ref_parallel_(out, (double)n * in * out, lin_task, &c);
}

void mk_ref_round_bf16_(float *v, int64_t n) {
  for (int64_t i = 0; i < n; i++) v[i] = mk_bf16_to_float(mk_bf16_from_float(v[i]));
}

void mk_ref_rmsnorm_(const float *x, const float *w, int64_t n, int64_t dim, float eps, float *out) {
  for (int64_t t = 0; t < n; t++) {
    const float *r = x + t * dim;
    double ss = 0;
    for (int64_t i = 0; i < dim; i++) ss += (double)r[i] * r[i];
    float inv = 1.0f / sqrtf((float)(ss / dim) + eps);
    for (int64_t i = 0; i < dim; i++) out[t * dim + i] = w[i] * (r[i] * inv);
  }
}

/* rotate_half RoPE (HF default): pairs (i, i + d/2) rotated by pos * theta^(-2i/d). */
void mk_ref_rope_(float *v, int n_heads, int hd, int pos, double theta) {
  int h2 = hd / 2;
  for (int i = 0; i < h2; i++) {
    float inv = (float)(1.0 / pow(theta, (double)(2 * i) / hd));
    float ang = (float)pos * inv, c = cosf(ang), s = sinf(ang);
    for (int h = 0; h < n_heads; h++) {
      float *r = v + (size_t)h * hd;
      float a = r[i], b = r[i + h2];
      r[i] = a * c - b * s;
      r[i + h2] = b * c + a * s;
    }
  }
}

/* ---- attention ------------------------------------------------------------------------ */
typedef struct {
  const mk_ref_attn_weights *w;
  const float *q, *kc, *vc;
  float *ctx;
  int n, pos0;
  _Atomic int failed;
} attn_ctx;

static void attn_task(void *p, int64_t b, int64_t e) {
  attn_ctx *c = p;
  const mk_ref_attn_weights *w = c->w;
  int hd = w->head_dim, qw = w->n_heads * hd, kw = w->n_kv_heads * hd, grp = w->n_heads / w->n_kv_heads;
  float scale = 1.0f / sqrtf((float)hd);
  float *sc = malloc(sizeof(float) * (size_t)(c->pos0 + c->n));
  if (!sc) {
    c->failed = 1;
    return;
  }
  for (int64_t it = b; it < e; it++) {
    int t = (int)(it / w->n_heads), h = (int)(it % w->n_heads), g = h / grp, len = c->pos0 + t + 1;
    const float *q = c->q + (size_t)t * qw + (size_t)h * hd;
    float mx = -INFINITY;
    for (int s = 0; s < len; s++) {
      sc[s] = dot(q, c->kc + (size_t)s * kw + (size_t)g * hd, hd) * scale;
      if (sc[s] > mx) mx = sc[s];
    }
    double sum = 0;
    for (int s = 0; s < len; s++) sum += sc[s] = expf(sc[s] - mx);
    float *o = c->ctx + (size_t)t * qw + (size_t)h * hd;
    for (int d = 0; d < hd; d++) o[d] = 0;
    for (int s = 0; s < len; s++) {
      float pr = (float)(sc[s] / sum);
      const float *v = c->vc + (size_t)s * kw + (size_t)g * hd;
      for (int d = 0; d < hd; d++) o[d] += pr * v[d];
    }
  }
  free(sc);
}

mk_status mk_ref_attention_block(const mk_ref_attn_weights *w, const float *x, int n, int pos0, float *k_cache,
                                 float *v_cache, float *out) {
  if (!w || !x || !out || !k_cache || !v_cache || n < 0 || pos0 < 0 || w->n_kv_heads < 1 || w->n_heads % w->n_kv_heads ||
      w->head_dim % 2)
    return MK_STATUS_INVALID_ARGUMENT;
  int H = w->hidden, hd = w->head_dim, qw = w->n_heads * hd, kw = w->n_kv_heads * hd;
  float *q = malloc(sizeof(float) * (size_t)n * qw), *k = malloc(sizeof(float) * (size_t)n * kw);
  float *ctx = malloc(sizeof(float) * (size_t)n * qw);
  mk_status st = MK_STATUS_OK;
  if (!q || !k || !ctx) {
    st = MK_STATUS_OUT_OF_MEMORY;
    goto fail;
  }
  float *vrow = v_cache + (size_t)pos0 * kw;
  const int bf = w->bf16_acts;
  if (!bf) {
    mk_ref_linear_(x, n, H, w->wq, w->bq, qw, q);
    mk_ref_linear_(x, n, H, w->wk, w->bk, kw, k);
    mk_ref_linear_(x, n, H, w->wv, w->bv, kw, vrow);
  } else { /* as the GPU: bf16 GEMM outputs, the bias added to them and rounded again */
    float *dst[3] = {q, k, vrow};
    const float *wt[3] = {w->wq, w->wk, w->wv}, *bs[3] = {w->bq, w->bk, w->bv};
    for (int j = 0; j < 3; j++) {
      const int64_t cols = j ? kw : qw;
      mk_ref_linear_(x, n, H, wt[j], NULL, cols, dst[j]);
      mk_ref_round_bf16_(dst[j], n * cols);
      if (!bs[j]) continue;
      for (int64_t i = 0; i < n * cols; i++) dst[j][i] += bs[j][i % cols];
      mk_ref_round_bf16_(dst[j], n * cols);
    }
  }
  if (w->qk_norm == MK_QK_NORM_FULL) {
    mk_ref_rmsnorm_(q, w->q_norm, n, qw, w->rms_eps, q);
    mk_ref_rmsnorm_(k, w->k_norm, n, kw, w->rms_eps, k);
  } else if (w->qk_norm == MK_QK_NORM_HEAD) {
    mk_ref_rmsnorm_(q, w->q_norm, (int64_t)n * w->n_heads, hd, w->rms_eps, q);
    mk_ref_rmsnorm_(k, w->k_norm, (int64_t)n * w->n_kv_heads, hd, w->rms_eps, k);
  }
  if (bf && w->qk_norm) mk_ref_round_bf16_(q, (int64_t)n * qw), mk_ref_round_bf16_(k, (int64_t)n * kw);
  for (int t = 0; t < n; t++) {
    mk_ref_rope_(q + (size_t)t * qw, w->n_heads, hd, pos0 + t, w->rope_theta);
    mk_ref_rope_(k + (size_t)t * kw, w->n_kv_heads, hd, pos0 + t, w->rope_theta);
  }
  if (bf) mk_ref_round_bf16_(q, (int64_t)n * qw), mk_ref_round_bf16_(k, (int64_t)n * kw);
  memcpy(k_cache + (size_t)pos0 * kw, k, sizeof(float) * (size_t)n * kw);
  attn_ctx c = {w, q, k_cache, v_cache, ctx, n, pos0, 0};
  mk_ref_parallel_((int64_t)n * w->n_heads, (double)n * w->n_heads * (pos0 + n) * hd * 2, attn_task, &c);
  if (c.failed) {
    st = MK_STATUS_OUT_OF_MEMORY;
    goto fail;
  }
  if (bf) mk_ref_round_bf16_(ctx, (int64_t)n * qw);
  mk_ref_linear_(ctx, n, qw, w->wo, NULL, H, out);
  if (bf) mk_ref_round_bf16_(out, (int64_t)n * H);
fail:
  free(q), free(k), free(ctx);
  return st;
}

/* ---- MoE ------------------------------------------------------------------------------ */
/* bf16: the gate/up outputs, the activation and y rounded to bf16 (x already is). */
static void swiglu_mlp(const float *x, int64_t n, int64_t H, int64_t I, const float *g, const float *u, const float *d,
                       float *y, float *tmp_g, float *tmp_u, int bf16) {
  mk_ref_linear_(x, n, H, g, NULL, I, tmp_g);
  mk_ref_linear_(x, n, H, u, NULL, I, tmp_u);
  if (bf16) mk_ref_round_bf16_(tmp_g, n * I), mk_ref_round_bf16_(tmp_u, n * I);
  for (int64_t i = 0; i < n * I; i++) {
    float a = tmp_g[i];
    tmp_g[i] = a / (1.0f + expf(-a)) * tmp_u[i];
  }
  if (bf16) mk_ref_round_bf16_(tmp_g, n * I);
  mk_ref_linear_(tmp_g, n, I, d, NULL, H, y);
  if (bf16) mk_ref_round_bf16_(y, n * H);
}

mk_status mk_ref_dense_mlp_(const float *x, int64_t n, int64_t H, int64_t I, const float *g, const float *u,
                            const float *d, float *y, int bf16) {
  float *a = malloc(sizeof(float) * (size_t)(n * I)), *b = malloc(sizeof(float) * (size_t)(n * I));
  if (!a || !b) {
    free(a), free(b);
    return MK_STATUS_OUT_OF_MEMORY;
  }
  swiglu_mlp(x, n, H, I, g, u, d, y, a, b, bf16);
  free(a), free(b);
  return MK_STATUS_OK;
}

/* margin[t] = min(margin[t], (k-th largest - (k+1)-th largest) / (max - min)) of each token's
 * router logits: how close the token's expert choice is to a tie. */
static void route_margins(const float *lg, int n, int E, int K, float *margin) {
  for (int t = 0; t < n; t++) {
    const float *v = lg + (size_t)t * E;
    float mx = -INFINITY, mn = INFINITY, kth = INFINITY, next = -INFINITY;
    for (int e = 0; e < E; e++) mx = fmaxf(mx, v[e]), mn = fminf(mn, v[e]);
    for (int e = 0; e < E; e++) { /* rank of v[e] among the logits (ties by index) */
      int above = 0;
      for (int q = 0; q < E; q++) above += v[q] > v[e] || (v[q] == v[e] && q < e);
      if (above == K - 1) kth = v[e];
      if (above == K) next = v[e];
    }
    const float m = K < E && mx > mn ? (kth - next) / (mx - mn) : INFINITY;
    margin[t] = fminf(margin[t], m);
  }
}

mk_status mk_ref_moe_block(const mk_ref_moe_weights *w, const float *x, int n, float *out, int32_t *topk_ids,
                           float *topk_w) {
  return mk_ref_moe_block_(w, x, n, out, topk_ids, topk_w, NULL, NULL);
}

mk_status mk_ref_moe_block_(const mk_ref_moe_weights *w, const float *x, int n, float *out, int32_t *topk_ids,
                            float *topk_w, float *margin, const int32_t *force_ids) {
  if (!w || !x || !out || n < 0 || w->top_k < 1 || w->top_k > w->n_experts) return MK_STATUS_INVALID_ARGUMENT;
  int64_t H = w->hidden, E = w->n_experts, K = w->top_k, I = w->inter, S = w->shared_inter;
  int64_t big = I > S ? I : S;
  float *logits = malloc(sizeof(float) * (size_t)(n * E)), *xs = malloc(sizeof(float) * (size_t)(n * H));
  float *ys = malloc(sizeof(float) * (size_t)(n * H)), *ta = malloc(sizeof(float) * (size_t)(n * big));
  float *tb = malloc(sizeof(float) * (size_t)(n * big)), *wt = malloc(sizeof(float) * (size_t)(n * K));
  int32_t *ids = malloc(sizeof(int32_t) * (size_t)(n * K)), *rows = malloc(sizeof(int32_t) * (size_t)(n + 1));
  float *rw = malloc(sizeof(float) * (size_t)(n + 1));
  const int bf = w->bf16_acts;
  float *xb = bf ? malloc(sizeof(float) * (size_t)(n * H)) : (float *)x; /* the experts' input (GPU: hb) */
  mk_status st = MK_STATUS_OK;
  if (!logits || !xs || !ys || !ta || !tb || !wt || !ids || !rows || !rw || !xb) {
    st = MK_STATUS_OUT_OF_MEMORY;
    goto fail;
  }
  if (bf) memcpy(xb, x, sizeof(float) * (size_t)(n * H)), mk_ref_round_bf16_(xb, n * H);
  mk_ref_linear_(x, n, H, w->router, NULL, E, logits);
  if (margin) route_margins(logits, n, (int)E, (int)K, margin);
  for (int t = 0; t < n; t++) { /* softmax over all experts, top-k, optional renormalisation */
    float *l = logits + t * E, mx = -INFINITY;
    for (int e = 0; e < E; e++) mx = l[e] > mx ? l[e] : mx;
    double sum = 0;
    for (int e = 0; e < E; e++) sum += l[e] = expf(l[e] - mx);
    for (int e = 0; e < E; e++) l[e] = (float)(l[e] / sum);
    float tot = 0;
    for (int k = 0; k < K; k++) {
      if (force_ids) {
        const int32_t e = force_ids[t * K + k];
        if (e < 0 || e >= E) {
          st = MK_STATUS_INVALID_ARGUMENT;
          goto fail;
        }
        ids[t * K + k] = e, wt[t * K + k] = l[e], tot += l[e];
        continue;
      }
      int best = -1;
      for (int e = 0; e < E; e++) {
        int taken = 0;
        for (int j = 0; j < k; j++) taken |= ids[t * K + j] == e;
        if (!taken && (best < 0 || l[e] > l[best])) best = e;
      }
      ids[t * K + k] = best;
      wt[t * K + k] = l[best];
      tot += l[best];
    }
    if (w->norm_topk_prob)
      for (int k = 0; k < K; k++) wt[t * K + k] /= tot;
  }
  memset(out, 0, sizeof(float) * (size_t)(n * H));
  for (int e = 0; e < E; e++) { /* experts in index order: a fixed summation order per token */
    int m = 0;
    for (int t = 0; t < n; t++)
      for (int k = 0; k < K; k++)
        if (ids[t * K + k] == e) {
          rows[m] = t, rw[m] = wt[t * K + k];
          memcpy(xs + (size_t)m * H, xb + (size_t)t * H, sizeof(float) * (size_t)H);
          m++;
        }
    if (!m) continue;
    swiglu_mlp(xs, m, H, I, w->gate[e], w->up[e], w->down[e], ys, ta, tb, bf);
    for (int i = 0; i < m; i++)
      for (int64_t h = 0; h < H; h++) out[(size_t)rows[i] * H + h] += rw[i] * ys[(size_t)i * H + h];
  }
  if (bf) mk_ref_round_bf16_(out, n * H); /* the GPU's routed output y is bf16 */
  if (S) {
    swiglu_mlp(xb, n, H, S, w->shared_gate, w->shared_up, w->shared_down, ys, ta, tb, bf);
    mk_ref_linear_(x, n, H, w->shared_expert_gate, NULL, 1, rw);
    for (int t = 0; t < n; t++) {
      float g = 1.0f / (1.0f + expf(-rw[t]));
      for (int64_t h = 0; h < H; h++) out[(size_t)t * H + h] += g * ys[(size_t)t * H + h];
    }
  }
  if (topk_ids) memcpy(topk_ids, ids, sizeof(int32_t) * (size_t)(n * K));
  if (topk_w) memcpy(topk_w, wt, sizeof(float) * (size_t)(n * K));
fail:
  free(logits), free(xs), free(ys), free(ta), free(tb), free(wt), free(ids), free(rows), free(rw);
  if (xb != x) free(xb);
  return st;
}
