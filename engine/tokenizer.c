/* tokenizer.c — HF tokenizer.json, byte-level BPE:
 *   added tokens   the text is first split on added/special token contents (longest match,
 *                  leftmost); those map to their ids directly;
 *   normalizer     none, or NFC taken as identity (inputs are expected in NFC);
 *   pre-tokenizer  ByteLevel (add_prefix_space, use_regex with the GPT-2 pattern), Split
 *                  (Regex or String pattern, behavior Isolated, through PCRE2 with UTF and
 *                  Unicode properties), or a Sequence of these;
 *   model          BPE: vocab, merges as "a b" strings or ["a", "b"] pairs (both formats),
 *                  ignore_merges, unk_token; merges applied lowest rank first, leftmost on ties;
 *   decoder        ByteLevel (the byte <-> unicode table of GPT-2). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <cjson/cJSON.h>
#include <errno.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "engine/engine_internal.h"
#include "engine/mk_engine.h"

/* ---- string -> int map (open addressing) ---------------------------------------------- */
typedef struct smap {
  char **keys;
  int32_t *vals;
  size_t cap, n;
} smap;

static uint64_t hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}
static int smap_get(const smap *m, const char *k, size_t n, int32_t *v) {
  if (!m->cap) return 0;
  for (size_t i = hash(k, n) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (!m->keys[i]) return 0;
    if (strlen(m->keys[i]) == n && !memcmp(m->keys[i], k, n)) return *v = m->vals[i], 1;
  }
}
static int smap_put(smap *m, const char *k, int32_t v) { /* 0 ok, -1 no memory; first value wins */
  if (2 * (m->n + 1) > m->cap) {
    smap o = *m;
    m->cap = o.cap ? 2 * o.cap : 1024, m->n = 0;
    m->keys = calloc(m->cap, sizeof(char *)), m->vals = calloc(m->cap, sizeof(int32_t));
    if (!m->keys || !m->vals) return -1;
    for (size_t i = 0; i < o.cap; i++)
      if (o.keys[i]) {
        size_t j = hash(o.keys[i], strlen(o.keys[i])) & (m->cap - 1);
        while (m->keys[j]) j = (j + 1) & (m->cap - 1);
        m->keys[j] = o.keys[i], m->vals[j] = o.vals[i], m->n++;
      }
    free(o.keys), free(o.vals);
  }
  size_t n = strlen(k), i = hash(k, n) & (m->cap - 1);
  for (; m->keys[i]; i = (i + 1) & (m->cap - 1))
    if (!strcmp(m->keys[i], k)) return 0;
  if (!(m->keys[i] = strdup(k))) return -1;
  m->vals[i] = v, m->n++;
  return 0;
}
static void smap_free(smap *m) {
  for (size_t i = 0; i < m->cap; i++) free(m->keys[i]);
  free(m->keys), free(m->vals);
}

/* ---- the tokenizer --------------------------------------------------------------------- */
enum { PRE_BYTELEVEL, PRE_SPLIT };
typedef struct pre_step {
  int kind, add_prefix_space;
  pcre2_code *re; /* NULL: ByteLevel without regex */
} pre_step;

typedef struct added_tok {
  char *content;
  int32_t id;
  int special;
} added_tok;

struct mk_tokenizer {
  smap vocab, merges, added_map;
  char **id_str;     /* [n_ids] token string (byte-level chars) or added content */
  unsigned char *id_flags; /* 1 = added (raw content), 2 = special */
  int n_ids;
  added_tok *added;
  int n_added;
  pre_step steps[8];
  int n_steps;
  int ignore_merges;
  int32_t unk;
  char b2u[256][3]; /* byte -> UTF-8 of its byte-level char (NUL-terminated, 1..2 bytes) */
  int16_t u2b[324];  /* codepoint -> byte, -1 */
};

static const char *k_gpt2_re =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static void byte_table(mk_tokenizer_t *t) {
  for (int i = 0; i < 324; i++) t->u2b[i] = -1;
  int n = 0;
  for (int b = 0; b < 256; b++) {
    int keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    int cp = keep ? b : 256 + n++;
    t->u2b[cp] = (int16_t)b;
    if (cp < 0x80) t->b2u[b][0] = (char)cp, t->b2u[b][1] = 0;
    else t->b2u[b][0] = (char)(0xc0 | (cp >> 6)), t->b2u[b][1] = (char)(0x80 | (cp & 0x3f)), t->b2u[b][2] = 0;
  }
}

