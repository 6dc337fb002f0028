/* test_safetensors.c — every refusal of the safetensors reader, each on a file crafted here,
 * asserting the status and a substring of the logged message (which names the file and the
 * tensor); then a valid file of every dtype, read back whole and as a slice; then sharded
 * checkpoints: an index naming a file outside the directory, a tensor in no shard or in two. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/mk_models.h"
#include "tests/mk_test.h"

static char g_msg[4096];
static void capture(mk_log_level lvl, unsigned subsys, const char *line, void *user) {
  (void)lvl, (void)subsys, (void)user;
  snprintf(g_msg, sizeof g_msg, "%s", line);
}

/* 8-byte length + header + data_len bytes of data. */
static uint8_t *image(const char *hdr, size_t data_len, size_t *size) {
  size_t h = strlen(hdr);
  *size = 8 + h + data_len;
  uint8_t *b = calloc(1, *size + 1);
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)h >> (8 * i));
  memcpy(b + 8, hdr, h);
  for (size_t i = 0; i < data_len; i++) b[8 + h + i] = (uint8_t)(i * 7 + 1);
  return b;
}

static void expect_refused(int line, const uint8_t *b, size_t size, const char *want) {
  mk_st_t *st = NULL;
  g_msg[0] = 0;
  mk_status s = mk_st_parse("crafted.safetensors", b, size, &st);
  if (s != MK_STATUS_FORMAT_ERROR || st) {
    fprintf(stderr, "FAIL line %d: got %s, want MK_STATUS_FORMAT_ERROR (%s)\n", line, mk_status_name(s), want);
    exit(1);
  }
  if (!strstr(g_msg, want) || !strstr(g_msg, "crafted.safetensors")) {
    fprintf(stderr, "FAIL line %d: message '%s' lacks '%s' or the file name\n", line, g_msg, want);
    exit(1);
  }
}
#define REFUSE_HDR(hdr, data_len, want)                   \
  do {                                                    \
    size_t n_;                                            \
    uint8_t *b_ = image((hdr), (data_len), &n_);          \
    expect_refused(__LINE__, b_, n_, (want));             \
    free(b_);                                             \
  } while (0)

