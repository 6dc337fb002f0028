/* transport_efa.c — the `efa` inter-node transport: libibverbs + efadv SRD (AWS EFA, p5/p5e).
 *
 * SRD delivers reliably but in no particular order, so a signal cannot simply follow its data
 * on the wire; the receiving proxy orders them instead.
 *
 * Layout and ownership
 *   One SRD QP per rank (unconnected: an address handle per peer rank of another node group),
 *   one CQ for sends and receives. Registered: the whole heap (dmabuf first, then ibv_reg_mr;
 *   REMOTE_WRITE), RQ_DEPTH 64-byte host receive buffers (every one posted; re-posted as soon
 *   as it is consumed), CMD_RING 32-byte host descriptor buffers (one per command in flight).
 *   Setup all-gathers the 128-byte QP-info record (GID, QP number, qkey, heap rkey/address/size).
 * Sender (the proxy of the rank that posts)
 *   Per destination an epoch counter e (mod 2^20) = the number of signals sent to it.
 *   PUT     RDMA WRITE WITH IMM (chunks of at most max_rdma_size), imm = self << 20 | e:
 *           "this write belongs to the signal e that will follow".
 *   SIGNAL  SEND of a descriptor {self, e, ndata = writes tagged e, sig_off, sig_add}; e++.
 *   PUT_SIGNAL = both. Every WR is signalled (SRD may complete out of order); a command is
 *   complete when all its WRs completed; progress = the longest complete prefix.
 *   At most WINDOW / 2 descriptors per destination are in flight (by local completions), so a
 *   receiver slot is never reused while its epoch is open (an overrun is detected, not silent).
 * Receiver (the proxy of the rank that owns the counter)
 *   mk_efa_rx (verbs_common.c) counts, per sender and epoch, the data completions and the
 *   descriptor; when both are in (in any order), it adds sig_add to the counter at sig_off in
 *   this rank's heap: a one-thread kernel on the proxy's stream (GPU heap) or an atomic add
 *   (host heap). A signal is therefore never visible before every write it covers has
 *   completed at this rank.
 * Errors: a bad command is MK_STATUS_INVALID_ARGUMENT; a failed completion, a malformed
 *   descriptor or a counter offset outside the heap is MK_STATUS_NET_ERROR with a message. */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <infiniband/efadv.h>

#include "comm/proxy.h"
#include "comm/verbs_common.h"
#include "core/check.h"

enum { SQ_DEPTH = 1024, RQ_DEPTH = 4096, RBUF = 64, CMD_RING = 4096, WINDOW = 1024, QKEY = 0x4d4b };

typedef struct efa_cmd { uint32_t outstanding; int32_t dst; } efa_cmd;
typedef struct efa_peer {
  struct ibv_ah *ah;
  uint32_t qpn, rkey, epoch, ndata, desc_inflight;
  uint64_t addr, bytes;
} efa_peer;

typedef struct efa {
  int self, nranks, on_gpu;
  char *heap;
  uint64_t heap_bytes, max_rdma;
  mk_verbs_dev dev;
  struct ibv_mr *mr, *rmr, *dmr;
  uint8_t *rbuf, *dbuf;
  struct ibv_cq *cq;
  struct ibv_qp *qp;
  struct ibv_qp_ex *qpx;
  int batch_open;
  uint32_t wrs_inflight;
  efa_peer *peer;
  efa_cmd ring[CMD_RING];
  uint64_t posted, completed;
  mk_efa_rx rx;
  cudaStream_t stream;
} efa;

static mk_status efa_post_recv(efa *t, uint64_t slot) {
  struct ibv_sge sge = {(uint64_t)(uintptr_t)(t->rbuf + slot * RBUF), RBUF, t->rmr->lkey};
  struct ibv_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1}, *bad = NULL;
  MK_VERBS_CHECK(ibv_post_recv(t->qp, &wr, &bad));
  return MK_STATUS_OK;
}

