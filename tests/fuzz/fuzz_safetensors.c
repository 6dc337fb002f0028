/* fuzz_safetensors.c — libFuzzer target for the safetensors header parser: any byte string
 * is a file image; it must be refused with a status or accepted, and every accepted tensor
 * must be readable within the image (ASan/UBSan catch the rest). Built and run by
 * tools/fuzz-safetensors.sh (clang, -fsanitize=fuzzer,address,undefined). */
#include <stdint.h>
#include <stdlib.h>

#include "models/mk_models.h"

static void quiet(mk_log_level lvl, unsigned subsys, const char *line, void *user) {
  (void)lvl, (void)subsys, (void)line, (void)user;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int init;
  if (!init) mk_log_set_callback(quiet, NULL), init = 1;
  mk_st_t *st = NULL;
  if (mk_st_parse("fuzz", data, size, &st) != MK_STATUS_OK) {
    if (st) abort(); /* a refusal never hands out a handle */
    return 0;
  }
  for (int i = 0; i < mk_st_count(st); i++) {
    const mk_st_tensor *t = mk_st_get(st, i);
    if (t->offset + t->nbytes > size || mk_st_find(st, t->name) != t) abort();
    if (t->numel > (1u << 20)) continue;
    void *buf = malloc(t->numel * 8 + 1);
    if (mk_st_read_raw(st, t, NULL, NULL, buf)) abort();
    if (mk_dtype_is_float(t->dtype) && mk_st_read_f32(st, t, NULL, NULL, buf)) abort();
    free(buf);
  }
  mk_st_close(st);
  return 0;
}
