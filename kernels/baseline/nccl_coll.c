/* nccl_coll.c — the unfused communication baselines: an NCCL communicator created through
 * mkernel's bootstrap (rank 0 makes the unique id, the bootstrap broadcasts it), and the
 * collectives the fused ops are compared against: all-gather, reduce-scatter (sum),
 * all-reduce (sum), all-to-all and all-to-allv (grouped send/recv). Without NCCL in the build
 * every call returns MK_STATUS_UNSUPPORTED and says so. */
#include <stdlib.h>
#include <string.h>

#include "comm/mk_comm.h"
#include "core/check.h"
#include "kernels/baseline/mk_baseline.h"

#if MK_HAVE_NCCL
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>

struct mk_nccl {
  ncclComm_t comm;
  int rank, size;
  mk_comm_t *shared_of; /* mk_nccl_shared: the comm it serves, with refs users; NULL: private */
  int refs;
  struct mk_nccl *next; /* the shared list */
};

/* The shared world communicators (mk_nccl_shared), one per mk_comm_t in use. */
static pthread_mutex_t g_shared_mu = PTHREAD_MUTEX_INITIALIZER;
static mk_nccl_t *g_shared;

static mk_status nccl_type(mk_dtype t, ncclDataType_t *out) {
  switch (t) {
    case MK_DTYPE_BF16: *out = ncclBfloat16; return MK_STATUS_OK;
    case MK_DTYPE_F16: *out = ncclFloat16; return MK_STATUS_OK;
    case MK_DTYPE_F32: *out = ncclFloat32; return MK_STATUS_OK;
    case MK_DTYPE_F64: *out = ncclFloat64; return MK_STATUS_OK;
    case MK_DTYPE_I32: *out = ncclInt32; return MK_STATUS_OK;
    case MK_DTYPE_I64: *out = ncclInt64; return MK_STATUS_OK;
    case MK_DTYPE_U8: *out = ncclUint8; return MK_STATUS_OK;
    default:
      MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_COMM, "NCCL baseline: dtype %s is not supported",
                    mk_dtype_name(t));
  }
}

/* NCCL needs a GPU per rank (it fails "Duplicate GPU detected"): ranks that share one are a clear UNSUPPORTED. */
static mk_status nccl_check_gpus(mk_comm_t *comm) {
  if (mk_comm_gpu_shared(comm))
    MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_KERNEL,
                  "nccl: ranks share a GPU (MK_GPU_SHARE=1, mk-launch --gpus): NCCL needs one GPU per rank");
  return MK_STATUS_OK;
}

mk_status mk_nccl_create(mk_comm_t *comm, mk_nccl_t **out) {
  *out = NULL;
  MK_CHECK(nccl_check_gpus(comm));
  const mk_world *w = mk_comm_world(comm);
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (w->rank == 0) MK_NCCL_CHECK(ncclGetUniqueId(&id));
  MK_CHECK(mk_comm_bcast(comm, &id, sizeof id, 0));
  mk_nccl_t *n = calloc(1, sizeof *n);
  if (!n) return MK_STATUS_OUT_OF_MEMORY;
  n->rank = w->rank;
  n->size = w->size;
  mk_status st = MK_STATUS_OK;
  MK_CUDA_CHECK_GOTO(cudaSetDevice(mk_comm_device(comm)), st, fail);
  MK_NCCL_CHECK_GOTO(ncclCommInitRank(&n->comm, w->size, id, w->rank), st, fail);
  *out = n;
  return MK_STATUS_OK;
fail:
  free(n);
  return st;
}

