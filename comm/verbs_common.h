/* verbs_common.h — internal to comm/: what the ib and efa transports share.
 *
 *   pure helpers (no verbs calls, built always, unit-tested on the CPU):
 *     QP info wire format     a fixed 128-byte big-endian record each rank all-gathers
 *     send-queue bookkeeping  selective signalling: which WR is signalled, how many slots a
 *                             QP has left, which commands are known complete
 *     EFA receive counting    per sender, per signal epoch: data completions vs the
 *                             descriptor that announces how many to expect
 *   verbs helpers (MK_HAVE_VERBS only): device choice (MK_IB_HCA), PD, heap registration
 *     (dmabuf first, then ibv_reg_mr), work-completion status -> text.
 * Host C; no CUDA C++. */
#ifndef MK_COMM_VERBS_COMMON_H
#define MK_COMM_VERBS_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "comm/mk_comm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- QP info: what one rank tells every other rank -------------------------------------
 * Wire (big-endian, 128 bytes): magic "MKQP" u32 | version u16 | kind u8 (1 ib, 2 efa) |
 * nqps u8 | rank u32 | lid u16 | port u8 | mtu u8 (ibv_mtu) | gid[16] | rkey u32 | qkey u32 |
 * heap_addr u64 | heap_bytes u64 | qpn[16] u32 | zero padding (must be zero).
 * efa fills qpn[0] (its one SRD QP); ib leaves qpn[] zero and sends a QP-number table. */
#define MK_QPINFO_BYTES 128
#define MK_QPINFO_MAX_QPS 16
#define MK_QPINFO_MAGIC 0x4d4b5150u /* "MKQP" */
#define MK_QPINFO_VERSION 1

typedef struct mk_qp_info {
  uint8_t kind; /* MK_TRANSPORT_IB or MK_TRANSPORT_EFA */
  uint8_t nqps; /* 1..MK_QPINFO_MAX_QPS */
  uint32_t rank;
  uint16_t lid;
  uint8_t port, mtu;
  uint8_t gid[16];
  uint32_t rkey, qkey;
  uint64_t heap_addr, heap_bytes;
  uint32_t qpn[MK_QPINFO_MAX_QPS]; /* efa: 24-bit QP numbers; [nqps..) are zero */
} mk_qp_info;

void mk_qpinfo_pack(const mk_qp_info *in, uint8_t out[MK_QPINFO_BYTES]);
/* Checks everything a peer could get wrong: magic, version, kind (== want_kind), nqps, rank
 * (== from_rank), mtu, QP numbers, padding. MK_STATUS_FORMAT_ERROR with a message naming
 * from_rank and the field. */
mk_status mk_qpinfo_unpack(const uint8_t *buf, size_t len, int from_rank, int want_kind, mk_qp_info *out);

/* ---- selective signalling: one send queue --------------------------------------------------
 * Only every `every`-th WR (and the last of each doorbell chain) asks for a completion; one
 * signalled completion retires it and every earlier WR of the QP (RC completes in order).
 * every <= depth / 2, so a full queue always holds a signalled WR whose completion frees it. */
typedef struct mk_sq {
  uint32_t depth, every;
  uint64_t posted;    /* WRs handed to the QP */
  uint64_t done;      /* WRs known complete */
  uint32_t since_sig; /* unsignalled WRs since the last signalled one */
  uint64_t last_cmd;  /* global seq of the last command whose WRs went to this QP */
  uint64_t done_cmd;  /* global seq of the last command known complete on this QP */
} mk_sq;

/* depth >= 2; every is clamped to [1, depth / 2]. */
void mk_sq_init(mk_sq *q, uint32_t depth, uint32_t every);
static inline uint32_t mk_sq_room(const mk_sq *q) { return q->depth - (uint32_t)(q->posted - q->done); }
/* Account one more WR; returns 1 when it must be signalled (every-th, or last = end of chain). */
int mk_sq_next(mk_sq *q, int last);
/* A signalled WR completed: wr_count = q->posted right after it was accounted; cmd = the last
 * command whose WRs all precede or are it. */
void mk_sq_complete(mk_sq *q, uint64_t wr_count, uint64_t cmd);
/* Commands 1..result are complete, given every QP's state and the commands posted so far
 * (prev: the last value returned; the result never goes below it). */
uint64_t mk_sq_completed_cmds(const mk_sq *qs, int n, uint64_t posted_cmds, uint64_t prev);

/* ---- EFA: receiver-side counting ----------------------------------------------------------
 * A sender numbers its signals to each destination (epochs, mod 2^20). Data WRITE_WITH_IMM
 * carries imm = src_rank << 20 | epoch: the epoch of the next signal to that destination.
 * The signal is a SEND of a descriptor {src_rank, epoch, ndata, sig_off, sig_add}. SRD may
 * deliver all of these in any order; the receiver bumps the counter only once the descriptor
 * and all ndata data completions of its epoch have arrived. */
#define MK_EFA_EPOCH_BITS 20
#define MK_EFA_EPOCH_MASK ((1u << MK_EFA_EPOCH_BITS) - 1)
#define MK_EFA_MAX_RANKS (1 << (32 - MK_EFA_EPOCH_BITS))
#define MK_EFA_DESC_BYTES 32
#define MK_EFA_DESC_MAGIC 0x4d4b5347u /* "MKSG" */

