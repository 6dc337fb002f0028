/* proxy.c — one proxy thread per GPU: polls the FIFO in order, posts each command to the
 * transport, batches (flush after up to MK_PROXY_BATCH commands or when the FIFO is empty),
 * tracks completions, and stops cleanly.
 *
 * Order: slot tail is read only once its seq == tail + 1 (acquire); the command is copied
 * out, then tail + 1 is published (release), freeing the slot for producers. Commands are
 * posted in FIFO order, so per destination a signal follows its data.
 * Errors: a transport error stops the thread; on_error (which raises the device abort flag
 * and writes the error record) is called once, and mk_proxy_status returns the status.
 * Shutdown: destroy sets stop; the thread executes every committed command first, then
 * waits (bounded by MK_TIMEOUT_MS) for the transport to complete them. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "comm/proxy.h"
#include "core/check.h"

MK_PARAM_INT(proxy_batch, "PROXY_BATCH", 32, 1, 4096)

struct mk_proxy {
  mk_fifo *f;
  mk_transport tr;
  int device;
  mk_proxy_error_fn on_error;
  void *user;
  pthread_t thread;
  int stop;             /* atomic */
  int status;           /* atomic mk_status */
  uint64_t posted;      /* thread only */
  uint64_t completed;   /* atomic */
};

int64_t mk_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

mk_status mk_cmd_check(const char *tname, int self, int nranks, int reachable, uint64_t src_bytes, uint64_t dst_bytes,
                       const mk_fifo_cmd *c, int *data, int *sig) {
  *data = c->op == MK_CMD_PUT || c->op == MK_CMD_PUT_SIGNAL;
  *sig = c->op == MK_CMD_SIGNAL || c->op == MK_CMD_PUT_SIGNAL;
  if (!*data && !*sig)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_PROXY, "%s: rank %d: unknown command op %u", tname, self, c->op);
  if (c->dst_rank < 0 || c->dst_rank >= nranks || !reachable)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_PROXY, "%s: rank %d: command to rank %d, which it cannot reach",
                  tname, self, c->dst_rank);
  if (*data && (c->bytes > src_bytes || c->src_off > src_bytes - c->bytes || c->bytes > dst_bytes ||
                c->dst_off > dst_bytes - c->bytes))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_PROXY,
                  "%s: rank %d: put of %llu bytes from offset %llu to rank %d offset %llu leaves the %llu-byte heap", tname,
                  self, (unsigned long long)c->bytes, (unsigned long long)c->src_off, c->dst_rank,
                  (unsigned long long)c->dst_off, (unsigned long long)dst_bytes);
  if (*sig && (dst_bytes < 8 || c->sig_off > dst_bytes - 8 || c->sig_off % 8))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_PROXY, "%s: rank %d: signal offset %llu to rank %d is %s", tname,
                  self, (unsigned long long)c->sig_off, c->dst_rank, c->sig_off % 8 ? "misaligned" : "outside the heap");
  return MK_STATUS_OK;
}

static mk_status fail(mk_proxy_t *p, mk_status st, const mk_fifo_cmd *cmd) {
  __atomic_store_n(&p->status, (int)st, __ATOMIC_RELEASE);
  MK_WARN(MK_SUBSYS_PROXY, "proxy: transport %s failed (%s)%s", p->tr.name, mk_status_name(st),
          cmd ? "; raising the abort flag" : "");
  if (p->on_error) p->on_error(p->user, st, cmd);
  return st;
}

static mk_status poll_completions(mk_proxy_t *p) {
  uint64_t done = 0;
  mk_status st = p->tr.progress(p->tr.ctx, &done);
  if (st == MK_STATUS_OK) __atomic_store_n(&p->completed, done, __ATOMIC_RELEASE);
  return st;
}