static mk_status efa_bump(efa *t, const mk_efa_desc *s) {
  if (s->sig_off > t->heap_bytes - 8 || s->sig_off % 8)
    MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET, "efa: rank %d: signal %u from rank %u names counter offset %llu, %s",
                  t->self, s->epoch, s->src, (unsigned long long)s->sig_off,
                  s->sig_off % 8 ? "misaligned" : "outside the heap");
  uint64_t *ctr = (uint64_t *)(t->heap + s->sig_off);
  if (t->on_gpu) return mk_comm_launch_signal_add(ctr, s->sig_add, t->stream);
  __atomic_fetch_add(ctr, s->sig_add, __ATOMIC_RELEASE);
  return MK_STATUS_OK;
}

static mk_status efa_progress(void *ctx, uint64_t *completed) {
  efa *t = ctx;
  struct ibv_wc wc[32];
  int n;
  while ((n = ibv_poll_cq(t->cq, 32, wc)) > 0)
    for (int i = 0; i < n; i++) {
      const struct ibv_wc *c = &wc[i];
      const int recv = c->opcode == IBV_WC_RECV || c->opcode == IBV_WC_RECV_RDMA_WITH_IMM;
      if (c->status != IBV_WC_SUCCESS) {
        if (recv)
          MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET, "efa: rank %d: a receive failed on %s: %s (vendor error 0x%x)",
                        t->self, t->dev.name, mk_verbs_wc_text(c->status), c->vendor_err);
        MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET, "efa: rank %d -> rank %d (%s on %s): work completion failed: %s "
                      "(vendor error 0x%x)", t->self, t->ring[c->wr_id % CMD_RING].dst,
                      c->opcode == IBV_WC_SEND ? "signal descriptor" : "data write", t->dev.name,
                      mk_verbs_wc_text(c->status), c->vendor_err);
      }
      if (recv) {
        int ready = 0;
        mk_efa_desc sig;
        if (c->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
          MK_CHECK(mk_efa_rx_data(&t->rx, be32toh(c->imm_data), &ready, &sig));
        } else {
          mk_efa_desc d;
          MK_CHECK(mk_efa_desc_unpack(t->rbuf + c->wr_id * RBUF, c->byte_len, &d));
          MK_CHECK(mk_efa_rx_desc(&t->rx, &d, &ready, &sig));
        }
        MK_CHECK(efa_post_recv(t, c->wr_id));
        if (ready) MK_CHECK(efa_bump(t, &sig));
        continue;
      }
      efa_cmd *e = &t->ring[c->wr_id % CMD_RING];
      if (c->opcode == IBV_WC_SEND) t->peer[e->dst].desc_inflight--;
      e->outstanding--;
      t->wrs_inflight--;
    }
  if (n < 0) MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET, "efa: ibv_poll_cq failed on %s", t->dev.name);
  while (t->completed < t->posted && !t->ring[(t->completed + 1) % CMD_RING].outstanding) t->completed++;
  *completed = t->completed;
  return MK_STATUS_OK;
}

static mk_status efa_flush(void *ctx) {
  efa *t = ctx;
  if (!t->batch_open) return MK_STATUS_OK;
  t->batch_open = 0;
  int r = ibv_wr_complete(t->qpx);
  if (r) MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET, "efa: ibv_wr_complete failed on %s: %s", t->dev.name, strerror(r));
  return MK_STATUS_OK;
}

/* Wait (bounded) until cond holds, posting the open batch first. */
#define EFA_WAIT(t, cond, what)                                                                         \
  do {                                                                                                \
    if (!(cond)) {                                                                                    \
      MK_CHECK(efa_flush(t));                                                                         \
      const int64_t deadline_ = mk_now_ms() + mk_param_timeout_ms();                                     \
      uint64_t dummy_;                                                                                \
      while (!(cond)) {                                                                               \
        MK_CHECK(efa_progress(t, &dummy_));                                                           \
        if (mk_now_ms() > deadline_)                                                                     \
          MK_ERR_RETURN(MK_STATUS_TIMEOUT, MK_SUBSYS_NET, "efa: rank %d: %s for MK_TIMEOUT_MS=%lld", (t)->self, \
                        (what), (long long)mk_param_timeout_ms());                                     \
      }                                                                                               \
    }                                                                                                 \
  } while (0)