static mk_status compile_re(const char *label, const char *pat, pcre2_code **out) {
  int err;
  PCRE2_SIZE off;
  *out = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &off, NULL);
  if (!*out) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    MK_ERR_RETURN(MK_STATUS_FORMAT_ERROR, MK_SUBSYS_SERVE, "%s: pre-tokenizer regex '%s' at offset %zu: %s", label, pat,
                  (size_t)off, (char *)msg);
  }
  return MK_STATUS_OK;
}

static mk_status parse_pre(mk_tokenizer_t *t, const char *label, const cJSON *p) {
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(p, "type");
  if (!cJSON_IsString(type)) MK_ERR_RETURN(MK_STATUS_FORMAT_ERROR, MK_SUBSYS_SERVE, "%s: pre_tokenizer without a type", label);
  if (!strcmp(type->valuestring, "Sequence")) {
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(p, "pretokenizers")) MK_CHECK(parse_pre(t, label, it));
    return MK_STATUS_OK;
  }
  if (t->n_steps == 8) MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_SERVE, "%s: more than 8 pre-tokenizers", label);
  pre_step *s = &t->steps[t->n_steps];
  memset(s, 0, sizeof *s);
  if (!strcmp(type->valuestring, "ByteLevel")) {
    s->kind = PRE_BYTELEVEL;
    s->add_prefix_space = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "add_prefix_space"));
    const cJSON *ur = cJSON_GetObjectItemCaseSensitive(p, "use_regex");
    if (!ur || cJSON_IsTrue(ur)) MK_CHECK(compile_re(label, k_gpt2_re, &s->re));
  } else if (!strcmp(type->valuestring, "Split")) {
    s->kind = PRE_SPLIT;
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(p, "pattern");
    const cJSON *rx = cJSON_GetObjectItemCaseSensitive(pat, "Regex"), *str = cJSON_GetObjectItemCaseSensitive(pat, "String");
    const cJSON *beh = cJSON_GetObjectItemCaseSensitive(p, "behavior");
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "invert")) || !cJSON_IsString(beh) ||
        strcmp(beh->valuestring, "Isolated"))
      MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_SERVE, "%s: Split pre-tokenizer: only behavior Isolated, not inverted",
                    label);
    if (cJSON_IsString(rx)) {
      MK_CHECK(compile_re(label, rx->valuestring, &s->re));
    } else if (cJSON_IsString(str)) {
      int err;
      PCRE2_SIZE off;
      s->re = pcre2_compile((PCRE2_SPTR)str->valuestring, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_LITERAL, &err, &off, NULL);
      if (!s->re) MK_ERR_RETURN(MK_STATUS_FORMAT_ERROR, MK_SUBSYS_SERVE, "%s: bad Split string pattern", label);
    } else {
      MK_ERR_RETURN(MK_STATUS_FORMAT_ERROR, MK_SUBSYS_SERVE, "%s: Split pre-tokenizer without a Regex or String pattern", label);
    }
  } else {
    MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_SERVE, "%s: pre-tokenizer '%s' is not supported (ByteLevel, Split, Sequence)",
                  label, type->valuestring);
  }
  t->n_steps++;
  return MK_STATUS_OK;
}

static mk_status set_id(mk_tokenizer_t *t, int32_t id, const char *s, unsigned flags) {
  if (id < 0 || id >= t->n_ids) return MK_STATUS_FORMAT_ERROR;
  free(t->id_str[id]);
  if (!(t->id_str[id] = strdup(s))) return MK_STATUS_OUT_OF_MEMORY;
  t->id_flags[id] = (unsigned char)flags;
  return MK_STATUS_OK;
}

