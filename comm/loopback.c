/* loopback.c — the NIC-less inter-node transport: the sending rank's proxy executes a put
 * as a copy from its own heap into the destination's heap, which this process has mapped
 * (CUDA IPC) for the transport only; kernels never see that mapping.
 *
 *   GPU heaps:  PUT        cudaMemcpyAsync(dst heap + dst_off <- own heap + src_off) on the
 *                          proxy's own non-blocking stream
 *               SIGNAL     atomicAdd_system on the counter in the destination's heap (the
 *                          counter's owner is the waiting rank; every sender only adds), by
 *                          a kernel on the same stream. MK_LOOPBACK_SIG_BATCH = 1 (default):
 *                          the signals of a batch wait in a list and one kernel adds them all
 *                          at flush (or when MK_SIGNAL_BATCH are waiting), after the batch's
 *                          copies; 0: a one-thread kernel per signal, right after its copy.
 *                          Stream order puts a signal after its copy either way, so it never
 *                          overtakes its data. A kernel launch between two copies costs the
 *                          proxy's stream a switch between copy engine and SMs; at 2 x 4 a
 *                          proxied put took >= ~38 us (mk-bench comm) and the fused MoE sends
 *                          ~1000 commands a call (docs/perf/NOTES.md, session 19).
 *               flush      launches the waiting signals, then records an event per batch;
 *                          progress = the last finished batch.
 *   host heaps: memcpy, then __atomic_fetch_add(release) — for CPU tests; with
 *               MK_LOOPBACK_SIG_BATCH the adds wait in the same list until flush (a command
 *               completes once flushed), so CPU tests run the batching too.
 * Shaping (emulate a NIC): MK_LOOPBACK_GBPS paces the data (GB/s, 0 = off) and
 * MK_LOOPBACK_LAT_US delays each command; the proxy thread waits before issuing.
 * Note: the signal kernel needs a free SM slot: a persistent kernel that wants proxied
 * signals must leave room for a one-thread CTA (no stream memop can add on the device). */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/proxy.h"
#include "core/check.h"

MK_PARAM_INT(loopback_gbps, "LOOPBACK_GBPS", 0, 0, 100000)
MK_PARAM_INT(loopback_lat_us, "LOOPBACK_LAT_US", 0, 0, 10000000)
MK_PARAM_INT(loopback_sig_batch, "LOOPBACK_SIG_BATCH", 1, 0, 1)

enum { RING = 128 };

typedef struct loopback {
  int self, nranks, on_gpu;
  char **bases;
  uint64_t heap_bytes;
  cudaStream_t stream;
  cudaEvent_t ev[RING];
  uint64_t ev_count[RING]; /* posted count when ev[i] was recorded */
  unsigned ev_head, ev_len;
  uint64_t posted, completed, flushed;
  double gbps, lat_ns, next_ns; /* shaping */
  int sig_batch;                /* MK_LOOPBACK_SIG_BATCH */
  mk_signal_batch sigs;         /* signals posted since the last launch (sig_batch) */
} loopback;

/* The waiting signals, after every copy posted so far: one kernel on the proxy's stream, or the
 * host adds in order. */
static mk_status lb_launch_signals(loopback *l) {
  if (!l->sigs.n) return MK_STATUS_OK;
  mk_status st = MK_STATUS_OK;
  if (l->on_gpu) {
    st = mk_comm_launch_signal_batch(&l->sigs, l->stream);
  } else {
    for (int i = 0; i < l->sigs.n; i++) __atomic_fetch_add(l->sigs.counter[i], l->sigs.add[i], __ATOMIC_RELEASE);
  }
  l->sigs.n = 0;
  return st;
}

