/* gemm_ref.cu — the checking side of the GEMM: an fp32 reference GEMM (plain tiled SIMT,
 * 64x64 tiles, 4x4 outputs a thread; exact fp32 products of the bf16 inputs, fp32 sums) and
 * the relative Frobenius error of a bf16 result against it, reduced on the device. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>

#include "core/check.h"
#include "kernels/gemm/mk_gemm.h"

__device__ __forceinline__ float mk_bf16_ld(const uint16_t *p) { return __uint_as_float((uint32_t)*p << 16); }

template <int kBNMajor>
__global__ void __launch_bounds__(256) mk_gemm_ref_kernel(const uint16_t *__restrict__ A, const uint16_t *__restrict__ B,
                                                          float *__restrict__ C, int64_t M, int64_t N, int64_t K) {
  __shared__ float sa[16][64 + 1], sb[16][64 + 1];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t m0 = (int64_t)blockIdx.y * 64, n0 = (int64_t)blockIdx.x * 64;
  float acc[4][4] = {};
  for (int64_t k0 = 0; k0 < K; k0 += 16) {
    for (int i = threadIdx.x; i < 16 * 64; i += 256) {
      const int kk = i % 16, r = i / 16; /* A: consecutive threads walk K */
      const int64_t m = m0 + r, k = k0 + kk;
      sa[kk][r] = (m < M && k < K) ? mk_bf16_ld(A + m * K + k) : 0.f;
      int64_t n, kb;
      if (kBNMajor) { n = n0 + i % 64; kb = k0 + i / 64; } else { n = n0 + i / 16; kb = k0 + i % 16; }
      const float v = (n < N && kb < K) ? mk_bf16_ld(kBNMajor ? B + kb * N + n : B + n * K + kb) : 0.f;
      if (kBNMajor) sb[i / 64][i % 64] = v; else sb[i % 16][i / 16] = v;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 16; kk++) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; i++) { a[i] = sa[kk][ty + 16 * i]; b[i] = sb[kk][tx + 16 * i]; }
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const int64_t m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
      if (m < M && n < N) C[m * N + n] = acc[i][j];
    }
}

extern "C" mk_status mk_gemm_ref_f32(const uint16_t *A, const uint16_t *B, float *C32, int64_t M, int64_t N, int64_t K,
                                     mk_gemm_b_layout b_layout, mk_stream_t stream) {
  if (M < 1 || N < 1 || K < 1 || !A || !B || !C32 || (M + 63) / 64 > 65535 || (N + 63) / 64 > INT32_MAX)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "gemm_ref: bad shape M=%lld N=%lld K=%lld or null pointer",
                  (long long)M, (long long)N, (long long)K);
  dim3 grid((unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
  if (b_layout == MK_GEMM_B_KN)
    mk_gemm_ref_kernel<1><<<grid, 256, 0, (cudaStream_t)stream>>>(A, B, C32, M, N, K);
  else
    mk_gemm_ref_kernel<0><<<grid, 256, 0, (cudaStream_t)stream>>>(A, B, C32, M, N, K);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

/* sums[0] += (out - ref)^2, sums[1] += ref^2, sums[2] += 1 per non-finite out. */
__global__ void mk_gemm_err_kernel(const uint16_t *__restrict__ out, const float *__restrict__ ref, int64_t n,
                                   double *sums) {
  double num = 0, den = 0, bad = 0;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float o = mk_bf16_ld(out + i), r = ref[i];
    if (!isfinite(o)) bad += 1;
    const double d = (double)o - r;
    num += d * d;
    den += (double)r * r;
  }
  for (int off = 16; off; off >>= 1) {
    num += __shfl_down_sync(0xffffffffu, num, off);
    den += __shfl_down_sync(0xffffffffu, den, off);
    bad += __shfl_down_sync(0xffffffffu, bad, off);
  }
  if (threadIdx.x % 32 == 0) {
    atomicAdd(&sums[0], num);
    atomicAdd(&sums[1], den);
    atomicAdd(&sums[2], bad);
  }
}

extern "C" mk_status mk_gemm_rel_err(const uint16_t *out, const float *ref, int64_t n, double *err, mk_stream_t stream) {
  if (!out || !ref || !err || n < 0)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "gemm_rel_err: null pointer or n < 0");
  mk_status st = MK_STATUS_OK;
  double *d = NULL, h[3] = {0, 0, 0};
  cudaStream_t s = (cudaStream_t)stream;
  MK_CUDA_CHECK(cudaMallocAsync((void **)&d, sizeof h, s));
  MK_CUDA_CHECK_GOTO(cudaMemsetAsync(d, 0, sizeof h, s), st, fail);
  if (n) {
    mk_gemm_err_kernel<<<1024, 256, 0, s>>>(out, ref, n, d);
    MK_CUDA_CHECK_GOTO(cudaGetLastError(), st, fail);
  }
  MK_CUDA_CHECK_GOTO(cudaMemcpyAsync(h, d, sizeof h, cudaMemcpyDeviceToHost, s), st, fail);
  MK_CUDA_CHECK_GOTO(cudaStreamSynchronize(s), st, fail);
  if (h[2] > 0 || !isfinite(h[0])) *err = INFINITY;
  else if (h[1] == 0) *err = h[0] == 0 ? 0 : INFINITY;
  else *err = sqrt(h[0] / h[1]);
fail:
  cudaFreeAsync(d, s);
  return st;
}
