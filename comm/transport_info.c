/* transport_info.c — what `mk-bench --info` says of the transports: built into this
 * library (configure-time detection) and usable here (a device is present); and the choice
 * of the inter-node transport (MK_NET_TRANSPORT) from the same probe. */
#include <stdio.h>
#include <string.h>

#include "comm/mk_comm.h"
#include "core/check.h"

#include "comm/verbs_common.h"

MK_PARAM_STR(net_transport, "NET_TRANSPORT", "auto")

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

static void probe_rdma(mk_transport_info *t, int efa) {
#if MK_HAVE_VERBS
  t->built = efa ? MK_HAVE_EFA : 1;
  if (!t->built) {
    snprintf(t->detail, sizeof t->detail, "not built: efadv headers or libefa were not found at configure time");
    return;
  }
  char names[128], seen[128];
  int n = mk_verbs_probe(efa, names, sizeof names, seen, sizeof seen);
  t->usable = n > 0;
  if (n)
    snprintf(t->detail, sizeof t->detail, "%d active device(s): %.100s", n, names);
  else
    snprintf(t->detail, sizeof t->detail, "no %s device with an active port was found; devices seen: %.100s",
             efa ? "EFA" : "InfiniBand/RoCE", seen);
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

const char *mk_net_param(void) { return mk_param_net_transport(); }

mk_status mk_net_select(mk_transport_kind *out, char *why, size_t cap) {
  static const char *const names[MK_TRANSPORT_COUNT_] = {"loopback", "ib", "efa"};
  const char *want = mk_param_net_transport();
  int forced = -1;
  for (int i = 0; i < MK_TRANSPORT_COUNT_; i++)
    if (!strcmp(want, names[i])) forced = i;
  *out = MK_TRANSPORT_LOOPBACK;
  why[0] = 0;
  if (forced < 0 && strcmp(want, "auto")) {
    snprintf(why, cap, "MK_NET_TRANSPORT=%s is not one of loopback, ib, efa, auto", want);
    return MK_STATUS_INVALID_ARGUMENT;
  }
  if (forced == MK_TRANSPORT_LOOPBACK) return MK_STATUS_OK;
  mk_transport_info t;
  for (int k = MK_TRANSPORT_IB; k <= MK_TRANSPORT_EFA; k++) {
    if (forced >= 0 && forced != k) continue;
    memset(&t, 0, sizeof t);
    probe_rdma(&t, k == MK_TRANSPORT_EFA);
    if (t.usable) {
      *out = (mk_transport_kind)k;
      snprintf(why, cap, "%s: %s", names[k], t.detail);
      return MK_STATUS_OK;
    }
    if (forced == k) {
      snprintf(why, cap, "MK_NET_TRANSPORT=%s but %s", names[k], t.detail);
      return MK_STATUS_UNSUPPORTED;
    }
  }
  snprintf(why, cap, "auto: no usable RDMA device, loopback");
  return MK_STATUS_OK;
}
