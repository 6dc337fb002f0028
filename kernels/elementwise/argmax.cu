/* argmax.cu — out[r] = the index of the largest of x[r, 0..cols) (fp32); ties give the lowest
 * index, as the reference's strict '>' scan; NaNs are skipped. One block per row. */
#include <cuda_runtime.h>

#include "core/check.h"
#include "kernels/elementwise/ew_common.cuh"
#include "kernels/mk_kernels.h"

__device__ __forceinline__ bool mk_better(float v, int i, float bv, int bi) {
  return v > bv || (v == bv && i < bi);
}

__global__ void mk_argmax_kernel(const float *__restrict__ x, int64_t rows, int cols, int32_t *__restrict__ out) {
  __shared__ float sv[32];
  __shared__ int si[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    float bv = 0.0f;
    int bi = cols; /* none yet */
    for (int i = threadIdx.x; i < cols; i += blockDim.x) {
      float v = x[r * cols + i];
      if (v == v && (bi == cols || mk_better(v, i, bv, bi))) bv = v, bi = i;
    }
    for (int o = 16; o; o >>= 1) {
      float v = __shfl_xor_sync(0xffffffffu, bv, o);
      int i = __shfl_xor_sync(0xffffffffu, bi, o);
      if (i != cols && (bi == cols || mk_better(v, i, bv, bi))) bv = v, bi = i;
    }
    __syncthreads();
    if (threadIdx.x % 32 == 0) sv[threadIdx.x / 32] = bv, si[threadIdx.x / 32] = bi;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < (int)blockDim.x / 32; w++)
        if (si[w] != cols && (bi == cols || mk_better(sv[w], si[w], bv, bi))) bv = sv[w], bi = si[w];
      out[r] = bi == cols ? 0 : bi;
    }
  }
}

extern "C" mk_status mk_argmax_f32(const float *x, int64_t rows, int cols, int32_t *out, mk_stream_t stream) {
  if (rows == 0) return MK_STATUS_OK;
  if (!x || !out || rows < 0 || cols < 1)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "argmax: bad arguments (rows=%lld cols=%d)",
                  (long long)rows, cols);
  mk_argmax_kernel<<<mk_ew_blocks((size_t)rows, 1), 256, 0, (cudaStream_t)stream>>>(x, rows, cols, out);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}
