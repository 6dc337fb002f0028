/* test_status.c — every status has a distinct name and an explanation; unknown codes are safe. */
#include <string.h>

#include "tests/mk_test.h"

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 10);
  for (int a = 0; a < MK_STATUS_COUNT_; a++) {
    ASSERT_TRUE(mk_status_str((mk_status)a) != NULL);
    ASSERT_TRUE(strncmp(mk_status_name((mk_status)a), "MK_STATUS_", 10) == 0);
    ASSERT_TRUE(strlen(mk_status_str((mk_status)a)) > 3);
    for (int b = 0; b < a; b++) {
      ASSERT_TRUE(strcmp(mk_status_name((mk_status)a), mk_status_name((mk_status)b)) != 0);
      ASSERT_TRUE(strcmp(mk_status_str((mk_status)a), mk_status_str((mk_status)b)) != 0);
    }
  }
  ASSERT_EQ(MK_STATUS_OK, 0);
  ASSERT_STREQ(mk_status_name(MK_STATUS_TIMEOUT), "MK_STATUS_TIMEOUT");
  ASSERT_STREQ(mk_status_name((mk_status)999), "MK_STATUS_UNKNOWN");
  ASSERT_STREQ(mk_status_str((mk_status)-1), "unknown status code");
  printf("ok\n");
  return 0;
}
