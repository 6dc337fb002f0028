/* fill_random.cu — fill a buffer with counter-based uniform random values (core/rng.h).
 * Memory-bound: one 16-byte store per thread per step, grid-stride. */
#include <cuda_runtime.h>

#include "core/check.h"
#include "core/rng.h"
#include "kernels/mk_kernels.h"

template <typename T>
__device__ __forceinline__ T mk_convert(float f);
template <>
__device__ __forceinline__ uint16_t mk_convert<uint16_t>(float f) { return mk_rng_bf16_bits(f); }
template <>
__device__ __forceinline__ float mk_convert<float>(float f) { return f; }

template <typename T>
__global__ void mk_fill_uniform_kernel(T *__restrict__ out, size_t n, uint64_t seed, float lo, float scale) {
  constexpr int kVec = 16 / sizeof(T);
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  const size_t nvec = ((uintptr_t)out % 16 == 0) ? n / kVec : 0;
  for (size_t v = (size_t)blockIdx.x * blockDim.x + threadIdx.x; v < nvec; v += stride) {
    union {
      T e[kVec];
      uint4 u;
    } pack;
#pragma unroll
    for (int j = 0; j < kVec; j++) pack.e[j] = mk_convert<T>(mk_rng_uniform(seed, v * kVec + j, lo, scale));
    reinterpret_cast<uint4 *>(out)[v] = pack.u;
  }
  for (size_t i = nvec * kVec + (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = mk_convert<T>(mk_rng_uniform(seed, i, lo, scale));
}

template <typename T>
static mk_status mk_fill_uniform(T *out, size_t n, uint64_t seed, float lo, float hi, cudaStream_t stream) {
  if (n == 0) return MK_STATUS_OK;
  if (!out || !(hi >= lo)) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "fill: null output or hi < lo");
  int dev = 0, sms = 0;
  MK_CUDA_CHECK(cudaGetDevice(&dev));
  MK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const int threads = 256;
  size_t want = (n / (16 / sizeof(T)) + threads - 1) / threads;
  int blocks = (int)(want < (size_t)sms * 8 ? (want ? want : 1) : (size_t)sms * 8);
  mk_fill_uniform_kernel<T><<<blocks, threads, 0, stream>>>(out, n, seed, lo, hi - lo);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_fill_uniform_bf16(uint16_t *out, size_t n, uint64_t seed, float lo, float hi, mk_stream_t stream) {
  return mk_fill_uniform<uint16_t>(out, n, seed, lo, hi, (cudaStream_t)stream);
}

extern "C" mk_status mk_fill_uniform_f32(float *out, size_t n, uint64_t seed, float lo, float hi, mk_stream_t stream) {
  return mk_fill_uniform<float>(out, n, seed, lo, hi, (cudaStream_t)stream);
}
