/* verbs_common.c — the pieces the ib and efa transports share: QP-info wire format, send-queue
 * bookkeeping for selective signalling, the EFA receiver's completion counting (all pure, built
 * always), and with libibverbs: device choice, PD, heap registration, completion-status text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "comm/verbs_common.h"
#include "core/check.h"

/* ---- big-endian fields ------------------------------------------------------------------- */
static void put_be(uint8_t *p, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
}
static uint64_t get_be(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v = v << 8 | p[i];
  return v;
}

/* ---- QP info ------------------------------------------------------------------------------- */
enum { QI_MAGIC = 0, QI_VER = 4, QI_KIND = 6, QI_NQPS = 7, QI_RANK = 8, QI_LID = 12, QI_PORT = 14, QI_MTU = 15,
       QI_GID = 16, QI_RKEY = 32, QI_QKEY = 36, QI_ADDR = 40, QI_BYTES = 48, QI_QPN = 56,
       QI_END = QI_QPN + 4 * MK_QPINFO_MAX_QPS };
_Static_assert(QI_END <= MK_QPINFO_BYTES, "QP info record overflows");

void mk_qpinfo_pack(const mk_qp_info *in, uint8_t out[MK_QPINFO_BYTES]) {
  memset(out, 0, MK_QPINFO_BYTES);
  put_be(out + QI_MAGIC, MK_QPINFO_MAGIC, 4);
  put_be(out + QI_VER, MK_QPINFO_VERSION, 2);
  out[QI_KIND] = in->kind;
  out[QI_NQPS] = in->nqps;
  put_be(out + QI_RANK, in->rank, 4);
  put_be(out + QI_LID, in->lid, 2);
  out[QI_PORT] = in->port;
  out[QI_MTU] = in->mtu;
  memcpy(out + QI_GID, in->gid, 16);
  put_be(out + QI_RKEY, in->rkey, 4);
  put_be(out + QI_QKEY, in->qkey, 4);
  put_be(out + QI_ADDR, in->heap_addr, 8);
  put_be(out + QI_BYTES, in->heap_bytes, 8);
  for (int i = 0; i < in->nqps && i < MK_QPINFO_MAX_QPS; i++) put_be(out + QI_QPN + 4 * i, in->qpn[i], 4);
}

#define QI_BAD(...) MK_ERR_RETURN(MK_STATUS_FORMAT_ERROR, MK_SUBSYS_NET, __VA_ARGS__)

mk_status mk_qpinfo_unpack(const uint8_t *buf, size_t len, int from_rank, int want_kind, mk_qp_info *out) {
  memset(out, 0, sizeof *out);
  if (len != MK_QPINFO_BYTES) QI_BAD("net: QP info from rank %d has %zu bytes, want %d", from_rank, len, MK_QPINFO_BYTES);
  uint32_t magic = (uint32_t)get_be(buf + QI_MAGIC, 4), ver = (uint32_t)get_be(buf + QI_VER, 2);
  if (magic != MK_QPINFO_MAGIC) QI_BAD("net: QP info from rank %d: bad magic 0x%08x (not an mkernel peer?)", from_rank, magic);
  if (ver != MK_QPINFO_VERSION)
    QI_BAD("net: QP info from rank %d has version %u, this library speaks %d (mixed builds?)", from_rank, ver,
           MK_QPINFO_VERSION);
  out->kind = buf[QI_KIND];
  out->nqps = buf[QI_NQPS];
  out->rank = (uint32_t)get_be(buf + QI_RANK, 4);
  out->lid = (uint16_t)get_be(buf + QI_LID, 2);
  out->port = buf[QI_PORT];
  out->mtu = buf[QI_MTU];
  memcpy(out->gid, buf + QI_GID, 16);
  out->rkey = (uint32_t)get_be(buf + QI_RKEY, 4);
  out->qkey = (uint32_t)get_be(buf + QI_QKEY, 4);
  out->heap_addr = get_be(buf + QI_ADDR, 8);
  out->heap_bytes = get_be(buf + QI_BYTES, 8);
  if (out->kind != want_kind)
    QI_BAD("net: rank %d set up transport kind %u, this rank kind %d (MK_NET_TRANSPORT differs between ranks?)", from_rank,
           out->kind, want_kind);
  if (out->rank != (uint32_t)from_rank) QI_BAD("net: QP info from rank %d claims to be rank %u", from_rank, out->rank);
  if (out->nqps < 1 || out->nqps > MK_QPINFO_MAX_QPS)
    QI_BAD("net: QP info from rank %d has %u QPs, want 1..%d", from_rank, out->nqps, MK_QPINFO_MAX_QPS);
  if (out->mtu < 1 || out->mtu > 5) QI_BAD("net: QP info from rank %d has path MTU code %u, want 1..5", from_rank, out->mtu);
  for (int i = 0; i < MK_QPINFO_MAX_QPS; i++) {
    out->qpn[i] = (uint32_t)get_be(buf + QI_QPN + 4 * i, 4);
    if (i < out->nqps && out->kind == MK_TRANSPORT_EFA && (out->qpn[i] == 0 || out->qpn[i] > 0xffffff))
      QI_BAD("net: QP info from rank %d: QP %d has number 0x%x, not a 24-bit QP number", from_rank, i, out->qpn[i]);
    if (i >= out->nqps && out->qpn[i]) QI_BAD("net: QP info from rank %d: QP slot %d set beyond its %u QPs", from_rank, i, out->nqps);
  }
  for (int i = QI_END; i < MK_QPINFO_BYTES; i++)
    if (buf[i]) QI_BAD("net: QP info from rank %d: padding byte %d is 0x%02x, want 0", from_rank, i, buf[i]);
  return MK_STATUS_OK;
}

