/* comm.c — the communicator: world + bootstrap + this rank's GPU + the symmetric heap +
 * the proxy for other node groups.
 *
 * Setup (collective, every rank): cudaSetDevice(MK_DEVICE, else LOCAL_RANK); cudaMalloc the
 * heap (MK_HEAP_BYTES, zeroed); all-gather {IPC handle, host name, heap size}; open the
 * handles of every other rank on this host: those of the own node group become the kernels'
 * peer_heap[], the others only the loopback transport's mapping. With more than one node
 * group: the inter-node transport is chosen first (MK_NET_TRANSPORT, agreed by every rank,
 * before any GPU work), then a FIFO (MK_FIFO_SLOTS) and a proxy thread with that transport
 * (loopback, ib or efa; ranks of other node groups are IPC-mapped only for loopback). Barrier.
 * Heap layout and counter ownership: see mk_dev_world.h. */
#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/proxy.h"
#include "comm/verbs_common.h"
#include "core/check.h"

MK_PARAM_INT(timeout_ms, "TIMEOUT_MS", 10000, 1, 86400000)
MK_PARAM_INT(heap_bytes, "HEAP_BYTES", 1ll << 30, 1ll << 20, 1ll << 40)
MK_PARAM_INT(device, "DEVICE", -1, -1, 1023)
MK_PARAM_INT(fifo_slots, "FIFO_SLOTS", 4096, 2, 1 << 24)
/* 1: ranks of one host may share a GPU (mk-launch --gpus G < ranks; for functional tests on fewer GPUs: their
 * kernels take turns on it by the driver's time slices, so a wait on a peer lasts until the peer's turn). */
MK_PARAM_INT(gpu_share, "GPU_SHARE", 0, 0, 1)

struct mk_comm {
  mk_world w;
  mk_bootstrap_t *bs;
  int dev;
  char *heap;
  uint64_t heap_bytes, cursor;
  char **map; /* [size]: map[rank] = this process's address of rank's heap, or NULL */
  mk_fifo *fifo;
  mk_proxy_t *proxy;
  void *ctrl_stream; /* cudaStream_t, non-blocking: control reads/writes beside running kernels */
  mk_transport_kind net; /* for peers in other node groups */
  int gpu_shared;        /* some two ranks of one host use the same GPU (MK_GPU_SHARE=1) */
};

typedef struct rank_info {
  cudaIpcMemHandle_t ipc;
  char host[64];
  uint64_t heap_bytes;
  int32_t dev, pad;
} rank_info;

static void on_proxy_error(void *user, mk_status st, const mk_fifo_cmd *cmd) {
  mk_comm_t *c = user;
  mk_heap_ctrl h;
  memset(&h, 0, sizeof h);
  h.abort_flag = 1;
  h.rec = (mk_err_record){2, cmd ? (int32_t)cmd->op : -1, c->w.rank, cmd ? cmd->dst_rank : -1, -1, 0, 0, (uint64_t)st};
  cudaStream_t s = (cudaStream_t)c->ctrl_stream;
  /* The record first, then the flag. */
  cudaMemcpyAsync(c->heap + offsetof(mk_heap_ctrl, rec), &h.rec, sizeof h.rec, cudaMemcpyHostToDevice, s);
  cudaMemcpyAsync(c->heap, &h.abort_flag, sizeof h.abort_flag, cudaMemcpyHostToDevice, s);
  cudaStreamSynchronize(s);
}