static mk_status parse(mk_tokenizer_t *t, const char *label, const cJSON *root) {
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  const cJSON *mtype = cJSON_GetObjectItemCaseSensitive(model, "type");
  const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
  const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
  const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
  if (!cJSON_IsObject(model) || (mtype && (!cJSON_IsString(mtype) || strcmp(mtype->valuestring, "BPE"))) ||
      !cJSON_IsObject(vocab) || !cJSON_IsArray(merges))
    MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_SERVE, "%s: model must be BPE with a vocab object and a merges list", label);
  const cJSON *it;
  int32_t max_id = -1;
  cJSON_ArrayForEach(it, vocab) {
    if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 1e8 || it->valuedouble != (int32_t)it->valuedouble)
      MK_ERR_RETURN(MK_STATUS_FORMAT_ERROR, MK_SUBSYS_SERVE, "%s: vocab entry '%s' has no valid id", label, it->string);
    if (smap_put(&t->vocab, it->string, (int32_t)it->valuedouble)) return MK_STATUS_OUT_OF_MEMORY;
    if ((int32_t)it->valuedouble > max_id) max_id = (int32_t)it->valuedouble;
  }
  cJSON_ArrayForEach(it, added) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id"), *c = cJSON_GetObjectItemCaseSensitive(it, "content");
    if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble > 1e8 || !cJSON_IsString(c) || !c->valuestring[0])
      MK_ERR_RETURN(MK_STATUS_FORMAT_ERROR, MK_SUBSYS_SERVE, "%s: an added token lacks an id or content", label);
    if ((int32_t)id->valuedouble > max_id) max_id = (int32_t)id->valuedouble;
  }
  t->n_ids = max_id + 1;
  t->id_str = calloc((size_t)t->n_ids + 1, sizeof(char *));
  t->id_flags = calloc((size_t)t->n_ids + 1, 1);
  t->added = calloc((size_t)cJSON_GetArraySize(added) + 1, sizeof *t->added);
  if (!t->id_str || !t->id_flags || !t->added) return MK_STATUS_OUT_OF_MEMORY;
  cJSON_ArrayForEach(it, vocab) MK_CHECK(set_id(t, (int32_t)it->valuedouble, it->string, 0));
  cJSON_ArrayForEach(it, added) {
    added_tok *a = &t->added[t->n_added++];
    a->id = (int32_t)cJSON_GetObjectItemCaseSensitive(it, "id")->valuedouble;
    a->special = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "special"));
    if (!(a->content = strdup(cJSON_GetObjectItemCaseSensitive(it, "content")->valuestring))) return MK_STATUS_OUT_OF_MEMORY;
    MK_CHECK(set_id(t, a->id, a->content, 1u | (a->special ? 2u : 0u)));
    if (smap_put(&t->added_map, a->content, a->id)) return MK_STATUS_OUT_OF_MEMORY;
  }
  int rank = 0;
  char *key = NULL;
  size_t kcap = 0;
  cJSON_ArrayForEach(it, merges) {
    const char *a = NULL, *b = NULL;
    size_t la = 0;
    if (cJSON_IsString(it)) { /* "a b" */
      const char *sp = strchr(it->valuestring, ' ');
      if (sp) a = it->valuestring, la = (size_t)(sp - a), b = sp + 1;
    } else if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2 && cJSON_IsString(cJSON_GetArrayItem(it, 0)) &&
               cJSON_IsString(cJSON_GetArrayItem(it, 1))) { /* ["a", "b"] */
      a = cJSON_GetArrayItem(it, 0)->valuestring, la = strlen(a), b = cJSON_GetArrayItem(it, 1)->valuestring;
    }
    if (!a) {
      free(key);
      MK_ERR_RETURN(MK_STATUS_FORMAT_ERROR, MK_SUBSYS_SERVE, "%s: merge %d is neither \"a b\" nor [\"a\", \"b\"]", label, rank);
    }
    size_t need = la + strlen(b) + 2;
    if (need > kcap && !(key = realloc(key, kcap = 2 * need))) return MK_STATUS_OUT_OF_MEMORY;
    memcpy(key, a, la), key[la] = '\x01', strcpy(key + la + 1, b);
    if (smap_put(&t->merges, key, rank++)) return free(key), MK_STATUS_OUT_OF_MEMORY;
  }
  free(key);
  t->ignore_merges = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "ignore_merges"));
  const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
  t->unk = -1;
  if (cJSON_IsString(unk)) smap_get(&t->vocab, unk->valuestring, strlen(unk->valuestring), &t->unk);
  const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
  if (norm && !cJSON_IsNull(norm)) {
    const cJSON *nt = cJSON_GetObjectItemCaseSensitive(norm, "type");
    if (!cJSON_IsString(nt) || strcmp(nt->valuestring, "NFC"))
      MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_SERVE, "%s: normalizer '%s' is not supported (none or NFC)", label,
                    cJSON_IsString(nt) ? nt->valuestring : "?");
    MK_INFO(MK_SUBSYS_SERVE, "%s: NFC normalizer taken as identity: prompts are expected in NFC", label);
  }
  const cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
  if (!pre || cJSON_IsNull(pre))
    MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_SERVE, "%s: no pre_tokenizer: not a byte-level BPE tokenizer", label);
  MK_CHECK(parse_pre(t, label, pre));
  int bl = 0;
  for (int i = 0; i < t->n_steps; i++) bl |= t->steps[i].kind == PRE_BYTELEVEL;
  if (!bl) MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_SERVE, "%s: no ByteLevel pre-tokenizer: not a byte-level BPE", label);
  return MK_STATUS_OK;
}