void mk_qpn_table_pack(const uint32_t *qpn, int nranks, int nqps, uint8_t *out) {
  for (int i = 0; i < nranks * nqps; i++) put_be(out + 4 * i, qpn[i], 4);
}

mk_status mk_qpn_table_unpack(const uint8_t *buf, int nranks, int nqps, int from_rank, const uint8_t *peer, uint32_t *qpn) {
  for (int r = 0; r < nranks; r++)
    for (int q = 0; q < nqps; q++) {
      uint32_t v = (uint32_t)get_be(buf + 4 * ((size_t)r * nqps + q), 4);
      if (peer[r] ? v == 0 || v > 0xffffff : v != 0)
        QI_BAD("net: rank %d's QP %d towards rank %d has number 0x%x; want %s", from_rank, q, r, v,
               peer[r] ? "a 24-bit QP number" : "0 (no connection)");
      qpn[(size_t)r * nqps + q] = v;
    }
  return MK_STATUS_OK;
}

mk_status mk_net_agree(mk_bootstrap_t *bs, const mk_world *w, mk_status st, const char *what) {
  int32_t mine = (int32_t)st, *all = calloc((size_t)w->size, sizeof *all);
  if (!all) return MK_STATUS_OUT_OF_MEMORY;
  mk_status bst = mk_bootstrap_allgather(bs, &mine, all, sizeof mine);
  if (bst != MK_STATUS_OK) {
    free(all);
    return bst;
  }
  char ranks[256] = "";
  int bad = 0;
  for (int r = 0; r < w->size; r++)
    if (all[r] != MK_STATUS_OK) {
      size_t len = strlen(ranks);
      if (len + 16 < sizeof ranks) snprintf(ranks + len, sizeof ranks - len, "%s%d (%s)", bad ? ", " : "", r,
                                            mk_status_name((mk_status)all[r]));
      bad++;
    }
  free(all);
  if (!bad) return MK_STATUS_OK;
  if (st == MK_STATUS_OK) MK_WARN(MK_SUBSYS_NET, "net: %d rank(s) failed to %s: %s", bad, what, ranks);
  return st != MK_STATUS_OK ? st : MK_STATUS_REMOTE_ERROR;
}

/* ---- send-queue bookkeeping --------------------------------------------------------------- */
void mk_sq_init(mk_sq *q, uint32_t depth, uint32_t every) {
  memset(q, 0, sizeof *q);
  q->depth = depth < 2 ? 2 : depth;
  q->every = every < 1 ? 1 : every > q->depth / 2 ? q->depth / 2 : every;
}

int mk_sq_next(mk_sq *q, int last) {
  q->posted++;
  if (last || q->since_sig + 1 >= q->every) {
    q->since_sig = 0;
    return 1;
  }
  q->since_sig++;
  return 0;
}

