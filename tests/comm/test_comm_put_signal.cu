/* test_comm_put_signal.cu (multigpu, under mk-launch -n 4 [--nodes 2]) — all-pairs put +
 * signal, 1000 back-to-back rounds (one launch each, no host sync between them) and 200
 * replays of a captured CUDA graph: every rank sends every rank (itself included) a fresh
 * 256 KiB pattern per round and checks every element it receives once the sender's
 * signal has arrived — a stale flag (a signal seen before its round's data) fails.
 * Peers of the own node group are reached over NVLink (SM warp copy, SM CTA copy and TMA
 * bulk copy in turn); peers of other node groups through the FIFO and the loopback proxy.
 *
 * Heap layout (offsets, same on every rank):
 *   stage[2][W][ELEMS] u32   what this rank sends to d in rounds of parity p
 *   recv[2][W][ELEMS]  u32   what s sent this rank
 *   sig[W]             u64   sig[s]: rounds received from s; only s adds (+1 after its data)
 * Double buffering is enough: a rank writes round r+2 into recv(p) of d only after it has
 * received d's round r+1, which d sent after checking round r. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <time.h>

#include "comm/mk_comm.h"
#include "comm/mk_device.cuh"
#include "core/rng.h"
#include "tests/mk_test.h"

enum { ELEMS = 64 * 1024, ROUNDS = 1000, REPLAYS = 200, THREADS = 256, TMA_CHUNK = 8192, TMA_STAGES = 4, SLOT = 0 };

struct layout {
  uint64_t stage, recv, sig;
  int w;
  __host__ __device__ uint64_t stage_off(int p, int d) const { return stage + ((uint64_t)(p * w + d) * ELEMS) * 4; }
  __host__ __device__ uint64_t recv_off(int p, int s) const { return recv + ((uint64_t)(p * w + s) * ELEMS) * 4; }
  __host__ __device__ uint64_t sig_off(int s) const { return sig + (uint64_t)s * 8; }
};

__device__ __forceinline__ uint32_t pattern(uint64_t seed, int src, int dst, uint64_t round, uint32_t i) {
  return (uint32_t)mk_rng_hash(seed ^ ((uint64_t)src << 56) ^ ((uint64_t)dst << 48) ^ (round << 20), i);
}

__global__ void round_kernel(mk_dev_world w, layout L, uint64_t seed, unsigned long long *errors, int *post_fail) {
  extern __shared__ __align__(128) char smem[];
  __shared__ uint64_t bars[TMA_STAGES];
  const int d = blockIdx.x; /* send to d, then receive from s = d */
  const uint64_t round = mk_epoch(w, SLOT) + 1;
  const int par = (int)(round & 1);
  uint32_t *stage = mk_local_ptr<uint32_t>(w, L.stage_off(par, d));
  for (uint32_t i = threadIdx.x; i < ELEMS; i += blockDim.x) stage[i] = pattern(seed, w.rank, d, round, i);
  __syncthreads();
  const int d_node = d / w.local_size;
  if (d_node == w.node) {
    const int lp = d % w.local_size;
    char *dst = mk_peer_ptr(w, lp, L.recv_off(par, w.rank));
    switch (round % 3) {
      case 0:
        if (threadIdx.x < 32) mk_copy_warp(dst, stage, ELEMS * 4);
        __syncthreads();
        break;
      case 1:
        mk_copy_cta(dst, stage, ELEMS * 4);
        __syncthreads();
        break;
      default:
        mk_copy_tma_cta(dst, stage, ELEMS * 4, smem, TMA_CHUNK, TMA_STAGES, bars);
        break;
    }
    if (threadIdx.x == 0) mk_signal_add(w, lp, L.sig_off(w.rank), 1);
  } else if (threadIdx.x == 0) {
    __threadfence_system();
    if (!mk_post(w, MK_CMD_PUT_SIGNAL, d, L.stage_off(par, d), L.recv_off(par, w.rank), ELEMS * 4, L.sig_off(w.rank), 1))
      atomicAdd(post_fail, 1);
  }
  const int s = d;
  if (!mk_wait_ge_cta(w, L.sig_off(s), round, MK_OP_TEST, s, (int)round)) return;
  const uint32_t *got = mk_local_ptr<const uint32_t>(w, L.recv_off(par, s));
  unsigned long long bad = 0;
  for (uint32_t i = threadIdx.x; i < ELEMS; i += blockDim.x) bad += got[i] != pattern(seed, s, w.rank, round, i);
  if (bad) atomicAdd(errors, bad);
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 240);
  mk_test_require_gpus(4);
  mk_comm_t *c = NULL;
  ASSERT_OK(mk_comm_create(&c));
  const mk_world *wd = mk_comm_world(c);
  const int W = wd->size;
  uint64_t seed = mk_test_seed();
  ASSERT_OK(mk_comm_bcast(c, &seed, sizeof seed, 0)); /* one seed for all ranks */
  layout L;
  L.w = W;
  ASSERT_OK(mk_comm_heap_alloc(c, 2ull * W * ELEMS * 4, &L.stage));
  ASSERT_OK(mk_comm_heap_alloc(c, 2ull * W * ELEMS * 4, &L.recv));
  ASSERT_OK(mk_comm_heap_alloc(c, 8ull * W, &L.sig));
  /* The same offsets on every rank. */
  uint64_t mine[3] = {L.stage, L.recv, L.sig}, *all = (uint64_t *)calloc((size_t)W * 3, 8);
  ASSERT_OK(mk_comm_allgather(c, mine, all, sizeof mine));
  for (int r = 0; r < W; r++)
    for (int k = 0; k < 3; k++) ASSERT_UEQ(all[r * 3 + k], mine[k]);
  mk_dev_world w;
  ASSERT_OK(mk_comm_dev_world(c, &w));
  printf("rank %d: node group %d of %d, local %d of %d, FIFO %s\n", w.rank, w.node, w.nnodes, w.local_rank,
         w.local_size, w.fifo.capacity ? "on (loopback proxy)" : "off");
  unsigned long long *errors;
  int *post_fail;
  CUDA_OK(cudaMalloc(&errors, sizeof *errors));
  CUDA_OK(cudaMalloc(&post_fail, sizeof *post_fail));
  CUDA_OK(cudaMemset(errors, 0, sizeof *errors));
  CUDA_OK(cudaMemset(post_fail, 0, sizeof *post_fail));
  CUDA_OK(cudaDeviceSynchronize()); /* the memsets (legacy stream) before the rounds on a non-blocking stream */
  const size_t smem = (size_t)TMA_CHUNK * TMA_STAGES;
  CUDA_OK(cudaFuncSetAttribute(round_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  cudaStream_t st;
  CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  ASSERT_OK(mk_comm_barrier(c));
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  /* At most WINDOW rounds queued (their launches wait on each other across ranks; a full
   * launch queue would block this thread), else back to back. */
  enum { WINDOW = 128 };
  cudaEvent_t ev[ROUNDS / WINDOW + 1];
  for (int r = 0; r < ROUNDS; r++) {
    if (r % WINDOW == 0) {
      CUDA_OK(cudaEventCreateWithFlags(&ev[r / WINDOW], cudaEventDisableTiming));
      CUDA_OK(cudaEventRecord(ev[r / WINDOW], st));
      if (r >= 2 * WINDOW) CUDA_OK(cudaEventSynchronize(ev[r / WINDOW - 1]));
    }
    round_kernel<<<W, THREADS, smem, st>>>(w, L, seed, errors, post_fail);
    CUDA_OK(cudaGetLastError());
    ASSERT_OK(mk_comm_epoch_advance(c, SLOT, st));
  }
  CUDA_OK(cudaStreamSynchronize(st));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  for (int i = 0; i <= (ROUNDS - 1) / WINDOW; i++) CUDA_OK(cudaEventDestroy(ev[i]));
  ASSERT_OK(mk_comm_check(c));
  unsigned long long h_err = 1;
  int h_pf = 1;
  CUDA_OK(cudaMemcpy(&h_err, errors, sizeof h_err, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(&h_pf, post_fail, sizeof h_pf, cudaMemcpyDeviceToHost));
  printf("rank %d: %d rounds in %.1f ms: %llu wrong elements, %d failed posts\n", w.rank, ROUNDS,
         (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6, h_err, h_pf);
  ASSERT_EQ(h_err, 0);
  ASSERT_EQ(h_pf, 0);
  /* Graph replays: the epoch lives in device memory, so one captured round replays correctly. */
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CUDA_OK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  round_kernel<<<W, THREADS, smem, st>>>(w, L, seed, errors, post_fail);
  ASSERT_OK(mk_comm_epoch_advance(c, SLOT, st));
  CUDA_OK(cudaStreamEndCapture(st, &g));
  CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
  for (int r = 0; r < REPLAYS; r++) CUDA_OK(cudaGraphLaunch(ge, st));
  CUDA_OK(cudaStreamSynchronize(st));
  ASSERT_OK(mk_comm_check(c));
  CUDA_OK(cudaMemcpy(&h_err, errors, sizeof h_err, cudaMemcpyDeviceToHost));
  printf("rank %d: %d graph replays: %llu wrong elements\n", w.rank, REPLAYS, h_err);
  ASSERT_EQ(h_err, 0);
  /* Every counter counts every round exactly once. */
  uint64_t *sig = (uint64_t *)calloc((size_t)W, 8);
  CUDA_OK(cudaMemcpy(sig, mk_comm_heap_ptr(c, L.sig), 8ull * W, cudaMemcpyDeviceToHost));
  for (int s = 0; s < W; s++) ASSERT_UEQ(sig[s], ROUNDS + REPLAYS);
  CUDA_OK(cudaGraphExecDestroy(ge));
  CUDA_OK(cudaGraphDestroy(g));
  CUDA_OK(cudaStreamDestroy(st));
  mk_comm_destroy(c);
  printf("ok\n");
  return 0;
}
