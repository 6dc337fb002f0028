/* transport_ib.c — the `ib` inter-node transport: libibverbs RC (ConnectX, InfiniBand, RoCE).
 *
 * Layout and ownership
 *   Each rank registers its whole symmetric heap once (dmabuf first, ibv_reg_mr as fallback;
 *   access LOCAL_WRITE | REMOTE_WRITE | REMOTE_ATOMIC). Towards every rank of another node group
 *   it creates MK_IB_QPS_PER_PEER RC QPs (send side only; all share one CQ). Setup exchanges, over
 *   the bootstrap: a 128-byte QP-info record per rank (LID, GID, MTU, heap rkey/address/size) and
 *   a table of QP numbers [rank][qp]; rank a's QP q to b connects to b's QP q to a.
 *   An 8-byte host scratch (registered) receives the fetched values of the signal atomics.
 * Commands
 *   PUT         RDMA WRITE (chunks of at most the port's max message size) heap+src_off ->
 *               peer heap+dst_off, on one QP.
 *   SIGNAL      an 8-byte FETCH_AND_ADD of sig_add on the peer's counter, on the same QP as the
 *               data it covers: RC executes a QP's requests in order at the responder, so the add
 *               lands after the writes before it. PUT_SIGNAL = both.
 * Ordering (which QP)
 *   Per destination: bare PUTs go on the destination's current lane; a signal-bearing command
 *   goes on that same lane while bare PUT data sits there unsignalled, else on lane
 *   (sig_off / 8) % nqps (different counters spread over the QPs). So every write precedes, on
 *   its QP, the first signal posted after it to that destination: a signal covers its own data
 *   and the bare PUTs since the previous signal. With several QPs a signal on one counter may
 *   overtake data already covered by another counter's earlier signal; a consumer reads only
 *   data covered by the counters it waited on (MK_IB_QPS_PER_PEER=1 keeps full per-destination
 *   order, as loopback does).
 * Doorbells and selective signalling
 *   post() only queues work requests on the QP's pending chain; flush() posts each chain with one
 *   ibv_post_send. Every MK_IB_SIGNAL_EVERY-th WR and the last of each chain are signalled; a
 *   signalled completion retires every earlier WR of its QP (mk_sq). Each QP keeps a ring of its
 *   signalled WRs {WR count, last command covered}; progress() polls the CQ and reports the
 *   longest prefix of commands known complete across QPs (mk_sq_completed_cmds).
 * Errors
 *   A bad command is MK_STATUS_INVALID_ARGUMENT; a failed completion is MK_STATUS_NET_ERROR with
 *   the peer, the QP and the status explained (mk_verbs_wc_text). Counters that this transport
 *   adds to must not also receive NVLink atomics (NIC atomics are atomic among themselves only). */
#include <stdlib.h>
#include <string.h>

#include "comm/proxy.h"
#include "comm/verbs_common.h"
#include "core/check.h"

MK_PARAM_INT(ib_qps_per_peer, "IB_QPS_PER_PEER", 4, 1, MK_QPINFO_MAX_QPS)
MK_PARAM_INT(ib_signal_every, "IB_SIGNAL_EVERY", 16, 1, 4096)

enum { SQ_DEPTH = 512, MAX_CHUNK = 1 << 30 };

typedef struct ib_sig { uint64_t wr_count, cmd; } ib_sig;

typedef struct ib_qp {
  struct ibv_qp *qp;
  int peer, lane;
  struct ibv_send_wr *wr; /* pending chain [SQ_DEPTH] */
  struct ibv_sge *sge;
  uint64_t *wr_cmd;       /* command whose last WR this is, else 0 */
  uint32_t npending;
  uint64_t chain_cmd;     /* last command whose WRs have all been handed to the QP */
  ib_sig *sig;            /* ring [SQ_DEPTH] of signalled WRs in flight */
  uint32_t sig_head, sig_len;
  int queued;             /* in the dirty list */
} ib_qp;

typedef struct ib_peer { uint64_t addr, bytes; uint32_t rkey; int cur_lane, dirty; } ib_peer;

typedef struct ib {
  int self, nranks, nqps;
  char *heap;
  uint64_t heap_bytes;
  mk_verbs_dev dev;
  struct ibv_mr *mr, *scratch_mr;
  uint64_t *scratch;
  struct ibv_cq *cq;
  ib_qp *qps;       /* [nranks * nqps]; qp == NULL towards ranks of this node group */
  mk_sq *sq;        /* [nranks * nqps] */
  ib_peer *peer;    /* [nranks] */
  int *dirtyq, ndirty;
  uint64_t posted_cmds, completed;
  uint64_t max_chunk;
} ib;