static void efa_begin(efa *t, uint64_t seq) {
  if (!t->batch_open) {
    ibv_wr_start(t->qpx);
    t->batch_open = 1;
  }
  t->qpx->wr_id = seq;
  t->qpx->wr_flags = IBV_SEND_SIGNALED;
  t->ring[seq % CMD_RING].outstanding++;
  t->wrs_inflight++;
}

static mk_status efa_post(void *ctx, const mk_fifo_cmd *c) {
  efa *t = ctx;
  int data, sig;
  const int reach = c->dst_rank >= 0 && c->dst_rank < t->nranks && t->peer[c->dst_rank].ah;
  const uint64_t dst_bytes = reach ? t->peer[c->dst_rank].bytes : 0;
  MK_CHECK(mk_cmd_check("efa", t->self, t->nranks, reach, t->heap_bytes, dst_bytes, c, &data, &sig));
  efa_peer *p = &t->peer[c->dst_rank];
  EFA_WAIT(t, t->posted + 1 - t->completed <= CMD_RING, "the command ring stayed full");
  const uint64_t seq = ++t->posted;
  t->ring[seq % CMD_RING] = (efa_cmd){0, c->dst_rank};
  for (uint64_t off = 0; data && off < c->bytes;) {
    uint64_t len = c->bytes - off < t->max_rdma ? c->bytes - off : t->max_rdma;
    EFA_WAIT(t, t->wrs_inflight < SQ_DEPTH, "the send queue stayed full");
    efa_begin(t, seq);
    ibv_wr_rdma_write_imm(t->qpx, p->rkey, p->addr + c->dst_off + off, htobe32(mk_efa_imm(t->self, p->epoch)));
    ibv_wr_set_ud_addr(t->qpx, p->ah, p->qpn, QKEY);
    ibv_wr_set_sge(t->qpx, t->mr->lkey, (uint64_t)(uintptr_t)(t->heap + c->src_off + off), (uint32_t)len);
    p->ndata++;
    off += len;
  }
  if (sig) {
    EFA_WAIT(t, t->wrs_inflight < SQ_DEPTH && p->desc_inflight < WINDOW / 2, "a peer's signal window stayed full");
    uint8_t *d = t->dbuf + (seq % CMD_RING) * MK_EFA_DESC_BYTES;
    mk_efa_desc_pack(&(mk_efa_desc){(uint32_t)t->self, p->epoch, p->ndata, c->sig_off, c->sig_add}, d);
    efa_begin(t, seq);
    ibv_wr_send(t->qpx);
    ibv_wr_set_ud_addr(t->qpx, p->ah, p->qpn, QKEY);
    ibv_wr_set_sge(t->qpx, t->dmr->lkey, (uint64_t)(uintptr_t)d, MK_EFA_DESC_BYTES);
    p->desc_inflight++;
    p->epoch = (p->epoch + 1) & MK_EFA_EPOCH_MASK;
    p->ndata = 0;
  }
  return MK_STATUS_OK;
}

static void efa_destroy(void *ctx) {
  efa *t = ctx;
  if (!t) return;
  if (t->stream) {
    cudaStreamSynchronize(t->stream);
    cudaStreamDestroy(t->stream);
  }
  for (int r = 0; t->peer && r < t->nranks; r++)
    if (t->peer[r].ah) ibv_destroy_ah(t->peer[r].ah);
  if (t->qp) ibv_destroy_qp(t->qp);
  if (t->cq) ibv_destroy_cq(t->cq);
  if (t->mr) ibv_dereg_mr(t->mr);
  if (t->rmr) ibv_dereg_mr(t->rmr);
  if (t->dmr) ibv_dereg_mr(t->dmr);
  mk_verbs_close(&t->dev);
  mk_efa_rx_free(&t->rx);
  free(t->rbuf);
  free(t->dbuf);
  free(t->peer);
  free(t);
}

