/* fifo.c — the GPU -> proxy command FIFO, host side (protocol in mk_device.cuh and proxy.h):
 * allocation in mapped host memory + a device head, and a CPU producer with the same
 * claim / back-pressure / commit steps as the device's mk_post. */
#include <cuda_runtime_api.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/proxy.h"
#include "core/check.h"

mk_status mk_fifo_create(uint64_t capacity, int on_gpu, mk_fifo **out) {
  if (!out || capacity < 2 || (capacity & (capacity - 1)))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_PROXY, "fifo: capacity %llu is not a power of two >= 2",
                  (unsigned long long)capacity);
  *out = NULL;
  mk_status st = MK_STATUS_OK;
  mk_fifo *f = calloc(1, sizeof *f);
  if (!f) return MK_STATUS_OUT_OF_MEMORY;
  f->capacity = capacity;
  f->on_gpu = on_gpu;
  size_t bytes = capacity * sizeof(mk_fifo_cmd) + 64; /* tail on its own line after the slots */
  if (on_gpu) {
    void *h = NULL;
    MK_CUDA_CHECK_GOTO(cudaHostAlloc(&h, bytes, cudaHostAllocMapped | cudaHostAllocPortable), st, fail);
    f->slots = h;
    MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&f->head, 64), st, fail);
    MK_CUDA_CHECK_GOTO(cudaMemset(f->head, 0, 64), st, fail);
    MK_CUDA_CHECK_GOTO(cudaDeviceSynchronize(), st, fail); /* the memset (legacy stream) before any kernel posts */
  } else {
    f->slots = aligned_alloc(64, bytes);
    f->head = aligned_alloc(64, 64);
    if (!f->slots || !f->head) {
      st = MK_STATUS_OUT_OF_MEMORY;
      goto fail;
    }
    *f->head = 0;
  }
  memset(f->slots, 0, bytes);
  f->tail = (uint64_t *)(f->slots + capacity);
  *out = f;
  return MK_STATUS_OK;
fail:
  mk_fifo_destroy(f);
  return st;
}

void mk_fifo_destroy(mk_fifo *f) {
  if (!f) return;
  if (f->on_gpu) {
    if (f->slots) cudaFreeHost(f->slots);
    if (f->head) cudaFree(f->head);
  } else {
    free(f->slots);
    free(f->head);
  }
  free(f);
}

mk_status mk_fifo_dev(const mk_fifo *f, mk_dev_fifo *out) {
  memset(out, 0, sizeof *out);
  if (!f) return MK_STATUS_OK;
  if (!f->on_gpu) MK_ERR_RETURN(MK_STATUS_INVALID_USAGE, MK_SUBSYS_PROXY, "fifo: a host FIFO has no device view");
  void *d = NULL;
  MK_CUDA_CHECK(cudaHostGetDevicePointer(&d, f->slots, 0));
  out->slots = d;
  out->tail = (const uint64_t *)((mk_fifo_cmd *)d + f->capacity);
  out->head = f->head;
  out->capacity = f->capacity;
  return MK_STATUS_OK;
}

mk_status mk_fifo_host_post(mk_fifo *f, const mk_fifo_cmd *cmd, int64_t timeout_ms) {
  if (f->on_gpu) MK_ERR_RETURN(MK_STATUS_INVALID_USAGE, MK_SUBSYS_PROXY, "fifo: host post on a GPU FIFO");
  const uint64_t idx = __atomic_fetch_add(f->head, 1, __ATOMIC_RELAXED);
  if (idx >= __atomic_load_n(f->tail, __ATOMIC_ACQUIRE) + f->capacity) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned it = 1; idx >= __atomic_load_n(f->tail, __ATOMIC_ACQUIRE) + f->capacity; it++) {
      if ((it & 63) == 0) sched_yield();
      if ((it & 1023) == 0) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > timeout_ms)
          MK_ERR_RETURN(MK_STATUS_TIMEOUT, MK_SUBSYS_PROXY, "fifo: no free slot for command %llu after %lld ms",
                        (unsigned long long)idx, (long long)timeout_ms);
      }
    }
  }
  mk_fifo_cmd *c = &f->slots[idx & (f->capacity - 1)];
  mk_fifo_cmd tmp = *cmd;
  tmp.seq = 0;
  memcpy(c, &tmp, offsetof(mk_fifo_cmd, seq));
  __atomic_store_n(&c->seq, idx + 1, __ATOMIC_RELEASE);
  return MK_STATUS_OK;
}
