/* proxy.h — internal to comm/: the GPU -> proxy FIFO (host side), the transport function
 * table, the proxy thread, and the loopback transport. Host C; no CUDA C++.
 *
 * FIFO memory: slots[capacity] and tail in host memory (pinned + mapped when a GPU
 * produces), head in device memory (GPU producer, atomicAdd) or host memory (CPU producer,
 * the stress test). Only producers touch head; only the proxy writes tail. */
#ifndef MK_COMM_PROXY_H
#define MK_COMM_PROXY_H

#include "comm/mk_comm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- FIFO ------------------------------------------------------------------------------ */
typedef struct mk_fifo {
  mk_fifo_cmd *slots; /* host */
  uint64_t *tail;     /* host */
  uint64_t *head;     /* device (on_gpu) or host */
  uint64_t capacity;  /* power of two */
  int on_gpu;
} mk_fifo;

/* on_gpu: slots/tail pinned+mapped, head cudaMalloc'ed (current device); else plain memory. */
mk_status mk_fifo_create(uint64_t capacity, int on_gpu, mk_fifo **out);
void mk_fifo_destroy(mk_fifo *f);
/* The device view (device pointers of the mapped memory). */
mk_status mk_fifo_dev(const mk_fifo *f, mk_dev_fifo *out);
/* A CPU producer (the same protocol as mk_post in mk_device.cuh); spins while the FIFO is
 * full, up to timeout_ms (MK_STATUS_TIMEOUT). */
mk_status mk_fifo_host_post(mk_fifo *f, const mk_fifo_cmd *cmd, int64_t timeout_ms);

/* ---- transports ------------------------------------------------------------------------ */
typedef struct mk_transport {
  const char *name;
  void *ctx;
  /* Start one command; commands run in posting order per destination (a signal never
   * overtakes earlier data). A bad command (rank, offset, size) is MK_STATUS_INVALID_ARGUMENT. */
  mk_status (*post)(void *ctx, const mk_fifo_cmd *cmd);
  /* End of a batch (ring doorbells, record completion markers). */
  mk_status (*flush)(void *ctx);
  /* How many posted commands have completed (monotone). */
  mk_status (*progress)(void *ctx, uint64_t *completed);
  void (*destroy)(void *ctx);
} mk_transport;

/* Checks a command every transport runs first: a known op, a reachable destination, the put
 * inside both heaps (src_bytes here, dst_bytes at dst_rank), an aligned counter inside the
 * destination heap. MK_STATUS_INVALID_ARGUMENT with a message naming transport and rank.
 * *data / *sig: whether the command carries data / a signal. */
mk_status mk_cmd_check(const char *tname, int self, int nranks, int reachable, uint64_t src_bytes, uint64_t dst_bytes,
                       const mk_fifo_cmd *c, int *data, int *sig);
int64_t mk_now_ms(void); /* CLOCK_MONOTONIC */

/* Loopback: every rank's heap is mapped here (bases[r], NULL for ranks it cannot reach).
 * on_gpu: cudaMemcpyAsync on its own stream + a one-thread signal kernel; else memcpy and an
 * atomic add (host heaps, for CPU tests). Shaping from MK_LOOPBACK_GBPS / MK_LOOPBACK_LAT_US. */
mk_status mk_loopback_create(int self, int nranks, char *const *bases, uint64_t heap_bytes, int on_gpu,
                             mk_transport *out);

/* RDMA transports (MK_HAVE_VERBS / MK_HAVE_EFA builds; see transport_ib.c and transport_efa.c
 * for the protocols). Collective over the bootstrap: every rank calls it; the peers are the
 * ranks of other node groups; a failure on any rank fails it on every rank. heap: this rank's
 * symmetric heap (device memory when on_gpu, else host memory). */
mk_status mk_ib_create(mk_bootstrap_t *bs, const mk_world *w, char *heap, uint64_t heap_bytes, int on_gpu,
                       mk_transport *out);
mk_status mk_efa_create(mk_bootstrap_t *bs, const mk_world *w, char *heap, uint64_t heap_bytes, int on_gpu,
                        mk_transport *out);

/* ---- proxy ----------------------------------------------------------------------------- */
typedef void (*mk_proxy_error_fn)(void *user, mk_status st, const mk_fifo_cmd *cmd);
typedef struct mk_proxy mk_proxy_t;

/* Starts the thread (device >= 0: it calls cudaSetDevice(device) first). It owns tr. */
mk_status mk_proxy_create(mk_fifo *f, mk_transport tr, int device, mk_proxy_error_fn on_error, void *user,
                          mk_proxy_t **out);
/* Status of the thread: OK, or the transport error that stopped it. */
mk_status mk_proxy_status(const mk_proxy_t *p);
/* Commands executed and completed so far. */
uint64_t mk_proxy_completed(const mk_proxy_t *p);
/* Finishes every committed command, waits for completion (bounded), stops, frees. */
void mk_proxy_destroy(mk_proxy_t *p);

/* MK_TIMEOUT_MS (comm.c): the bound on every device wait and proxy drain. */
int64_t mk_param_timeout_ms(void);

/* ---- tiny kernels (comm_kernels.cu) ---------------------------------------------------- */
mk_status mk_comm_launch_signal_add(uint64_t *counter, uint64_t add, void *stream);
/* Up to MK_SIGNAL_BATCH signals in one one-CTA kernel (passed by value: 2 KB of parameters),
 * each as mk_comm_launch_signal_add's; n = 0 launches nothing. */
enum { MK_SIGNAL_BATCH = 128 };
typedef struct mk_signal_batch {
  uint64_t *counter[MK_SIGNAL_BATCH];
  uint64_t add[MK_SIGNAL_BATCH];
  int n;
} mk_signal_batch;
mk_status mk_comm_launch_signal_batch(const mk_signal_batch *b, void *stream);
mk_status mk_comm_launch_epoch_advance(uint64_t *epoch, void *stream);
/* Load both kernels now (lazy module loading would otherwise load them at a first launch
 * that may wait behind a kernel spinning on the proxy: a deadlock). scratch: a device u64. */
mk_status mk_comm_preload_kernels(uint64_t *scratch);

#ifdef __cplusplus
}
#endif
#endif /* MK_COMM_PROXY_H */
