/* test_log.c — MK_DEBUG / MK_DEBUG_SUBSYS parsing, filtering, the line prefix and the
 * callback hook. Runs with MK_DEBUG=INFO MK_DEBUG_SUBSYS=NET,PROXY (set by ctest). */
#include <string.h>
#include <unistd.h>

#include "tests/mk_test.h"

static int g_calls;
static char g_last[2048];
static unsigned g_last_subsys;

static void capture(mk_log_level lvl, unsigned subsys, const char *line, void *user) {
  (void)lvl;
  ASSERT_TRUE(user == &g_calls);
  g_calls++;
  g_last_subsys = subsys;
  snprintf(g_last, sizeof g_last, "%s", line);
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 10);
  mk_log_level lvl;
  ASSERT_OK(mk_log_parse_level("trace", &lvl));
  ASSERT_EQ(lvl, MK_LOG_TRACE);
  ASSERT_OK(mk_log_parse_level("NONE", &lvl));
  ASSERT_EQ(lvl, MK_LOG_NONE);
  ASSERT_STATUS(mk_log_parse_level("LOUD", &lvl), MK_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS(mk_log_parse_level(NULL, &lvl), MK_STATUS_INVALID_ARGUMENT);

  unsigned mask = 0;
  ASSERT_OK(mk_log_parse_subsys("NET,proxy", &mask));
  ASSERT_UEQ(mask, MK_SUBSYS_NET | MK_SUBSYS_PROXY);
  ASSERT_OK(mk_log_parse_subsys("^INIT", &mask));
  ASSERT_UEQ(mask, ~(unsigned)MK_SUBSYS_INIT);
  ASSERT_OK(mk_log_parse_subsys("ALL", &mask));
  ASSERT_UEQ(mask, MK_SUBSYS_ALL);
  ASSERT_STATUS(mk_log_parse_subsys("NET,BOGUS", &mask), MK_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS(mk_log_parse_subsys("", &mask), MK_STATUS_INVALID_ARGUMENT);

  /* The environment from ctest: INFO, NET and PROXY only. */
  ASSERT_EQ(mk_log_level_get(), MK_LOG_INFO);
  ASSERT_TRUE(mk_log_enabled(MK_LOG_INFO, MK_SUBSYS_NET));
  ASSERT_FALSE(mk_log_enabled(MK_LOG_INFO, MK_SUBSYS_INIT));
  ASSERT_FALSE(mk_log_enabled(MK_LOG_TRACE, MK_SUBSYS_NET));
  ASSERT_TRUE(mk_log_enabled(MK_LOG_WARN, MK_SUBSYS_INIT)); /* warnings ignore the mask */

  mk_log_set_callback(capture, &g_calls);
  mk_log_set_rank(3, 1);
  MK_INFO(MK_SUBSYS_INIT, "hidden %d", 1);
  ASSERT_EQ(g_calls, 0);
  MK_INFO(MK_SUBSYS_NET, "shown %d", 42);
  ASSERT_EQ(g_calls, 1);
  ASSERT_UEQ(g_last_subsys, MK_SUBSYS_NET);
  char want[128];
  snprintf(want, sizeof want, ":%d 3 [1] NET INFO test_log.c:", (int)getpid());
  ASSERT_TRUE(strstr(g_last, want) != NULL);
  ASSERT_TRUE(strstr(g_last, "shown 42") != NULL);
  MK_WARN(MK_SUBSYS_MODEL, "a warning");
  ASSERT_EQ(g_calls, 2);
  ASSERT_TRUE(strstr(g_last, "MODEL WARN") != NULL);
  mk_log_set_callback(NULL, NULL);
  MK_INFO(MK_SUBSYS_NET, "to stderr");
  ASSERT_EQ(g_calls, 2);
  printf("ok\n");
  return 0;
}