static inline uint32_t mk_efa_imm(int src, uint32_t epoch) { return (uint32_t)src << MK_EFA_EPOCH_BITS | (epoch & MK_EFA_EPOCH_MASK); }

typedef struct mk_efa_desc {
  uint32_t src, epoch, ndata;
  uint64_t sig_off, sig_add;
} mk_efa_desc;
void mk_efa_desc_pack(const mk_efa_desc *d, uint8_t out[MK_EFA_DESC_BYTES]);
mk_status mk_efa_desc_unpack(const uint8_t *buf, size_t len, mk_efa_desc *out);

typedef struct mk_efa_slot {
  uint32_t epoch1;    /* epoch + 1 while in use; 0 = free */
  uint32_t seen;      /* data completions so far */
  uint32_t have_desc; /* descriptor arrived */
  uint32_t ndata;
  uint64_t sig_off, sig_add;
} mk_efa_slot;

typedef struct mk_efa_rx {
  int self, nranks;
  uint32_t window; /* epochs in flight per sender; power of two <= 2^20 */
  mk_efa_slot *slot; /* [nranks][window] */
} mk_efa_rx;

mk_status mk_efa_rx_init(mk_efa_rx *rx, int self, int nranks, uint32_t window);
void mk_efa_rx_free(mk_efa_rx *rx);
/* One data completion (imm from the CQE) / one descriptor. *ready = 1 and *sig filled when
 * this completion finished an epoch: bump sig->sig_off by sig->sig_add now. A completion
 * that cannot be right (unknown rank, window overrun, more data than announced) is
 * MK_STATUS_NET_ERROR with a message. */
mk_status mk_efa_rx_data(mk_efa_rx *rx, uint32_t imm, int *ready, mk_efa_desc *sig);
mk_status mk_efa_rx_desc(mk_efa_rx *rx, const mk_efa_desc *d, int *ready, mk_efa_desc *sig);

/* ---- transport choice (transport_info.c) --------------------------------------------------
 * MK_NET_TRANSPORT: loopback | ib | efa | auto. auto = ib when usable, else efa when usable,
 * else loopback. A forced ib/efa that is not built or has no active device here is
 * MK_STATUS_UNSUPPORTED with why[] saying so (and naming the devices seen). */
mk_status mk_net_select(mk_transport_kind *out, char *why, size_t cap);
const char *mk_net_param(void); /* the raw MK_NET_TRANSPORT value */

/* Collective: every rank contributes its status of a setup phase; OK only when all are OK.
 * A failed rank logged its own reason; the others log which ranks failed `what`. The result
 * is the own status, else MK_STATUS_REMOTE_ERROR. */
mk_status mk_net_agree(mk_bootstrap_t *bs, const mk_world *w, mk_status st, const char *what);

/* The QP-number table of one rank (ib): qpn[r * nqps + q] = its QP q towards rank r, 0 where
 * it has none. Wire: big-endian u32s. unpack checks that exactly the ranks in peer[] (1 =
 * expected) have 24-bit non-zero numbers. */
void mk_qpn_table_pack(const uint32_t *qpn, int nranks, int nqps, uint8_t *out);
mk_status mk_qpn_table_unpack(const uint8_t *buf, int nranks, int nqps, int from_rank, const uint8_t *peer, uint32_t *qpn);

/* Work-completion status (enum ibv_wc_status value) -> "IBV_WC_REM_ACCESS_ERR: ..." with a
 * hint at the usual cause. Pure (the table is ours); never NULL. */
const char *mk_verbs_wc_text(int status);

#if MK_HAVE_VERBS
#include <infiniband/verbs.h>

typedef struct mk_verbs_dev {
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  struct ibv_device_attr attr;
  struct ibv_port_attr port_attr;
  char name[64];
  uint8_t port;
  int gid_index;
  union ibv_gid gid;
} mk_verbs_dev;

/* Open the first device (MK_IB_HCA: a comma list of name prefixes, empty = any) of the wanted
 * kind (efa or not) with an active port; allocate its PD. MK_STATUS_UNSUPPORTED with a message
 * listing the devices seen when there is none. */
mk_status mk_verbs_open(int want_efa, mk_verbs_dev *out);
void mk_verbs_close(mk_verbs_dev *d);
/* Devices of that kind with an active port: count, and their names (comma list) in names;
 * seen[] gets every device seen with its state ("mlx5_0:down"), "none" when there is none. */
int mk_verbs_probe(int want_efa, char *names, size_t names_cap, char *seen, size_t seen_cap);
/* Register [base, base + bytes): on_gpu tries ibv_reg_dmabuf_mr on the dmabuf fd of the
 * range (cuMemGetHandleForAddressRange through cudaGetDriverEntryPointByVersion), then
 * ibv_reg_mr (needs the peer-memory module); host memory goes to ibv_reg_mr. */
mk_status mk_verbs_reg(mk_verbs_dev *d, void *base, size_t bytes, int on_gpu, int access, struct ibv_mr **out);
#endif

#ifdef __cplusplus
}
#endif
#endif /* MK_COMM_VERBS_COMMON_H */
