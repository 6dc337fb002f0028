/* test_net_select.c (unit) — MK_NET_TRANSPORT: loopback and auto always resolve (auto to
 * loopback when no RDMA device is usable); a misspelt value is INVALID_ARGUMENT; a forced ib or
 * efa on a machine without such a device is UNSUPPORTED with a message saying so and listing
 * the devices seen (skipped where the device exists). The same answer as mk-bench --info. */
#include <stdlib.h>

#include "comm/verbs_common.h"
#include "tests/mk_test.h"

static mk_status sel(const char *v, mk_transport_kind *k, char *why, size_t cap) {
  setenv("MK_NET_TRANSPORT", v, 1);
  mk_param_reset_cache();
  return mk_net_select(k, why, cap);
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 30);
  mk_transport_info info[MK_TRANSPORT_COUNT_];
  ASSERT_OK(mk_comm_transport_info(info));
  char why[320];
  mk_transport_kind k;
  ASSERT_OK(sel("loopback", &k, why, sizeof why));
  ASSERT_EQ(k, MK_TRANSPORT_LOOPBACK);
  ASSERT_STATUS(sel("infiniband", &k, why, sizeof why), MK_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(strstr(why, "MK_NET_TRANSPORT=infiniband is not one of"));
  ASSERT_OK(sel("auto", &k, why, sizeof why));
  ASSERT_EQ(k, info[MK_TRANSPORT_IB].usable ? MK_TRANSPORT_IB : info[MK_TRANSPORT_EFA].usable ? MK_TRANSPORT_EFA
                                                                                                : MK_TRANSPORT_LOOPBACK);
  printf("auto: %s\n", why);
  int checked = 0;
  for (int t = MK_TRANSPORT_IB; t <= MK_TRANSPORT_EFA; t++) {
    mk_status st = sel(info[t].name, &k, why, sizeof why);
    printf("%s: %s (%s)\n", info[t].name, mk_status_name(st), why);
    if (info[t].usable) {
      ASSERT_OK(st);
      ASSERT_EQ(k, t);
      continue;
    }
    ASSERT_STATUS(st, MK_STATUS_UNSUPPORTED);
    char want[96];
    snprintf(want, sizeof want, "MK_NET_TRANSPORT=%s but ", info[t].name);
    ASSERT_TRUE(!strncmp(why, want, strlen(want)));
    if (info[t].built) {
      ASSERT_TRUE(strstr(why, t == MK_TRANSPORT_IB ? "no InfiniBand/RoCE device with an active port was found; devices seen: "
                                                   : "no EFA device with an active port was found; devices seen: "));
    } else {
      ASSERT_TRUE(strstr(why, "not built"));
    }
    checked++;
  }
  if (!checked) {
    printf("both RDMA transports are usable here: the no-device path is not reachable\n");
    return MK_TEST_SKIP_CODE;
  }
  printf("ok\n");
  return 0;
}