static mk_status ib_progress(void *ctx, uint64_t *completed) {
  ib *t = ctx;
  struct ibv_wc wc[32];
  int n;
  while ((n = ibv_poll_cq(t->cq, 32, wc)) > 0)
    for (int i = 0; i < n; i++) {
      const int qi = (int)wc[i].wr_id;
      ib_qp *q = &t->qps[qi];
      if (wc[i].status != IBV_WC_SUCCESS)
        MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET,
                      "ib: rank %d -> rank %d (QP %d, qpn 0x%x on %s): work completion failed: %s (vendor error 0x%x)",
                      t->self, q->peer, q->lane, q->qp->qp_num, t->dev.name, mk_verbs_wc_text(wc[i].status),
                      wc[i].vendor_err);
      if (!q->sig_len)
        MK_ERR_RETURN(MK_STATUS_INTERNAL, MK_SUBSYS_NET, "ib: completion on QP %d to rank %d with none in flight", q->lane,
                      q->peer);
      ib_sig s = q->sig[q->sig_head];
      q->sig_head = (q->sig_head + 1) % SQ_DEPTH;
      q->sig_len--;
      mk_sq_complete(&t->sq[qi], s.wr_count, s.cmd);
    }
  if (n < 0) MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET, "ib: ibv_poll_cq failed on %s", t->dev.name);
  t->completed = mk_sq_completed_cmds(t->sq, t->nranks * t->nqps, t->posted_cmds, t->completed);
  *completed = t->completed;
  return MK_STATUS_OK;
}

/* Hand QP qi's pending chain to the NIC with one doorbell. */
static mk_status ib_ring(ib *t, int qi) {
  ib_qp *q = &t->qps[qi];
  mk_sq *sq = &t->sq[qi];
  if (!q->npending) return MK_STATUS_OK;
  for (uint32_t i = 0; i < q->npending; i++) {
    struct ibv_send_wr *w = &q->wr[i];
    w->next = i + 1 < q->npending ? &q->wr[i + 1] : NULL;
    if (q->wr_cmd[i]) q->chain_cmd = q->wr_cmd[i];
    w->wr_id = (uint64_t)qi;
    w->send_flags = 0;
    if (mk_sq_next(sq, i + 1 == q->npending)) {
      w->send_flags = IBV_SEND_SIGNALED;
      q->sig[(q->sig_head + q->sig_len) % SQ_DEPTH] = (ib_sig){sq->posted, q->chain_cmd};
      q->sig_len++;
    }
  }
  struct ibv_send_wr *bad = NULL;
  int r = ibv_post_send(q->qp, &q->wr[0], &bad);
  q->npending = 0;
  if (r)
    MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET, "ib: ibv_post_send to rank %d (QP %d) failed: %s", q->peer, q->lane,
                  strerror(r > 0 ? r : errno));
  return MK_STATUS_OK;
}

static mk_status ib_flush(void *ctx) {
  ib *t = ctx;
  for (int i = 0; i < t->ndirty; i++) {
    t->qps[t->dirtyq[i]].queued = 0;
    MK_CHECK(ib_ring(t, t->dirtyq[i]));
  }
  t->ndirty = 0;
  return MK_STATUS_OK;
}

/* Room for n more WRs on QP qi (pending + in flight <= depth): ring it and wait (bounded). */
static mk_status ib_reserve(ib *t, int qi, uint32_t n) {
  ib_qp *q = &t->qps[qi];
  MK_CHECK(ib_ring(t, qi));
  const int64_t deadline = mk_now_ms() + mk_param_timeout_ms();
  uint64_t dummy;
  while (mk_sq_room(&t->sq[qi]) < n) {
    MK_CHECK(ib_progress(t, &dummy));
    if (mk_now_ms() > deadline)
      MK_ERR_RETURN(MK_STATUS_TIMEOUT, MK_SUBSYS_NET, "ib: rank %d: QP %d to rank %d stayed full for MK_TIMEOUT_MS=%lld",
                    t->self, q->lane, q->peer, (long long)mk_param_timeout_ms());
  }
  return MK_STATUS_OK;
}

