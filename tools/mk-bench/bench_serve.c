/* bench_serve.c — `mk-bench serve`: a load generator for an OpenAI-compatible completion
 * server (mk-serve, vLLM, ...). Plain sockets, HTTP/1.0 (the server closes the connection
 * after the stream, so the body is the SSE bytes as they come). Each request: a prompt of
 * random token ids, max_tokens = --output-len, ignore_eos, greedy, streamed. Requests start
 * at Poisson arrivals of --request-rate (inf: all at once), at most --concurrency in flight.
 * --duration S: no request starts after S seconds (the ones in flight finish); --num-prompts
 * is then the most that may start (default 1000000), and the report counts those that did.
 * Prints a block like vLLM's benchmark_serving (TTFT, TPOT, ITL mean/median/p99, throughput)
 * and writes it as JSON with --json. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "core/rng.h"
#include "mk_bench.h"

typedef struct srv_req {
  double t_start, ttft, e2e; /* seconds */
  int n_out, ok, issued;
  double *itl;               /* gaps between token-bearing chunks */
  int n_itl;
  char err[160];
} srv_req;

typedef struct srv_bench {
  const char *host, *model;
  int port, n, conc, in_len, out_len, vocab, timeout_s;
  double rate, duration; /* duration: seconds, 0 = off */
  uint64_t seed;
  double t0, *arrival;
  atomic_int next;
  srv_req *req;
} srv_bench;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Count token ids in the SSE events of buf[0..*len); consumed events are removed. */
static int sse_events(char *buf, size_t *len, int *tokens, int *done, char *err, size_t errlen) {
  int events = 0;
  char *p = buf, *end;
  while ((end = strstr(p, "\n\n"))) {
    *end = 0;
    if (!strncmp(p, "data: ", 6)) {
      if (!strcmp(p + 6, "[DONE]")) {
        *done = 1;
      } else {
        cJSON *j = cJSON_Parse(p + 6);
        const cJSON *ch, *e = cJSON_GetObjectItem(j, "error");
        if (e) snprintf(err, errlen, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(e, "message")) ?: "error event");
        cJSON_ArrayForEach(ch, cJSON_GetObjectItem(j, "choices")) {
          int k = cJSON_GetArraySize(cJSON_GetObjectItem(ch, "token_ids"));
          if (k) *tokens += k, events++;
        }
        cJSON_Delete(j);
      }
    }
    p = end + 2;
  }
  *len -= (size_t)(p - buf);
  memmove(buf, p, *len + 1);
  return events;
}

static void run_one(srv_bench *b, int i) {
  srv_req *r = &b->req[i];
  r->itl = malloc(sizeof(double) * (size_t)(b->out_len + 1));
  cJSON *body = cJSON_CreateObject(), *pr = cJSON_AddArrayToObject(body, "prompt");
  for (int k = 0; k < b->in_len; k++)
    cJSON_AddItemToArray(pr, cJSON_CreateNumber((double)(mk_rng_hash(b->seed, (uint64_t)i * 1000003u + k) % (uint64_t)b->vocab)));
  if (b->model) cJSON_AddStringToObject(body, "model", b->model);
  cJSON_AddNumberToObject(body, "max_tokens", b->out_len);
  cJSON_AddNumberToObject(body, "temperature", 0);
  cJSON_AddBoolToObject(body, "ignore_eos", 1);
  cJSON_AddBoolToObject(body, "stream", 1);
  char *js = cJSON_PrintUnformatted(body);
  cJSON_Delete(body);
  size_t hl = strlen(js) + 256;
  char *msg = malloc(hl);
  int ml = snprintf(msg, hl, "POST /v1/completions HTTP/1.0\r\nHost: %s\r\nContent-Type: application/json\r\n"
                    "Content-Length: %zu\r\n\r\n%s", b->host, strlen(js), js);
  free(js);
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap + 1);
  int fd = socket(AF_INET, SOCK_STREAM, 0), header = 1, done = 0;
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)b->port)};
  inet_pton(AF_INET, b->host, &sa.sin_addr);
  struct timeval tv = {b->timeout_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  r->t_start = now_s();
  double last = 0;
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) || write(fd, msg, (size_t)ml) != ml) {
    snprintf(r->err, sizeof r->err, "cannot send to %s:%d", b->host, b->port);
    goto out;
  }
  for (;;) {
    if (len == cap) {
      snprintf(r->err, sizeof r->err, "response too large");
      break;
    }
    ssize_t k = read(fd, buf + len, cap - len);
    if (k <= 0) break;
    len += (size_t)k;
    buf[len] = 0;
    double t = now_s();
    if (header) {
      char *e = strstr(buf, "\r\n\r\n");
      if (!e) continue;
      if (strncmp(buf, "HTTP/1.", 7) || atoi(buf + 9) != 200) {
        snprintf(r->err, sizeof r->err, "HTTP %d: %.100s", atoi(buf + 9), e + 4);
        break;
      }
      header = 0;
      len -= (size_t)(e + 4 - buf);
      memmove(buf, e + 4, len + 1);
    }
    int before = r->n_out;
    sse_events(buf, &len, &r->n_out, &done, r->err, sizeof r->err);
    if (r->n_out > before) {
      if (before == 0) r->ttft = t - r->t_start;
      else if (r->n_itl < b->out_len) r->itl[r->n_itl++] = t - last;
      last = t;
    }
    if (done) break;
  }
  r->e2e = now_s() - r->t_start;
  r->ok = done && !r->err[0] && r->n_out > 0;
  if (!done && !r->err[0]) snprintf(r->err, sizeof r->err, "the stream ended without [DONE]");
