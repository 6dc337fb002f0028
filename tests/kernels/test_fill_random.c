/* test_fill_random.c (gpu) — the device RNG fill matches the host formula bit for bit,
 * for every element, on a poisoned buffer, aligned and misaligned, bf16 and fp32. */
#include <cuda_runtime_api.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/mk_kernels.h"
#include "tests/mk_test.h"

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 60);
  mk_test_require_gpus(1);
  uint64_t seed = mk_test_seed();
  const size_t n = (1u << 22) + 13; /* not a multiple of the vector width */
  uint16_t *d16 = NULL, *h16 = malloc((n + 8) * 2);
  float *d32 = NULL, *h32 = malloc((n + 4) * 4);
  ASSERT_TRUE(h16 && h32);
  CUDA_OK(cudaMalloc((void **)&d16, (n + 8) * 2));
  CUDA_OK(cudaMalloc((void **)&d32, (n + 4) * 4));
  for (size_t off = 0; off < 2; off++) { /* off = 1: a buffer that is not 16-byte aligned */
    CUDA_OK(cudaMemset(d16, 0xff, (n + 8) * 2)); /* poison: bf16 NaN */
    CUDA_OK(cudaMemset(d32, 0xff, (n + 4) * 4)); /* poison: fp32 NaN */
    float lo = -0.5f - (float)off, hi = 1.25f;
    ASSERT_OK(mk_fill_uniform_bf16(d16 + off, n, seed + off, lo, hi, NULL));
    ASSERT_OK(mk_fill_uniform_f32(d32 + off, n, seed + off, lo, hi, NULL));
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(h16, d16, (n + 8) * 2, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(h32, d32, (n + 4) * 4, cudaMemcpyDeviceToHost));
    size_t bad16 = 0, bad32 = 0;
    for (size_t i = 0; i < n; i++) {
      float want = mk_rng_uniform(seed + off, i, lo, hi - lo);
      uint32_t got_bits, want_bits;
      memcpy(&got_bits, &h32[off + i], 4);
      memcpy(&want_bits, &want, 4);
      bad32 += got_bits != want_bits;
      bad16 += h16[off + i] != mk_rng_bf16_bits(want);
    }
    /* Elements outside [off, off + n) were not touched. */
    ASSERT_UEQ(h16[off + n], 0xffff);
    ASSERT_UEQ(*(uint32_t *)&h32[off + n], 0xffffffffu);
    if (off) ASSERT_UEQ(h16[0], 0xffff);
    printf("offset %zu: %zu elements, bf16 mismatches %zu, fp32 mismatches %zu\n", off, n, bad16, bad32);
    ASSERT_EQ(bad16, 0);
    ASSERT_EQ(bad32, 0);
  }
  ASSERT_STATUS(mk_fill_uniform_f32(d32, 16, seed, 1.0f, 0.0f, NULL), MK_STATUS_INVALID_ARGUMENT);
  CUDA_OK(cudaFree(d16));
  CUDA_OK(cudaFree(d32));
  free(h16);
  free(h32);
  printf("ok\n");
  return 0;
}