static struct ibv_send_wr *ib_push(ib *t, int qi, uint64_t lbase, uint64_t len, uint32_t lkey) {
  ib_qp *q = &t->qps[qi];
  uint32_t i = q->npending++;
  struct ibv_send_wr *w = &q->wr[i];
  memset(w, 0, sizeof *w);
  q->sge[i] = (struct ibv_sge){lbase, (uint32_t)len, lkey};
  w->sg_list = &q->sge[i];
  w->num_sge = 1;
  q->wr_cmd[i] = 0;
  if (!q->queued) {
    q->queued = 1;
    t->dirtyq[t->ndirty++] = qi;
  }
  return w;
}

static mk_status ib_post(void *ctx, const mk_fifo_cmd *c) {
  ib *t = ctx;
  int data, sig;
  const int reach = c->dst_rank >= 0 && c->dst_rank < t->nranks && t->qps[(size_t)c->dst_rank * t->nqps].qp;
  const uint64_t dst_bytes = reach ? t->peer[c->dst_rank].bytes : 0;
  MK_CHECK(mk_cmd_check("ib", t->self, t->nranks, reach, t->heap_bytes, dst_bytes, c, &data, &sig));
  ib_peer *p = &t->peer[c->dst_rank];
  const uint64_t seq = ++t->posted_cmds;
  const uint64_t nchunks = data ? (c->bytes + t->max_chunk - 1) / t->max_chunk : 0;
  if (!nchunks && !sig) return MK_STATUS_OK; /* an empty put: nothing to send, done at once */
  int lane = p->cur_lane;
  if (sig && !p->dirty) lane = (int)((c->sig_off / 8) % (uint64_t)t->nqps);
  const int qi = c->dst_rank * t->nqps + lane;
  t->sq[qi].last_cmd = seq; /* busy from here: progress may run inside ib_reserve */
  for (uint64_t k = 0, off = 0; k < nchunks + (uint64_t)sig; k++) {
    if (t->qps[qi].npending + 1 > mk_sq_room(&t->sq[qi])) MK_CHECK(ib_reserve(t, qi, 1));
    if (k < nchunks) {
      uint64_t len = c->bytes - off < t->max_chunk ? c->bytes - off : t->max_chunk;
      struct ibv_send_wr *w = ib_push(t, qi, (uint64_t)(uintptr_t)(t->heap + c->src_off + off), len, t->mr->lkey);
      w->opcode = IBV_WR_RDMA_WRITE;
      w->wr.rdma.remote_addr = p->addr + c->dst_off + off;
      w->wr.rdma.rkey = p->rkey;
      off += len;
    } else {
      struct ibv_send_wr *w = ib_push(t, qi, (uint64_t)(uintptr_t)t->scratch, 8, t->scratch_mr->lkey);
      w->opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
      w->wr.atomic.remote_addr = p->addr + c->sig_off;
      w->wr.atomic.rkey = p->rkey;
      w->wr.atomic.compare_add = c->sig_add;
    }
  }
  ib_qp *q = &t->qps[qi];
  q->wr_cmd[q->npending - 1] = seq;
  p->cur_lane = lane;
  p->dirty = !sig;
  return MK_STATUS_OK;
}

static void ib_destroy(void *ctx) {
  ib *t = ctx;
  if (!t) return;
  for (int i = 0; t->qps && i < t->nranks * t->nqps; i++) {
    ib_qp *q = &t->qps[i];
    if (q->qp) ibv_destroy_qp(q->qp);
    free(q->wr);
    free(q->sge);
    free(q->wr_cmd);
    free(q->sig);
  }
  if (t->cq) ibv_destroy_cq(t->cq);
  if (t->mr) ibv_dereg_mr(t->mr);
  if (t->scratch_mr) ibv_dereg_mr(t->scratch_mr);
  mk_verbs_close(&t->dev);
  free(t->scratch);
  free(t->qps);
  free(t->sq);
  free(t->peer);
  free(t->dirtyq);
  free(t);
}