mk_status mk_tokenizer_parse(const char *label, const char *json, size_t len, mk_tokenizer_t **out) {
  *out = NULL;
  cJSON *root = cJSON_ParseWithLength(json, len);
  if (!root) MK_ERR_RETURN(MK_STATUS_FORMAT_ERROR, MK_SUBSYS_SERVE, "%s: not valid JSON", label);
  mk_tokenizer_t *t = calloc(1, sizeof *t);
  mk_status st = t ? parse(t, label, root) : MK_STATUS_OUT_OF_MEMORY;
  cJSON_Delete(root);
  if (st) {
    mk_tokenizer_destroy(t);
    return st;
  }
  byte_table(t);
  *out = t;
  return MK_STATUS_OK;
}

mk_status mk_tokenizer_load(const char *path, mk_tokenizer_t **out) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_SERVE, "tokenizer: cannot open %s: %s", path, strerror(errno));
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = n > 0 ? malloc((size_t)n) : NULL;
  size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
  fclose(f);
  mk_status st = buf && got == (size_t)n ? mk_tokenizer_parse(path, buf, (size_t)n, out) : MK_STATUS_SYSTEM_ERROR;
  free(buf);
  return st;
}

void mk_tokenizer_destroy(mk_tokenizer_t *t) {
  if (!t) return;
  smap_free(&t->vocab), smap_free(&t->merges), smap_free(&t->added_map);
  for (int i = 0; t->id_str && i < t->n_ids; i++) free(t->id_str[i]);
  for (int i = 0; i < t->n_added; i++) free(t->added[i].content);
  for (int i = 0; i < t->n_steps; i++) pcre2_code_free(t->steps[i].re);
  free(t->id_str), free(t->id_flags), free(t->added), free(t);
}

int mk_tokenizer_vocab_size(const mk_tokenizer_t *t) { return t->n_ids; }

int32_t mk_tokenizer_find(const mk_tokenizer_t *t, const char *token) {
  int32_t v;
  if (smap_get(&t->added_map, token, strlen(token), &v) || smap_get(&t->vocab, token, strlen(token), &v)) return v;
  return -1;
}

/* ---- encode ------------------------------------------------------------------------------ */
typedef struct ids_buf {
  int32_t *v;
  int n, cap;
} ids_buf;
static int push(ids_buf *b, int32_t id) {
  if (b->n == b->cap) {
    int cap = b->cap ? 2 * b->cap : 64;
    int32_t *v = realloc(b->v, sizeof(int32_t) * (size_t)cap);
    if (!v) return -1;
    b->v = v, b->cap = cap;
  }
  b->v[b->n++] = id;
  return 0;
}

typedef struct span {
  size_t off, len;
} span;

