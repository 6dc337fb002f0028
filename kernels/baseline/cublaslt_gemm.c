/* cublaslt_gemm.c — the unfused GEMM baseline: cuBLASLt with its heuristic's first algorithm
 * and a 32 MiB workspace; row-major C = A @ B is computed as column-major C^T = B^T A^T. The
 * grouped form loops over groups on the host. Each shape's descriptors and algorithm are kept
 * (MK_LT_PLANS shapes, least recently used out first): the unfused MoE calls one GEMM per expert,
 * each of its own M, two weights apart, so a handle that kept only the last shape asked the
 * heuristic again at every call, with the GPU idle behind the host (the unfused path syncs on the
 * counts first). An expert's M changes with the routing at every call, so shapes are kept by bucket
 * of M, MK_LT_M_BUCKETS buckets per doubling of M (M itself up to that many rows): the heuristic is
 * asked once per bucket (for its largest M, at most 1 / MK_LT_M_BUCKETS above any M in it), and a call
 * of another M in it reuses that algorithm on its own M (the layouts' column count set; where
 * cublasLtMatmul refuses the algorithm at that M, a plan for the exact M, made for that call alone). */
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <time.h>

#include "core/check.h"
#include "kernels/baseline/mk_baseline.h"
#include "kernels/baseline/plan_cache.h"

#define MK_LT_WORKSPACE (32u << 20)
enum { MK_LT_PLANS = 1024 }; /* shapes kept: E = 256 on 4 ranks calls 2 x 64 a step, M varying with the routing */

/* Buckets of M per doubling for the kept plans (0: every M its own plan, as before session 21). In the
 * layer benchmark, whose hidden state, and so the routing, changes from call to call, nearly every expert
 * GEMM of the unfused MoE was a new M, each a heuristic query with the GPU idle and the other ranks waiting
 * in the next all-to-all: Qwen3's unfused layer (prefill, 2 x H200) 14.9 ms (p10 10.0) with a plan per M,
 * 6.7 (5.2) with 16 buckets a doubling, 3.69 (3.64) with 4, its blocks' sum ~3.7 (runs eb52c71-x2,
 * aaa57a0-x2); 128-row buckets slowed the decode shapes, whose experts have a few rows each (run 0bcc239).
 * docs/perf/NOTES.md, session 21. */
MK_PARAM_INT(lt_m_buckets, "LT_M_BUCKETS", 4, 0, 1 << 20)

typedef struct lt_plan { /* one shape's descriptors and algorithm */
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulAlgo_t algo;
  int64_t m;   /* the M that lb and lc describe now */
  int64_t top; /* the M the heuristic chose the algorithm for (the bucket's largest) */
} lt_plan;

struct mk_cublaslt {
  cublasLtHandle_t handle;
  void *workspace;
  mk_plan_cache cache; /* which plan holds which shape */
  mk_plan_key keys[MK_LT_PLANS];
  uint64_t used[MK_LT_PLANS];
  lt_plan plans[MK_LT_PLANS];
  uint64_t made, exact; /* plans made (heuristic queries), of them one-off exact plans */
  double made_ms;       /* host time they took */
  uint64_t calls;       /* GEMMs enqueued */
  double call_ms;       /* host time of those calls, plans included */
};

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static void forget_plan(lt_plan *p) {
  if (p->op) cublasLtMatmulDescDestroy(p->op);
  if (p->la) cublasLtMatrixLayoutDestroy(p->la);
  if (p->lb) cublasLtMatrixLayoutDestroy(p->lb);
  if (p->lc) cublasLtMatrixLayoutDestroy(p->lc);
  p->op = NULL;
  p->la = p->lb = p->lc = NULL;
}

mk_status mk_cublaslt_create(mk_cublaslt_t **out) {
  mk_status st = MK_STATUS_OK;
  if (!out) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "cublaslt_create: out is NULL");
  *out = NULL;
  mk_cublaslt_t *lt = calloc(1, sizeof *lt);
  if (!lt) return MK_STATUS_OUT_OF_MEMORY;
  lt->cache = (mk_plan_cache){.cap = MK_LT_PLANS, .keys = lt->keys, .used = lt->used};
  MK_CUBLASLT_CHECK_GOTO(cublasLtCreate(&lt->handle), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc(&lt->workspace, MK_LT_WORKSPACE), st, fail);
  *out = lt;
  return MK_STATUS_OK;
fail:
  mk_cublaslt_destroy(lt);
  return st;
}

