/* test_verbs_wc_text.c (unit) — every work-completion status turns into its IBV_WC_ name and a
 * hint (in the enum's order, checked against libibverbs' own names when it is built in);
 * out-of-range values say "unknown" instead of reading past the table. */
#include "comm/verbs_common.h"
#include "tests/mk_test.h"

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 30);
  for (int s = 0; s <= 23; s++) {
    const char *t = mk_verbs_wc_text(s);
    ASSERT_TRUE(t && !strncmp(t, "IBV_WC_", 7));
    if (s) ASSERT_TRUE(strchr(t, ':') != NULL); /* name: explanation */
  }
  ASSERT_TRUE(strstr(mk_verbs_wc_text(10), "REM_ACCESS_ERR") && strstr(mk_verbs_wc_text(10), "rkey"));
  ASSERT_TRUE(strstr(mk_verbs_wc_text(12), "RETRY_EXC_ERR") && strstr(mk_verbs_wc_text(12), "unreachable"));
  ASSERT_TRUE(strstr(mk_verbs_wc_text(5), "WR_FLUSH_ERR"));
  ASSERT_STREQ(mk_verbs_wc_text(-1), "unknown work-completion status");
  ASSERT_STREQ(mk_verbs_wc_text(24), "unknown work-completion status");
#if MK_HAVE_VERBS
  /* libibverbs' text for the same value describes the same error. */
  ASSERT_TRUE(strstr(ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR), "remote access") != NULL);
  ASSERT_TRUE(strstr(mk_verbs_wc_text(IBV_WC_REM_ACCESS_ERR), "remote access") != NULL);
  ASSERT_TRUE(strstr(mk_verbs_wc_text(IBV_WC_LOC_PROT_ERR), "local protection") != NULL);
  ASSERT_TRUE(strstr(ibv_wc_status_str(IBV_WC_LOC_PROT_ERR), "local protection") != NULL);
#endif
  printf("ok\n");
  return 0;
}
