/* test_bench_report.c — mk-bench's framework on the CPU: common-flag validation, percentile
 * stats, and the JSON/CSV writers (metadata, rows, fused/unfused ratio, NaN as null). */
#include <cjson/cJSON.h>
#include <string.h>
#include <unistd.h>

#include "mk_bench.h"
#include "tests/mk_test.h"

static int parse(mk_bench_opts *o, int argc, char **argv) {
  for (int i = 0; i < argc; i++) {
    int used = mk_bench_parse_common(o, argc, argv, i);
    if (used <= 0) return used ? -1 : i; /* -1 bad value; i = first unknown flag */
    i += used - 1;
  }
  return argc;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  ASSERT_TRUE(f != NULL);
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 30);
  uint64_t seed = mk_test_seed();
  mk_bench_opts o;
  mk_bench_opts_default(&o);
  ASSERT_EQ(o.batch, 1);
  char *good[] = {"--warmup", "3", "--iters", "7", "--path", "unfused", "--flush-l2", "--rotate", "4", "--seed", "99",
                  "--batch", "20"};
  ASSERT_EQ(parse(&o, 13, good), 13);
  ASSERT_EQ(o.batch, 20);
  ASSERT_EQ(o.warmup, 3);
  ASSERT_EQ(o.iters, 7);
  ASSERT_EQ(o.rotate, 4);
  ASSERT_EQ(o.flush_l2, 1);
  ASSERT_UEQ(o.paths, MK_BENCH_PATH_UNFUSED);
  ASSERT_UEQ(o.seed, 99);
  char *bad[][2] = {{"--iters", "0"},   {"--iters", "x"},        {"--warmup", "-1"}, {"--path", "fast"},
                    {"--path", ","},    {"--rotate", "1000"},    {"--json", "--csv"}, {"--seed", "0"},
                    {"--iters", "5q"},  {"--warmup", NULL},      {"--batch", "0"},   {"--batch", "1001"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    mk_bench_opts t;
    mk_bench_opts_default(&t);
    ASSERT_EQ(parse(&t, bad[i][1] ? 2 : 1, bad[i]), -1);
  }
  char *other[] = {"--m", "5"};
  ASSERT_EQ(parse(&o, 2, other), 0); /* not a common flag: left to the op */
  int64_t v;
  ASSERT_EQ(mk_bench_parse_i64("--m", "12", 1, 100, &v), 0);
  ASSERT_EQ(v, 12);
  ASSERT_EQ(mk_bench_parse_i64("--m", "0", 1, 100, &v), -1);

  /* Stats on a shuffled 1..101: median 51, p10 11, p90 91. */
  double ms[101];
  for (int i = 0; i < 101; i++) ms[i] = i + 1;
  for (int i = 100; i > 0; i--) {
    int j = (int)((seed + (uint64_t)i * 2654435761u) % (uint64_t)(i + 1));
    double t = ms[i];
    ms[i] = ms[j];
    ms[j] = t;
  }
  mk_bench_stats s;
  mk_bench_stats_from(ms, 101, &s);
  ASSERT_NEAR(s.median_ms, 51, 1e-12);
  ASSERT_NEAR(s.p10_ms, 11, 1e-12);
  ASSERT_NEAR(s.p90_ms, 91, 1e-12);

  /* Report: two paths of one shape + one row of another op, then files. */
  char dir[] = "/tmp/mk_bench_report_XXXXXX";
  ASSERT_TRUE(mkdtemp(dir) != NULL);
  char json[128], csv[128];
  snprintf(json, sizeof json, "%s/r.json", dir);
  snprintf(csv, sizeof csv, "%s/r.csv", dir);
  o.json_path = json;
  o.csv_path = csv;
  mk_bench_set_command(argc, argv);
  mk_bench_report *r;
  ASSERT_OK(mk_bench_report_create(&o, &r));
  double fused_ms = 1.0 + (double)(seed % 1000) / 1000.0, unfused_ms = 2.5;
  mk_bench_row row;
  mk_bench_row_init(&row, "gemm", "fused");
  snprintf(row.shape, sizeof row.shape, "{\"m\":%d,\"n\":64,\"k\":32}", (int)(seed % 4096) + 1);
  row.t.median_ms = fused_ms;
  row.t.p10_ms = fused_ms * 0.9;
  row.t.p90_ms = fused_ms * 1.1;
  row.tflops = 123.5;
  row.rel_err = 3e-3;
  ASSERT_OK(mk_bench_report_add(r, &row));
  row.path = "unfused";
  row.t.median_ms = unfused_ms;
  ASSERT_OK(mk_bench_report_add(r, &row));
  mk_bench_row other_row;
  mk_bench_row_init(&other_row, "comm", "fused");
  ASSERT_OK(mk_bench_report_add(r, &other_row));
  mk_bench_row broken;
  mk_bench_row_init(&broken, "gemm", "fused");
  strcpy(broken.shape, "m=1");
  ASSERT_STATUS(mk_bench_report_add(r, &broken), MK_STATUS_INTERNAL);
  ASSERT_EQ(mk_bench_report_finish(r), 0);

  cJSON *doc = cJSON_Parse(slurp(json));
  ASSERT_TRUE(doc != NULL);
  const char *keys[] = {"gpu", "driver", "cuda", "commit", "date", "command"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    ASSERT_TRUE(cJSON_IsString(cJSON_GetObjectItem(doc, keys[i])));
  ASSERT_TRUE(cJSON_IsNumber(cJSON_GetObjectItem(doc, "gpus")));
  cJSON *res = cJSON_GetObjectItem(doc, "results");
  ASSERT_EQ(cJSON_GetArraySize(res), 3);
  cJSON *f0 = cJSON_GetArrayItem(res, 0);
  ASSERT_STREQ(cJSON_GetObjectItem(f0, "path")->valuestring, "fused");
  ASSERT_EQ(cJSON_GetObjectItem(cJSON_GetObjectItem(f0, "shape"), "m")->valueint, (int)(seed % 4096) + 1);
  ASSERT_NEAR(cJSON_GetObjectItem(f0, "median_ms")->valuedouble, fused_ms, 1e-9);
  ASSERT_NEAR(cJSON_GetObjectItem(f0, "ratio")->valuedouble, fused_ms / unfused_ms, 1e-9);
  ASSERT_NEAR(cJSON_GetObjectItem(cJSON_GetArrayItem(res, 1), "ratio")->valuedouble, 1.0, 1e-12);
  ASSERT_TRUE(cJSON_IsNull(cJSON_GetObjectItem(f0, "bound_ms")));
  ASSERT_TRUE(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(res, 2), "ratio")));
  ASSERT_EQ(cJSON_GetObjectItem(f0, "ranks")->valueint, 1);
  cJSON_Delete(doc);

  char *c = slurp(csv);
  ASSERT_TRUE(strstr(c, "# commit=") != NULL);
  ASSERT_TRUE(strstr(c, "\nop,path,shape,ranks,nodes,median_ms,p10_ms,p90_ms,tflops,gbps,rel_err,compute_ms,"
                        "comm_ms,bound_ms,ratio\n") != NULL);
  char want[128];
  snprintf(want, sizeof want, "\ngemm,unfused,{m:%d;n:64;k:32},1,1,2.5,", (int)(seed % 4096) + 1);
  ASSERT_TRUE(strstr(c, want) != NULL);
  ASSERT_TRUE(strstr(c, ",1\n") != NULL); /* the unfused row's ratio */

  /* A recorded failure makes finish() return 1 and is written to the file. */
  ASSERT_OK(mk_bench_report_create(&o, &r));
  mk_bench_report_fail(r, "wrong result at %d", 7);
  ASSERT_EQ(mk_bench_report_finish(r), 1);
  doc = cJSON_Parse(slurp(json));
  ASSERT_STREQ(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "failures"), 0)->valuestring, "wrong result at 7");
  cJSON_Delete(doc);
  unlink(json);
  unlink(csv);
  rmdir(dir);
  printf("ok\n");
  return 0;
}