void mk_cublaslt_destroy(mk_cublaslt_t *lt) {
  if (!lt) return;
  if (lt->calls)
    MK_INFO(MK_SUBSYS_KERNEL, "cuBLASLt: %llu GEMMs, %.1f ms of host time; %llu plans made (%llu for an exact M), "
            "%.1f ms of it", (unsigned long long)lt->calls, lt->call_ms, (unsigned long long)lt->made,
            (unsigned long long)lt->exact, lt->made_ms);
  for (int i = 0; i < MK_LT_PLANS; i++) forget_plan(&lt->plans[i]);
  if (lt->workspace) cudaFree(lt->workspace);
  if (lt->handle) cublasLtDestroy(lt->handle);
  free(lt);
}

/* Column-major view: D[N, M] = op(Bm) [N, K] x Am [K, M]; Am is row-major A (ld K); Bm is B,
 * transposed when stored [N, K]. Makes p's descriptors for M and asks the heuristic. */
static mk_status make_plan(mk_cublaslt_t *lt, int64_t M, int64_t N, int64_t K, mk_gemm_b_layout layout, lt_plan *p) {
  mk_status st = MK_STATUS_OK;
  const double t0 = now_ms();
  const cublasOperation_t ta = layout == MK_GEMM_B_NK ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
  cublasLtMatmulPreference_t pref = NULL;
  cublasLtMatmulHeuristicResult_t res;
  int found = 0;
  uint64_t ws = MK_LT_WORKSPACE;
  MK_CUBLASLT_CHECK_GOTO(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), st, fail);
  MK_CUBLASLT_CHECK_GOTO(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), st, fail);
  MK_CUBLASLT_CHECK_GOTO(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), st, fail);
  if (layout == MK_GEMM_B_NK)
    MK_CUBLASLT_CHECK_GOTO(cublasLtMatrixLayoutCreate(&p->la, CUDA_R_16BF, (uint64_t)K, (uint64_t)N, K), st, fail);
  else
    MK_CUBLASLT_CHECK_GOTO(cublasLtMatrixLayoutCreate(&p->la, CUDA_R_16BF, (uint64_t)N, (uint64_t)K, N), st, fail);
  MK_CUBLASLT_CHECK_GOTO(cublasLtMatrixLayoutCreate(&p->lb, CUDA_R_16BF, (uint64_t)K, (uint64_t)M, K), st, fail);
  MK_CUBLASLT_CHECK_GOTO(cublasLtMatrixLayoutCreate(&p->lc, CUDA_R_16BF, (uint64_t)N, (uint64_t)M, N), st, fail);
  MK_CUBLASLT_CHECK_GOTO(cublasLtMatmulPreferenceCreate(&pref), st, fail);
  MK_CUBLASLT_CHECK_GOTO(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws), st, fail);
  MK_CUBLASLT_CHECK_GOTO(cublasLtMatmulAlgoGetHeuristic(lt->handle, p->op, p->la, p->lb, p->lc, p->lc, pref, 1,
                                                        &res, &found),
                         st, fail);
  if (!found) {
    MK_WARN(MK_SUBSYS_KERNEL, "cuBLASLt has no algorithm for M=%lld N=%lld K=%lld", (long long)M, (long long)N,
            (long long)K);
    st = MK_STATUS_UNSUPPORTED;
    goto fail;
  }
  p->algo = res.algo;
  p->m = p->top = M;
  cublasLtMatmulPreferenceDestroy(pref);
  lt->made++;
  lt->made_ms += now_ms() - t0;
  return MK_STATUS_OK;
fail:
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  forget_plan(p);
  return st;
}

/* p's layouts set to M rows of A and C; 1 where that failed. (cublasLtMatmulAlgoCheck at every new M, as
 * at first, cost host time at every expert GEMM of the layer, whose M changes each call: session 21.) */
static int plan_rows(lt_plan *p, int64_t M) {
  if (p->m == M) return 0;
  const uint64_t cols = (uint64_t)M;
  if (cublasLtMatrixLayoutSetAttribute(p->lb, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof cols) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatrixLayoutSetAttribute(p->lc, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof cols) != CUBLAS_STATUS_SUCCESS) {
    p->m = -1; /* unknown: set again next time */
    return 1;
  }
  p->m = M;
  return 0;
}

/* *out: the plan of M's bucket, kept (made here unless kept), set to M rows; *out = NULL where its layouts
 * could not be set. */
