/* test_tokenizer.c — the byte-level BPE tokenizer against golden ids from HF tokenizers
 * (tests/engine/tokenizer/golden.json, written by make_golden.py on a machine with
 * `tokenizers`): every case's ids and decoded text, for the GPT-2 ByteLevel pre-tokenizer,
 * the Split(regex)+ByteLevel sequence, add_prefix_space, and both merges formats (pairs and
 * "a b" strings), with special and added tokens in the text. Also: invalid UTF-8 and
 * malformed or unsupported tokenizer.json are refused with a status, never a crash.
 * usage: test_tokenizer GOLDEN_DIR */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/mk_engine.h"
#include "tests/mk_test.h"

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) MK_TEST_FAIL_("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc(*n + 1);
  ASSERT_EQ(fread(b, 1, *n, f), *n);
  b[*n] = 0;
  fclose(f);
  return b;
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 60);
  if (argc < 2) MK_TEST_FAIL_("usage: test_tokenizer GOLDEN_DIR");
  char path[4096];
  size_t n;
  snprintf(path, sizeof path, "%s/golden.json", argv[1]);
  char *gj = slurp(path, &n);
  cJSON *g = cJSON_Parse(gj);
  ASSERT_TRUE(g != NULL);
  const cJSON *c;
  int cases = 0, bad = 0;
  const char *names[8] = {0};
  mk_tokenizer_t *toks[8] = {0};
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(g, "cases")) {
    const char *tn = cJSON_GetObjectItem(c, "tokenizer")->valuestring;
    const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
    int k = 0;
    while (names[k] && strcmp(names[k], tn)) k++;
    ASSERT_LT(k, 8);
    if (!names[k]) {
      names[k] = tn;
      snprintf(path, sizeof path, "%s/%s", argv[1], tn);
      ASSERT_OK(mk_tokenizer_load(path, &toks[k]));
    }
    int32_t *ids;
    int nid;
    ASSERT_OK(mk_tokenizer_encode(toks[k], text, strlen(text), &ids, &nid));
    const cJSON *want = cJSON_GetObjectItem(c, "ids");
    int ok = nid == cJSON_GetArraySize(want);
    for (int i = 0; ok && i < nid; i++) ok = ids[i] == (int32_t)cJSON_GetArrayItem(want, i)->valuedouble;
    if (!ok) {
      bad++;
      fprintf(stderr, "MISMATCH %s \"%s\":\n  got ", tn, text);
      for (int i = 0; i < nid; i++) fprintf(stderr, " %d", ids[i]);
      char *w = cJSON_PrintUnformatted(want);
      fprintf(stderr, "\n  HF   %s\n", w);
      free(w);
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    ASSERT_OK(mk_tokenizer_decode(toks[k], ids, nid, 0, &buf, &len, &cap));
    const char *dec = cJSON_GetObjectItem(c, "decoded")->valuestring;
    if (len != strlen(dec) || memcmp(buf, dec, len)) {
      bad++;
      fprintf(stderr, "DECODE MISMATCH %s: \"%.*s\" vs HF \"%s\"\n", tn, (int)len, buf ? buf : "", dec);
    }
    free(buf), free(ids);
    cases++;
  }
  if (bad) MK_TEST_FAIL_("%d of %d golden cases differ from HF tokenizers", bad, cases);
  ASSERT_GT(cases, 60);
  /* skip_special drops <|endoftext|>; find() knows added and vocab tokens */
  int32_t eot = mk_tokenizer_find(toks[0], "<|endoftext|>");
  ASSERT_EQ(eot, 0);
  ASSERT_EQ(mk_tokenizer_find(toks[0], "no such token"), -1);
  char *buf = NULL;
  size_t len = 0, cap = 0;
  ASSERT_OK(mk_tokenizer_decode(toks[0], &eot, 1, 1, &buf, &len, &cap));
  ASSERT_EQ(len, 0);
  free(buf);
  int32_t *ids;
  int nid;
  ASSERT_STATUS(mk_tokenizer_encode(toks[0], "bad \xff utf8", 10, &ids, &nid), MK_STATUS_INVALID_ARGUMENT);
  for (int k = 0; k < 8; k++) mk_tokenizer_destroy(toks[k]);
  /* malformed and unsupported files */
  static const char *const badj[] = {
      "{",
      "[]",
      "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}",
      "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [5]}, \"pre_tokenizer\": {\"type\": \"ByteLevel\"}}",
      "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -3}, \"merges\": []}, \"pre_tokenizer\": {\"type\": \"ByteLevel\"}}",
      "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": {\"type\": \"Metaspace\"}}",
      "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": {\"type\": \"Split\", "
      "\"pattern\": {\"Regex\": \"(\"}, \"behavior\": \"Isolated\"}}",
      "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"normalizer\": {\"type\": \"Lowercase\"}, "
      "\"pre_tokenizer\": {\"type\": \"ByteLevel\"}}",
      "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"added_tokens\": [{\"id\": 1}], "
      "\"pre_tokenizer\": {\"type\": \"ByteLevel\"}}",
  };
  for (size_t i = 0; i < sizeof badj / sizeof badj[0]; i++) {
    mk_tokenizer_t *t = (mk_tokenizer_t *)1;
    mk_status st = mk_tokenizer_parse("bad", badj[i], strlen(badj[i]), &t);
    if (st == MK_STATUS_OK || t != NULL) MK_TEST_FAIL_("malformed tokenizer %zu accepted: %s", i, badj[i]);
  }
  mk_tokenizer_destroy(NULL);
  cJSON_Delete(g);
  free(gj);
  printf("ok: %d golden cases\n", cases);
  return 0;
}