static mk_status efa_setup_local(efa *t, const mk_world *w) {
  MK_CHECK(mk_verbs_open(1, &t->dev));
  struct efadv_device_attr ea;
  memset(&ea, 0, sizeof ea);
  MK_VERBS_CHECK(efadv_query_device(t->dev.ctx, &ea, sizeof ea));
  if (!ea.max_rdma_size)
    MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_NET, "efa: %s supports no RDMA (max_rdma_size 0); the efa transport writes with it",
                  t->dev.name);
  t->max_rdma = ea.max_rdma_size;
  MK_CHECK(mk_efa_rx_init(&t->rx, t->self, t->nranks, WINDOW));
  MK_CHECK(mk_verbs_reg(&t->dev, t->heap, t->heap_bytes, t->on_gpu, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &t->mr));
  t->rbuf = calloc(RQ_DEPTH, RBUF);
  t->dbuf = calloc(CMD_RING, MK_EFA_DESC_BYTES);
  if (!t->rbuf || !t->dbuf) return MK_STATUS_OUT_OF_MEMORY;
  MK_CHECK(mk_verbs_reg(&t->dev, t->rbuf, (size_t)RQ_DEPTH * RBUF, 0, IBV_ACCESS_LOCAL_WRITE, &t->rmr));
  MK_CHECK(mk_verbs_reg(&t->dev, t->dbuf, (size_t)CMD_RING * MK_EFA_DESC_BYTES, 0, IBV_ACCESS_LOCAL_WRITE, &t->dmr));
  t->cq = ibv_create_cq(t->dev.ctx, SQ_DEPTH + RQ_DEPTH, NULL, NULL, 0);
  if (!t->cq) MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET, "efa: ibv_create_cq on %s failed: %s", t->dev.name, strerror(errno));
  struct ibv_qp_init_attr_ex qa = {
      .send_cq = t->cq, .recv_cq = t->cq, .qp_type = IBV_QPT_DRIVER, .pd = t->dev.pd,
      .cap = {.max_send_wr = SQ_DEPTH, .max_recv_wr = RQ_DEPTH, .max_send_sge = 1, .max_recv_sge = 1},
      .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
      .send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM};
  struct efadv_qp_init_attr fa = {.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD};
  t->qp = efadv_create_qp_ex(t->dev.ctx, &qa, &fa, sizeof fa);
  if (!t->qp)
    MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET, "efa: cannot create an SRD QP with RDMA write on %s: %s", t->dev.name,
                  strerror(errno));
  t->qpx = ibv_qp_to_qp_ex(t->qp);
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = t->dev.port, .qkey = QKEY};
  MK_VERBS_CHECK(ibv_modify_qp(t->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY));
  a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTR};
  MK_VERBS_CHECK(ibv_modify_qp(t->qp, &a, IBV_QP_STATE));
  a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS, .sq_psn = 0, .rnr_retry = 7};
  MK_VERBS_CHECK(ibv_modify_qp(t->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
                                              (ea.device_caps & EFADV_DEVICE_ATTR_CAPS_RNR_RETRY ? IBV_QP_RNR_RETRY : 0)));
  for (uint64_t s = 0; s < RQ_DEPTH; s++) MK_CHECK(efa_post_recv(t, s));
  if (t->on_gpu) {
    int lo = 0, hi = 0;
    MK_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    MK_CUDA_CHECK(cudaStreamCreateWithPriority(&t->stream, cudaStreamNonBlocking, hi));
  }
  (void)w;
  return MK_STATUS_OK;
}

