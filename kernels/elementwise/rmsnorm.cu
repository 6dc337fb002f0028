/* rmsnorm.cu — RMSNorm, out = w * (x / sqrt(mean(x^2) + eps)), fp32 arithmetic:
 *   mk_rmsnorm_f32        the residual stream (fp32) -> bf16 and/or fp32 normed rows
 *   mk_rmsnorm_bf16       in place on bf16 rows (q/k norm); the mean over norm_dim columns may
 *                         come from outside (sumsq, e.g. all-reduced over tensor-parallel ranks
 *                         when the norm spans the full width and each rank holds a slice)
 *   mk_rowsumsq_bf16      sum of squares of each bf16 row, fp32 (the partial for the above)
 * One block per row, grid-stride over rows. */
#include <cuda_runtime.h>

#include "core/check.h"
#include "kernels/elementwise/ew_common.cuh"
#include "kernels/mk_kernels.h"

__global__ void mk_rmsnorm_f32_kernel(const float *__restrict__ x, const float *__restrict__ w, int64_t n, int dim,
                                      float eps, uint16_t *__restrict__ ob, float *__restrict__ of) {
  for (int64_t t = blockIdx.x; t < n; t += gridDim.x)
    mk_ew_rmsnorm_row(x + t * dim, w, dim, eps, ob ? ob + t * dim : NULL, of ? of + t * dim : NULL);
}

__global__ void mk_rmsnorm_bf16_kernel(uint16_t *__restrict__ x, int64_t rows, int dim, const float *__restrict__ w,
                                       const float *__restrict__ sumsq, int norm_dim, float eps) {
  for (int64_t t = blockIdx.x; t < rows; t += gridDim.x) {
    uint16_t *r = x + t * dim;
    float s;
    if (sumsq) {
      s = sumsq[t];
    } else {
      s = 0;
      for (int i = threadIdx.x; i < dim; i += blockDim.x) s += mk_ew_bf16_f(r[i]) * mk_ew_bf16_f(r[i]);
      s = mk_ew_block_sum(s);
    }
    const float inv = 1.0f / sqrtf(s / norm_dim + eps);
    for (int i = threadIdx.x; i < dim; i += blockDim.x) r[i] = mk_ew_f_bf16(w[i] * (mk_ew_bf16_f(r[i]) * inv));
  }
}

__global__ void mk_rowsumsq_kernel(const uint16_t *__restrict__ x, int64_t rows, int dim, float *__restrict__ out) {
  for (int64_t t = blockIdx.x; t < rows; t += gridDim.x) {
    float s = 0;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) s += mk_ew_bf16_f(x[t * dim + i]) * mk_ew_bf16_f(x[t * dim + i]);
    s = mk_ew_block_sum(s);
    if (threadIdx.x == 0) out[t] = s;
  }
}

extern "C" mk_status mk_rmsnorm_f32(const float *x, const float *w, int64_t n, int dim, float eps, uint16_t *out_bf16,
                                    float *out_f32, mk_stream_t stream) {
  if (n == 0) return MK_STATUS_OK;
  if (!x || !w || n < 0 || dim < 1 || (!out_bf16 && !out_f32))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "rmsnorm: bad arguments (n=%lld dim=%d)", (long long)n, dim);
  mk_rmsnorm_f32_kernel<<<mk_ew_blocks((size_t)n, 1), mk_ew_rmsnorm_threads(dim), 0, (cudaStream_t)stream>>>(
      x, w, n, dim, eps, out_bf16, out_f32);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_rmsnorm_bf16(uint16_t *x, int64_t rows, int dim, const float *w, const float *sumsq,
                                     int norm_dim, float eps, mk_stream_t stream) {
  if (rows == 0) return MK_STATUS_OK;
  if (!x || !w || rows < 0 || dim < 1 || norm_dim < dim || (!sumsq && norm_dim != dim))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "rmsnorm_bf16: bad arguments (rows=%lld dim=%d norm_dim=%d, sumsq %s)", (long long)rows, dim,
                  norm_dim, sumsq ? "given" : "NULL");
  mk_rmsnorm_bf16_kernel<<<mk_ew_blocks((size_t)rows, 1), mk_ew_rmsnorm_threads(dim), 0, (cudaStream_t)stream>>>(
      x, rows, dim, w, sumsq, norm_dim, eps);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_rowsumsq_bf16(const uint16_t *x, int64_t rows, int dim, float *out, mk_stream_t stream) {
  if (rows == 0) return MK_STATUS_OK;
  if (!x || !out || rows < 0 || dim < 1)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "rowsumsq: bad arguments (rows=%lld dim=%d)",
                  (long long)rows, dim);
  mk_rowsumsq_kernel<<<mk_ew_blocks((size_t)rows, 1), mk_ew_rmsnorm_threads(dim), 0, (cudaStream_t)stream>>>(
      x, rows, dim, out);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}
