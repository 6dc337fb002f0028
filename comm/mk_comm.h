/* mk_comm.h — public API of the communication layer (comm/).
 *
 *   world      rank facts from the launcher's environment (torchrun, Slurm, Open MPI, mk-launch)
 *   bootstrap  TCP rendezvous at MASTER_ADDR:MASTER_PORT: all-gather, broadcast, barrier, each
 *              bounded by MK_BOOTSTRAP_TIMEOUT_MS; a dead or missing rank is an error naming it
 *   comm       world + bootstrap + this rank's GPU + the symmetric heap (IPC-mapped among the
 *              ranks of one node group) + the proxy thread that serves the GPU's put FIFO
 *   transports which inter-node transports are built and usable (mk-bench --info)
 *
 * Usage (every rank, same order of calls):
 *   mk_comm_t *c;  MK_CHECK(mk_comm_create(&c));           // from the environment
 *   uint64_t data, sig;
 *   mk_comm_heap_alloc(c, bytes, &data);                     // same offset on every rank
 *   mk_comm_heap_alloc(c, 8 * world_size, &sig);
 *   mk_dev_world w;  mk_comm_dev_world(c, &w);               // pass w by value to kernels
 *   my_kernel<<<g, b, 0, s>>>(w, data, sig);  cudaStreamSynchronize(s);
 *   mk_status st = mk_comm_check(c);                         // TIMEOUT / REMOTE_ERROR + record
 *   mk_comm_destroy(c);
 * GPU choice: a rank uses device MK_DEVICE when set (mk-launch sets it to the rank's index on
 * the host), else LOCAL_RANK. */
#ifndef MK_COMM_H
#define MK_COMM_H

#include "comm/mk_dev_world.h"
#include "core/mk_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- world ---------------------------------------------------------------------------- */
typedef enum mk_launcher { MK_LAUNCHER_TORCHRUN = 0, MK_LAUNCHER_SLURM, MK_LAUNCHER_OMPI } mk_launcher;

typedef struct mk_world {
  int rank, size;             /* global */
  int local_rank, local_size; /* within this node group */
  int node, nnodes;           /* node group = rank / local_size (ranks are laid out by node) */
  char master_addr[256];
  int master_port;
  mk_launcher launcher;
} mk_world;

/* Looks a variable up; returns NULL when it is not set. */
typedef const char *(*mk_env_get_fn)(const char *name, void *user);

/* Parse the world from an environment: torchrun variables first, then Slurm, then Open MPI.
 * A missing, malformed or inconsistent value is MK_STATUS_INVALID_ARGUMENT with a message
 * naming the variable. get = NULL reads the process environment. */
mk_status mk_world_parse(mk_env_get_fn get, void *user, mk_world *out);
static inline mk_status mk_world_from_env(mk_world *out) { return mk_world_parse(0, 0, out); }
const char *mk_launcher_name(mk_launcher l);

/* ---- bootstrap ------------------------------------------------------------------------ */
typedef struct mk_bootstrap mk_bootstrap_t;

/* Rank 0 listens on master_port, the others connect (retrying until the timeout). */
mk_status mk_bootstrap_create(const mk_world *w, mk_bootstrap_t **out);
/* recv[size * bytes] = every rank's send[bytes], in rank order; the same bytes on every rank. */
mk_status mk_bootstrap_allgather(mk_bootstrap_t *b, const void *send, void *recv, size_t bytes);
/* buf[bytes] on every rank = buf on root (e.g. a 128-byte ncclUniqueId from rank 0). */
mk_status mk_bootstrap_bcast(mk_bootstrap_t *b, void *buf, size_t bytes, int root);
mk_status mk_bootstrap_barrier(mk_bootstrap_t *b);
void mk_bootstrap_destroy(mk_bootstrap_t *b);

/* ---- comm: the world, this GPU, the symmetric heap, the proxy ------------------------- */
typedef struct mk_comm mk_comm_t;

/* Collective: world from the environment, bootstrap, cudaSetDevice, heap of MK_HEAP_BYTES
 * on every rank (zeroed), IPC mapping within the node group, proxy thread + transport for
 * peers in other node groups. */
mk_status mk_comm_create(mk_comm_t **out);
void mk_comm_destroy(mk_comm_t *c); /* collective (a barrier first); NULL is a no-op */