void mk_sq_complete(mk_sq *q, uint64_t wr_count, uint64_t cmd) {
  if (wr_count > q->done) q->done = wr_count;
  if (cmd > q->done_cmd) q->done_cmd = cmd;
}

uint64_t mk_sq_completed_cmds(const mk_sq *qs, int n, uint64_t posted_cmds, uint64_t prev) {
  /* Commands complete in order on one QP. Every command <= m is done when m <= done_cmd of
   * every QP that still has work: a command on an idle QP is done, one on a busy QP is at
   * most done_cmd of that QP. */
  uint64_t m = posted_cmds;
  for (int i = 0; i < n; i++)
    if (qs[i].done_cmd < qs[i].last_cmd && qs[i].done_cmd < m) m = qs[i].done_cmd;
  return m > prev ? m : prev;
}

/* ---- EFA receive counting ------------------------------------------------------------------ */
enum { DS_MAGIC = 0, DS_SRC = 4, DS_EPOCH = 8, DS_NDATA = 12, DS_OFF = 16, DS_ADD = 24 };

void mk_efa_desc_pack(const mk_efa_desc *d, uint8_t out[MK_EFA_DESC_BYTES]) {
  put_be(out + DS_MAGIC, MK_EFA_DESC_MAGIC, 4);
  put_be(out + DS_SRC, d->src, 4);
  put_be(out + DS_EPOCH, d->epoch, 4);
  put_be(out + DS_NDATA, d->ndata, 4);
  put_be(out + DS_OFF, d->sig_off, 8);
  put_be(out + DS_ADD, d->sig_add, 8);
}

mk_status mk_efa_desc_unpack(const uint8_t *buf, size_t len, mk_efa_desc *out) {
  if (len != MK_EFA_DESC_BYTES || get_be(buf + DS_MAGIC, 4) != MK_EFA_DESC_MAGIC)
    MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET, "efa: a received signal descriptor of %zu bytes is malformed", len);
  out->src = (uint32_t)get_be(buf + DS_SRC, 4);
  out->epoch = (uint32_t)get_be(buf + DS_EPOCH, 4);
  out->ndata = (uint32_t)get_be(buf + DS_NDATA, 4);
  out->sig_off = get_be(buf + DS_OFF, 8);
  out->sig_add = get_be(buf + DS_ADD, 8);
  return MK_STATUS_OK;
}

mk_status mk_efa_rx_init(mk_efa_rx *rx, int self, int nranks, uint32_t window) {
  memset(rx, 0, sizeof *rx);
  if (nranks < 1 || nranks > MK_EFA_MAX_RANKS || !window || (window & (window - 1)) || window > MK_EFA_EPOCH_MASK + 1u)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_NET, "efa: %d ranks (at most %d) with a window of %u (a power of two)",
                  nranks, MK_EFA_MAX_RANKS, window);
  rx->slot = calloc((size_t)nranks * window, sizeof *rx->slot);
  if (!rx->slot) return MK_STATUS_OUT_OF_MEMORY;
  rx->self = self;
  rx->nranks = nranks;
  rx->window = window;
  return MK_STATUS_OK;
}

void mk_efa_rx_free(mk_efa_rx *rx) {
  free(rx->slot);
  rx->slot = NULL;
}

/* The slot of (src, epoch), claimed for that epoch if free. */
static mk_status rx_slot(mk_efa_rx *rx, uint32_t src, uint32_t epoch, const char *what, mk_efa_slot **out) {
  if (src >= (uint32_t)rx->nranks || src == (uint32_t)rx->self)
    MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET, "efa: rank %d received a %s naming sender rank %u (of %d)", rx->self,
                  what, src, rx->nranks);
  mk_efa_slot *s = &rx->slot[(size_t)src * rx->window + (epoch & (rx->window - 1))];
  if (!s->epoch1) {
    memset(s, 0, sizeof *s);
    s->epoch1 = epoch + 1;
  } else if (s->epoch1 != epoch + 1) {
    MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET,
                  "efa: rank %d received a %s for signal %u from rank %u while signal %u (same slot of the %u-signal "
                  "window) is still incomplete: the sender overran the window or data was lost",
                  rx->self, what, epoch, src, s->epoch1 - 1, rx->window);
  }
  *out = s;
  return MK_STATUS_OK;
}