/* MK_NET_TRANSPORT on every rank, then agreement: every rank must pick the same transport. */
static mk_status select_transport(mk_comm_t *c) {
  char why[320];
  mk_status st = mk_net_select(&c->net, why, sizeof why);
  if (st != MK_STATUS_OK) MK_WARN(MK_SUBSYS_COMM, "comm: rank %d: %s", c->w.rank, why);
  else MK_INFO(MK_SUBSYS_COMM, "comm: inter-node transport %s", why);
  int32_t mine = st != MK_STATUS_OK ? -(int32_t)st : (int32_t)c->net, *all = calloc((size_t)c->w.size, sizeof *all);
  if (!all) return MK_STATUS_OUT_OF_MEMORY;
  mk_status bst = mk_bootstrap_allgather(c->bs, &mine, all, sizeof mine);
  for (int r = 0; bst == MK_STATUS_OK && st == MK_STATUS_OK && r < c->w.size; r++) {
    if (all[r] < 0) {
      MK_WARN(MK_SUBSYS_COMM, "comm: rank %d could not set up its inter-node transport (%s; see its log)", r,
              mk_status_name((mk_status)-all[r]));
      st = MK_STATUS_REMOTE_ERROR;
    } else if (all[r] != (int32_t)c->net) {
      MK_WARN(MK_SUBSYS_COMM, "comm: rank %d chose inter-node transport %d, this rank %d: set MK_NET_TRANSPORT alike on "
              "every rank (or give every node the same NICs)", r, all[r], (int)c->net);
      st = MK_STATUS_INVALID_ARGUMENT;
    }
  }
  free(all);
  return bst != MK_STATUS_OK ? bst : st;
}

