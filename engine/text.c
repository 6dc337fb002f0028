/* text.c — incremental detokenisation of a request's output: UTF-8 repair, stop strings,
 * and the hold-back of a tail that could still become a stop string (see engine_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"

static int put(mk_text_t *t, const char *s, size_t n) {
  if (t->len + n + 1 > t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 256;
    while (cap < t->len + n + 1) cap *= 2;
    char *b = realloc(t->buf, cap);
    if (!b) return -1;
    t->buf = b, t->cap = cap;
  }
  memcpy(t->buf + t->len, s, n);
  t->len += n;
  t->buf[t->len] = 0;
  return 0;
}

/* Length of the valid UTF-8 sequence at s (n bytes left): >0 valid, 0 incomplete (could
 * still become valid), -k invalid: its first k bytes (the maximal subpart, as Rust's
 * from_utf8_lossy and Python's errors="replace" count it) become one U+FFFD. */
static int utf8_seq(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  int len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : -1;
  if (len < 0) return -1;
  for (int i = 1; i < len; i++) {
    if ((size_t)i >= n) return 0;
    unsigned d = s[i];
    if ((d & 0xc0) != 0x80) return -i;
    if (i == 1 && ((c == 0xe0 && d < 0xa0) || (c == 0xed && d > 0x9f) || (c == 0xf0 && d < 0x90) || (c == 0xf4 && d > 0x8f)))
      return -1;
  }
  return len;
}

int mk_utf8_valid(const char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    int k = utf8_seq((const unsigned char *)s + i, n - i);
    if (k <= 0) return 0;
    i += (size_t)k;
  }
  return 1;
}

static void repair(mk_text_t *t, int final) {
  static const char k_repl[] = "\xef\xbf\xbd";
  while (t->raw_done < t->raw_len) {
    const unsigned char *s = (const unsigned char *)t->raw + t->raw_done;
    int k = utf8_seq(s, t->raw_len - t->raw_done);
    if (k == 0 && !final) break;
    if (k > 0) put(t, (const char *)s, (size_t)k), t->raw_done += (size_t)k;
    else put(t, k_repl, 3), t->raw_done = k < 0 ? t->raw_done + (size_t)-k : t->raw_len;
  }
}

int mk_text_add(mk_text_t *t, const mk_tokenizer_t *tok, int32_t id, const char *const *stop, int n_stop, int max_stop) {
  size_t before = t->len;
  if (mk_tokenizer_decode(tok, &id, 1, 1, &t->raw, &t->raw_len, &t->raw_cap) != MK_STATUS_OK) return 0;
  repair(t, 0);
  if (n_stop > 0) {
    size_t from = before > (size_t)max_stop ? before - (size_t)max_stop + 1 : 0;
    size_t cut = t->len;
    for (int i = 0; i < n_stop; i++) {
      size_t sl = strlen(stop[i]);
      if (!sl || t->len < sl) continue;
      for (size_t p = from; p + sl <= t->len && p < cut; p++)
        if (!memcmp(t->buf + p, stop[i], sl)) {
          cut = p;
          break;
        }
    }
    if (cut < t->len) {
      t->len = cut;
      t->buf[cut] = 0;
      t->raw_done = t->raw_len;
      t->emit = cut;
      return 1;
    }
  }
  size_t lim = n_stop > 0 && t->len >= (size_t)max_stop - 1 ? t->len - ((size_t)max_stop - 1) : n_stop > 0 ? 0 : t->len;
  while (lim > t->emit && lim < t->len && ((unsigned char)t->buf[lim] & 0xc0) == 0x80) lim--;
  if (lim > t->emit) t->emit = lim;
  return 0;
}

void mk_text_finish(mk_text_t *t) {
  repair(t, 1);
  t->emit = t->len;
}

void mk_text_free(mk_text_t *t) {
  free(t->raw);
  free(t->buf);
  memset(t, 0, sizeof *t);
}