/* A signal: now (MK_LOOPBACK_SIG_BATCH=0), or into the list (launched first when it is full). */
static mk_status lb_signal(loopback *l, uint64_t *counter, uint64_t add) {
  if (!l->sig_batch) {
    if (l->on_gpu) return mk_comm_launch_signal_add(counter, add, l->stream);
    __atomic_fetch_add(counter, add, __ATOMIC_RELEASE);
    return MK_STATUS_OK;
  }
  if (l->sigs.n == MK_SIGNAL_BATCH) MK_CHECK(lb_launch_signals(l));
  l->sigs.counter[l->sigs.n] = counter;
  l->sigs.add[l->sigs.n++] = add;
  return MK_STATUS_OK;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static mk_status lb_post(void *ctx, const mk_fifo_cmd *c) {
  loopback *l = ctx;
  int data, sig;
  const int reach = c->dst_rank >= 0 && c->dst_rank < l->nranks && l->bases[c->dst_rank];
  MK_CHECK(mk_cmd_check("loopback", l->self, l->nranks, reach, l->heap_bytes, l->heap_bytes, c, &data, &sig));
  if (l->gbps > 0 || l->lat_ns > 0) { /* pace: this command may start no earlier than next_ns */
    double t = now_ns(), start = t > l->next_ns ? t : l->next_ns;
    double done = start + l->lat_ns + (data && l->gbps > 0 ? (double)c->bytes / l->gbps : 0);
    while (now_ns() < done) {
    }
    l->next_ns = done;
  }
  char *dst = l->bases[c->dst_rank], *src = l->bases[l->self];
  if (l->on_gpu) {
    if (data && c->bytes)
      MK_CUDA_CHECK(cudaMemcpyAsync(dst + c->dst_off, src + c->src_off, c->bytes, cudaMemcpyDeviceToDevice, l->stream));
  } else if (data && c->bytes) {
    memcpy(dst + c->dst_off, src + c->src_off, c->bytes);
  }
  if (sig) MK_CHECK(lb_signal(l, (uint64_t *)(dst + c->sig_off), c->sig_add));
  l->posted++;
  if (!l->on_gpu && !l->sigs.n) l->completed = l->posted; /* host: done unless a signal waits for flush */
  return MK_STATUS_OK;
}

static mk_status lb_progress(void *ctx, uint64_t *completed) {
  loopback *l = ctx;
  while (l->on_gpu && l->ev_len) {
    cudaError_t e = cudaEventQuery(l->ev[l->ev_head]);
    if (e == cudaErrorNotReady) break;
    MK_CUDA_CHECK(e);
    l->completed = l->ev_count[l->ev_head];
    l->ev_head = (l->ev_head + 1) % RING;
    l->ev_len--;
  }
  *completed = l->completed;
  return MK_STATUS_OK;
}

static mk_status lb_flush(void *ctx) {
  loopback *l = ctx;
  if (l->flushed == l->posted) return MK_STATUS_OK;
  MK_CHECK(lb_launch_signals(l));
  if (!l->on_gpu) {
    l->completed = l->flushed = l->posted;
    return MK_STATUS_OK;
  }
  if (l->ev_len == RING) { /* the oldest batch must finish first */
    MK_CUDA_CHECK(cudaEventSynchronize(l->ev[l->ev_head]));
    uint64_t dummy;
    MK_CHECK(lb_progress(l, &dummy));
  }
  unsigned i = (l->ev_head + l->ev_len) % RING;
  MK_CUDA_CHECK(cudaEventRecord(l->ev[i], l->stream));
  l->ev_count[i] = l->posted;
  l->ev_len++;
  l->flushed = l->posted;
  return MK_STATUS_OK;
}

static void lb_destroy(void *ctx) {
  loopback *l = ctx;
  if (!l) return;
  if (l->on_gpu) {
    if (l->stream) cudaStreamSynchronize(l->stream);
    for (int i = 0; i < RING; i++)
      if (l->ev[i]) cudaEventDestroy(l->ev[i]);
    if (l->stream) cudaStreamDestroy(l->stream);
  }
  free(l->bases);
  free(l);
}

mk_status mk_loopback_create(int self, int nranks, char *const *bases, uint64_t heap_bytes, int on_gpu,
                             mk_transport *out) {
  memset(out, 0, sizeof *out);
  mk_status st = MK_STATUS_OK;
  loopback *l = calloc(1, sizeof *l);
  if (!l) return MK_STATUS_OUT_OF_MEMORY;
  l->bases = malloc(sizeof(char *) * (size_t)nranks);
  if (!l->bases) {
    free(l);
    return MK_STATUS_OUT_OF_MEMORY;
  }
  memcpy(l->bases, bases, sizeof(char *) * (size_t)nranks);
  l->self = self;
  l->nranks = nranks;
  l->on_gpu = on_gpu;
  l->heap_bytes = heap_bytes;
  l->gbps = (double)mk_param_loopback_gbps(); /* GB/s == bytes per ns */
  l->lat_ns = (double)mk_param_loopback_lat_us() * 1e3;
  l->sig_batch = (int)mk_param_loopback_sig_batch();
  if (on_gpu) {
    int lo = 0, hi = 0;
    MK_CUDA_CHECK_GOTO(cudaDeviceGetStreamPriorityRange(&lo, &hi), st, fail);
    MK_CUDA_CHECK_GOTO(cudaStreamCreateWithPriority(&l->stream, cudaStreamNonBlocking, hi), st, fail);
    for (int i = 0; i < RING; i++)
      MK_CUDA_CHECK_GOTO(cudaEventCreateWithFlags(&l->ev[i], cudaEventDisableTiming), st, fail);
  }
  *out = (mk_transport){"loopback", l, lb_post, lb_flush, lb_progress, lb_destroy};
  return MK_STATUS_OK;
fail:
  lb_destroy(l);
  return st;
}