static mk_status plan(mk_cublaslt_t *lt, int64_t M, int64_t N, int64_t K, mk_gemm_b_layout layout, lt_plan **out) {
  const int64_t mb = mk_plan_bucket_top(M, mk_param_lt_m_buckets());
  const mk_plan_key key = {mb, N, K, (int)layout};
  int hit = 0;
  const int slot = mk_plan_cache_slot(&lt->cache, &key, &hit);
  lt_plan *p = &lt->plans[slot];
  *out = p;
  if (!hit) {
    forget_plan(p); /* the slot's previous shape, if any */
    const mk_status st = make_plan(lt, mb, N, K, layout, p);
    if (st != MK_STATUS_OK) {
      lt->used[slot] = 0; /* empty again: a later call plans the shape anew */
      *out = NULL;
      return st;
    }
  }
  if (plan_rows(p, M)) *out = NULL;
  return MK_STATUS_OK;
}

static mk_status check_shape(const char *who, int64_t M, int64_t N, int64_t K, mk_gemm_b_layout layout) {
  if (M < 0 || N <= 0 || K <= 0 || N % 8 || K % 8 || (layout != MK_GEMM_B_NK && layout != MK_GEMM_B_KN))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "%s: bad shape M=%lld N=%lld K=%lld layout=%d (need M >= 0, N and K > 0 and multiples of 8)", who,
                  (long long)M, (long long)N, (long long)K, (int)layout);
  return MK_STATUS_OK;
}

mk_status mk_cublaslt_gemm_bf16(mk_cublaslt_t *lt, const uint16_t *A, const uint16_t *B, uint16_t *C, int64_t M,
                                int64_t N, int64_t K, mk_gemm_b_layout b_layout, mk_stream_t stream) {
  if (!lt) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "cublaslt_gemm: handle is NULL");
  MK_CHECK(check_shape("cublaslt_gemm", M, N, K, b_layout));
  if (M == 0) return MK_STATUS_OK;
  const double t0 = now_ms();
  lt_plan *p = NULL, one_off = {0};
  MK_CHECK(plan(lt, M, N, K, b_layout, &p));
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t cs = CUBLAS_STATUS_NOT_SUPPORTED;
  if (p)
    cs = cublasLtMatmul(lt->handle, p->op, &one, B, p->la, A, p->lb, &zero, C, p->lc, C, p->lc, &p->algo,
                        lt->workspace, MK_LT_WORKSPACE, (cudaStream_t)stream);
  if (cs != CUBLAS_STATUS_SUCCESS && (!p || p->top != M)) {
    /* the bucket's algorithm refused at this M (nothing was enqueued): a plan of its own, for this call */
    MK_CHECK(make_plan(lt, M, N, K, b_layout, &one_off));
    lt->exact++;
    cs = cublasLtMatmul(lt->handle, one_off.op, &one, B, one_off.la, A, one_off.lb, &zero, C, one_off.lc, C,
                        one_off.lc, &one_off.algo, lt->workspace, MK_LT_WORKSPACE, (cudaStream_t)stream);
    forget_plan(&one_off);
  }
  lt->calls++;
  lt->call_ms += now_ms() - t0;
  MK_CUBLASLT_CHECK(cs);
  return MK_STATUS_OK;
}

mk_status mk_cublaslt_gemm_grouped_bf16(mk_cublaslt_t *lt, const uint16_t *A, const uint16_t *B, uint16_t *C,
                                        const int32_t *rows, int groups, int64_t m_cap, int64_t N, int64_t K,
                                        mk_gemm_b_layout b_layout, mk_stream_t stream) {
  mk_status st = MK_STATUS_OK;
  if (!lt || !rows || groups < 1 || groups > 4096)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "cublaslt_gemm_grouped: null handle/rows or groups=%d",
                  groups);
  MK_CHECK(check_shape("cublaslt_gemm_grouped", m_cap, N, K, b_layout));
  int32_t *h = malloc(sizeof(int32_t) * (size_t)groups);
  if (!h) return MK_STATUS_OUT_OF_MEMORY;
  MK_CUDA_CHECK_GOTO(cudaMemcpyAsync(h, rows, sizeof(int32_t) * (size_t)groups, cudaMemcpyDeviceToHost,
                                     (cudaStream_t)stream),
                     st, fail);
  MK_CUDA_CHECK_GOTO(cudaStreamSynchronize((cudaStream_t)stream), st, fail);
  int64_t off = 0;
  for (int g = 0; g < groups && off < m_cap; g++) {
    int64_t n = h[g] > 0 ? h[g] : 0;
    if (n > m_cap - off) n = m_cap - off;
    if (!n) continue;
    MK_CHECK_GOTO(mk_cublaslt_gemm_bf16(lt, A + off * K, B + (size_t)g * N * K, C + off * N, n, N, K, b_layout, stream),
                  st, fail);
    off += n;
  }
fail:
  free(h);
  return st;
}
