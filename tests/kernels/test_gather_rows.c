/* test_gather_rows.c (multigpu, under mk-launch) — mk_gather_rows: the in-place all-gather of
 * equal slices over a group of ranks of one node group on the SMs. Groups of G ranks (argv[1],
 * default: the node group), several calls on one heap buffer (the counters grow across calls)
 * with slice sizes that do and do not split evenly into the chunks of a destination (8, 8, 8, 32
 * and 20 CTAs a destination: the counters' targets sum a varying count), fresh
 * random slices each call, the others' slices poisoned first, every element checked; every other call
 * mk_gather_rows_add, which also adds the gathered rows to an fp32 x (every sum checked exactly); then the
 * argument checks (a buffer outside the heap, a group that leaves the node group). */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "comm/mk_comm.h"
#include "core/rng.h"
#include "kernels/mk_kernels.h"
#include "tests/mk_test.h"

static uint16_t bf(uint64_t seed, uint64_t i) { return mk_rng_bf16_bits(mk_rng_uniform(seed, i, -1.0f, 2.0f)); }

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 120);
  mk_test_require_gpus(2);
  mk_comm_t *c;
  ASSERT_OK(mk_comm_create(&c));
  const mk_world *w = mk_comm_world(c);
  const int G = argc > 1 ? atoi(argv[1]) : w->local_size;
  if (G < 2 || w->local_size % G) MK_TEST_FAIL_("group size %d must be >= 2 and divide %d", G, w->local_size);
  const int first = w->rank / G * G, me = w->rank - first;
  uint64_t seed = mk_test_seed();
  ASSERT_OK(mk_comm_bcast(c, &seed, sizeof seed, 0));
  mk_gather_t *h = NULL;
  ASSERT_OK(mk_gather_create(c, first, G, &h));
  const size_t max_slice = (size_t)64 * 4096 * 2; /* 64 rows of H 4096 bf16 */
  uint64_t off;
  ASSERT_OK(mk_comm_heap_alloc(c, max_slice * (size_t)G, &off));
  char *buf = mk_comm_heap_ptr(c, off);
  uint16_t *hb = malloc(max_slice * (size_t)G);
  ASSERT_TRUE(hb != NULL);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  float *hx = malloc(max_slice * (size_t)G * 2), *dx = NULL; /* max_slice * G / 2 floats */
  ASSERT_TRUE(hx != NULL);
  CUDA_OK(cudaMalloc((void **)&dx, max_slice * (size_t)G * 2));
  const size_t slices[] = {(size_t)16 * 4096 * 2, 16, (size_t)3 * 2048 * 2 + 16 * 5, max_slice, (size_t)20 * 16384 + 16};
  for (int it = 0; it < 10; it++) {
    const size_t sl = slices[it % 5], ne = sl / 2;
    const uint64_t sd = seed + 1000 * (uint64_t)it;
    CUDA_OK(cudaMemsetAsync(buf, 0xff, sl * (size_t)G, s)); /* poison: every slice */
    ASSERT_OK(mk_fill_uniform_bf16((uint16_t *)(buf + (size_t)me * sl), ne, sd + (uint64_t)w->rank, -1.0f, 1.0f,
                                   (mk_stream_t)s));
    CUDA_OK(cudaStreamSynchronize(s));
    ASSERT_OK(mk_comm_barrier(c)); /* no peer's store may land before this rank's poison */
    /* odd calls: mk_gather_rows_add, x [rows, 8] += the gathered bf16 elements, every one checked exactly */
    const int add = it & 1, dim = 8, rows = (int)(ne * (size_t)G / (size_t)dim);
    for (int i = 0; add && i < rows * dim; i++) hx[i] = mk_rng_uniform(sd + 77, (uint64_t)i, -4.0f, 8.0f);
    if (add) CUDA_OK(cudaMemcpy(dx, hx, sizeof(float) * (size_t)rows * dim, cudaMemcpyHostToDevice));
    if (add) ASSERT_OK(mk_gather_rows_add(h, buf, sl, dx, dim, rows, (mk_stream_t)s));
    else ASSERT_OK(mk_gather_rows(h, buf, sl, (mk_stream_t)s));
    CUDA_OK(cudaStreamSynchronize(s));
    ASSERT_OK(mk_comm_check(c));
    CUDA_OK(cudaMemcpy(hb, buf, sl * (size_t)G, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (int r = 0; r < G; r++)
      for (size_t i = 0; i < ne; i++) bad += hb[(size_t)r * ne + i] != bf(sd + (uint64_t)(first + r), i);
    if (add) {
      float *gx = malloc(sizeof(float) * (size_t)rows * dim);
      ASSERT_TRUE(gx != NULL);
      CUDA_OK(cudaMemcpy(gx, dx, sizeof(float) * (size_t)rows * dim, cudaMemcpyDeviceToHost));
      size_t badx = 0;
      for (int i = 0; i < rows * dim; i++) badx += gx[i] != hx[i] + mk_bf16_to_float(hb[i]);
      if (badx) printf("rank %d: call %d: %zu wrong sums of %d\n", w->rank, it, badx, rows * dim);
      bad += badx;
      free(gx);
    }
    if (bad) printf("rank %d: call %d, slice %zu bytes: %zu wrong elements\n", w->rank, it, sl, bad);
    ASSERT_EQ(bad, 0);
    ASSERT_OK(mk_comm_barrier(c)); /* the next call's poison only after every rank has read */
  }
  /* argument checks (local: no launch) */
  void *outside = NULL;
  CUDA_OK(cudaMalloc(&outside, 4096));
  ASSERT_STATUS(mk_gather_rows(h, outside, 1024, (mk_stream_t)s), MK_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS(mk_gather_rows(h, buf, 24, (mk_stream_t)s), MK_STATUS_INVALID_ARGUMENT); /* not 16-byte slices */
  ASSERT_STATUS(mk_gather_rows_add(h, buf, 1024, dx, 8, 64 * G + 1, (mk_stream_t)s), MK_STATUS_INVALID_ARGUMENT);
  mk_gather_t *bad_h = NULL;
  ASSERT_STATUS(mk_gather_create(c, -1, G, &bad_h), MK_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(bad_h == NULL);
  cudaFree(outside);
  mk_gather_destroy(h);
  mk_gather_destroy(NULL);
  CUDA_OK(cudaStreamDestroy(s));
  free(hb), free(hx);
  cudaFree(dx);
  printf("rank %d: gather over %d ranks from %d: ok\n", w->rank, G, first);
  ASSERT_OK(mk_comm_barrier(c));
  mk_comm_destroy(c);
  return 0;
}