static mk_status efa_connect(efa *t, const mk_world *w, const mk_qp_info *info) {
  for (int r = 0; r < t->nranks; r++) {
    if (r / w->local_size == w->node) continue;
    struct ibv_ah_attr aa = {.is_global = 1, .port_num = t->dev.port};
    memcpy(aa.grh.dgid.raw, info[r].gid, 16);
    aa.grh.sgid_index = (uint8_t)t->dev.gid_index;
    efa_peer *p = &t->peer[r];
    p->ah = ibv_create_ah(t->dev.pd, &aa);
    if (!p->ah) MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET, "efa: no address handle for rank %d: %s", r, strerror(errno));
    p->qpn = info[r].qpn[0];
    p->rkey = info[r].rkey;
    p->addr = info[r].heap_addr;
    p->bytes = info[r].heap_bytes;
    if (info[r].qkey != QKEY)
      MK_ERR_RETURN(MK_STATUS_FORMAT_ERROR, MK_SUBSYS_NET, "efa: rank %d uses qkey 0x%x, want 0x%x", r, info[r].qkey, QKEY);
  }
  return MK_STATUS_OK;
}

mk_status mk_efa_create(mk_bootstrap_t *bs, const mk_world *w, char *heap, uint64_t heap_bytes, int on_gpu,
                        mk_transport *out) {
  memset(out, 0, sizeof *out);
  mk_status st = MK_STATUS_OK;
  uint8_t *blobs = calloc((size_t)w->size, MK_QPINFO_BYTES);
  mk_qp_info *info = calloc((size_t)w->size, sizeof *info);
  efa *t = calloc(1, sizeof *t);
  if (t) {
    t->self = w->rank;
    t->nranks = w->size;
    t->on_gpu = on_gpu;
    t->heap = heap;
    t->heap_bytes = heap_bytes;
    t->peer = calloc((size_t)w->size, sizeof *t->peer);
  }
  if (!blobs || !info || !t || !t->peer) st = MK_STATUS_OUT_OF_MEMORY;
  if (st == MK_STATUS_OK && w->size > MK_EFA_MAX_RANKS) {
    MK_WARN(MK_SUBSYS_NET, "efa: %d ranks; the transport tags writes for at most %d", w->size, MK_EFA_MAX_RANKS);
    st = MK_STATUS_UNSUPPORTED;
  }
  if (st == MK_STATUS_OK) st = efa_setup_local(t, w);
  MK_CHECK_GOTO(mk_net_agree(bs, w, st, "set up the efa transport"), st, fail);
  mk_qp_info me = {.kind = MK_TRANSPORT_EFA, .nqps = 1, .rank = (uint32_t)w->rank, .port = t->dev.port,
                   .mtu = (uint8_t)t->dev.port_attr.active_mtu, .rkey = t->mr->rkey, .qkey = QKEY,
                   .heap_addr = (uint64_t)(uintptr_t)heap, .heap_bytes = heap_bytes, .qpn = {t->qp->qp_num}};
  memcpy(me.gid, t->dev.gid.raw, 16);
  uint8_t mine[MK_QPINFO_BYTES];
  mk_qpinfo_pack(&me, mine);
  MK_CHECK_GOTO(mk_bootstrap_allgather(bs, mine, blobs, MK_QPINFO_BYTES), st, fail);
  for (int r = 0; r < w->size && st == MK_STATUS_OK; r++)
    st = mk_qpinfo_unpack(blobs + (size_t)r * MK_QPINFO_BYTES, MK_QPINFO_BYTES, r, MK_TRANSPORT_EFA, &info[r]);
  if (st == MK_STATUS_OK) st = efa_connect(t, w, info);
  MK_CHECK_GOTO(mk_net_agree(bs, w, st, "connect the efa QP"), st, fail);
  MK_INFO(MK_SUBSYS_NET, "efa: rank %d ready on %s (SRD QP 0x%x, max RDMA %llu bytes)", w->rank, t->dev.name,
          t->qp->qp_num, (unsigned long long)t->max_rdma);
  *out = (mk_transport){"efa", t, efa_post, efa_flush, efa_progress, efa_destroy};
  t = NULL;
fail:
  efa_destroy(t);
  free(blobs);
  free(info);
  return st;
}