out:
  if (fd >= 0) close(fd);
  free(msg), free(buf);
}

static void *worker(void *arg) {
  srv_bench *b = arg;
  for (int i; (i = atomic_fetch_add(&b->next, 1)) < b->n;) {
    double wait = b->t0 + b->arrival[i] - now_s();
    if (b->duration > 0 && b->arrival[i] >= b->duration) break;
    if (wait > 0) usleep((useconds_t)(wait * 1e6));
    if (b->duration > 0 && now_s() - b->t0 >= b->duration) break;
    b->req[i].issued = 1;
    run_one(b, i);
  }
  return NULL;
}

typedef struct dist {
  double mean, median, p99;
} dist;
static dist dist_of(double *v, int n) {
  dist d = {NAN, NAN, NAN};
  if (n < 1) return d;
  qsort(v, (size_t)n, sizeof *v, cmp_dbl);
  double s = 0;
  for (int i = 0; i < n; i++) s += v[i];
  d.mean = s / n * 1e3;
  d.median = (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) * 1e3;
  double pos = 0.99 * (n - 1);
  int lo = (int)pos;
  d.p99 = (v[lo] + (lo + 1 < n ? (pos - lo) * (v[lo + 1] - v[lo]) : 0)) * 1e3;
  return d;
}

static void usage(FILE *o) {
  fprintf(o, "usage: mk-bench serve [--host 127.0.0.1] [--port 8000] [--model NAME] [--num-prompts 100]\n"
             "         [--concurrency 16] [--request-rate inf|R] [--input-len 128] [--output-len 128]\n"
             "         [--vocab 256] [--seed N] [--timeout-s 600] [--duration S] [--json FILE]\n"
             "Prompts are random token ids in [0, vocab); each request streams output-len tokens (ignore_eos).\n"
             "--duration S: start requests for S seconds (at most --num-prompts, default then 1000000); the\n"
             "ones in flight at S finish and count.\n");
}