static void rx_maybe_ready(mk_efa_slot *s, uint32_t src, int *ready, mk_efa_desc *sig) {
  if (!s->have_desc || s->seen != s->ndata) return;
  *ready = 1;
  *sig = (mk_efa_desc){src, s->epoch1 - 1, s->ndata, s->sig_off, s->sig_add};
  s->epoch1 = 0;
}

mk_status mk_efa_rx_data(mk_efa_rx *rx, uint32_t imm, int *ready, mk_efa_desc *sig) {
  *ready = 0;
  uint32_t src = imm >> MK_EFA_EPOCH_BITS, epoch = imm & MK_EFA_EPOCH_MASK;
  mk_efa_slot *s;
  MK_CHECK(rx_slot(rx, src, epoch, "data completion", &s));
  s->seen++;
  if (s->have_desc && s->seen > s->ndata)
    MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET, "efa: rank %d: signal %u from rank %u announced %u writes, %u arrived",
                  rx->self, epoch, src, s->ndata, s->seen);
  rx_maybe_ready(s, src, ready, sig);
  return MK_STATUS_OK;
}

mk_status mk_efa_rx_desc(mk_efa_rx *rx, const mk_efa_desc *d, int *ready, mk_efa_desc *sig) {
  *ready = 0;
  if (d->epoch > MK_EFA_EPOCH_MASK)
    MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET, "efa: rank %d: descriptor from rank %u has epoch %u beyond %u bits",
                  rx->self, d->src, d->epoch, MK_EFA_EPOCH_BITS);
  mk_efa_slot *s;
  MK_CHECK(rx_slot(rx, d->src, d->epoch, "signal descriptor", &s));
  if (s->have_desc)
    MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET, "efa: rank %d: signal %u from rank %u arrived twice", rx->self,
                  d->epoch, d->src);
  if (s->seen > d->ndata)
    MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET, "efa: rank %d: signal %u from rank %u announced %u writes, %u arrived",
                  rx->self, d->epoch, d->src, d->ndata, s->seen);
  s->have_desc = 1;
  s->ndata = d->ndata;
  s->sig_off = d->sig_off;
  s->sig_add = d->sig_add;
  rx_maybe_ready(s, d->src, ready, sig);
  return MK_STATUS_OK;
}

/* ---- work-completion status text ---------------------------------------------------------- */
const char *mk_verbs_wc_text(int status) {
  static const char *const t[] = {
      "IBV_WC_SUCCESS",
      "IBV_WC_LOC_LEN_ERR: local length error (a message longer than the QP or the peer allows)",
      "IBV_WC_LOC_QP_OP_ERR: local QP operation error (a malformed work request or a QP in a bad state)",
      "IBV_WC_LOC_EEC_OP_ERR: local EE context operation error",
      "IBV_WC_LOC_PROT_ERR: local protection error (the source range is not inside this rank's registered heap)",
      "IBV_WC_WR_FLUSH_ERR: work request flushed (an earlier error moved the QP to the error state)",
      "IBV_WC_MW_BIND_ERR: memory window bind error",
      "IBV_WC_BAD_RESP_ERR: bad response from the peer",
      "IBV_WC_LOC_ACCESS_ERR: local access error (local memory registration lacks a needed access right)",
      "IBV_WC_REM_INV_REQ_ERR: the peer rejected the request as invalid (opcode or length it does not accept)",
      "IBV_WC_REM_ACCESS_ERR: remote access error (the peer's rkey or address range is wrong: offset past its "
      "registered heap, or the heap was deregistered)",
      "IBV_WC_REM_OP_ERR: remote operation error (the peer could not complete the operation)",
      "IBV_WC_RETRY_EXC_ERR: transport retry counter exceeded (the peer is unreachable or dead; check links, GID "
      "index, and that the peer process is alive)",
      "IBV_WC_RNR_RETRY_EXC_ERR: receiver-not-ready retries exceeded (the peer posted no receive buffer in time)",
      "IBV_WC_LOC_RDD_VIOL_ERR: local RDD violation",
      "IBV_WC_REM_INV_RD_REQ_ERR: remote invalid RD request",
      "IBV_WC_REM_ABORT_ERR: the peer aborted the operation",
      "IBV_WC_INV_EECN_ERR: invalid EE context number",
      "IBV_WC_INV_EEC_STATE_ERR: invalid EE context state",
      "IBV_WC_FATAL_ERR: fatal error (the device reported a catastrophic error)",
      "IBV_WC_RESP_TIMEOUT_ERR: response timeout",
      "IBV_WC_GENERAL_ERR: general error (see the device's vendor error code)",
      "IBV_WC_TM_ERR: tag matching error",
      "IBV_WC_TM_RNDV_INCOMPLETE: tag matching rendezvous incomplete",
  };
  if (status < 0 || status >= (int)(sizeof t / sizeof t[0])) return "unknown work-completion status";
  return t[status];
}

