/* test_kv_copy.c (gpu) — mk_kv_scatter_bf16 / mk_kv_gather_bf16: random rows scattered into a
 * poisoned paged cache through a random slot map (a permutation's prefix), every element of the
 * cache checked (written slots hold their rows bit for bit, the others keep the poison), then
 * gathered back through a shuffled map; vector (width % 8 == 0) and scalar widths; an
 * out-of-range slot is skipped / gives zeros. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/mk_kernels.h"
#include "tests/mk_test.h"

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 60);
  mk_test_require_gpus(1);
  const uint64_t seed = mk_test_seed();
  const int widths[] = {512, 128, 36};
  for (int wi = 0; wi < 3; wi++) {
    const int W = widths[wi];
    const int64_t slots = 16 * 64, n = 700;
    uint16_t *hc = malloc((size_t)slots * W * 2), *hr = malloc((size_t)n * W * 2), *hg = malloc((size_t)n * W * 2);
    int32_t *map = malloc(sizeof(int32_t) * (size_t)slots), *owner = malloc(sizeof(int32_t) * (size_t)slots);
    ASSERT_TRUE(hc && hr && hg && map && owner);
    for (int64_t i = 0; i < slots; i++) map[i] = (int32_t)i, owner[i] = -1;
    for (int64_t i = slots - 1; i > 0; i--) { /* Fisher-Yates from the counter RNG */
      int64_t j = (int64_t)(mk_rng_uniform(seed + (uint64_t)wi, (uint64_t)i, 0.0f, 1.0f) * (float)(i + 1));
      if (j > i) j = i;
      int32_t t = map[i];
      map[i] = map[j], map[j] = t;
    }
    for (int64_t t = 0; t < n; t++) owner[map[t]] = (int32_t)t;
    for (int64_t i = 0; i < n * W; i++) hr[i] = mk_rng_bf16_bits(mk_rng_uniform(seed + 7, (uint64_t)i, -1.0f, 2.0f));
    uint16_t *dc, *dr, *dg;
    int32_t *dm;
    CUDA_OK(cudaMalloc((void **)&dc, (size_t)slots * W * 2));
    CUDA_OK(cudaMalloc((void **)&dr, (size_t)n * W * 2));
    CUDA_OK(cudaMalloc((void **)&dg, (size_t)(n + 1) * W * 2));
    CUDA_OK(cudaMalloc((void **)&dm, sizeof(int32_t) * (size_t)(n + 1)));
    CUDA_OK(cudaMemset(dc, 0xff, (size_t)slots * W * 2));
    CUDA_OK(cudaMemset(dg, 0xff, (size_t)(n + 1) * W * 2));
    CUDA_OK(cudaMemcpy(dr, hr, (size_t)n * W * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dm, map, sizeof(int32_t) * (size_t)n, cudaMemcpyHostToDevice));
    ASSERT_OK(mk_kv_scatter_bf16(dr, dm, n, W, dc, slots, NULL));
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(hc, dc, (size_t)slots * W * 2, cudaMemcpyDeviceToHost));
    int64_t bad = 0;
    for (int64_t s = 0; s < slots; s++)
      for (int c = 0; c < W; c++)
        bad += hc[s * W + c] != (owner[s] >= 0 ? hr[(int64_t)owner[s] * W + c] : 0xffff);
    ASSERT_EQ(bad, 0);
    /* gather back in reverse order, plus one out-of-range slot (zeros) */
    int32_t *rev = malloc(sizeof(int32_t) * (size_t)(n + 1));
    ASSERT_TRUE(rev != NULL);
    for (int64_t t = 0; t < n; t++) rev[t] = map[n - 1 - t];
    rev[n] = (int32_t)slots;
    CUDA_OK(cudaMemcpy(dm, rev, sizeof(int32_t) * (size_t)(n + 1), cudaMemcpyHostToDevice));
    ASSERT_OK(mk_kv_gather_bf16(dc, slots, dm, n + 1, W, dg, NULL));
    CUDA_OK(cudaDeviceSynchronize());
    uint16_t *hg2 = malloc((size_t)(n + 1) * W * 2);
    ASSERT_TRUE(hg2 != NULL);
    CUDA_OK(cudaMemcpy(hg2, dg, (size_t)(n + 1) * W * 2, cudaMemcpyDeviceToHost));
    for (int64_t t = 0; t < n; t++)
      for (int c = 0; c < W; c++) bad += hg2[t * W + c] != hr[(n - 1 - t) * W + c];
    for (int c = 0; c < W; c++) bad += hg2[n * W + c] != 0;
    ASSERT_EQ(bad, 0);
    cudaFree(dc), cudaFree(dr), cudaFree(dg), cudaFree(dm);
    free(hc), free(hr), free(hg), free(hg2), free(map), free(owner), free(rev);
  }
  printf("ok\n");
  return 0;
}