mk_status mk_nccl_shared(mk_comm_t *comm, mk_nccl_t **out) {
  *out = NULL;
  pthread_mutex_lock(&g_shared_mu);
  for (mk_nccl_t *n = g_shared; n; n = n->next)
    if (n->shared_of == comm) {
      n->refs++;
      *out = n;
      break;
    }
  pthread_mutex_unlock(&g_shared_mu);
  if (*out) return MK_STATUS_OK;
  mk_nccl_t *n;
  MK_CHECK(mk_nccl_create(comm, &n));
  pthread_mutex_lock(&g_shared_mu);
  n->shared_of = comm, n->refs = 1, n->next = g_shared;
  g_shared = n;
  pthread_mutex_unlock(&g_shared_mu);
  *out = n;
  return MK_STATUS_OK;
}

mk_status mk_nccl_create_group(mk_comm_t *comm, int color, mk_nccl_t **out) {
  *out = NULL;
  MK_CHECK(nccl_check_gpus(comm));
  const mk_world *w = mk_comm_world(comm);
  int *colors = calloc((size_t)w->size, sizeof(int));
  ncclUniqueId *ids = calloc((size_t)w->size, sizeof(ncclUniqueId)), mine;
  mk_nccl_t *n = calloc(1, sizeof *n);
  mk_status st = MK_STATUS_OK;
  if (!colors || !ids || !n) {
    st = MK_STATUS_OUT_OF_MEMORY;
    goto fail;
  }
  MK_CHECK_GOTO(mk_comm_allgather(comm, &color, colors, sizeof(int)), st, fail);
  int leader = -1, size = 0, rank = 0;
  for (int r = 0; r < w->size; r++) {
    if (colors[r] != color) continue;
    if (leader < 0) leader = r;
    if (r == w->rank) rank = size;
    size++;
  }
  memset(&mine, 0, sizeof mine);
  if (leader == w->rank) MK_NCCL_CHECK_GOTO(ncclGetUniqueId(&mine), st, fail);
  MK_CHECK_GOTO(mk_comm_allgather(comm, &mine, ids, sizeof mine), st, fail);
  n->rank = rank;
  n->size = size;
  MK_CUDA_CHECK_GOTO(cudaSetDevice(mk_comm_device(comm)), st, fail);
  MK_NCCL_CHECK_GOTO(ncclCommInitRank(&n->comm, size, ids[leader], rank), st, fail);
  *out = n;
  n = NULL;
fail:
  free(colors), free(ids), free(n);
  return st;
}

void mk_nccl_destroy(mk_nccl_t *n) {
  if (!n) return;
  if (n->shared_of) { /* the last user destroys it */
    pthread_mutex_lock(&g_shared_mu);
    const int left = --n->refs;
    if (!left)
      for (mk_nccl_t **p = &g_shared; *p; p = &(*p)->next)
        if (*p == n) {
          *p = n->next;
          break;
        }
    pthread_mutex_unlock(&g_shared_mu);
    if (left) return;
  }
  ncclCommDestroy(n->comm);
  free(n);
}

int mk_nccl_size(const mk_nccl_t *n) { return n->size; }

mk_status mk_nccl_all_gather(mk_nccl_t *n, const void *send, void *recv, size_t count, mk_dtype t,
                             mk_stream_t stream) {
  ncclDataType_t nt;
  MK_CHECK(nccl_type(t, &nt));
  MK_NCCL_CHECK(ncclAllGather(send, recv, count, nt, n->comm, (cudaStream_t)stream));
  return MK_STATUS_OK;
}

mk_status mk_nccl_reduce_scatter(mk_nccl_t *n, const void *send, void *recv, size_t recv_count, mk_dtype t,
                                 mk_stream_t stream) {
  ncclDataType_t nt;
  MK_CHECK(nccl_type(t, &nt));
  MK_NCCL_CHECK(ncclReduceScatter(send, recv, recv_count, nt, ncclSum, n->comm, (cudaStream_t)stream));
  return MK_STATUS_OK;
}

mk_status mk_nccl_all_reduce(mk_nccl_t *n, const void *send, void *recv, size_t count, mk_dtype t,
                             mk_stream_t stream) {
  ncclDataType_t nt;
  MK_CHECK(nccl_type(t, &nt));
  MK_NCCL_CHECK(ncclAllReduce(send, recv, count, nt, ncclSum, n->comm, (cudaStream_t)stream));
  return MK_STATUS_OK;
}