#if MK_HAVE_VERBS
_Static_assert(IBV_WC_REM_ACCESS_ERR == 10 && IBV_WC_RETRY_EXC_ERR == 12 && IBV_WC_TM_RNDV_INCOMPLETE == 23,
               "ibv_wc_status values moved; update mk_verbs_wc_text");
#if MK_HAVE_EFA
#include <infiniband/efadv.h>
#endif

MK_PARAM_STR(ib_hca, "IB_HCA", "")
MK_PARAM_INT(ib_gid_index, "IB_GID_INDEX", -1, -1, 255)

static int is_efa_dev(struct ibv_context *ctx) {
#if MK_HAVE_EFA
  struct efadv_device_attr ea;
  memset(&ea, 0, sizeof ea);
  return efadv_query_device(ctx, &ea, sizeof ea) == 0;
#else
  (void)ctx;
  return 0;
#endif
}

static int hca_allowed(const char *name) {
  const char *f = mk_param_ib_hca();
  if (!f || !*f) return 1;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", f);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
    if (!strncmp(name, tok, strlen(tok))) return 1;
  return 0;
}

static void append(char *dst, size_t cap, const char *s) {
  size_t len = strlen(dst);
  if (len + strlen(s) + 2 < cap) snprintf(dst + len, cap - len, "%s%s", len ? "," : "", s);
}

/* First active port of ctx, or 0. */
static uint8_t active_port(struct ibv_context *ctx, struct ibv_port_attr *pa_out) {
  struct ibv_device_attr da;
  if (ibv_query_device(ctx, &da)) return 0;
  for (uint8_t p = 1; p <= da.phys_port_cnt; p++) {
    struct ibv_port_attr pa;
    if (ibv_query_port(ctx, p, &pa) == 0 && pa.state == IBV_PORT_ACTIVE) {
      if (pa_out) *pa_out = pa;
      return p;
    }
  }
  return 0;
}

/* Walk the devices; open the first match into out when out != NULL. */
static int walk(int want_efa, char *names, size_t ncap, char *seen, size_t scap, mk_verbs_dev *out) {
  int ndev = 0, found = 0;
  if (names) names[0] = 0;
  if (seen) seen[0] = 0;
  struct ibv_device **list = ibv_get_device_list(&ndev);
  for (int i = 0; list && i < ndev; i++) {
    const char *nm = ibv_get_device_name(list[i]);
    struct ibv_context *ctx = ibv_open_device(list[i]);
    char tag[96];
    if (!ctx) {
      snprintf(tag, sizeof tag, "%s:cannot-open", nm);
      if (seen) append(seen, scap, tag);
      continue;
    }
    struct ibv_port_attr pa;
    int efa = is_efa_dev(ctx), allowed = hca_allowed(nm);
    uint8_t port = active_port(ctx, &pa);
    snprintf(tag, sizeof tag, "%s:%s%s%s", nm, efa ? "efa," : "", port ? "active" : "down", allowed ? "" : ",excluded-by-MK_IB_HCA");
    if (seen) append(seen, scap, tag);
    if (port && allowed && efa == want_efa) {
      found++;
      if (names) append(names, ncap, nm);
      if (out && !out->ctx) {
        out->ctx = ctx;
        out->port = port;
        out->port_attr = pa;
        snprintf(out->name, sizeof out->name, "%s", nm);
        continue; /* keep it open */
      }
    }
    ibv_close_device(ctx);
  }
  if (list) ibv_free_device_list(list);
  if (seen && !seen[0]) snprintf(seen, scap, "none");
  return found;
}

int mk_verbs_probe(int want_efa, char *names, size_t names_cap, char *seen, size_t seen_cap) {
  return walk(want_efa, names, names_cap, seen, seen_cap, NULL);
}

