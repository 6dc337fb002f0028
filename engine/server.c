/* server.c — the OpenAI-compatible HTTP front end (libmicrohttpd, one thread per connection):
 *   POST /v1/completions  prompt (text or token ids), max_tokens, temperature, top_p, seed,
 *                         stop, stop_token_ids, ignore_eos, stream (+ stream_options.include_usage)
 *   GET  /v1/models, /health, /metrics (Prometheus text format)
 * A malformed request gets 400 with {"error": {...}}; a full queue 429; shutting down 503.
 * A streamed response is produced by a content-reader callback that blocks (bounded) for the
 * next tokens; when the client goes away, libmicrohttpd's write fails, the response is freed
 * and the request released, which cancels it in the engine (its KV pages come back). */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/check.h"
#include "engine/mk_engine.h"

struct mk_server {
  struct MHD_Daemon *d;
  mk_engine_t *e;
  const mk_tokenizer_t *tok;
  char *model;
  int64_t max_body;
  int port;
  atomic_ullong next_id;
};

typedef struct conn_ctx {
  char *body;
  size_t len, cap;
  int too_big;
} conn_ctx;

void mk_server_config_default(mk_server_config *c) {
  *c = (mk_server_config){.host = "127.0.0.1", .port = 8000, .model_name = "mkernel", .threads_max = 256,
                          .max_body = 8 << 20};
}