static void refusals(void) {
  uint8_t small[5] = {1, 0, 0, 0, 0};
  expect_refused(__LINE__, small, 5, "shorter than the 8-byte header length");
  uint8_t big[16] = {0};
  uint64_t h = 200ull * 1000 * 1000;
  for (int i = 0; i < 8; i++) big[i] = (uint8_t)(h >> (8 * i));
  expect_refused(__LINE__, big, 16, "over the 100000000-byte limit");
  big[0] = 100, big[1] = big[2] = big[3] = 0;
  expect_refused(__LINE__, big, 16, "runs past the end of the file");
  REFUSE_HDR("{\"a\xff\":{}}", 0, "not valid UTF-8");
  REFUSE_HDR("{\"a\xc0\x80\":{}}", 0, "not valid UTF-8"); /* overlong NUL */
  REFUSE_HDR("{\"a\": ", 0, "not JSON");
  REFUSE_HDR("{} x", 0, "not JSON");
  REFUSE_HDR("[1, 2]", 0, "not a JSON object");
  REFUSE_HDR("\"str\"", 0, "not a JSON object");
  const char *a8 = "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}";
  char hdr[1024];
  snprintf(hdr, sizeof hdr, "{%s,%s}", a8, a8);
  REFUSE_HDR(hdr, 8, "duplicate tensor name 'a'");
  REFUSE_HDR("{\"t\":{\"dtype\":\"F7\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "tensor 't': unknown dtype 'F7'");
  REFUSE_HDR("{\"t\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "tensor 't': missing dtype");
  REFUSE_HDR("{\"t\":{\"dtype\":4,\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "tensor 't': malformed dtype");
  REFUSE_HDR("{\"t\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8, "tensor 't': missing shape");
  REFUSE_HDR("{\"t\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}", 8, "tensor 't': malformed shape");
  REFUSE_HDR("{\"t\":{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}}", 8, "malformed shape entry 0");
  REFUSE_HDR("{\"t\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,8]}}", 8, "not an integer");
  REFUSE_HDR("{\"t\":{\"dtype\":\"F32\",\"shape\":[2,-1],\"data_offsets\":[0,8]}}", 8, "shape entry 1 is negative");
  REFUSE_HDR("{\"t\":{\"dtype\":\"U8\",\"shape\":[1099511627776,1099511627776],\"data_offsets\":[0,0]}}", 0,
             "shape product overflows");
  /* 2^32 x 2^32 wraps to exactly zero in 64 bits */
  REFUSE_HDR("{\"t\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]}}", 0,
             "shape product overflows");
  REFUSE_HDR("{\"t\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904],\"data_offsets\":[0,0]}}", 0, "above 2^53");
  REFUSE_HDR("{\"t\":{\"dtype\":\"F64\",\"shape\":[4503599627370496,1024],\"data_offsets\":[0,0]}}", 0, "byte size");
  REFUSE_HDR("{\"t\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "tensor 't': missing data_offsets");
  REFUSE_HDR("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,9]}}", 8, "malformed data_offsets");
  REFUSE_HDR("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":\"0-8\"}}", 8, "malformed data_offsets");
  REFUSE_HDR("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,7.5]}}", 8, "data_offsets not an integer");
  REFUSE_HDR("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,\"8\"]}}", 8, "data_offsets not a number");
  REFUSE_HDR("{\"t\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[-4,-4]}}", 8, "data_offsets negative");
  REFUSE_HDR("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,18014398509481984]}}", 8,
             "data_offsets above 2^53");
  REFUSE_HDR("{\"t\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,4]}}", 8, "begin 8 > end 4");
  REFUSE_HDR("{\"t\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8, "out of bounds");
  REFUSE_HDR("{\"t\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "byte size 8 != numel 3 x 4 (F32)");
  REFUSE_HDR("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
             "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "tensor 'b': data overlaps tensor 'a'");
  REFUSE_HDR("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
             "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}", 20, "tensor 'b': gap of 4 bytes");
  REFUSE_HDR("{\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "tensor 'b': gap of 4 bytes");
  REFUSE_HDR("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 12, "4 trailing bytes");
  REFUSE_HDR("{\"__metadata__\":{\"k\":1}}", 0, "__metadata__ is not a string-to-string map");
  REFUSE_HDR("{\"__metadata__\":\"k\"}", 0, "__metadata__ is not a string-to-string map");
  REFUSE_HDR("{\"t\":[1,2]}", 0, "tensor 't': entry is not an object");
  REFUSE_HDR("{\"t\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "more than 8 dimensions");
}

static void valid_file(void) {
  static const char *dts[] = {"BF16", "F16", "F32", "F8_E4M3", "F8_E5M2", "I64", "I32", "I16", "U8", "BOOL"};
  static const int sz[] = {2, 2, 4, 1, 1, 8, 4, 2, 1, 1};
  char hdr[4096];
  size_t o = (size_t)snprintf(hdr, sizeof hdr, "{\"__metadata__\":{\"format\":\"pt\"},\"empty\":{\"dtype\":\"F32\","
                                               "\"shape\":[0,3],\"data_offsets\":[0,0]}");
  uint64_t off = 0;
  for (int i = 9; i >= 0; i--) { /* header order differs from data order */
    uint64_t b = (uint64_t)(9 - i) * 0, nb = 6 * (uint64_t)sz[i];
    (void)b;
    o += (size_t)snprintf(hdr + o, sizeof hdr - o, ",\"t_%s\":{\"dtype\":\"%s\",\"shape\":[2,3],\"data_offsets\":[%llu,%llu]}",
                          dts[i], dts[i], (unsigned long long)off, (unsigned long long)(off + nb));
    off += nb;
  }
  snprintf(hdr + o, sizeof hdr - o, "}  ");
  size_t n;
  uint8_t *b = image(hdr, (size_t)off, &n);
  /* t_F32 data: 6 floats 0.5 * i */
  mk_st_t *st;
  ASSERT_OK(mk_st_parse("valid.safetensors", b, n, &st));
  ASSERT_EQ(mk_st_count(st), 11);
  ASSERT_STREQ(mk_st_metadata(st, "format"), "pt");
  ASSERT_TRUE(mk_st_metadata(st, "nope") == NULL);
  ASSERT_TRUE(mk_st_find(st, "t_BOOL") != NULL);
  ASSERT_TRUE(mk_st_find(st, "t_X") == NULL);
  const mk_st_tensor *f = mk_st_find(st, "t_F32");
  ASSERT_EQ(f->dtype, MK_DTYPE_F32);
  ASSERT_EQ(f->ndim, 2);
  ASSERT_EQ(f->numel, 6);
  float *p = (float *)(b + f->offset);
  for (int i = 0; i < 6; i++) p[i] = 0.5f * (float)i;
  int64_t b0[2] = {0, 1}, e0[2] = {2, 3};
  float got[6];
  ASSERT_OK(mk_st_read_f32(st, f, b0, e0, got));
  ASSERT_TRUE(got[0] == 0.5f && got[1] == 1.0f && got[2] == 2.0f && got[3] == 2.5f);
  const mk_st_tensor *bf = mk_st_find(st, "t_BF16");
  uint16_t *q = (uint16_t *)(b + bf->offset);
  for (int i = 0; i < 6; i++) q[i] = mk_bf16_from_float(-1.5f * (float)i);
  ASSERT_OK(mk_st_read_f32(st, bf, NULL, NULL, got));
  for (int i = 0; i < 6; i++) ASSERT_TRUE(got[i] == -1.5f * (float)i);
  const mk_st_tensor *h = mk_st_find(st, "t_F16");
  uint16_t *hh = (uint16_t *)(b + h->offset);
  hh[0] = 0x3c00, hh[1] = 0xc000, hh[2] = 0x0001; /* 1, -2, 2^-24 */
  ASSERT_OK(mk_st_read_f32(st, h, NULL, NULL, got));
  ASSERT_TRUE(got[0] == 1.0f && got[1] == -2.0f && got[2] == ldexpf(1, -24));
  const mk_st_tensor *e4 = mk_st_find(st, "t_F8_E4M3"), *e5 = mk_st_find(st, "t_F8_E5M2");
  b[e4->offset] = 0x38, b[e4->offset + 1] = 0xc4; /* 1.0, -3.0 */
  b[e5->offset] = 0x3c, b[e5->offset + 1] = 0xc2; /* 1.0, -3.0 */
  ASSERT_OK(mk_st_read_f32(st, e4, NULL, NULL, got));
  ASSERT_TRUE(got[0] == 1.0f && got[1] == -3.0f);
  ASSERT_OK(mk_st_read_f32(st, e5, NULL, NULL, got));
  ASSERT_TRUE(got[0] == 1.0f && got[1] == -3.0f);
  ASSERT_STATUS(mk_st_read_f32(st, mk_st_find(st, "t_I32"), NULL, NULL, got), MK_STATUS_INVALID_ARGUMENT);
  int64_t bad_e[2] = {3, 3};
  ASSERT_STATUS(mk_st_read_f32(st, f, NULL, bad_e, got), MK_STATUS_INVALID_ARGUMENT);
  mk_st_close(st);
  mk_st_close(NULL);
  free(b);
}

static void write_file(const char *path, const char *hdr, size_t data_len) {
  size_t n;
  uint8_t *b = image(hdr, data_len, &n);
  FILE *f = fopen(path, "wb");
  ASSERT_TRUE(f && fwrite(b, 1, n, f) == n && fclose(f) == 0);
  free(b);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  ASSERT_TRUE(f && fputs(text, f) >= 0 && fclose(f) == 0);
}

static void expect_open_refused(const char *path, const char *want) {
  mk_st_t *st = NULL;
  g_msg[0] = 0;
  mk_status s = mk_st_open(path, &st);
  if (s == MK_STATUS_OK || st || !strstr(g_msg, want)) {
    fprintf(stderr, "FAIL: open %s: %s, message '%s' lacks '%s'\n", path, mk_status_name(s), g_msg, want);
    exit(1);
  }
}

static void sharded(void) {
  char dir[] = "/tmp/mk_test_st_XXXXXX", p[512];
  ASSERT_TRUE(mkdtemp(dir) != NULL);
  const char *ha = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
  const char *hb = "{\"b\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,8]}}";
  snprintf(p, sizeof p, "%s/s1.safetensors", dir);
  write_file(p, ha, 8);
  snprintf(p, sizeof p, "%s/s2.safetensors", dir);
  write_file(p, hb, 8);
  snprintf(p, sizeof p, "%s/short.safetensors", dir);
  write_text(p, "abc");
  expect_open_refused(p, "short.safetensors: file is 3 bytes, shorter than the 8-byte header length");
  snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
  write_text(p, "{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s2.safetensors\"}}");
  mk_st_t *st;
  ASSERT_OK(mk_st_open(dir, &st));
  ASSERT_EQ(mk_st_count(st), 2);
  ASSERT_EQ(mk_st_find(st, "b")->file, 1);
  mk_st_close(st);
  write_text(p, "{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"../s2.safetensors\"}}");
  expect_open_refused(dir, "shard '../s2.safetensors' is outside the model directory");
  write_text(p, "{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"/etc/passwd\"}}");
  expect_open_refused(dir, "shard '/etc/passwd' is outside the model directory");
  write_text(p, "{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s2.safetensors\",\"c\":\"s2.safetensors\"}}");
  expect_open_refused(dir, "tensor 'c' is listed for shard s2.safetensors but is in no shard");
  write_text(p, "{\"weight_map\":{\"a\":\"s1.safetensors\"}}");
  ASSERT_STATUS(mk_st_open(dir, &st), MK_STATUS_OK); /* s2 not referenced: not opened */
  mk_st_close(st);
  snprintf(p, sizeof p, "%s/s3.safetensors", dir);
  write_file(p, ha, 8);
  snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
  write_text(p, "{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s3.safetensors\"}}");
  expect_open_refused(dir, "tensor 'a' is in two shards");
  write_text(p, "{\"weight_map\":{\"b\":\"s2.safetensors\",\"a\":\"s3.safetensors\"}}");
  ASSERT_OK(mk_st_open(dir, &st));
  mk_st_close(st);
  write_text(p, "{\"weight_map\":{\"b\":\"s2.safetensors\"}, \"x\": [}");
  expect_open_refused(dir, "not JSON with a \"weight_map\" object");
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  ASSERT_EQ(system(cmd), 0);
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 30);
  mk_log_set_callback(capture, NULL);
  refusals();
  valid_file();
  sharded();
  printf("ok\n");
  return 0;
}
