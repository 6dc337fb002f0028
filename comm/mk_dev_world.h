/* mk_dev_world.h — the device view of the world, a plain C struct that host C fills
 * (mk_comm_dev_world) and kernels take by value; the 64-byte FIFO command; the error record.
 *
 * Heap layout (every rank, same offsets):
 *   [0, MK_HEAP_CTRL_BYTES)  mk_heap_ctrl: abort flag, error record, epoch counters
 *   [MK_HEAP_CTRL_BYTES, ..) user allocations (mk_comm_heap_alloc), 256-byte aligned, zeroed
 * Counter ownership: a signal counter lives in the heap of the rank that waits on it; any
 * rank adds to it (NVLink atomics from kernels, or the sender's proxy for other node groups);
 * only its owner reads it. Epoch counters are written only by stream-ordered one-thread kernels
 * between ops: mk_comm_epoch_advance, and the fused ops' mk_fused_launch_advance (kernels/fused). */
#ifndef MK_DEV_WORLD_H
#define MK_DEV_WORLD_H

#include <stdint.h>

#define MK_MAX_LOCAL 8    /* ranks per node group */
#define MK_EPOCH_SLOTS 32 /* one per op that signals */
#define MK_HEAP_CTRL_BYTES 4096

#ifdef __cplusplus
extern "C" {
#endif

/* FIFO command ops. */
enum { MK_CMD_PUT = 1, MK_CMD_PUT_SIGNAL = 2, MK_CMD_SIGNAL = 3, MK_CMD_FENCE = 4 };

/* 64 bytes. Offsets are into the symmetric heap: src_off in the sender's, dst_off/sig_off in
 * dst_rank's. seq = slot index + 1, stored last with release semantics (commit). */
typedef struct mk_fifo_cmd {
  uint32_t op;
  int32_t dst_rank;
  uint64_t src_off, dst_off, bytes;
  uint64_t sig_off, sig_add;
  uint64_t seq;
  uint64_t reserved;
} mk_fifo_cmd;

/* Written once by the first waiter that times out (or the proxy on a transport error). */
typedef struct mk_err_record {
  int32_t valid; /* 0 none, 1 timeout, 2 transport error */
  int32_t op, rank, peer, tile;
  int32_t pad;
  uint64_t expected, seen;
} mk_err_record;

/* At heap offset 0. */
typedef struct mk_heap_ctrl {
  int32_t abort_flag; /* nonzero: every waiter leaves */
  int32_t pad;
  mk_err_record rec;
  uint64_t scratch; /* setup's no-op signal target */
  uint64_t epoch[MK_EPOCH_SLOTS];
} mk_heap_ctrl;

typedef struct mk_dev_fifo {
  mk_fifo_cmd *slots;       /* host-pinned, mapped; capacity entries */
  uint64_t *head;           /* device memory: claimed by atomicAdd */
  const uint64_t *tail;     /* host-pinned, mapped: slots below it are free again */
  uint64_t capacity;        /* power of two; 0 = no proxy (single node group) */
} mk_dev_fifo;

typedef struct mk_dev_world {
  int32_t rank, size, local_rank, local_size, node, nnodes;
  uint64_t timeout_ns;             /* MK_TIMEOUT_MS in ns; bounded waits give up after it */
  char *heap;                      /* this rank's heap */
  char *peer_heap[MK_MAX_LOCAL];   /* by local rank; peer_heap[local_rank] == heap */
  uint64_t heap_bytes;
  mk_heap_ctrl *ctrl;              /* == (mk_heap_ctrl *)heap */
  mk_dev_fifo fifo;
} mk_dev_world;

#ifdef __cplusplus
}
#endif
#endif /* MK_DEV_WORLD_H */
