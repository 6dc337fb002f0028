/* test_nccl_coll.c (multigpu, under mk-launch) — the NCCL baselines over a communicator made
 * through mkernel's bootstrap: all-gather, reduce-scatter, all-reduce, all-to-all and uneven
 * all-to-allv (with empty pairs), on fresh random inputs that every rank can recompute on the
 * host (counter-based RNG), outputs poisoned first and checked element by element. */
#include <cuda_runtime_api.h>
#include <string.h>

#include "comm/mk_comm.h"
#include "core/rng.h"
#include "kernels/mk_kernels.h"
#include "tests/mk_test.h"

static uint16_t bf(uint64_t seed, uint64_t i) { return mk_rng_bf16_bits(mk_rng_uniform(seed, i, -1.0f, 2.0f)); }
/* The host twin of mk_fill_uniform_*(lo = -1, hi = 1): mk_rng_uniform takes lo and a scale. */
static float f32v(uint64_t seed, uint64_t i) { return mk_rng_uniform(seed, i, -1.0f, 2.0f); }
/* Elements rank src sends to rank dst in the all-to-allv (0 for some pairs). */
static size_t vcount(int src, int dst) { return (src + dst) % 4 == 1 ? 0 : (size_t)((src * 7 + dst * 3) % 5) * 1000 + 17; }

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 240);
  mk_test_require_gpus(2);
  mk_comm_t *c;
  ASSERT_OK(mk_comm_create(&c));
  const mk_world *w = mk_comm_world(c);
  int R = w->size, me = w->rank;
  uint64_t seed = mk_test_seed();
  ASSERT_OK(mk_comm_bcast(c, &seed, sizeof seed, 0));
  mk_nccl_t *nc;
  ASSERT_OK(mk_nccl_create(c, &nc));
  ASSERT_EQ(mk_nccl_size(nc), R);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));

  /* all-gather, bf16, odd count */
  const size_t n = 1000003;
  uint16_t *send16, *recv16;
  CUDA_OK(cudaMalloc((void **)&send16, n * 2 * (size_t)R));
  CUDA_OK(cudaMalloc((void **)&recv16, n * 2 * (size_t)R));
  uint16_t *h16 = malloc(n * 2 * (size_t)R);
  ASSERT_OK(mk_fill_uniform_bf16(send16, n, seed + (uint64_t)me, -1.0f, 1.0f, (mk_stream_t)s));
  CUDA_OK(cudaMemsetAsync(recv16, 0xff, n * 2 * (size_t)R, s));
  ASSERT_OK(mk_nccl_all_gather(nc, send16, recv16, n, MK_DTYPE_BF16, (mk_stream_t)s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(h16, recv16, n * 2 * (size_t)R, cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (int r = 0; r < R; r++)
    for (size_t i = 0; i < n; i++) bad += h16[(size_t)r * n + i] != bf(seed + (uint64_t)r, i);
  ASSERT_EQ(bad, 0);

  /* all-reduce and reduce-scatter, fp32 */
  const size_t rc = 262147; /* per-rank block of the reduce-scatter */
  const size_t m = rc * (size_t)R;
  float *sendf, *recvf, *hf = malloc(m * 4);
  CUDA_OK(cudaMalloc((void **)&sendf, m * 4));
  CUDA_OK(cudaMalloc((void **)&recvf, m * 4));
  ASSERT_OK(mk_fill_uniform_f32(sendf, m, seed + 100 + (uint64_t)me, -1.0f, 1.0f, (mk_stream_t)s));
  CUDA_OK(cudaMemsetAsync(recvf, 0xff, m * 4, s));
  ASSERT_OK(mk_nccl_all_reduce(nc, sendf, recvf, m, MK_DTYPE_F32, (mk_stream_t)s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(hf, recvf, m * 4, cudaMemcpyDeviceToHost));
  float *ref = malloc(m * 4);
  for (size_t i = 0; i < m; i++) {
    double acc = 0;
    for (int r = 0; r < R; r++) acc += f32v(seed + 100 + (uint64_t)r, i);
    ref[i] = (float)acc;
  }
  double e = mk_test_rel_err_f32(hf, ref, m);
  printf("rank %d: all-reduce rel err %.3g\n", me, e);
  ASSERT_DBL_LE(e, 1e-6);
  CUDA_OK(cudaMemsetAsync(recvf, 0xff, rc * 4, s));
  ASSERT_OK(mk_nccl_reduce_scatter(nc, sendf, recvf, rc, MK_DTYPE_F32, (mk_stream_t)s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(hf, recvf, rc * 4, cudaMemcpyDeviceToHost));
  e = mk_test_rel_err_f32(hf, ref + (size_t)me * rc, rc);
  printf("rank %d: reduce-scatter rel err %.3g\n", me, e);
  ASSERT_DBL_LE(e, 1e-6);

  /* all-to-all, bf16: block p of rank r's send = elements [p*n, (p+1)*n) of stream seed+200+r */
  ASSERT_OK(mk_fill_uniform_bf16(send16, n * (size_t)R, seed + 200 + (uint64_t)me, -1.0f, 1.0f, (mk_stream_t)s));
  CUDA_OK(cudaMemsetAsync(recv16, 0xff, n * 2 * (size_t)R, s));
  ASSERT_OK(mk_nccl_all_to_all(nc, send16, recv16, n, MK_DTYPE_BF16, (mk_stream_t)s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(h16, recv16, n * 2 * (size_t)R, cudaMemcpyDeviceToHost));
  bad = 0;
  for (int p = 0; p < R; p++)
    for (size_t i = 0; i < n; i++) bad += h16[(size_t)p * n + i] != bf(seed + 200 + (uint64_t)p, (size_t)me * n + i);
  ASSERT_EQ(bad, 0);

  /* all-to-allv, uneven with empty pairs */
  size_t *sc = calloc((size_t)R * 4, sizeof(size_t)), *sd = sc + R, *rcn = sd + R, *rd = rcn + R;
  size_t stot = 0, rtot = 0;
  for (int p = 0; p < R; p++) {
    sc[p] = vcount(me, p);
    sd[p] = stot;
    stot += sc[p];
    rcn[p] = vcount(p, me);
    rd[p] = rtot;
    rtot += rcn[p];
  }
  ASSERT_LE(stot, n * (size_t)R);
  ASSERT_LE(rtot, n * (size_t)R);
  CUDA_OK(cudaMemsetAsync(recv16, 0xff, n * 2 * (size_t)R, s));
  ASSERT_OK(mk_nccl_all_to_allv(nc, send16, sc, sd, recv16, rcn, rd, MK_DTYPE_BF16, (mk_stream_t)s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(h16, recv16, n * 2 * (size_t)R, cudaMemcpyDeviceToHost));
  bad = 0;
  for (int p = 0; p < R; p++) {
    size_t off = 0; /* where rank p's block for me starts in p's send buffer */
    for (int q = 0; q < me; q++) off += vcount(p, q);
    for (size_t i = 0; i < rcn[p]; i++) bad += h16[rd[p] + i] != bf(seed + 200 + (uint64_t)p, off + i);
  }
  for (size_t i = rtot; i < n * (size_t)R; i++) bad += h16[i] != 0xffff; /* nothing past the end */
  ASSERT_EQ(bad, 0);

  ASSERT_STATUS(mk_nccl_all_gather(nc, send16, recv16, 1, MK_DTYPE_BOOL, (mk_stream_t)s), MK_STATUS_INVALID_ARGUMENT);
  mk_nccl_destroy(nc);
  /* the shared communicator: one per comm while any user holds it, usable by each; a new one once the
     last user dropped it */
  mk_nccl_t *sa, *sb, *sc2;
  ASSERT_OK(mk_nccl_shared(c, &sa));
  ASSERT_OK(mk_nccl_shared(c, &sb));
  ASSERT_TRUE(sa == sb);
  ASSERT_EQ(mk_nccl_size(sa), R);
  mk_nccl_destroy(sa);
  for (int k = 0; k < 2; k++) { /* sb still alive after sa's drop; then a fresh one */
    if (k) {
      mk_nccl_destroy(sb);
      ASSERT_OK(mk_nccl_shared(c, &sc2));
    }
    CUDA_OK(cudaMemset(recvf, 0xff, m * 4));
    ASSERT_OK(mk_nccl_all_reduce(k ? sc2 : sb, sendf, recvf, m, MK_DTYPE_F32, (mk_stream_t)s));
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaMemcpy(hf, recvf, m * 4, cudaMemcpyDeviceToHost));
    ASSERT_DBL_LE(mk_test_rel_err_f32(hf, ref, m), 1e-6);
  }
  mk_nccl_destroy(sc2);
  CUDA_OK(cudaFree(send16));
  CUDA_OK(cudaFree(recv16));
  CUDA_OK(cudaFree(sendf));
  CUDA_OK(cudaFree(recvf));
  CUDA_OK(cudaStreamDestroy(s));
  free(h16), free(hf), free(ref), free(sc);
  mk_comm_destroy(c);
  printf("rank %d: ok\n", me);
  return 0;
}
