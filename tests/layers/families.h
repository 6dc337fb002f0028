/* families.h — the model tests' FAMILY[,FAMILY...]|all argument: the families, checked before
 * any GPU work (fails the test on an unknown name or more than 8). names point into buf. */
#ifndef MK_TESTS_LAYERS_FAMILIES_H
#define MK_TESTS_LAYERS_FAMILIES_H

#include <stdio.h>
#include <string.h>

#include "models/mk_models.h"
#include "tests/mk_test.h"

static int test_families(const char *arg, char *buf, size_t cap, const char *names[8], mk_model_family fams[8]) {
  snprintf(buf, cap, "%s", arg && strcmp(arg, "all") ? arg : "mixtral,qwen2_moe,qwen3_moe,olmoe");
  int nf = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (nf == 8) MK_TEST_FAIL_("at most 8 families");
    if (mk_model_family_from_name(t, &fams[nf])) MK_TEST_FAIL_("unknown family '%s'", t);
    names[nf++] = t;
  }
  if (!nf) MK_TEST_FAIL_("no family given");
  return nf;
}

#endif /* MK_TESTS_LAYERS_FAMILIES_H */