int mk_bench_serve(int argc, char **argv) {
  srv_bench b = {.host = "127.0.0.1", .port = 8000, .n = 100, .conc = 16, .in_len = 128, .out_len = 128, .vocab = 256,
                 .timeout_s = 600, .rate = INFINITY};
  mk_bench_opts o;
  mk_bench_opts_default(&o);
  b.seed = o.seed;
  const char *json = NULL;
  int n_given = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(stdout), 0;
    if (!v) {
      fprintf(stderr, "mk-bench serve: '%s' needs a value\n", a);
      return 2;
    }
    i++;
    int64_t x;
    struct {
      const char *f;
      int64_t lo, hi;
      int *dst;
    } nums[] = {{"--port", 1, 65535, &b.port},          {"--num-prompts", 1, 1 << 24, &b.n},
                {"--concurrency", 1, 4096, &b.conc},    {"--input-len", 1, 1 << 20, &b.in_len},
                {"--output-len", 1, 1 << 20, &b.out_len}, {"--vocab", 1, 1 << 30, &b.vocab},
                {"--timeout-s", 1, 86400, &b.timeout_s}};
    int hit = 0;
    for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++)
      if (!strcmp(a, nums[k].f)) {
        if (mk_bench_parse_i64(a, v, nums[k].lo, nums[k].hi, &x)) return 2;
        *nums[k].dst = (int)x, hit = 1;
        if (nums[k].dst == &b.n) n_given = 1;
      }
    if (hit) continue;
    if (!strcmp(a, "--host")) b.host = v;
    else if (!strcmp(a, "--model")) b.model = v;
    else if (!strcmp(a, "--json")) json = v;
    else if (!strcmp(a, "--seed")) {
      if (mk_bench_parse_i64(a, v, 0, INT64_MAX, &x)) return 2;
      b.seed = (uint64_t)x;
    } else if (!strcmp(a, "--duration")) {
      char *e;
      b.duration = strtod(v, &e);
      if (*e || !(b.duration > 0) || b.duration > 86400) {
        fprintf(stderr, "mk-bench serve: --duration must be a number of seconds in (0, 86400], got '%s'\n", v);
        return 2;
      }
    } else if (!strcmp(a, "--request-rate")) {
      char *e;
      b.rate = strcmp(v, "inf") ? strtod(v, &e) : INFINITY;
      if (strcmp(v, "inf") && (*e || !(b.rate > 0))) {
        fprintf(stderr, "mk-bench serve: --request-rate must be a positive number or inf, got '%s'\n", v);
        return 2;
      }
    } else {
      fprintf(stderr, "mk-bench serve: unknown flag '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  struct in_addr ia;
  if (inet_pton(AF_INET, b.host, &ia) != 1) {
    fprintf(stderr, "mk-bench serve: --host must be an IPv4 address, got '%s'\n", b.host);
    return 2;
  }
  if (b.duration > 0 && !n_given) b.n = 1000000;
  b.req = calloc((size_t)b.n, sizeof *b.req);
  b.arrival = calloc((size_t)b.n, sizeof *b.arrival);
  double t = 0;
  for (int i = 0; i < b.n; i++) { /* Poisson arrivals: exponential gaps */
    if (isfinite(b.rate)) t += -log(1.0 - (double)(mk_rng_hash(b.seed ^ 0x5eed, (uint64_t)i) >> 11) / 9007199254740992.0) / b.rate;
    b.arrival[i] = t;
  }
  int nt = b.conc < b.n ? b.conc : b.n;
  pthread_t *th = malloc(sizeof(pthread_t) * (size_t)nt);
  atomic_init(&b.next, 0);
  b.t0 = now_s();
  for (int i = 0; i < nt; i++) pthread_create(&th[i], NULL, worker, &b);
  for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
  double dur = now_s() - b.t0;
  int ok = 0, n_itl = 0, issued = 0;
  size_t itl_cap = 1;
  for (int i = 0; i < b.n; i++) issued += b.req[i].issued, itl_cap += (size_t)b.req[i].n_itl;
  long long out_tok = 0, in_tok = 0;
  double *ttft = malloc(sizeof(double) * (size_t)(issued + 1)), *tpot = malloc(sizeof(double) * (size_t)(issued + 1));
  double *e2e = malloc(sizeof(double) * (size_t)(issued + 1)), *itl = malloc(sizeof(double) * itl_cap);
  int n_tpot = 0;
  for (int i = 0; i < b.n; i++) {
    srv_req *r = &b.req[i];
    if (!r->issued) continue;
    if (!r->ok) {
      if (i < 3 || ok == 0) fprintf(stderr, "mk-bench serve: request %d failed: %s\n", i, r->err);
      free(r->itl);
      continue;
    }
    ttft[ok] = r->ttft, e2e[ok] = r->e2e;
    if (r->n_out > 1) tpot[n_tpot++] = (r->e2e - r->ttft) / (r->n_out - 1);
    memcpy(itl + n_itl, r->itl, sizeof(double) * (size_t)r->n_itl);
    n_itl += r->n_itl;
    out_tok += r->n_out, in_tok += b.in_len, ok++;
    free(r->itl);
  }
  dist dt = dist_of(ttft, ok), dp = dist_of(tpot, n_tpot), di = dist_of(itl, n_itl), de = dist_of(e2e, ok);
  printf("============ Serving Benchmark Result ============\n");
  printf("%-40s %d\n%-40s %d\n%-40s %.2f\n%-40s %lld\n%-40s %lld\n", "Successful requests:", ok, "Failed requests:", issued - ok,
         "Benchmark duration (s):", dur, "Total input tokens:", in_tok, "Total generated tokens:", out_tok);
  printf("%-40s %.2f\n%-40s %.2f\n%-40s %.2f\n", "Request throughput (req/s):", ok / dur,
         "Output token throughput (tok/s):", out_tok / dur, "Total Token throughput (tok/s):", (in_tok + out_tok) / dur);
  const char *titles[] = {"Time to First Token", "Time per Output Token (excl. 1st token)", "Inter-token Latency",
                          "End-to-end Latency"};
  const char *keys[] = {"TTFT", "TPOT", "ITL", "E2EL"};
  dist ds[] = {dt, dp, di, de};
  for (int k = 0; k < 4; k++) {
    int w = (int)strlen(titles[k]), pad = (50 - w) / 2;
    printf("%.*s%s%.*s\n", pad, "--------------------------", titles[k], 50 - w - pad, "--------------------------");
    printf("Mean %s (ms):%*s%.2f\nMedian %s (ms):%*s%.2f\nP99 %s (ms):%*s%.2f\n", keys[k], (int)(30 - strlen(keys[k])), "",
           ds[k].mean, keys[k], (int)(28 - strlen(keys[k])), "", ds[k].median, keys[k], (int)(31 - strlen(keys[k])), "",
           ds[k].p99);
  }
  printf("==================================================\n");
  int rc = ok == issued && ok > 0 ? 0 : 1;
  if (json) {
    cJSON *j = cJSON_CreateObject();
    mk_bench_json_meta(j);
    cJSON_AddStringToObject(j, "server", b.host);
    cJSON_AddNumberToObject(j, "port", b.port);
    cJSON_AddNumberToObject(j, "num_prompts", issued);
    if (b.duration > 0) cJSON_AddNumberToObject(j, "duration_target_s", b.duration);
    cJSON_AddNumberToObject(j, "concurrency", b.conc);
    if (isfinite(b.rate)) cJSON_AddNumberToObject(j, "request_rate", b.rate);
    else cJSON_AddStringToObject(j, "request_rate", "inf");
    cJSON_AddNumberToObject(j, "input_len", b.in_len);
    cJSON_AddNumberToObject(j, "output_len", b.out_len);
    cJSON_AddNumberToObject(j, "completed", ok);
    cJSON_AddNumberToObject(j, "failed", issued - ok);
    cJSON_AddNumberToObject(j, "duration_s", dur);
    cJSON_AddNumberToObject(j, "total_input_tokens", (double)in_tok);
    cJSON_AddNumberToObject(j, "total_output_tokens", (double)out_tok);
    cJSON_AddNumberToObject(j, "request_throughput", ok / dur);
    cJSON_AddNumberToObject(j, "output_throughput", out_tok / dur);
    cJSON_AddNumberToObject(j, "total_token_throughput", (in_tok + out_tok) / dur);
    for (int k = 0; k < 4; k++) {
      char key[64];
      const char *lk[] = {"ttft", "tpot", "itl", "e2el"};
      snprintf(key, sizeof key, "mean_%s_ms", lk[k]), cJSON_AddNumberToObject(j, key, isnan(ds[k].mean) ? -1 : ds[k].mean);
      snprintf(key, sizeof key, "median_%s_ms", lk[k]), cJSON_AddNumberToObject(j, key, isnan(ds[k].median) ? -1 : ds[k].median);
      snprintf(key, sizeof key, "p99_%s_ms", lk[k]), cJSON_AddNumberToObject(j, key, isnan(ds[k].p99) ? -1 : ds[k].p99);
    }
    char *s = cJSON_Print(j);
    FILE *f = fopen(json, "w");
    if (!f || fputs(s, f) < 0) {
      fprintf(stderr, "mk-bench serve: cannot write %s\n", json);
      rc = 1;
    }
    if (f) fclose(f);
    free(s);
    cJSON_Delete(j);
  }
  free(ttft), free(tpot), free(e2e), free(itl), free(th), free(b.req), free(b.arrival);
  return rc;
}