/* ---- responses ----------------------------------------------------------------------------- */
static enum MHD_Result send_text(struct MHD_Connection *c, unsigned code, const char *type, char *text) {
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
  if (!r) return free(text), MHD_NO;
  MHD_add_response_header(r, "Content-Type", type);
  enum MHD_Result ok = MHD_queue_response(c, code, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned code, cJSON *j) {
  char *s = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  return s ? send_text(c, code, "application/json", s) : MHD_NO;
}

static cJSON *error_obj(const char *type, const char *msg, const char *param, int code) {
  cJSON *root = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(root, "error");
  cJSON_AddStringToObject(e, "message", msg);
  cJSON_AddStringToObject(e, "type", type);
  if (param) cJSON_AddStringToObject(e, "param", param);
  else cJSON_AddNullToObject(e, "param");
  cJSON_AddNumberToObject(e, "code", code);
  return root;
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned code, const char *type, const char *param,
                                  const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  MK_INFO(MK_SUBSYS_SERVE, "HTTP %u: %s", code, msg);
  return send_json(c, code, error_obj(type, msg, param, (int)code));
}

static cJSON *completion_obj(mk_server_t *s, unsigned long long id, int stream) {
  cJSON *o = cJSON_CreateObject();
  char ids[48];
  snprintf(ids, sizeof ids, "cmpl-%llu", id);
  cJSON_AddStringToObject(o, "id", ids);
  cJSON_AddStringToObject(o, "object", "text_completion");
  cJSON_AddNumberToObject(o, "created", (double)time(NULL));
  cJSON_AddStringToObject(o, "model", s->model);
  (void)stream;
  return o;
}

static void add_choice(cJSON *o, const char *text, size_t tl, const int32_t *ids, int n, const char *fin) {
  cJSON *ch = cJSON_AddArrayToObject(o, "choices"), *c = cJSON_CreateObject();
  cJSON_AddNumberToObject(c, "index", 0);
  char *t = malloc(tl + 1);
  if (t) memcpy(t, text ? text : "", tl), t[tl] = 0;
  cJSON_AddStringToObject(c, "text", t ? t : "");
  free(t);
  cJSON *arr = cJSON_AddArrayToObject(c, "token_ids");
  for (int i = 0; i < n; i++) cJSON_AddItemToArray(arr, cJSON_CreateNumber(ids[i]));
  cJSON_AddNullToObject(c, "logprobs");
  if (fin) cJSON_AddStringToObject(c, "finish_reason", fin);
  else cJSON_AddNullToObject(c, "finish_reason");
  cJSON_AddItemToArray(ch, c);
}

static void add_usage(cJSON *o, int p, int c) {
  cJSON *u = cJSON_AddObjectToObject(o, "usage");
  cJSON_AddNumberToObject(u, "prompt_tokens", p);
  cJSON_AddNumberToObject(u, "completion_tokens", c);
  cJSON_AddNumberToObject(u, "total_tokens", p + c);
}

/* ---- streaming ----------------------------------------------------------------------------- */
typedef struct stream_ctx {
  mk_server_t *s;
  mk_request_t *r;
  unsigned long long id;
  int include_usage, finished;
  char *pend;
  size_t plen, poff;
} stream_ctx;

static void stream_put(stream_ctx *x, cJSON *j, const char *raw) {
  char *s = j ? cJSON_PrintUnformatted(j) : NULL;
  if (j) cJSON_Delete(j);
  const char *body = s ? s : raw;
  if (!body) return;
  size_t n = strlen(body) + 8;
  char *p = realloc(x->pend, x->plen + n + 1);
  if (p) {
    x->pend = p;
    x->plen += (size_t)sprintf(p + x->plen, "data: %s\n\n", body);
  }
  free(s);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
  stream_ctx *x = cls;
  (void)pos;
  while (x->poff == x->plen) {
    if (x->finished) return MHD_CONTENT_READER_END_OF_STREAM;
    x->plen = x->poff = 0;
    mk_request_update u;
    mk_request_next(x->r, 1000, &u);
    int timeout = u.done && !strcmp(u.finish_reason, "timeout"), abort = u.done && !strcmp(u.finish_reason, "abort");
    if (u.n_ids || u.text_len || (u.done && !timeout && !abort)) {
      cJSON *o = completion_obj(x->s, x->id, 1);
      add_choice(o, u.text, u.text_len, u.ids, u.n_ids, u.done && !timeout && !abort ? u.finish_reason : NULL);
      stream_put(x, o, NULL);
    }
    if (!u.done) continue;
    if (timeout || abort)
      stream_put(x, error_obj(timeout ? "timeout_error" : "server_error",
                              timeout ? "the request ran past the server's request timeout" : "the request was aborted",
                              NULL, timeout ? 408 : 500), NULL);
    if (x->include_usage) {
      cJSON *o = completion_obj(x->s, x->id, 1);
      cJSON_AddArrayToObject(o, "choices");
      add_usage(o, u.prompt_tokens, u.completion_tokens);
      stream_put(x, o, NULL);
    }
    stream_put(x, NULL, "[DONE]");
    x->finished = 1;
  }
  size_t n = x->plen - x->poff < max ? x->plen - x->poff : max;
  memcpy(buf, x->pend + x->poff, n);
  x->poff += n;
  return (ssize_t)n;
}

static void stream_free(void *cls) {
  stream_ctx *x = cls;
  mk_request_release(x->r); /* cancels the request if the client left before the end */
  free(x->pend);
  free(x);
}

/* ---- /v1/completions ---------------------------------------------------------------------- */
#define BAD(...) return send_error(c, 400, "invalid_request_error", __VA_ARGS__)

static int is_int(const cJSON *j) {
  return cJSON_IsNumber(j) && isfinite(j->valuedouble) && j->valuedouble == floor(j->valuedouble) &&
         fabs(j->valuedouble) < 9e15;
}

static enum MHD_Result completions(mk_server_t *s, struct MHD_Connection *c, const conn_ctx *cc) {
  cJSON *root = cJSON_ParseWithLength(cc->body ? cc->body : "", cc->len);
  if (!root) BAD(NULL, "the body is not valid JSON");
  enum MHD_Result res;
  int32_t *ids = NULL, stop_ids[64];
  int n_ids = 0, n_stop_ids = 0;
  const char *stops[16];
  int n_stops = 0;
#undef BAD
#define BAD(...) do { res = send_error(c, 400, "invalid_request_error", __VA_ARGS__); goto done; } while (0)
  if (!cJSON_IsObject(root)) BAD(NULL, "the body must be a JSON object");
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  if (model && !cJSON_IsNull(model) && !cJSON_IsString(model)) BAD("model", "'model' must be a string");
  if (cJSON_IsString(model) && strcmp(model->valuestring, s->model)) {
    res = send_error(c, 404, "invalid_request_error", "model", "the model '%s' does not exist; this server serves '%s'",
                     model->valuestring, s->model);
    goto done;
  }
  const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(root, "prompt");
  if (cJSON_IsArray(prompt) && cJSON_GetArraySize(prompt) == 1 &&
      (cJSON_IsString(prompt->child) || cJSON_IsArray(prompt->child)))
    prompt = prompt->child; /* a batch of one */
  if (!prompt) BAD("prompt", "'prompt' is required");
  if (cJSON_IsString(prompt)) {
    if (!s->tok) BAD("prompt", "this model has no tokenizer: give the prompt as a list of token ids");
    if (mk_tokenizer_encode(s->tok, prompt->valuestring, strlen(prompt->valuestring), &ids, &n_ids))
      BAD("prompt", "the prompt cannot be tokenized (not valid UTF-8?)");
  } else if (cJSON_IsArray(prompt)) {
    int n = cJSON_GetArraySize(prompt);
    ids = malloc(sizeof(int32_t) * (size_t)(n + 1));
    const cJSON *it;
    cJSON_ArrayForEach(it, prompt) {
      if (cJSON_IsString(it) || cJSON_IsArray(it)) BAD("prompt", "batched prompts are not supported: send one per request");
      if (!is_int(it)) BAD("prompt", "prompt token %d is not an integer", n_ids);
      if (it->valuedouble < 0 || it->valuedouble >= mk_engine_vocab(s->e))
        BAD("prompt", "prompt token %d (id %.0f) is outside the vocabulary [0, %d)", n_ids, it->valuedouble,
            mk_engine_vocab(s->e));
      ids[n_ids++] = (int32_t)it->valuedouble;
    }
  } else {
    BAD("prompt", "'prompt' must be a string or a list of token ids");
  }
  if (n_ids == 0) BAD("prompt", "the prompt is empty");
  mk_request_params p = {.prompt = ids, .n_prompt = n_ids, .max_tokens = 16, .sampling = {1.0f, 1.0f, 0}};
  const cJSON *j;
  if ((j = cJSON_GetObjectItemCaseSensitive(root, "max_tokens")) && !cJSON_IsNull(j)) {
    if (!is_int(j)) BAD("max_tokens", "'max_tokens' must be an integer");
    if (j->valuedouble < 1) BAD("max_tokens", "'max_tokens' must be at least 1, got %.0f", j->valuedouble);
    p.max_tokens = j->valuedouble > 1e9 ? 1000000000 : (int)j->valuedouble;
  }
  if ((j = cJSON_GetObjectItemCaseSensitive(root, "temperature")) && !cJSON_IsNull(j)) {
    if (!cJSON_IsNumber(j) || !(j->valuedouble >= 0 && j->valuedouble <= 100))
      BAD("temperature", "'temperature' must be a number >= 0");
    p.sampling.temperature = (float)j->valuedouble;
  }
  if ((j = cJSON_GetObjectItemCaseSensitive(root, "top_p")) && !cJSON_IsNull(j)) {
    if (!cJSON_IsNumber(j) || !(j->valuedouble > 0 && j->valuedouble <= 1)) BAD("top_p", "'top_p' must be in (0, 1]");
    p.sampling.top_p = (float)j->valuedouble;
  }
  if ((j = cJSON_GetObjectItemCaseSensitive(root, "seed")) && !cJSON_IsNull(j)) {
    if (!is_int(j)) BAD("seed", "'seed' must be an integer");
    p.sampling.seed = (uint64_t)(int64_t)j->valuedouble;
  } else {
    p.sampling.seed = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull + atomic_fetch_add(&s->next_id, 0) * 1000003ull;
  }
  if ((j = cJSON_GetObjectItemCaseSensitive(root, "stop")) && !cJSON_IsNull(j)) {
    if (cJSON_IsString(j)) {
      stops[n_stops++] = j->valuestring;
    } else if (cJSON_IsArray(j)) {
      const cJSON *it;
      cJSON_ArrayForEach(it, j) {
        if (!cJSON_IsString(it) || !it->valuestring[0]) BAD("stop", "'stop' must be a string or a list of non-empty strings");
        if (n_stops == 16) BAD("stop", "at most 16 stop strings");
        stops[n_stops++] = it->valuestring;
      }
    } else {
      BAD("stop", "'stop' must be a string or a list of strings");
    }
    if (n_stops && !s->tok) BAD("stop", "stop strings need a tokenizer; this model has none (use stop_token_ids)");
  }
  if ((j = cJSON_GetObjectItemCaseSensitive(root, "stop_token_ids")) && !cJSON_IsNull(j)) {
    const cJSON *it;
    if (!cJSON_IsArray(j)) BAD("stop_token_ids", "'stop_token_ids' must be a list of token ids");
    cJSON_ArrayForEach(it, j) {
      if (!is_int(it) || it->valuedouble < 0 || it->valuedouble >= mk_engine_vocab(s->e) || n_stop_ids == 64)
        BAD("stop_token_ids", "'stop_token_ids' must hold at most 64 ids inside the vocabulary [0, %d)", mk_engine_vocab(s->e));
      stop_ids[n_stop_ids++] = (int32_t)it->valuedouble;
    }
  }
  int stream = 0, include_usage = 0;
  if ((j = cJSON_GetObjectItemCaseSensitive(root, "stream")) && !cJSON_IsNull(j)) {
    if (!cJSON_IsBool(j)) BAD("stream", "'stream' must be true or false");
    stream = cJSON_IsTrue(j);
  }
  if ((j = cJSON_GetObjectItemCaseSensitive(root, "stream_options")) && !cJSON_IsNull(j))
    include_usage = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "include_usage"));
  if ((j = cJSON_GetObjectItemCaseSensitive(root, "ignore_eos")) && !cJSON_IsNull(j)) {
    if (!cJSON_IsBool(j)) BAD("ignore_eos", "'ignore_eos' must be true or false");
    p.ignore_eos = cJSON_IsTrue(j);
  }
  if ((j = cJSON_GetObjectItemCaseSensitive(root, "n")) && !cJSON_IsNull(j) && !(is_int(j) && j->valuedouble == 1))
    BAD("n", "only n = 1 is supported");
  if ((j = cJSON_GetObjectItemCaseSensitive(root, "echo")) && cJSON_IsTrue(j)) BAD("echo", "echo is not supported");
  if ((j = cJSON_GetObjectItemCaseSensitive(root, "logprobs")) && !cJSON_IsNull(j) && !(is_int(j) && j->valuedouble == 0))
    BAD("logprobs", "logprobs are not supported");
  p.stop = stops, p.n_stop = n_stops, p.stop_ids = stop_ids, p.n_stop_ids = n_stop_ids;
  char err[512];
  mk_request_t *r;
  mk_admit a = mk_engine_submit(s->e, &p, &r, err, sizeof err);
  if (a == MK_ADMIT_INVALID) BAD(NULL, "%s", err);
  if (a == MK_ADMIT_QUEUE_FULL) {
    res = send_error(c, 429, "rate_limit_error", NULL, "%s; retry later", err);
    goto done;
  }
  if (a == MK_ADMIT_SHUTTING_DOWN) {
    res = send_error(c, 503, "service_unavailable", NULL, "%s", err);
    goto done;
  }
  unsigned long long id = atomic_fetch_add(&s->next_id, 1);
  if (stream) {
    stream_ctx *x = calloc(1, sizeof *x);
    struct MHD_Response *resp = x ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, x, stream_free) : NULL;
    if (!resp) {
      mk_request_release(r);
      free(x);
      res = MHD_NO;
      goto done;
    }
    *x = (stream_ctx){.s = s, .r = r, .id = id, .include_usage = include_usage};
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    res = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    goto done;
  }
  /* whole response: collect until done (bounded by the engine's request timeout) */
  char *text = NULL;
  size_t tl = 0;
  int32_t *out = malloc(sizeof(int32_t) * (size_t)p.max_tokens);
  int n_out = 0;
  mk_request_update u;
  for (;;) {
    mk_request_next(r, 1000, &u);
    char *t2 = realloc(text, tl + u.text_len + 1);
    if (t2) memcpy(t2 + tl, u.text, u.text_len), tl += u.text_len, text = t2;
    if (out) memcpy(out + n_out, u.ids, sizeof(int32_t) * (size_t)u.n_ids);
    n_out += u.n_ids;
    if (u.done) break;
  }
  if (!strcmp(u.finish_reason, "timeout")) {
    res = send_error(c, 408, "timeout_error", NULL, "the request ran past the server's request timeout (%d tokens generated)",
                     n_out);
  } else if (!strcmp(u.finish_reason, "abort") || !strcmp(u.finish_reason, "error")) {
    res = send_error(c, u.finish_reason[0] == 'a' ? 503 : 500, "server_error", NULL, "the request was %s",
                     u.finish_reason[0] == 'a' ? "aborted (server shutting down)" : "stopped by an engine error");
  } else {
    cJSON *o = completion_obj(s, id, 0);
    add_choice(o, text, tl, out, out ? n_out : 0, u.finish_reason);
    add_usage(o, u.prompt_tokens, u.completion_tokens);
    res = send_json(c, 200, o);
  }
  free(text), free(out);
  mk_request_release(r);
