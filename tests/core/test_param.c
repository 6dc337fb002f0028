/* test_param.c — the MK_* loader: strict integer parsing with suffixes and ranges, values
 * read from the environment, bad values reported and replaced by the default. */
#include <string.h>

#include "tests/mk_test.h"

MK_PARAM_INT(test_knob, "TESTONLY_KNOB", 17, 1, 1000000)
MK_PARAM_STR(test_name, "TESTONLY_NAME", "dflt")

static int g_warns;
static char g_last[1024];
static void capture(mk_log_level lvl, unsigned subsys, const char *line, void *user) {
  (void)subsys, (void)user;
  if (lvl == MK_LOG_WARN) g_warns++;
  snprintf(g_last, sizeof g_last, "%s", line);
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 10);
  mk_log_set_callback(capture, NULL);
  int64_t v = 0;
  ASSERT_OK(mk_param_parse_int("X", "42", 0, 100, &v));
  ASSERT_EQ(v, 42);
  ASSERT_OK(mk_param_parse_int("X", " -7 ", -10, 10, &v));
  ASSERT_EQ(v, -7);
  ASSERT_OK(mk_param_parse_int("X", "4k", 0, 1 << 20, &v));
  ASSERT_EQ(v, 4096);
  ASSERT_OK(mk_param_parse_int("X", "2G", 0, INT64_MAX, &v));
  ASSERT_EQ(v, 2LL << 30);
  const char *bad[] = {"", "abc", "12x", "1.5", "99999999999999999999", "8000000000000000000k"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    ASSERT_STATUS(mk_param_parse_int("X", bad[i], INT64_MIN, INT64_MAX, &v), MK_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS(mk_param_parse_int("X", "101", 0, 100, &v), MK_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(strstr(g_last, "outside [0, 100]") != NULL);

  unsetenv("MK_TESTONLY_KNOB");
  mk_param_reset_cache();
  ASSERT_EQ(mk_param_test_knob(), 17);
  setenv("MK_TESTONLY_KNOB", "250", 1);
  ASSERT_EQ(mk_param_test_knob(), 17); /* cached until reset */
  mk_param_reset_cache();
  ASSERT_EQ(mk_param_test_knob(), 250);
  int before = g_warns;
  setenv("MK_TESTONLY_KNOB", "lots", 1);
  mk_param_reset_cache();
  ASSERT_EQ(mk_param_test_knob(), 17);
  ASSERT_GT(g_warns, before);
  ASSERT_TRUE(strstr(g_last, "MK_TESTONLY_KNOB") != NULL);

  unsetenv("MK_TESTONLY_NAME");
  mk_param_reset_cache();
  ASSERT_STREQ(mk_param_test_name(), "dflt");
  setenv("MK_TESTONLY_NAME", "given", 1);
  mk_param_reset_cache();
  ASSERT_STREQ(mk_param_test_name(), "given");
  printf("ok\n");
  return 0;
}
