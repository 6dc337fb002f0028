/* test_comm_net_forced.c (unit; run as mk-launch -n 4 --nodes 2 with MK_NET_TRANSPORT=ib) —
 * forcing an RDMA transport on a machine without its device fails mk_comm_create on every
 * rank, before any GPU work, with MK_STATUS_UNSUPPORTED and the message naming the variable and
 * the devices seen. Skipped where the device exists. */
#include <stdlib.h>

#include "comm/verbs_common.h"
#include "tests/mk_test.h"

static int g_seen;
static void on_log(mk_log_level level, unsigned subsys, const char *line, void *user) {
  (void)level, (void)subsys, (void)user;
  fprintf(stderr, "%s\n", line);
  if (strstr(line, "MK_NET_TRANSPORT=") && strstr(line, " but ") && strstr(line, "devices seen: ")) g_seen = 1;
  if (strstr(line, "MK_NET_TRANSPORT=") && strstr(line, "not built")) g_seen = 1;
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 60);
  const char *want = mk_net_param();
  ASSERT_TRUE(want && (!strcmp(want, "ib") || !strcmp(want, "efa")));
  mk_transport_info info[MK_TRANSPORT_COUNT_];
  ASSERT_OK(mk_comm_transport_info(info));
  if (info[!strcmp(want, "ib") ? MK_TRANSPORT_IB : MK_TRANSPORT_EFA].usable) {
    printf("%s is usable here: nothing to test\n", want);
    return MK_TEST_SKIP_CODE;
  }
  mk_log_set_callback(on_log, NULL);
  mk_comm_t *c = NULL;
  ASSERT_STATUS(mk_comm_create(&c), MK_STATUS_UNSUPPORTED);
  ASSERT_TRUE(c == NULL);
  ASSERT_TRUE(g_seen);
  printf("ok\n");
  return 0;
}
