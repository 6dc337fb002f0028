/* cublas_grouped.c — the unfused MoE's other expert-GEMM baseline: cuBLAS's grouped GEMM
 * (cublasGemmGroupedBatchedEx), one call for all experts of a rank instead of one cublasLtMatmul
 * each. bf16 in and out, fp32 accumulate, B stored [N, K] per group. Row-major C_g = A_g @ B_g^T is
 * computed as column-major C_g^T [N, rows_g] = B_g [N, K] (op T of its column-major K x N view) x A_g^T. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdlib.h>

#include "core/check.h"
#include "kernels/baseline/mk_baseline.h"

struct mk_cublas_grouped {
  cublasHandle_t handle; /* its own default workspace: the unfused path syncs each call, never captured */
  int cap;              /* groups */
  const void **ptrs;    /* host (pageable: a copy from it may be reused at once): A, B, C pointers, cap each */
  void **dptrs;         /* device: the same */
  int *m, *n, *k, *lda, *ldb, *ldc, *size;
  cublasOperation_t *ta, *tb;
  float *alpha, *beta;
};

mk_status mk_cublas_grouped_create(int max_groups, mk_cublas_grouped_t **out) {
  mk_status st = MK_STATUS_OK;
  if (!out || max_groups < 1 || max_groups > 4096)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "cublas_grouped_create: out NULL or max_groups=%d",
                  max_groups);
  *out = NULL;
  mk_cublas_grouped_t *g = calloc(1, sizeof *g);
  if (!g) return MK_STATUS_OUT_OF_MEMORY;
  const size_t n = (size_t)max_groups;
  g->cap = max_groups;
  g->ptrs = calloc(3 * n, sizeof *g->ptrs);
  g->m = calloc(7 * n, sizeof(int));
  g->ta = calloc(2 * n, sizeof *g->ta);
  g->alpha = calloc(2 * n, sizeof(float));
  if (!g->ptrs || !g->m || !g->ta || !g->alpha) {
    st = MK_STATUS_OUT_OF_MEMORY;
    goto fail;
  }
  g->n = g->m + n, g->k = g->n + n, g->lda = g->k + n, g->ldb = g->lda + n, g->ldc = g->ldb + n, g->size = g->ldc + n;
  g->tb = g->ta + n;
  g->beta = g->alpha + n;
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&g->dptrs, 3 * n * sizeof(void *)), st, fail);
  MK_CUBLAS_CHECK_GOTO(cublasCreate(&g->handle), st, fail);
  *out = g;
  return MK_STATUS_OK;
fail:
  mk_cublas_grouped_destroy(g);
  return st;
}

void mk_cublas_grouped_destroy(mk_cublas_grouped_t *g) {
  if (!g) return;
  if (g->handle) cublasDestroy(g->handle);
  cudaFree(g->dptrs);
  free(g->ptrs), free(g->m), free(g->ta), free(g->alpha);
  free(g);
}

mk_status mk_cublas_gemm_grouped_host_bf16(mk_cublas_grouped_t *g, const uint16_t *A, const uint16_t *B,
                                           uint16_t *C, const int32_t *rows, int groups, int64_t N, int64_t K,
                                           mk_stream_t stream) {
  if (!g || !rows || groups < 1 || groups > g->cap || N <= 0 || K <= 0 || N % 8 || K % 8 || N > INT32_MAX ||
      K > INT32_MAX)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "cublas_gemm_grouped: null handle/rows, groups=%d (at most %d), N=%lld K=%lld (> 0, multiples of 8)",
                  groups, g ? g->cap : 0, (long long)N, (long long)K);
  int n = 0; /* non-empty groups */
  int64_t off = 0;
  for (int e = 0; e < groups; e++) {
    const int64_t r = rows[e] > 0 ? rows[e] : 0;
    if (r) {
      g->ptrs[n] = B + (size_t)e * N * K;                 /* column-major K x N, op T: N x K */
      g->ptrs[g->cap + n] = A + (size_t)off * K;          /* column-major K x r */
      g->ptrs[2 * g->cap + n] = C + (size_t)off * N;      /* column-major N x r */
      g->m[n] = (int)N, g->n[n] = (int)r, g->k[n] = (int)K;
      g->lda[n] = (int)K, g->ldb[n] = (int)K, g->ldc[n] = (int)N, g->size[n] = 1;
      g->ta[n] = CUBLAS_OP_T, g->tb[n] = CUBLAS_OP_N, g->alpha[n] = 1.f, g->beta[n] = 0.f;
      n++;
    }
    off += r;
  }
  if (!n) return MK_STATUS_OK;
  cudaStream_t s = (cudaStream_t)stream;
  /* the three pointer arrays, each cap long, to the device (pageable source: consumed before the return) */
  MK_CUDA_CHECK(cudaMemcpyAsync(g->dptrs, g->ptrs, 3 * (size_t)g->cap * sizeof(void *), cudaMemcpyHostToDevice, s));
  MK_CUBLAS_CHECK(cublasSetStream(g->handle, s));
  MK_CUBLAS_CHECK(cublasGemmGroupedBatchedEx(
      g->handle, g->ta, g->tb, g->m, g->n, g->k, g->alpha, (const void *const *)g->dptrs, CUDA_R_16BF, g->lda,
      (const void *const *)(g->dptrs + g->cap), CUDA_R_16BF, g->ldb, g->beta, g->dptrs + 2 * g->cap, CUDA_R_16BF,
      g->ldc, n, g->size, CUBLAS_COMPUTE_32F));
  return MK_STATUS_OK;
}
