/* mk_comm.h — public API of the communication layer (comm/). So far: which inter-node
 * transports this build has and whether this machine can use them. */
#ifndef MK_COMM_H
#define MK_COMM_H

#include "core/mk_core.h"

#ifdef __cplusplus
extern "C" {
#endif

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