mk_status mk_verbs_open(int want_efa, mk_verbs_dev *out) {
  memset(out, 0, sizeof *out);
  char seen[512];
  walk(want_efa, NULL, 0, seen, sizeof seen, out);
  if (!out->ctx)
    MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_NET, "net: no %s device with an active port was found%s; devices seen: %s",
                  want_efa ? "EFA" : "InfiniBand/RoCE", *mk_param_ib_hca() ? " among MK_IB_HCA" : "", seen);
  mk_status st = MK_STATUS_OK;
  MK_VERBS_CHECK_GOTO(ibv_query_device(out->ctx, &out->attr), st, fail);
  out->pd = ibv_alloc_pd(out->ctx);
  if (!out->pd) {
    MK_WARN(MK_SUBSYS_NET, "net: ibv_alloc_pd on %s failed: %s", out->name, strerror(errno));
    st = MK_STATUS_NET_ERROR;
    goto fail;
  }
  /* GID: MK_IB_GID_INDEX, else 0 (InfiniBand needs none; RoCE v2 usually wants 3). */
  out->gid_index = mk_param_ib_gid_index() >= 0 ? (int)mk_param_ib_gid_index() : 0;
  if (out->gid_index >= out->port_attr.gid_tbl_len && out->port_attr.gid_tbl_len > 0) {
    MK_WARN(MK_SUBSYS_NET, "net: MK_IB_GID_INDEX=%d but %s port %u has %d GIDs", out->gid_index, out->name, out->port,
            out->port_attr.gid_tbl_len);
    st = MK_STATUS_INVALID_ARGUMENT;
    goto fail;
  }
  MK_VERBS_CHECK_GOTO(ibv_query_gid(out->ctx, out->port, out->gid_index, &out->gid), st, fail);
  MK_INFO(MK_SUBSYS_NET, "net: using %s port %u (%s), GID index %d", out->name, out->port,
          out->port_attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand", out->gid_index);
  return MK_STATUS_OK;
fail:
  mk_verbs_close(out);
  return st;
}

void mk_verbs_close(mk_verbs_dev *d) {
  if (!d) return;
  if (d->pd) ibv_dealloc_pd(d->pd);
  if (d->ctx) ibv_close_device(d->ctx);
  memset(d, 0, sizeof *d);
}

/* cuMemGetHandleForAddressRange, reached through the runtime (libcuda is never linked). */
typedef int (*get_handle_fn)(void *handle, unsigned long long dptr, size_t size, int type, unsigned long long flags);

mk_status mk_verbs_reg(mk_verbs_dev *d, void *base, size_t bytes, int on_gpu, int access, struct ibv_mr **out) {
  *out = NULL;
  if (on_gpu) {
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuMemGetHandleForAddressRange", &fn, 12000, cudaEnableDefault, &q) ==
            cudaSuccess && q == cudaDriverEntryPointSuccess && fn) {
      int fd = -1;
      int r = ((get_handle_fn)fn)(&fd, (unsigned long long)(uintptr_t)base, bytes, 1 /* DMA_BUF_FD */, 0);
      if (r == 0 && fd >= 0) {
        *out = ibv_reg_dmabuf_mr(d->pd, 0, bytes, (uint64_t)(uintptr_t)base, fd, access);
        int e = errno;
        close(fd);
        if (*out) {
          MK_INFO(MK_SUBSYS_NET, "net: heap of %zu bytes registered on %s through dmabuf", bytes, d->name);
          return MK_STATUS_OK;
        }
        MK_INFO(MK_SUBSYS_NET, "net: ibv_reg_dmabuf_mr failed (%s); trying ibv_reg_mr (peer memory)", strerror(e));
      } else {
        MK_INFO(MK_SUBSYS_NET, "net: no dmabuf handle for the heap (CUresult %d); trying ibv_reg_mr (peer memory)", r);
      }
    }
  }
  *out = ibv_reg_mr(d->pd, base, bytes, access);
  if (!*out)
    MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_NET, "net: cannot register %zu bytes of %s memory on %s: %s%s", bytes,
                  on_gpu ? "GPU" : "host", d->name, strerror(errno),
                  on_gpu ? " (dmabuf failed too; GPU memory needs a dmabuf-capable driver or the nvidia-peermem module)" : "");
  return MK_STATUS_OK;
}
#endif /* MK_HAVE_VERBS */
