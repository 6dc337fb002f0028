/* comm_kernels.cu — the two one-thread kernels of the host side of comm/: the loopback
 * transport's stream-ordered signal (an add after the copy on the same stream) and the epoch
 * advance after an op.
 * Lazy loading: with CUDA_MODULE_LOADING=LAZY (the default) a kernel's module is loaded at
 * its first launch, and loading waits for running kernels — a deadlock when a running kernel
 * waits for the proxy's first signal kernel. mk_comm_preload_kernels loads both at setup. */
#include <cuda_runtime.h>

#include "comm/proxy.h"
#include "core/check.h"

__global__ void mk_signal_add_kernel(unsigned long long *counter, unsigned long long add) {
  __threadfence_system();
  atomicAdd_system(counter, add);
  __threadfence_system();
}

__global__ void mk_epoch_advance_kernel(unsigned long long *epoch) { *epoch += 1; }

/* Thread i adds b.add[i] to b.counter[i] (the loopback transport's signals of one batch). */
__global__ void mk_signal_add_batch_kernel(mk_signal_batch b) {
  const int i = (int)threadIdx.x;
  __threadfence_system();
  if (i < b.n) atomicAdd_system((unsigned long long *)b.counter[i], (unsigned long long)b.add[i]);
  __threadfence_system();
}

extern "C" mk_status mk_comm_launch_signal_add(uint64_t *counter, uint64_t add, void *stream) {
  mk_signal_add_kernel<<<1, 1, 0, (cudaStream_t)stream>>>((unsigned long long *)counter, add);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_comm_launch_signal_batch(const mk_signal_batch *b, void *stream) {
  if (!b || b->n < 0 || b->n > MK_SIGNAL_BATCH) return MK_STATUS_INVALID_ARGUMENT;
  if (b->n == 0) return MK_STATUS_OK;
  mk_signal_add_batch_kernel<<<1, MK_SIGNAL_BATCH, 0, (cudaStream_t)stream>>>(*b);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_comm_launch_epoch_advance(uint64_t *epoch, void *stream) {
  mk_epoch_advance_kernel<<<1, 1, 0, (cudaStream_t)stream>>>((unsigned long long *)epoch);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_comm_preload_kernels(uint64_t *scratch) {
  cudaFuncAttributes a;
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_signal_add_kernel));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_epoch_advance_kernel));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_signal_add_batch_kernel));
  mk_signal_add_kernel<<<1, 1>>>((unsigned long long *)scratch, 0ull); /* adds nothing */
  MK_CUDA_LAUNCH_CHECK();
  MK_CUDA_CHECK(cudaDeviceSynchronize());
  return MK_STATUS_OK;
}