done:
  free(ids);
  cJSON_Delete(root);
  return res;
}

/* ---- /metrics ------------------------------------------------------------------------------ */

static int appendf(char **b, size_t *n, size_t *cap, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(*b + *n, *cap - *n, fmt, ap);
    va_end(ap);
    if (k < 0) return -1;
    if ((size_t)k < *cap - *n) return *n += (size_t)k, 0;
    char *g = realloc(*b, *cap = 2 * *cap + (size_t)k);
    if (!g) return -1;
    *b = g;
  }
}

static void hist(char **b, size_t *n, size_t *cap, const char *name, const char *help, const uint64_t *counts, uint64_t cnt,
                 double sum) {
  int nb;
  const double *bounds = mk_engine_hist_bounds(&nb);
  appendf(b, n, cap, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
  uint64_t acc = 0;
  for (int i = 0; i < nb; i++) {
    acc += counts[i];
    appendf(b, n, cap, "%s_bucket{le=\"%g\"} %llu\n", name, bounds[i], (unsigned long long)acc);
  }
  appendf(b, n, cap, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9g\n%s_count %llu\n", name, (unsigned long long)cnt, name,
          sum, name, (unsigned long long)cnt);
}

static enum MHD_Result metrics(mk_server_t *s, struct MHD_Connection *c) {
  mk_engine_stats st;
  mk_engine_get_stats(s->e, &st);
  size_t n = 0, cap = 4096;
  char *b = malloc(cap);
  if (!b) return MHD_NO;
  b[0] = 0;
#define GAUGE(name, help, type, fmt, v) appendf(&b, &n, &cap, "# HELP " name " " help "\n# TYPE " name " " type "\n" name " " fmt "\n", v)
  GAUGE("mk_requests_running", "Requests in the running batch.", "gauge", "%d", st.running);
  GAUGE("mk_requests_waiting", "Requests queued for admission.", "gauge", "%d", st.waiting);
  GAUGE("mk_kv_pages_total", "KV cache pages in the budget.", "gauge", "%d", st.kv.total);
  GAUGE("mk_kv_pages_used", "KV cache pages holding tokens.", "gauge", "%d", st.kv.used);
  GAUGE("mk_kv_pages_reserved", "KV cache pages promised to running requests, not yet used.", "gauge", "%d", st.kv.reserved);
  GAUGE("mk_kv_usage_ratio", "Used KV pages over the budget.", "gauge", "%.6f", st.kv.total ? (double)st.kv.used / st.kv.total : 0.0);
  GAUGE("mk_prompt_tokens_total", "Prompt tokens prefilled.", "counter", "%llu", (unsigned long long)st.prompt_tokens);
  GAUGE("mk_generation_tokens_total", "Tokens generated.", "counter", "%llu", (unsigned long long)st.generation_tokens);
  GAUGE("mk_engine_steps_total", "Batched forward steps.", "counter", "%llu", (unsigned long long)st.steps);
#undef GAUGE
  static const char *const reasons[] = {"length", "stop", "timeout", "abort", "error", "rejected"};
  appendf(&b, &n, &cap, "# HELP mk_requests_total Requests by how they ended.\n# TYPE mk_requests_total counter\n");
  for (int i = 0; i < 6; i++)
    appendf(&b, &n, &cap, "mk_requests_total{finish_reason=\"%s\"} %llu\n", reasons[i], (unsigned long long)st.finished[i]);
  hist(&b, &n, &cap, "mk_time_to_first_token_seconds", "Time from submission to the first token.", st.ttft_count, st.ttft_n,
       st.ttft_sum);
  hist(&b, &n, &cap, "mk_inter_token_latency_seconds", "Time between consecutive tokens of a request.", st.itl_count,
       st.itl_n, st.itl_sum);
  hist(&b, &n, &cap, "mk_engine_forward_seconds",
       "Backend forward of one engine step (plan broadcast, every rank's pass, logits to the host).", st.forward_count,
       st.forward_n, st.forward_sum);
  appendf(&b, &n, &cap, "# HELP mk_engine_sample_seconds_total Host time sampling the steps' tokens (and their bookkeeping).\n"
          "# TYPE mk_engine_sample_seconds_total counter\nmk_engine_sample_seconds_total %.9g\n", st.sample_sum);
  return send_text(c, 200, "text/plain; version=0.0.4", b);
}

/* ---- dispatch ------------------------------------------------------------------------------- */
static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *upload, size_t *upload_size, void **con_cls) {
  mk_server_t *s = cls;
  (void)version;
  conn_ctx *cc = *con_cls;
  if (!cc) {
    if (!(cc = calloc(1, sizeof *cc))) return MHD_NO;
    *con_cls = cc;
    return MHD_YES;
  }
  if (*upload_size) {
    if (!cc->too_big && cc->len + *upload_size <= (size_t)s->max_body) {
      if (cc->len + *upload_size + 1 > cc->cap) {
        size_t cap = 2 * (cc->len + *upload_size) + 1;
        char *b = realloc(cc->body, cap);
        if (!b) return MHD_NO;
        cc->body = b, cc->cap = cap;
      }
      memcpy(cc->body + cc->len, upload, *upload_size);
      cc->len += *upload_size;
    } else {
      cc->too_big = 1;
    }
    *upload_size = 0;
    return MHD_YES;
  }
  int get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
  if (!strcmp(url, "/v1/completions")) {
    if (!post) return send_error(c, 405, "invalid_request_error", NULL, "use POST for /v1/completions");
    if (cc->too_big) return send_error(c, 413, "invalid_request_error", NULL, "the body is over %lld bytes", (long long)s->max_body);
    return completions(s, c, cc);
  }
  if (!strcmp(url, "/v1/models") || !strcmp(url, "/health") || !strcmp(url, "/metrics")) {
    if (!get) return send_error(c, 405, "invalid_request_error", NULL, "use GET for %s", url);
    if (url[1] == 'm') return metrics(s, c);
    mk_engine_stats st;
    mk_engine_get_stats(s->e, &st);
    if (url[1] == 'h') {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "status", st.shutting_down ? "shutting_down" : "ok");
      return send_json(c, st.shutting_down ? 503 : 200, o);
    }
    cJSON *o = cJSON_CreateObject(), *d = cJSON_AddArrayToObject(o, "data"), *m = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON_AddStringToObject(m, "id", s->model);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)time(NULL));
    cJSON_AddStringToObject(m, "owned_by", "mkernel");
    cJSON_AddNumberToObject(m, "max_model_len", mk_engine_get_config(s->e)->max_model_len);
    cJSON_AddItemToArray(d, m);
    return send_json(c, 200, o);
  }
  return send_error(c, 404, "invalid_request_error", NULL, "no route %s %s", method, url);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
  conn_ctx *cc = *con_cls;
  (void)cls, (void)c, (void)toe;
  if (cc) free(cc->body), free(cc);
  *con_cls = NULL;
}

