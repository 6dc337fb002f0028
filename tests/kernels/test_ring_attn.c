/* test_ring_attn.c (under mk-launch -n 1, -n 2, -n 4, -n 4 --nodes 2; _ws0: MK_RING_ATTN_WS=0) — ring
 * attention, fused (mk_ring_attn_fwd) and unfused (NCCL all-gather + flash; skipped without NCCL),
 * against the CPU reference (double accumulation) of the whole sequence: every rank draws the
 * same global Q/K/V (one seed, broadcast), keeps its shard (zigzag rows when causal), and checks
 * every element of its O rows and LSE values: O rel Frobenius error <= 1e-2, LSE abs error <=
 * 1e-3. Cases: S per rank from 1 to 700 with odd lengths, d 64 and 128, GQA 1..8, causal and
 * non-causal, S below the handle's max_s (the slot's rows past S are NaN). Each case runs two
 * input sets one after the other (the second overwrites the shards the first call sent) and then
 * 20 calls back to back (the per-call counters and back-pressure); outputs are poisoned before
 * every checked call. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/mk_comm.h"
#include "kernels/mk_kernels.h"
#include "tests/kernels/attn_ref.h"
#include "tests/mk_test.h"

typedef struct ring_case {
  int s, max_s, d, hq, hkv, causal;
} ring_case;

static const ring_case k_cases[] = {
    {64, 64, 64, 4, 1, 1},    {333, 333, 128, 4, 2, 0}, {700, 700, 128, 8, 2, 1}, {257, 300, 64, 6, 3, 1},
    {129, 129, 64, 8, 1, 0},  {1, 1, 128, 2, 1, 1},     {130, 130, 128, 2, 2, 1},
};

typedef struct ring_io {
  uint16_t *q, *k, *v;   /* this rank's shard, host */
  float *o_ref, *lse_ref; /* [s, hq, d], [hq, s] */
} ring_io;

/* Global inputs from `seed`, this rank's shard and its reference rows. */
static void make_io(const ring_case *c, int rank, int w, uint64_t seed, ring_io *io) {
  const int n = w * c->s;
  const size_t qrow = (size_t)c->hq * c->d, krow = (size_t)c->hkv * c->d;
  uint16_t *gq = malloc((size_t)n * qrow * 2), *gk = malloc((size_t)n * krow * 2), *gv = malloc((size_t)n * krow * 2);
  io->q = malloc((size_t)c->s * qrow * 2), io->k = malloc((size_t)c->s * krow * 2),
  io->v = malloc((size_t)c->s * krow * 2);
  io->o_ref = malloc((size_t)c->s * qrow * 4), io->lse_ref = malloc((size_t)c->hq * c->s * 4);
  ASSERT_TRUE(gq && gk && gv && io->q && io->k && io->v && io->o_ref && io->lse_ref);
  attn_fill_bf16(gq, NULL, (size_t)n * qrow, seed, -2.f, 2.f);
  attn_fill_bf16(gk, NULL, (size_t)n * krow, seed + 1, -2.f, 2.f);
  attn_fill_bf16(gv, NULL, (size_t)n * krow, seed + 2, -1.f, 1.f);
  const int32_t cu[2] = {0, n};
  mk_attn_fwd_args g;
  memset(&g, 0, sizeof g);
  g.q = gq, g.k = gk, g.v = gv, g.cu_seqlens_q = cu, g.cu_seqlens_k = cu, g.batch = 1, g.hq = c->hq, g.hkv = c->hkv;
  g.d = c->d, g.mask = c->causal ? MK_ATTN_MASK_CAUSAL : MK_ATTN_MASK_NONE, g.softmax_scale = 1.0f / sqrtf((float)c->d);
  for (int i = 0; i < c->s; i++) {
    const int64_t pos = mk_ring_attn_position(rank, w, c->s, c->causal, i);
    memcpy(io->q + i * qrow, gq + pos * qrow, qrow * 2);
    memcpy(io->k + i * krow, gk + pos * krow, krow * 2);
    memcpy(io->v + i * krow, gv + pos * krow, krow * 2);
    for (int h = 0; h < c->hq; h++)
      mk_attn_ref_row(&g, 0, h, (int)pos, io->o_ref + i * qrow + (size_t)h * c->d, io->lse_ref + (size_t)h * c->s + i);
  }
  free(gq), free(gk), free(gv);
}

static void free_io(ring_io *io) { free(io->q), free(io->k), free(io->v), free(io->o_ref), free(io->lse_ref); }