mk_status mk_comm_create(mk_comm_t **out) {
  if (!out) return MK_STATUS_INVALID_ARGUMENT;
  *out = NULL;
  mk_status st = MK_STATUS_OK;
  rank_info *all = NULL;
  mk_comm_t *c = calloc(1, sizeof *c);
  if (!c) return MK_STATUS_OUT_OF_MEMORY;
  MK_CHECK_GOTO(mk_world_from_env(&c->w), st, fail);
  const mk_world *w = &c->w;
  mk_log_set_rank(w->rank, -1);
  if (w->local_size > MK_MAX_LOCAL) {
    MK_WARN(MK_SUBSYS_COMM, "comm: %d ranks per node group; at most %d are supported", w->local_size, MK_MAX_LOCAL);
    st = MK_STATUS_UNSUPPORTED;
    goto fail;
  }
  c->map = calloc((size_t)w->size, sizeof *c->map);
  all = calloc((size_t)w->size, sizeof *all);
  if (!c->map || !all) {
    st = MK_STATUS_OUT_OF_MEMORY;
    goto fail;
  }
  MK_CHECK_GOTO(mk_bootstrap_create(w, &c->bs), st, fail);
  if (w->nnodes > 1) MK_CHECK_GOTO(select_transport(c), st, fail); /* before any GPU work: fails on a CPU too */
  int ndev = 0;
  MK_CHECK_GOTO(mk_device_count(&ndev), st, fail);
  c->dev = mk_param_device() >= 0 ? (int)mk_param_device() : w->local_rank;
  if (c->dev >= ndev) {
    MK_WARN(MK_SUBSYS_COMM, "comm: rank %d wants GPU %d (%s) but this host has %d", w->rank, c->dev,
            mk_param_device() >= 0 ? "MK_DEVICE" : "LOCAL_RANK", ndev);
    st = MK_STATUS_NO_DEVICE;
    goto fail;
  }
  MK_CUDA_CHECK_GOTO(cudaSetDevice(c->dev), st, fail);
  mk_log_set_rank(w->rank, c->dev);
  cudaStream_t cs;
  MK_CUDA_CHECK_GOTO(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking), st, fail);
  c->ctrl_stream = cs;

  c->heap_bytes = (uint64_t)mk_param_heap_bytes();
  c->heap_bytes = (c->heap_bytes + 0xfffff) & ~(uint64_t)0xfffff;
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&c->heap, c->heap_bytes), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMemset(c->heap, 0, c->heap_bytes), st, fail);
  MK_CUDA_CHECK_GOTO(cudaDeviceSynchronize(), st, fail);
  c->cursor = MK_HEAP_CTRL_BYTES;
  MK_CHECK_GOTO(mk_comm_preload_kernels((uint64_t *)(c->heap + offsetof(mk_heap_ctrl, scratch))), st, fail);
  c->map[w->rank] = c->heap;

  rank_info me;
  memset(&me, 0, sizeof me);
  MK_CUDA_CHECK_GOTO(cudaIpcGetMemHandle(&me.ipc, c->heap), st, fail);
  gethostname(me.host, sizeof me.host - 1);
  me.heap_bytes = c->heap_bytes;
  me.dev = c->dev;
  MK_CHECK_GOTO(mk_bootstrap_allgather(c->bs, &me, all, sizeof me), st, fail);
  for (int a = 0; a < w->size; a++) /* the same answer on every rank */
    for (int b = a + 1; b < w->size; b++)
      if (all[a].dev == all[b].dev && !strcmp(all[a].host, all[b].host)) c->gpu_shared = 1;
  for (int r = 0; r < w->size; r++) {
    if (all[r].heap_bytes != c->heap_bytes) {
      MK_WARN(MK_SUBSYS_COMM, "comm: rank %d has a %" PRIu64 "-byte heap, this rank %" PRIu64 " (MK_HEAP_BYTES differs)",
              r, all[r].heap_bytes, c->heap_bytes);
      st = MK_STATUS_INVALID_ARGUMENT;
      goto fail;
    }
    if (r == w->rank) continue;
    int same_group = r / w->local_size == w->node, same_host = !strcmp(all[r].host, me.host);
    if (!same_group && c->net != MK_TRANSPORT_LOOPBACK) continue; /* reached through the NIC only */
    if (!same_host) {
      MK_WARN(MK_SUBSYS_COMM, "comm: rank %d is on host %s, this rank on %s: %s", r, all[r].host, me.host,
              same_group ? "a node group must be one host"
                         : "the loopback transport needs one host (MK_NET_TRANSPORT=ib or efa, or auto with an RDMA device)");
      st = MK_STATUS_UNSUPPORTED;
      goto fail;
    }
    if (all[r].dev == c->dev && !mk_param_gpu_share()) {
      MK_WARN(MK_SUBSYS_COMM,
              "comm: ranks %d and %d both use GPU %d (one GPU per rank; see MK_DEVICE, or MK_GPU_SHARE=1 for tests)", r,
              w->rank, c->dev);
      st = MK_STATUS_INVALID_ARGUMENT;
      goto fail;
    }
    MK_CUDA_CHECK_GOTO(cudaIpcOpenMemHandle((void **)&c->map[r], all[r].ipc, cudaIpcMemLazyEnablePeerAccess), st, fail);
  }
  if (w->nnodes > 1) {
    MK_CHECK_GOTO(mk_fifo_create((uint64_t)mk_param_fifo_slots(), 1, &c->fifo), st, fail);
    mk_transport tr;
    switch (c->net) {
#if MK_HAVE_VERBS
    case MK_TRANSPORT_IB: st = mk_ib_create(c->bs, w, c->heap, c->heap_bytes, 1, &tr); break;
#endif
#if MK_HAVE_EFA
    case MK_TRANSPORT_EFA: st = mk_efa_create(c->bs, w, c->heap, c->heap_bytes, 1, &tr); break;
#endif
    default: {
      /* The loopback proxy issues CUDA calls; with lazy module loading, a kernel the main
       * thread loads while a fused op waits on the proxy blocks them (mk-launch.c). */
      const char *ml = getenv("CUDA_MODULE_LOADING");
      if (!ml || strcmp(ml, "EAGER"))
        MK_WARN(MK_SUBSYS_COMM, "comm: the loopback transport with CUDA_MODULE_LOADING=%s: a fused op across node "
                "groups can deadlock on a kernel loaded lazily meanwhile; set CUDA_MODULE_LOADING=EAGER (mk-launch "
                "--nodes does)", ml ? ml : "LAZY (unset)");
      st = mk_loopback_create(w->rank, w->size, c->map, c->heap_bytes, 1, &tr);
      break;
    }
    }
    if (st != MK_STATUS_OK) goto fail;
    MK_CHECK_GOTO(mk_proxy_create(c->fifo, tr, c->dev, on_proxy_error, c, &c->proxy), st, fail);
  }
  MK_CHECK_GOTO(mk_bootstrap_barrier(c->bs), st, fail);
  MK_INFO(MK_SUBSYS_COMM, "comm: rank %d of %d, node group %d of %d, GPU %d, heap %" PRIu64 " MiB", w->rank, w->size,
          w->node, w->nnodes, c->dev, c->heap_bytes >> 20);
  free(all);
  *out = c;
  return MK_STATUS_OK;
fail:
  free(all);
  mk_comm_destroy(c);
  return st;
}