mk_status mk_server_start(const mk_server_config *cfg, mk_engine_t *e, const mk_tokenizer_t *tok, mk_server_t **out) {
  *out = NULL;
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)cfg->port)};
  if (cfg->port < 0 || cfg->port > 65535 || inet_pton(AF_INET, cfg->host, &sa.sin_addr) != 1)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_SERVE, "server: bad address %s:%d (an IPv4 address and a port)",
                  cfg->host, cfg->port);
  mk_server_t *s = calloc(1, sizeof *s);
  if (!s || !(s->model = strdup(cfg->model_name))) return free(s), MK_STATUS_OUT_OF_MEMORY;
  s->e = e, s->tok = tok, s->max_body = cfg->max_body;
  atomic_init(&s->next_id, 1);
  s->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL, NULL,
                          handler, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, completed,
                          s, MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->threads_max, MHD_OPTION_CONNECTION_TIMEOUT,
                          (unsigned)60, MHD_OPTION_END);
  if (!s->d) {
    free(s->model), free(s);
    MK_ERR_RETURN(MK_STATUS_SYSTEM_ERROR, MK_SUBSYS_SERVE, "server: cannot listen on %s:%d (in use?)", cfg->host, cfg->port);
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
  s->port = di ? di->port : cfg->port;
  *out = s;
  return MK_STATUS_OK;
}

int mk_server_port(const mk_server_t *s) { return s->port; }

void mk_server_stop(mk_server_t *s) {
  if (!s) return;
  MHD_stop_daemon(s->d);
  free(s->model);
  free(s);
}
