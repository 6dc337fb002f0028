/* transport_info.c — what `mk-bench --info` says of the transports: built into this
 * library (configure-time detection) and usable here (a device is present). */
#include <stdio.h>
#include <string.h>

#include "comm/mk_comm.h"
#include "core/check.h"

#if MK_HAVE_VERBS
#include <infiniband/verbs.h>
#endif
#if MK_HAVE_EFA
#include <infiniband/efadv.h>
#endif

static void probe_loopback(mk_transport_info *t) {
  int n = 0;
  t->built = 1;
  if (mk_device_count(&n) != MK_STATUS_OK) {
    snprintf(t->detail, sizeof t->detail, "needs a GPU: %s", mk_device_absent_reason());
    return;
  }
  t->usable = 1;
  snprintf(t->detail, sizeof t->detail, "device-to-device copies between IPC-mapped heaps, %d local GPU(s)", n);
}

#if MK_HAVE_VERBS
/* Count RDMA devices (efa: 1 = only EFA devices, 0 = only non-EFA) with at least one active port. */
static int count_devices(int want_efa, char *names, size_t cap) {
  int ndev = 0, found = 0;
  struct ibv_device **list = ibv_get_device_list(&ndev);
  if (!list) return 0;
  names[0] = 0;
  for (int i = 0; i < ndev; i++) {
    const char *nm = ibv_get_device_name(list[i]);
    struct ibv_context *ctx = ibv_open_device(list[i]);
    if (!ctx) continue;
    int is_efa = 0;
#if MK_HAVE_EFA
    struct efadv_device_attr ea;
    memset(&ea, 0, sizeof ea);
    is_efa = efadv_query_device(ctx, &ea, sizeof ea) == 0;
#endif
    struct ibv_device_attr da;
    int active = 0;
    if (ibv_query_device(ctx, &da) == 0)
      for (uint8_t p = 1; p <= da.phys_port_cnt; p++) {
        struct ibv_port_attr pa;
        if (ibv_query_port(ctx, p, &pa) == 0 && pa.state == IBV_PORT_ACTIVE) active = 1;
      }
    ibv_close_device(ctx);
    if (active && is_efa == want_efa) {
      found++;
      size_t len = strlen(names);
      if (len + strlen(nm) + 2 < cap) snprintf(names + len, cap - len, "%s%s", len ? "," : "", nm);
    }
  }
  ibv_free_device_list(list);
  return found;
}
#endif

static void probe_rdma(mk_transport_info *t, int efa) {
#if MK_HAVE_VERBS
  t->built = efa ? MK_HAVE_EFA : 1;
  if (!t->built) {
    snprintf(t->detail, sizeof t->detail, "not built: efadv headers or libefa were not found at configure time");
    return;
  }
  char names[128];
  int n = count_devices(efa, names, sizeof names);
  t->usable = n > 0;
  if (n)
    snprintf(t->detail, sizeof t->detail, "%d active device(s): %s", n, names);
  else
    snprintf(t->detail, sizeof t->detail, "no %s device with an active port on this machine",
             efa ? "EFA" : "InfiniBand/RoCE");
#else
  (void)efa;
  snprintf(t->detail, sizeof t->detail, "not built: libibverbs was not found at configure time");
#endif
}

mk_status mk_comm_transport_info(mk_transport_info out[MK_TRANSPORT_COUNT_]) {
  static const char *const names[MK_TRANSPORT_COUNT_] = {"loopback", "ib", "efa"};
  for (int i = 0; i < MK_TRANSPORT_COUNT_; i++) {
    memset(&out[i], 0, sizeof out[i]);
    out[i].name = names[i];
  }
  probe_loopback(&out[MK_TRANSPORT_LOOPBACK]);
  probe_rdma(&out[MK_TRANSPORT_IB], 0);
  probe_rdma(&out[MK_TRANSPORT_EFA], 1);
  return MK_STATUS_OK;
}