void mk_comm_destroy(mk_comm_t *c) {
  if (!c) return;
  if (c->bs && c->heap) mk_bootstrap_barrier(c->bs); /* no peer still uses our heap */
  mk_proxy_destroy(c->proxy);
  mk_fifo_destroy(c->fifo);
  if (c->map)
    for (int r = 0; r < c->w.size; r++)
      if (c->map[r] && r != c->w.rank) cudaIpcCloseMemHandle(c->map[r]);
  if (c->heap) cudaFree(c->heap);
  if (c->ctrl_stream) cudaStreamDestroy((cudaStream_t)c->ctrl_stream);
  mk_bootstrap_destroy(c->bs);
  free(c->map);
  free(c);
}

const mk_world *mk_comm_world(const mk_comm_t *c) { return &c->w; }
int mk_comm_device(const mk_comm_t *c) { return c->dev; }
int mk_comm_gpu_shared(const mk_comm_t *c) { return c->gpu_shared; }
mk_bootstrap_t *mk_comm_bootstrap(mk_comm_t *c) { return c->bs; }

mk_status mk_comm_heap_alloc(mk_comm_t *c, uint64_t bytes, uint64_t *off) {
  if (!c || !off) return MK_STATUS_INVALID_ARGUMENT;
  uint64_t start = (c->cursor + 255) & ~(uint64_t)255;
  if (bytes > c->heap_bytes || start > c->heap_bytes - bytes)
    MK_ERR_RETURN(MK_STATUS_OUT_OF_MEMORY, MK_SUBSYS_COMM,
                  "comm: heap allocation of %" PRIu64 " bytes does not fit (%" PRIu64 " of %" PRIu64
                  " used; raise MK_HEAP_BYTES)", bytes, c->cursor, c->heap_bytes);
  *off = start;
  c->cursor = start + bytes;
  return MK_STATUS_OK;
}

void *mk_comm_heap_ptr(const mk_comm_t *c, uint64_t off) { return c->heap + off; }

uint64_t mk_comm_heap_left(const mk_comm_t *c) {
  const uint64_t start = c ? (c->cursor + 255) & ~(uint64_t)255 : 0;
  return c && start < c->heap_bytes ? c->heap_bytes - start : 0;
}

mk_status mk_comm_dev_world(const mk_comm_t *c, mk_dev_world *out) {
  if (!c || !out) return MK_STATUS_INVALID_ARGUMENT;
  memset(out, 0, sizeof *out);
  const mk_world *w = &c->w;
  out->rank = w->rank;
  out->size = w->size;
  out->local_rank = w->local_rank;
  out->local_size = w->local_size;
  out->node = w->node;
  out->nnodes = w->nnodes;
  out->timeout_ns = (uint64_t)mk_param_timeout_ms() * 1000000ull;
  out->heap = c->heap;
  for (int l = 0; l < w->local_size; l++) out->peer_heap[l] = c->map[w->node * w->local_size + l];
  out->heap_bytes = c->heap_bytes;
  out->ctrl = (mk_heap_ctrl *)c->heap;
  return mk_fifo_dev(c->fifo, &out->fifo);
}

mk_status mk_comm_epoch_advance(mk_comm_t *c, int slot, void *stream) {
  if (!c || slot < 0 || slot >= MK_EPOCH_SLOTS)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_COMM, "comm: epoch slot %d outside [0, %d)", slot, MK_EPOCH_SLOTS);
  return mk_comm_launch_epoch_advance(&((mk_heap_ctrl *)c->heap)->epoch[slot], stream);
}

static const char *op_name(int op) {
  static const char *const n[] = {"test", "fifo-post", "comm-bench"};
  return op >= 0 && op < 3 ? n[op] : op == 10 ? "ag_gemm" : op == 11 ? "gemm_rs" : op == 12 ? "gemm_ar"
                                              : op == 13 ? "moe" : op == 14 ? "ring_attn" : op == 15 ? "gather" : "op";
}