/* Poisons o/lse, runs `calls` calls of the path, checks the last. Returns 0 if it passes. */
static int run_path(mk_comm_t *comm, mk_ring_attn_t *ra, mk_nccl_t *nccl, const ring_case *c, const ring_io *io,
                    const mk_ring_attn_args *a, int calls, const char *what, cudaStream_t st) {
  const size_t no = (size_t)c->s * c->hq * c->d, nl = (size_t)c->hq * c->s;
  CUDA_OK(cudaMemsetAsync(a->o, 0xff, no * 2, st));
  CUDA_OK(cudaMemsetAsync(a->lse, 0xff, nl * 4, st));
  CUDA_OK(cudaStreamSynchronize(st));
  ASSERT_OK(mk_comm_barrier(comm)); /* the ranks' CPU references take different times: start together */
  for (int i = 0; i < calls; i++)
    ASSERT_OK(nccl ? mk_ring_attn_unfused(ra, nccl, a, MK_RING_ATTN_GATHER | MK_RING_ATTN_ATTEND, st)
                   : mk_ring_attn_fwd(ra, a, st));
  CUDA_OK(cudaStreamSynchronize(st));
  ASSERT_OK(mk_comm_check(comm));
  uint16_t *o = malloc(no * 2);
  float *lse = malloc(nl * 4);
  ASSERT_TRUE(o && lse);
  CUDA_OK(cudaMemcpy(o, a->o, no * 2, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(lse, a->lse, nl * 4, cudaMemcpyDeviceToHost));
  const int rc = attn_check(what, o, io->o_ref, no, lse, io->lse_ref, nl, 1e-2, 1e-3);
  if (rc) { /* where it went wrong: O's first bits (0xffff: the poison, never written) and the inputs still in place */
    const size_t kb = (size_t)c->s * c->hkv * c->d * 2;
    uint16_t *dk, *dv, *hk = malloc(kb), *hv = malloc(kb);
    ASSERT_TRUE(hk && hv);
    ASSERT_OK(mk_ring_attn_kv(ra, &dk, &dv));
    CUDA_OK(cudaMemcpy(hk, dk, kb, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(hv, dv, kb, cudaMemcpyDeviceToHost));
    printf("  O[0] bits 0x%04x, lse[0] %g; this rank's K shard %s, V shard %s in its slot\n", o[0], (double)lse[0],
           memcmp(hk, io->k, kb) ? "changed" : "intact", memcmp(hv, io->v, kb) ? "changed" : "intact");
    free(hk), free(hv);
  }
  free(o), free(lse);
  return rc;
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 600);
  const char *ws = getenv("WORLD_SIZE");
  mk_test_require_gpus(ws ? atoi(ws) : 1);
  mk_comm_t *comm = NULL;
  ASSERT_OK(mk_comm_create(&comm));
  const mk_world *wd = mk_comm_world(comm);
  const int W = wd->size, rank = wd->rank;
  uint64_t seed = mk_test_seed();
  ASSERT_OK(mk_comm_bcast(comm, &seed, sizeof seed, 0));
  mk_nccl_t *nccl = NULL;
  const mk_status ns = mk_nccl_create(comm, &nccl);
  if (ns == MK_STATUS_UNSUPPORTED)
    printf("rank %d: NCCL not built: the unfused path is not tested\n", rank);
  else
    ASSERT_OK(ns);
  cudaStream_t st;
  CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  int fails = 0;
  for (size_t ci = 0; ci < sizeof k_cases / sizeof k_cases[0]; ci++) {
    const ring_case *c = &k_cases[ci];
    mk_ring_attn_t *ra = NULL;
    ASSERT_OK(mk_ring_attn_create(comm, c->max_s, c->hkv, c->d, &ra));
    uint16_t *dk, *dv, *dq = attn_dev(NULL, (size_t)c->s * c->hq * c->d * 2),
                       *dout = attn_dev(NULL, (size_t)c->s * c->hq * c->d * 2);
    float *dl = attn_dev(NULL, (size_t)c->hq * c->s * 4);
    ASSERT_OK(mk_ring_attn_kv(ra, &dk, &dv));
    mk_ring_attn_args a = {dq, dout, dl, c->s, c->hq, c->causal, 1.0f / sqrtf((float)c->d)};
    for (int set = 0; set < 2; set++) {
      ring_io io;
      make_io(c, rank, W, seed + 10 * ci + 3 * set, &io);
      const size_t kb = (size_t)c->s * c->hkv * c->d * 2;
      CUDA_OK(cudaMemcpyAsync(dq, io.q, (size_t)c->s * c->hq * c->d * 2, cudaMemcpyHostToDevice, st));
      CUDA_OK(cudaMemcpyAsync(dk, io.k, kb, cudaMemcpyHostToDevice, st));
      CUDA_OK(cudaMemcpyAsync(dv, io.v, kb, cudaMemcpyHostToDevice, st));
      if (c->max_s > c->s) { /* the slot's rows past s are NaN: no key past a span may reach O */
        const size_t tail = (size_t)(c->max_s - c->s) * c->hkv * c->d * 2;
        CUDA_OK(cudaMemsetAsync((char *)dk + kb, 0xff, tail, st));
        CUDA_OK(cudaMemsetAsync((char *)dv + kb, 0xff, tail, st));
      }
      char what[160];
      snprintf(what, sizeof what, "rank %d/%d fused   s %d d %d hq %d hkv %d %s set %d", rank, W, c->s, c->d, c->hq,
               c->hkv, c->causal ? "causal" : "full", set);
      fails += run_path(comm, ra, NULL, c, &io, &a, 1, what, st);
      if (set == 1) {
        snprintf(what, sizeof what, "rank %d/%d fused x20 s %d d %d %s", rank, W, c->s, c->d,
                 c->causal ? "causal" : "full");
        fails += run_path(comm, ra, NULL, c, &io, &a, 20, what, st);
      }
      if (nccl) {
        snprintf(what, sizeof what, "rank %d/%d unfused s %d d %d hq %d hkv %d %s set %d", rank, W, c->s, c->d, c->hq,
                 c->hkv, c->causal ? "causal" : "full", set);
        fails += run_path(comm, ra, nccl, c, &io, &a, 1, what, st);
      }
      free_io(&io);
      ASSERT_OK(mk_comm_barrier(comm)); /* every rank's host copies of its next shard wait for this set */
    }
    cudaFree(dq), cudaFree(dout), cudaFree(dl);
    mk_ring_attn_destroy(ra);
  }
  /* Bad arguments are errors with a message. */
  mk_ring_attn_t *bad = NULL;
  ASSERT_STATUS(mk_ring_attn_create(comm, 16, 2, 96, &bad), MK_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS(mk_ring_attn_fwd(NULL, NULL, st), MK_STATUS_INVALID_ARGUMENT);
  mk_nccl_destroy(nccl);
  CUDA_OK(cudaStreamDestroy(st));
  mk_comm_destroy(comm);
  ASSERT_EQ(fails, 0);
  printf("ok\n");
  return 0;
}