/* Local part of setup: device, registrations, CQ, QPs (RESET -> INIT). */
static mk_status ib_setup_local(ib *t, const mk_world *w, int on_gpu, uint32_t *my_qpn) {
  MK_CHECK(mk_verbs_open(0, &t->dev));
  if (t->dev.attr.atomic_cap == IBV_ATOMIC_NONE)
    MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_NET, "ib: %s has no RDMA atomics; the ib transport signals with them",
                  t->dev.name);
  const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
  MK_CHECK(mk_verbs_reg(&t->dev, t->heap, t->heap_bytes, on_gpu, access, &t->mr));
  if (posix_memalign((void **)&t->scratch, 64, 64)) return MK_STATUS_OUT_OF_MEMORY;
  MK_CHECK(mk_verbs_reg(&t->dev, t->scratch, 64, 0, IBV_ACCESS_LOCAL_WRITE, &t->scratch_mr));
  t->max_chunk = t->dev.port_attr.max_msg_sz && t->dev.port_attr.max_msg_sz < MAX_CHUNK ? t->dev.port_attr.max_msg_sz : MAX_CHUNK;
  const int nq = t->nranks * t->nqps;
  int npeers = 0;
  for (int r = 0; r < t->nranks; r++) npeers += r / w->local_size != w->node;
  const uint32_t depth = SQ_DEPTH < t->dev.attr.max_qp_wr ? SQ_DEPTH : (uint32_t)t->dev.attr.max_qp_wr;
  int cqe = npeers * t->nqps * (int)depth;
  if (cqe > t->dev.attr.max_cqe) cqe = t->dev.attr.max_cqe;
  t->cq = ibv_create_cq(t->dev.ctx, cqe, NULL, NULL, 0);
  if (!t->cq) MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET, "ib: ibv_create_cq(%d) on %s failed: %s", cqe, t->dev.name, strerror(errno));
  for (int i = 0; i < nq; i++) {
    ib_qp *q = &t->qps[i];
    q->peer = i / t->nqps;
    q->lane = i % t->nqps;
    if (q->peer / w->local_size == w->node) continue;
    q->wr = calloc(SQ_DEPTH, sizeof *q->wr);
    q->sge = calloc(SQ_DEPTH, sizeof *q->sge);
    q->wr_cmd = calloc(SQ_DEPTH, sizeof *q->wr_cmd);
    q->sig = calloc(SQ_DEPTH, sizeof *q->sig);
    if (!q->wr || !q->sge || !q->wr_cmd || !q->sig) return MK_STATUS_OUT_OF_MEMORY;
    mk_sq_init(&t->sq[i], depth, (uint32_t)mk_param_ib_signal_every());
    struct ibv_qp_init_attr qa = {.send_cq = t->cq, .recv_cq = t->cq, .qp_type = IBV_QPT_RC,
                                  .cap = {.max_send_wr = depth, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
    q->qp = ibv_create_qp(t->dev.pd, &qa);
    if (!q->qp)
      MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET, "ib: ibv_create_qp to rank %d on %s failed: %s", q->peer, t->dev.name,
                    strerror(errno));
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = t->dev.port, .qp_access_flags = access};
    MK_VERBS_CHECK(ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
    my_qpn[i] = q->qp->qp_num;
  }
  return MK_STATUS_OK;
}

/* INIT -> RTR -> RTS for every QP, given the peers' records and QP tables. */
static mk_status ib_connect(ib *t, const mk_qp_info *info, const uint32_t *qpn_all) {
  for (int i = 0; i < t->nranks * t->nqps; i++) {
    ib_qp *q = &t->qps[i];
    if (!q->qp) continue;
    const mk_qp_info *pi = &info[q->peer];
    const uint32_t remote_qpn = qpn_all[((size_t)q->peer * t->nranks + t->self) * t->nqps + q->lane];
    int mtu = t->dev.port_attr.active_mtu < pi->mtu ? t->dev.port_attr.active_mtu : pi->mtu;
    int rd_atom = t->dev.attr.max_qp_rd_atom < 16 ? t->dev.attr.max_qp_rd_atom : 16;
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR, .path_mtu = (enum ibv_mtu)mtu, .dest_qp_num = remote_qpn,
                            .rq_psn = 0, .max_dest_rd_atomic = (uint8_t)rd_atom, .min_rnr_timer = 12};
    a.ah_attr.dlid = pi->lid;
    a.ah_attr.port_num = t->dev.port;
    if (t->dev.port_attr.link_layer == IBV_LINK_LAYER_ETHERNET || t->dev.port_attr.lid == 0) {
      a.ah_attr.is_global = 1;
      memcpy(a.ah_attr.grh.dgid.raw, pi->gid, 16);
      a.ah_attr.grh.sgid_index = (uint8_t)t->dev.gid_index;
      a.ah_attr.grh.hop_limit = 255;
    }
    MK_VERBS_CHECK(ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                                IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));
    struct ibv_qp_attr b = {.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .sq_psn = 0,
                            .max_rd_atomic = (uint8_t)rd_atom};
    MK_VERBS_CHECK(ibv_modify_qp(q->qp, &b, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                                IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC));
    t->peer[q->peer] = (ib_peer){pi->heap_addr, pi->heap_bytes, pi->rkey, 0, 0};
  }
  return MK_STATUS_OK;
}