const mk_world *mk_comm_world(const mk_comm_t *c);
int mk_comm_device(const mk_comm_t *c);
/* 1 where some two ranks of one host use the same GPU (allowed by MK_GPU_SHARE=1, which mk-launch --gpus sets);
 * the same on every rank. NCCL refuses such a world. */
int mk_comm_gpu_shared(const mk_comm_t *c);
/* MK_GPU_SHARE: 1 allows ranks to share a GPU. */
int64_t mk_param_gpu_share(void);
mk_bootstrap_t *mk_comm_bootstrap(mk_comm_t *c);
static inline mk_status mk_comm_barrier(mk_comm_t *c) { return mk_bootstrap_barrier(mk_comm_bootstrap(c)); }
static inline mk_status mk_comm_allgather(mk_comm_t *c, const void *send, void *recv, size_t bytes) {
  return mk_bootstrap_allgather(mk_comm_bootstrap(c), send, recv, bytes);
}
static inline mk_status mk_comm_bcast(mk_comm_t *c, void *buf, size_t bytes, int root) {
  return mk_bootstrap_bcast(mk_comm_bootstrap(c), buf, bytes, root);
}

/* Deterministic bump allocation (256-byte aligned, zeroed memory): the same sequence of calls
 * gives the same offsets on every rank, so a buffer is named by its offset. Local: no
 * communication; calling it in a different order on different ranks is a usage error. A request
 * that does not fit returns MK_STATUS_OUT_OF_MEMORY (with a warning) and leaves the heap as it was. */
mk_status mk_comm_heap_alloc(mk_comm_t *c, uint64_t bytes, uint64_t *off);
void *mk_comm_heap_ptr(const mk_comm_t *c, uint64_t off); /* this rank's device address */
/* Bytes the next mk_comm_heap_alloc can take (the same on every rank after the same calls). */
uint64_t mk_comm_heap_left(const mk_comm_t *c);
/* The device view of the world, passed to kernels by value. */
mk_status mk_comm_dev_world(const mk_comm_t *c, mk_dev_world *out);

/* Stream memory operations (cuStreamWriteValue32 / cuStreamWaitValue32, through the runtime's driver entry
 * points: libcuda is never linked), stream-ordered and graph-capturable; addr a device address (a heap's, or a
 * peer's heap through mk_dev_world.peer_heap). write32: *addr = value once the stream's earlier work is done
 * (copies complete and visible first); wait32: the stream waits until *addr >= value (no timeout: a writer the
 * protocol guarantees). `what` names the operation in the error message. */
mk_status mk_stream_write32(void *stream, void *addr, uint32_t value, const char *what);
mk_status mk_stream_wait32(void *stream, void *addr, uint32_t value, const char *what);

/* Advance epoch counter `slot` (< MK_EPOCH_SLOTS) by one, stream-ordered (graph-capturable). */
mk_status mk_comm_epoch_advance(mk_comm_t *c, int slot, void *stream);
/* After kernels finished (stream synchronised): MK_STATUS_OK, or MK_STATUS_TIMEOUT /
 * MK_STATUS_REMOTE_ERROR with the error record printed, or the proxy's transport error. */
mk_status mk_comm_check(mk_comm_t *c);
/* Clear the abort flag and error record so the comm can be used again (collective). */
mk_status mk_comm_clear_error(mk_comm_t *c);

/* ---- transports (what is built and usable here) --------------------------------------- */
typedef enum mk_transport_kind {
  MK_TRANSPORT_LOOPBACK = 0, /* one host, no NIC: proxy copies between IPC-mapped heaps */
  MK_TRANSPORT_IB = 1,       /* libibverbs RC (InfiniBand, RoCE) */
  MK_TRANSPORT_EFA = 2,      /* libibverbs + efadv SRD (AWS EFA) */
  MK_TRANSPORT_COUNT_
} mk_transport_kind;

typedef struct mk_transport_info {
  const char *name;  /* "loopback", "ib", "efa" */
  int built;         /* compiled into this library */
  int usable;        /* a device it needs is present on this machine */
  char detail[192];  /* why not usable, or what was found */
} mk_transport_info;

/* Fill one entry per transport (MK_TRANSPORT_COUNT_ entries). Never fails for a missing
 * NIC or GPU: that is reported in usable/detail. */
mk_status mk_comm_transport_info(mk_transport_info out[MK_TRANSPORT_COUNT_]);

#ifdef __cplusplus
}
#endif
#endif /* MK_COMM_H */
