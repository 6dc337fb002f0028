/* test_comm_timeout.cu (multigpu, under mk-launch -n 4, MK_TIMEOUT_MS=2000) — a peer that
 * never signals: on every rank the waiting kernel (8 CTAs waiting on the same silent peer)
 * returns within MK_TIMEOUT_MS + 1 s, mk_comm_check says MK_STATUS_TIMEOUT and prints the
 * record (op, rank, peer, tile, expected, seen), the record names this rank and the silent
 * peer; after mk_comm_clear_error the comm works again (a ring of signals round-trips). */
#include <cuda_runtime.h>
#include <stdio.h>
#include <time.h>

#include "comm/mk_comm.h"
#include "comm/mk_device.cuh"
#include "tests/mk_test.h"

/* Wait for a signal from `from` that nobody sends; every CTA waits (only one may win the record). */
__global__ void wait_silent(mk_dev_world w, uint64_t sig, int from, int *left) {
  if (!mk_wait_ge_cta(w, sig + 8ull * from, 1, MK_OP_TEST, from, blockIdx.x) && threadIdx.x == 0) atomicAdd(left, 1);
}

/* Ring: signal the next rank (on its counter for us), wait for the previous one. */
__global__ void ring(mk_dev_world w, uint64_t sig, uint64_t target, int *fail) {
  const int next = (w.rank + 1) % w.size, prev = (w.rank + w.size - 1) % w.size;
  if (threadIdx.x == 0) mk_signal_add(w, next % w.local_size, sig + 8ull * w.rank, 1);
  if (!mk_wait_ge_cta(w, sig + 8ull * prev, target, MK_OP_TEST, prev, 0) && threadIdx.x == 0) atomicAdd(fail, 1);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 60);
  mk_test_require_gpus(4);
  mk_comm_t *c = NULL;
  ASSERT_OK(mk_comm_create(&c));
  const mk_world *wd = mk_comm_world(c);
  ASSERT_EQ(wd->nnodes, 1);
  uint64_t sig;
  ASSERT_OK(mk_comm_heap_alloc(c, 8ull * wd->size, &sig));
  mk_dev_world w;
  ASSERT_OK(mk_comm_dev_world(c, &w));
  const double limit = w.timeout_ns * 1e-9 + 1.0;
  int *left;
  CUDA_OK(cudaMalloc(&left, sizeof *left));
  CUDA_OK(cudaMemset(left, 0, sizeof *left));
  const int silent = (wd->rank + 1) % wd->size;
  ASSERT_OK(mk_comm_barrier(c));
  double t0 = now_s();
  wait_silent<<<8, 128>>>(w, sig, silent, left);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  mk_status st = mk_comm_check(c);
  double dt = now_s() - t0;
  printf("rank %d: waiting on silent rank %d returned %s after %.2f s (limit %.2f s)\n", wd->rank, silent,
         mk_status_name(st), dt, limit);
  ASSERT_STATUS(st, MK_STATUS_TIMEOUT);
  ASSERT_DBL_LE(dt, limit);
  int h_left = 0;
  CUDA_OK(cudaMemcpy(&h_left, left, sizeof h_left, cudaMemcpyDeviceToHost));
  ASSERT_EQ(h_left, 8); /* every CTA left */
  mk_heap_ctrl ctrl;
  CUDA_OK(cudaMemcpy(&ctrl, mk_comm_heap_ptr(c, 0), sizeof ctrl, cudaMemcpyDeviceToHost));
  ASSERT_EQ(ctrl.rec.valid, 1);
  ASSERT_EQ(ctrl.rec.rank, wd->rank);
  ASSERT_EQ(ctrl.rec.peer, silent);
  ASSERT_UEQ(ctrl.rec.expected, 1);
  ASSERT_UEQ(ctrl.rec.seen, 0);
  /* Still usable. */
  ASSERT_OK(mk_comm_clear_error(c));
  ASSERT_OK(mk_comm_check(c));
  CUDA_OK(cudaMemset(left, 0, sizeof *left));
  for (int r = 1; r <= 10; r++) ring<<<1, 64>>>(w, sig, (uint64_t)r, left);
  CUDA_OK(cudaDeviceSynchronize());
  ASSERT_OK(mk_comm_check(c));
  CUDA_OK(cudaMemcpy(&h_left, left, sizeof h_left, cudaMemcpyDeviceToHost));
  ASSERT_EQ(h_left, 0);
  printf("rank %d: after clear_error, 10 ring rounds ok\n", wd->rank);
  mk_comm_destroy(c);
  printf("ok\n");
  return 0;
}