mk_status mk_ib_create(mk_bootstrap_t *bs, const mk_world *w, char *heap, uint64_t heap_bytes, int on_gpu,
                       mk_transport *out) {
  memset(out, 0, sizeof *out);
  mk_status st = MK_STATUS_OK;
  uint8_t *blobs = NULL, *tabs = NULL, *peer = NULL;
  uint32_t *my_qpn = NULL, *qpn_all = NULL;
  mk_qp_info *info = NULL;
  const int n = w->size, nqps = (int)mk_param_ib_qps_per_peer();
  const size_t tab_bytes = (size_t)n * nqps * 4;
  ib *t = calloc(1, sizeof *t);
  if (t) {
    *t = (ib){.self = w->rank, .nranks = n, .nqps = nqps, .heap = heap, .heap_bytes = heap_bytes};
    t->qps = calloc((size_t)n * nqps, sizeof *t->qps);
    t->sq = calloc((size_t)n * nqps, sizeof *t->sq);
    t->peer = calloc((size_t)n, sizeof *t->peer);
    t->dirtyq = calloc((size_t)n * nqps, sizeof *t->dirtyq);
  }
  blobs = calloc((size_t)n, MK_QPINFO_BYTES);
  tabs = calloc((size_t)n, tab_bytes);
  peer = calloc((size_t)n, 1);
  my_qpn = calloc((size_t)n * nqps, 4);
  qpn_all = calloc((size_t)n * n * nqps, 4);
  info = calloc((size_t)n, sizeof *info);
  if (!t || !t->qps || !t->sq || !t->peer || !t->dirtyq || !blobs || !tabs || !peer || !my_qpn || !qpn_all || !info)
    st = MK_STATUS_OUT_OF_MEMORY;
  if (st == MK_STATUS_OK) st = ib_setup_local(t, w, on_gpu, my_qpn);
  MK_CHECK_GOTO(mk_net_agree(bs, w, st, "set up the ib transport"), st, fail);

  mk_qp_info me = {.kind = MK_TRANSPORT_IB, .nqps = (uint8_t)nqps, .rank = (uint32_t)w->rank,
                   .lid = t->dev.port_attr.lid, .port = t->dev.port, .mtu = (uint8_t)t->dev.port_attr.active_mtu,
                   .rkey = t->mr->rkey, .heap_addr = (uint64_t)(uintptr_t)heap, .heap_bytes = heap_bytes};
  memcpy(me.gid, t->dev.gid.raw, 16);
  uint8_t mine[MK_QPINFO_BYTES];
  mk_qpinfo_pack(&me, mine);
  MK_CHECK_GOTO(mk_bootstrap_allgather(bs, mine, blobs, MK_QPINFO_BYTES), st, fail);
  mk_qpn_table_pack(my_qpn, n, nqps, tabs + (size_t)w->rank * tab_bytes);
  MK_CHECK_GOTO(mk_bootstrap_allgather(bs, tabs + (size_t)w->rank * tab_bytes, tabs, tab_bytes), st, fail);
  for (int r = 0; r < n && st == MK_STATUS_OK; r++) {
    st = mk_qpinfo_unpack(blobs + (size_t)r * MK_QPINFO_BYTES, MK_QPINFO_BYTES, r, MK_TRANSPORT_IB, &info[r]);
    for (int k = 0; k < n; k++) peer[k] = k / w->local_size != r / w->local_size;
    if (st == MK_STATUS_OK) st = mk_qpn_table_unpack(tabs + (size_t)r * tab_bytes, n, nqps, r, peer, qpn_all + (size_t)r * n * nqps);
  }
  if (st == MK_STATUS_OK) st = ib_connect(t, info, qpn_all);
  MK_CHECK_GOTO(mk_net_agree(bs, w, st, "connect the ib QPs"), st, fail);
  MK_INFO(MK_SUBSYS_NET, "ib: rank %d connected on %s with %d QP(s) per peer, signalling every %lld WRs", w->rank,
          t->dev.name, nqps, (long long)mk_param_ib_signal_every());
  *out = (mk_transport){"ib", t, ib_post, ib_flush, ib_progress, ib_destroy};
  t = NULL;
fail:
  ib_destroy(t);
  free(blobs);
  free(tabs);
  free(peer);
  free(my_qpn);
  free(qpn_all);
  free(info);
  return st;
}