/* BPE over one pre-token already mapped to byte-level chars (s, n bytes). */
static mk_status bpe_word(const mk_tokenizer_t *t, const char *s, size_t n, ids_buf *out) {
  int32_t id;
  if (t->ignore_merges && smap_get(&t->vocab, s, n, &id)) return push(out, id) ? MK_STATUS_OUT_OF_MEMORY : MK_STATUS_OK;
  span *sym = malloc(sizeof(span) * (n + 1));
  char *key = malloc(n + 2);
  if (!sym || !key) return free(sym), free(key), MK_STATUS_OUT_OF_MEMORY;
  int ns = 0;
  for (size_t i = 0; i < n;) { /* one symbol per UTF-8 character */
    size_t k = 1;
    while (i + k < n && ((unsigned char)s[i + k] & 0xc0) == 0x80) k++;
    sym[ns++] = (span){i, k};
    i += k;
  }
  for (;;) {
    int best = -1;
    int32_t best_rank = INT32_MAX, r;
    for (int i = 0; i + 1 < ns; i++) {
      memcpy(key, s + sym[i].off, sym[i].len);
      key[sym[i].len] = '\x01';
      memcpy(key + sym[i].len + 1, s + sym[i + 1].off, sym[i + 1].len);
      if (smap_get(&t->merges, key, sym[i].len + 1 + sym[i + 1].len, &r) && r < best_rank) best = i, best_rank = r;
    }
    if (best < 0) break;
    sym[best].len += sym[best + 1].len;
    memmove(&sym[best + 1], &sym[best + 2], sizeof(span) * (size_t)(ns - best - 2));
    ns--;
  }
  mk_status st = MK_STATUS_OK;
  for (int i = 0; i < ns && !st; i++) {
    if (smap_get(&t->vocab, s + sym[i].off, sym[i].len, &id) || (id = t->unk) >= 0) {
      if (push(out, id)) st = MK_STATUS_OUT_OF_MEMORY;
    } else {
      MK_WARN(MK_SUBSYS_SERVE, "tokenizer: '%.*s' is not in the vocabulary and there is no unk_token: dropped",
              (int)sym[i].len, s + sym[i].off);
    }
  }
  free(sym), free(key);
  return st;
}

/* Split pieces by a regex (matches and the gaps between them are both pieces). */
static mk_status split_re(const pcre2_code *re, const char *text, span *in, int n_in, span **out, int *n_out) {
  int cap = n_in * 4 + 16, n = 0;
  span *o = malloc(sizeof(span) * (size_t)cap);
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
  if (!o || !md) return free(o), pcre2_match_data_free(md), MK_STATUS_OUT_OF_MEMORY;
  mk_status st = MK_STATUS_OK;
  for (int p = 0; p < n_in && !st; p++) {
    const char *s = text + in[p].off;
    size_t len = in[p].len, at = 0, prev = 0;
    while (at <= len && !st) {
      int rc = pcre2_match(re, (PCRE2_SPTR)s, len, at, at ? PCRE2_NO_UTF_CHECK : 0, md, NULL);
      if (rc < 0) {
        if (rc != PCRE2_ERROR_NOMATCH) st = MK_STATUS_INVALID_ARGUMENT;
        break;
      }
      PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
      size_t b = ov[0], e = ov[1];
      if (n + 2 > cap) {
        span *g = realloc(o, sizeof(span) * (size_t)(cap *= 2));
        if (!g) {
          st = MK_STATUS_OUT_OF_MEMORY;
          break;
        }
        o = g;
      }
      if (b > prev) o[n++] = (span){in[p].off + prev, b - prev};
      if (e > b) o[n++] = (span){in[p].off + b, e - b};
      prev = e;
      if (e == b) { /* empty match: step one character */
        e++;
        while (e < len && ((unsigned char)s[e] & 0xc0) == 0x80) e++;
      }
      at = e;
    }
    if (!st && prev < len) {
      if (n + 1 > cap) {
        span *g = realloc(o, sizeof(span) * (size_t)(cap *= 2));
        if (!g) st = MK_STATUS_OUT_OF_MEMORY;
        else o = g;
      }
      if (!st) o[n++] = (span){in[p].off + prev, len - prev};
    }
  }
  pcre2_match_data_free(md);
  if (st) return free(o), st;
  *out = o, *n_out = n;
  return MK_STATUS_OK;
}