mk_status mk_comm_check(mk_comm_t *c) {
  if (!c) return MK_STATUS_INVALID_ARGUMENT;
  mk_heap_ctrl h;
  cudaStream_t s = (cudaStream_t)c->ctrl_stream;
  MK_CUDA_CHECK(cudaMemcpyAsync(&h, c->heap, offsetof(mk_heap_ctrl, epoch), cudaMemcpyDeviceToHost, s));
  MK_CUDA_CHECK(cudaStreamSynchronize(s));
  mk_status pst = mk_proxy_status(c->proxy);
  if (!h.abort_flag && pst == MK_STATUS_OK) return MK_STATUS_OK;
  const mk_err_record *r = &h.rec;
  if (r->valid == 1) {
    MK_WARN(MK_SUBSYS_COMM, "comm: TIMEOUT record: op %s (%d) rank %d waited on peer %d tile %d: expected >= %" PRIu64
            ", saw %" PRIu64 " after MK_TIMEOUT_MS=%lld", op_name(r->op), r->op, r->rank, r->peer, r->tile, r->expected,
            r->seen, (long long)mk_param_timeout_ms());
    return MK_STATUS_TIMEOUT;
  }
  if (r->valid == 2)
    MK_WARN(MK_SUBSYS_COMM, "comm: transport error record: rank %d's proxy failed a command (op %d) to rank %d: %s", r->rank,
            r->op, r->peer, mk_status_name((mk_status)r->seen));
  else
    MK_WARN(MK_SUBSYS_COMM, "comm: aborted (flag %d) without a record; proxy status %s", h.abort_flag, mk_status_name(pst));
  return MK_STATUS_REMOTE_ERROR;
}

mk_status mk_comm_clear_error(mk_comm_t *c) {
  if (!c) return MK_STATUS_INVALID_ARGUMENT;
  MK_CHECK(mk_bootstrap_barrier(c->bs)); /* every rank's kernels are done */
  if (mk_proxy_status(c->proxy) != MK_STATUS_OK)
    MK_ERR_RETURN(MK_STATUS_INVALID_USAGE, MK_SUBSYS_COMM, "comm: the proxy stopped on a transport error; recreate the comm");
  cudaStream_t s = (cudaStream_t)c->ctrl_stream;
  MK_CUDA_CHECK(cudaMemsetAsync(c->heap, 0, offsetof(mk_heap_ctrl, epoch), s));
  MK_CUDA_CHECK(cudaStreamSynchronize(s));
  return mk_bootstrap_barrier(c->bs);
}

typedef int (*mk_memop32_fn)(cudaStream_t stream, unsigned long long addr, uint32_t value, unsigned flags);
static mk_memop32_fn g_write32, g_wait32;

static mk_status load_memops(void) {
  if (g_write32 && g_wait32) return MK_STATUS_OK;
  void *fw = NULL, *fa = NULL;
  enum cudaDriverEntryPointQueryResult qw, qa;
  if (cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &fw, 12000, cudaEnableDefault, &qw) != cudaSuccess ||
      qw != cudaDriverEntryPointSuccess || !fw ||
      cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &fa, 12000, cudaEnableDefault, &qa) != cudaSuccess ||
      qa != cudaDriverEntryPointSuccess || !fa)
    MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_COMM,
                  "comm: the copy-engine transfers need cuStreamWriteValue32/cuStreamWaitValue32 (driver entry "
                  "points not found)");
  g_write32 = (mk_memop32_fn)fw;
  g_wait32 = (mk_memop32_fn)fa;
  return MK_STATUS_OK;
}

static mk_status memop(mk_memop32_fn *fn, void *stream, void *addr, uint32_t value, const char *what) {
  MK_CHECK(load_memops());
  /* flags 0: a wait is CU_STREAM_WAIT_VALUE_GEQ; a write has a memory barrier before it (earlier work visible) */
  const int r = (*fn)((cudaStream_t)stream, (unsigned long long)(uintptr_t)addr, value, 0);
  if (r != 0) MK_ERR_RETURN(MK_STATUS_CUDA_ERROR, MK_SUBSYS_COMM, "comm: %s failed (CUresult %d)", what, r);
  return MK_STATUS_OK;
}

mk_status mk_stream_write32(void *stream, void *addr, uint32_t value, const char *what) {
  return memop(&g_write32, stream, addr, value, what);
}

mk_status mk_stream_wait32(void *stream, void *addr, uint32_t value, const char *what) {
  return memop(&g_wait32, stream, addr, value, what);
}