mk_status mk_nccl_all_to_allv(mk_nccl_t *n, const void *send, const size_t *send_counts, const size_t *send_displs,
                              void *recv, const size_t *recv_counts, const size_t *recv_displs, mk_dtype t,
                              mk_stream_t stream) {
  ncclDataType_t nt;
  MK_CHECK(nccl_type(t, &nt));
  size_t es = mk_dtype_size(t);
  cudaStream_t s = (cudaStream_t)stream;
  MK_NCCL_CHECK(ncclGroupStart());
  mk_status st = MK_STATUS_OK;
  for (int p = 0; p < n->size; p++) {
    if (send_counts[p])
      MK_NCCL_CHECK_GOTO(ncclSend((const char *)send + send_displs[p] * es, send_counts[p], nt, p, n->comm, s), st,
                         end);
    if (recv_counts[p])
      MK_NCCL_CHECK_GOTO(ncclRecv((char *)recv + recv_displs[p] * es, recv_counts[p], nt, p, n->comm, s), st, end);
  }
end:
  MK_NCCL_CHECK(ncclGroupEnd());
  return st;
}

mk_status mk_nccl_all_to_all(mk_nccl_t *n, const void *send, void *recv, size_t count_per_peer, mk_dtype t,
                             mk_stream_t stream) {
  size_t *c = malloc(sizeof(size_t) * 2 * (size_t)n->size);
  if (!c) return MK_STATUS_OUT_OF_MEMORY;
  size_t *d = c + n->size;
  for (int p = 0; p < n->size; p++) {
    c[p] = count_per_peer;
    d[p] = count_per_peer * (size_t)p;
  }
  mk_status st = mk_nccl_all_to_allv(n, send, c, d, recv, c, d, t, stream);
  free(c);
  return st;
}

#else /* !MK_HAVE_NCCL */

#define MK_NO_NCCL_()                                                                                  \
  MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_COMM,                                                 \
                "the NCCL baselines are not built (NCCL was not found at configure time; set NCCL_HOME)")

mk_status mk_nccl_create(mk_comm_t *comm, mk_nccl_t **out) {
  (void)comm;
  *out = NULL;
  MK_NO_NCCL_();
}
mk_status mk_nccl_shared(mk_comm_t *comm, mk_nccl_t **out) {
  (void)comm;
  *out = NULL;
  MK_NO_NCCL_();
}
mk_status mk_nccl_create_group(mk_comm_t *comm, int color, mk_nccl_t **out) {
  (void)comm, (void)color;
  *out = NULL;
  MK_NO_NCCL_();
}
void mk_nccl_destroy(mk_nccl_t *n) { (void)n; }
int mk_nccl_size(const mk_nccl_t *n) { (void)n; return 0; }
mk_status mk_nccl_all_gather(mk_nccl_t *n, const void *send, void *recv, size_t count, mk_dtype t, mk_stream_t s) {
  MK_NO_NCCL_();
}
mk_status mk_nccl_reduce_scatter(mk_nccl_t *n, const void *send, void *recv, size_t c, mk_dtype t, mk_stream_t s) {
  MK_NO_NCCL_();
}
mk_status mk_nccl_all_reduce(mk_nccl_t *n, const void *send, void *recv, size_t count, mk_dtype t, mk_stream_t s) {
  MK_NO_NCCL_();
}
mk_status mk_nccl_all_to_all(mk_nccl_t *n, const void *send, void *recv, size_t c, mk_dtype t, mk_stream_t s) {
  MK_NO_NCCL_();
}
mk_status mk_nccl_all_to_allv(mk_nccl_t *n, const void *send, const size_t *sc, const size_t *sd, void *recv,
                              const size_t *rc, const size_t *rd, mk_dtype t, mk_stream_t s) {
  MK_NO_NCCL_();
}
#endif