/* One segment between added tokens: pre-tokenize, byte-level map, BPE. */
static mk_status encode_segment(const mk_tokenizer_t *t, const char *seg, size_t n, ids_buf *out) {
  int prefix = 0;
  for (int i = 0; i < t->n_steps; i++) prefix |= t->steps[i].kind == PRE_BYTELEVEL && t->steps[i].add_prefix_space;
  char *text = malloc(n + 2);
  if (!text) return MK_STATUS_OUT_OF_MEMORY;
  size_t tn = 0;
  if (prefix && (n == 0 || seg[0] != ' ')) text[tn++] = ' ';
  memcpy(text + tn, seg, n);
  tn += n;
  span *pieces = malloc(sizeof(span));
  int np = 1;
  mk_status st = pieces ? MK_STATUS_OK : MK_STATUS_OUT_OF_MEMORY;
  if (pieces) pieces[0] = (span){0, tn};
  for (int i = 0; i < t->n_steps && !st; i++) {
    if (!t->steps[i].re) continue;
    span *next;
    int nn;
    st = split_re(t->steps[i].re, text, pieces, np, &next, &nn);
    if (!st) free(pieces), pieces = next, np = nn;
  }
  char *mapped = malloc(2 * tn + 1);
  if (!mapped) st = MK_STATUS_OUT_OF_MEMORY;
  for (int p = 0; p < np && !st; p++) {
    size_t m = 0;
    for (size_t k = 0; k < pieces[p].len; k++) {
      const char *u = t->b2u[(unsigned char)text[pieces[p].off + k]];
      for (; *u; u++) mapped[m++] = *u;
    }
    if (m) st = bpe_word(t, mapped, m, out);
  }
  free(mapped), free(pieces), free(text);
  return st;
}

mk_status mk_tokenizer_encode(const mk_tokenizer_t *t, const char *text, size_t len, int32_t **ids, int *n) {
  *ids = NULL, *n = 0;
  if (!mk_utf8_valid(text, len)) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_SERVE, "tokenizer: the text is not valid UTF-8");
  ids_buf out = {0};
  mk_status st = MK_STATUS_OK;
  size_t seg = 0, i = 0;
  while (i <= len && !st) {
    /* longest added token starting at i */
    int best = -1;
    size_t best_len = 0;
    for (int a = 0; i < len && a < t->n_added; a++) {
      size_t al = strlen(t->added[a].content);
      if (al > best_len && al <= len - i && !memcmp(text + i, t->added[a].content, al)) best = a, best_len = al;
    }
    if (best < 0 && i < len) {
      i++;
      continue;
    }
    if (i > seg) st = encode_segment(t, text + seg, i - seg, &out);
    if (best < 0) break;
    if (!st && push(&out, t->added[best].id)) st = MK_STATUS_OUT_OF_MEMORY;
    i += best_len, seg = i;
  }
  if (st) return free(out.v), st;
  *ids = out.v, *n = out.n;
  return MK_STATUS_OK;
}

/* ---- decode ------------------------------------------------------------------------------ */
mk_status mk_tokenizer_decode(const mk_tokenizer_t *t, const int32_t *ids, int n, int skip_special, char **buf,
                              size_t *len, size_t *cap) {
  for (int i = 0; i < n; i++) {
    if (ids[i] < 0 || ids[i] >= t->n_ids || !t->id_str[ids[i]]) continue;
    if (skip_special && (t->id_flags[ids[i]] & 2)) continue;
    const unsigned char *s = (const unsigned char *)t->id_str[ids[i]];
    size_t sl = strlen((const char *)s);
    if (*len + sl + 1 > *cap) {
      size_t c = *cap ? 2 * *cap : 256;
      while (c < *len + sl + 1) c *= 2;
      char *b = realloc(*buf, c);
      if (!b) return MK_STATUS_OUT_OF_MEMORY;
      *buf = b, *cap = c;
    }
    if (t->id_flags[ids[i]] & 1) { /* added token: its content as is */
      memcpy(*buf + *len, s, sl);
      *len += sl;
      continue;
    }
    for (size_t k = 0; k < sl;) { /* byte-level chars back to bytes */
      unsigned cp = s[k];
      size_t w = 1;
      if (cp >= 0xc0 && cp < 0xe0 && k + 1 < sl) cp = ((cp & 0x1f) << 6) | (s[k + 1] & 0x3f), w = 2;
      if (w == 2 && cp < 324 && t->u2b[cp] >= 0) (*buf)[(*len)++] = (char)t->u2b[cp];
      else if (w == 1 && cp < 0x80 && t->u2b[cp] >= 0) (*buf)[(*len)++] = (char)t->u2b[cp];
      else {
        while (k + w < sl && (s[k + w] & 0xc0) == 0x80) w++;
        memcpy(*buf + *len, s + k, w), *len += w;
      }
      k += w;
    }
  }
  return MK_STATUS_OK;
}
