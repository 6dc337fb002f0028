/* engine_internal.h — helpers shared inside engine/ (not a public header). */
#ifndef MK_ENGINE_INTERNAL_H
#define MK_ENGINE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "engine/mk_engine.h"

int64_t mk_engine_now_ns(void); /* CLOCK_MONOTONIC */
int mk_utf8_valid(const char *s, size_t n);

/* A request's output text: raw detokenised bytes -> valid UTF-8 (invalid or, at the end,
 * incomplete sequences become U+FFFD, as HF decode does with errors="replace") -> stop
 * strings cut -> `emit`: how much a consumer may see (the tail that could still grow into a
 * stop string is held back until it cannot). */
typedef struct mk_text {
  char *raw;
  size_t raw_len, raw_cap, raw_done;
  char *buf;
  size_t len, cap, emit;
} mk_text_t;
/* Append token id; returns 1 when a stop string now occurs (buf is cut before it). */
int mk_text_add(mk_text_t *t, const mk_tokenizer_t *tok, int32_t id, const char *const *stop, int n_stop, int max_stop);
void mk_text_finish(mk_text_t *t); /* end of output: flush and emit everything */
void mk_text_free(mk_text_t *t);

#endif