static void *proxy_main(void *arg) {
  mk_proxy_t *p = arg;
  mk_fifo *f = p->f;
  if (p->device >= 0 && cudaSetDevice(p->device) != cudaSuccess) {
    fail(p, MK_STATUS_CUDA_ERROR, NULL);
    return NULL;
  }
  const uint64_t cap = f->capacity, batch = (uint64_t)mk_param_proxy_batch();
  uint64_t tail = __atomic_load_n(f->tail, __ATOMIC_RELAXED);
  unsigned idle = 0;
  for (;;) {
    uint64_t n = 0;
    while (n < batch) {
      mk_fifo_cmd *slot = &f->slots[tail & (cap - 1)];
      if (__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) != tail + 1) break;
      mk_fifo_cmd cmd = *(volatile mk_fifo_cmd *)slot;
      tail++;
      __atomic_store_n(f->tail, tail, __ATOMIC_RELEASE);
      mk_status st;
      if (cmd.op == MK_CMD_FENCE) { /* everything before it completes first */
        st = p->tr.flush(p->tr.ctx);
        int64_t deadline = mk_now_ms() + mk_param_timeout_ms();
        while (st == MK_STATUS_OK && __atomic_load_n(&p->completed, __ATOMIC_ACQUIRE) < p->posted) {
          st = poll_completions(p);
          if (mk_now_ms() > deadline) st = MK_STATUS_TIMEOUT;
        }
      } else {
        st = p->tr.post(p->tr.ctx, &cmd);
        p->posted++;
      }
      if (st != MK_STATUS_OK) {
        fail(p, st, &cmd);
        return NULL;
      }
      n++;
    }
    if (n) {
      mk_status st = p->tr.flush(p->tr.ctx);
      if (st == MK_STATUS_OK) st = poll_completions(p);
      if (st != MK_STATUS_OK) {
        fail(p, st, NULL);
        return NULL;
      }
      idle = 0;
      continue;
    }
    if (poll_completions(p) != MK_STATUS_OK) {
      fail(p, MK_STATUS_NET_ERROR, NULL);
      return NULL;
    }
    if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) break;
    if (++idle > 1024) sched_yield();
  }
  /* Stop: every committed command is posted; wait for them to complete. */
  int64_t deadline = mk_now_ms() + mk_param_timeout_ms();
  while (__atomic_load_n(&p->completed, __ATOMIC_ACQUIRE) < p->posted) {
    if (poll_completions(p) != MK_STATUS_OK || mk_now_ms() > deadline) {
      fail(p, MK_STATUS_TIMEOUT, NULL);
      break;
    }
    sched_yield();
  }
  return NULL;
}

mk_status mk_proxy_create(mk_fifo *f, mk_transport tr, int device, mk_proxy_error_fn on_error, void *user,
                          mk_proxy_t **out) {
  *out = NULL;
  mk_proxy_t *p = calloc(1, sizeof *p);
  if (!p) {
    if (tr.destroy) tr.destroy(tr.ctx);
    return MK_STATUS_OUT_OF_MEMORY;
  }
  *p = (mk_proxy_t){.f = f, .tr = tr, .device = device, .on_error = on_error, .user = user};
  int e = pthread_create(&p->thread, NULL, proxy_main, p);
  if (e) {
    if (tr.destroy) tr.destroy(tr.ctx);
    free(p);
    MK_ERR_RETURN(MK_STATUS_SYSTEM_ERROR, MK_SUBSYS_PROXY, "proxy: cannot start its thread: %s", strerror(e));
  }
  MK_INFO(MK_SUBSYS_PROXY, "proxy: started for device %d, transport %s, FIFO of %llu slots", device, tr.name,
          (unsigned long long)f->capacity);
  *out = p;
  return MK_STATUS_OK;
}

mk_status mk_proxy_status(const mk_proxy_t *p) {
  return p ? (mk_status)__atomic_load_n(&p->status, __ATOMIC_ACQUIRE) : MK_STATUS_OK;
}

uint64_t mk_proxy_completed(const mk_proxy_t *p) { return p ? __atomic_load_n(&p->completed, __ATOMIC_ACQUIRE) : 0; }

void mk_proxy_destroy(mk_proxy_t *p) {
  if (!p) return;
  __atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
  pthread_join(p->thread, NULL);
  if (p->tr.destroy) p->tr.destroy(p->tr.ctx);
  free(p);
}
