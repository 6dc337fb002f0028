/* engine.c — the continuous-batching scheduler. One thread owns the backend, the KV pages
 * and the running set; producers (HTTP handlers) submit requests and consume their output.
 *
 * Protocol (all request state under e->mu; r->cv wakes the request's consumer, e->cv the
 * scheduler):
 *   submit   validate, append to the waiting queue (or refuse: queue full, shutting down);
 *            the request has two references, the engine's and the consumer's.
 *   step     drop cancelled / expired requests; admit from the head of the queue while a
 *            batch slot is free and the KV budget can reserve prompt + max_tokens; build one
 *            batch (whole prompt for new sequences, the last token for the others), hand out
 *            the pages it needs, run it with the lock released, sample, detokenise, check the
 *            stop conditions, wake the consumers.
 *   release  the consumer's reference; a request still running is cancelled (client gone)
 *            and its slot and pages are freed at the next step. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/check.h"
#include "engine/engine_internal.h"
#include "engine/mk_engine.h"

enum { R_WAITING, R_RUNNING, R_DONE };
enum { FIN_LENGTH, FIN_STOP, FIN_TIMEOUT, FIN_ABORT, FIN_ERROR, FIN_REJECTED };
static const char *const k_fin[] = {"length", "stop", "timeout", "abort", "error"};

struct mk_request {
  mk_engine_t *e;
  pthread_cond_t cv;
  int refs, state, cancelled, fin, slot;
  int32_t *prompt, *stop_ids;
  int n_prompt, n_stop_ids, max_tokens, ignore_eos;
  char **stop;
  int n_stop, max_stop;
  mk_sampling_t samp;
  int64_t t_submit, deadline, t_last;
  double first_token_s;
  int32_t *pages;
  int n_pages, reserved, pos;
  int32_t *out;
  int n_out;
  mk_text_t text;
  int read_ids;
  size_t read_text;
  int32_t *snap_ids;
  char *snap_text;
  struct mk_request *next;
};

struct mk_engine {
  mk_engine_config cfg;
  mk_backend_t be;
  const mk_tokenizer_t *tok;
  mk_kv_pages_t *kv;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
  int started, quit, shutting_down;
  mk_request_t *wait_head, *wait_tail;
  int n_waiting;
  mk_request_t **running; /* [max_batch] by slot, NULL = free */
  int n_running;
  mk_batch_seq *batch;
  mk_request_t **batch_req;
  float *logits, *scratch;
  int own_logits; /* logits is ours (malloc), not the backend's */
  int32_t *eos;
  mk_engine_stats st;
};

static const double k_bounds[15] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                    0.5,   1,      2.5,   5,    10,    30,   60};
const double *mk_engine_hist_bounds(int *n) {
  *n = 15;
  return k_bounds;
}
static void hist_add(uint64_t *counts, uint64_t *n, double *sum, double v) {
  int i = 0;
  while (i < 15 && v > k_bounds[i]) i++;
  counts[i]++, (*n)++, *sum += v;
}

int64_t mk_engine_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, int ms) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (long)(ms % 1000) * 1000000;
  if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
  pthread_cond_timedwait(cv, mu, &ts);
}

static void cond_init(pthread_cond_t *cv) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(cv, &a);
  pthread_condattr_destroy(&a);
}

void mk_engine_config_default(mk_engine_config *c) {
  *c = (mk_engine_config){.kv_pages = 1024, .block_size = 16, .max_batch = 16, .max_waiting = 256,
                          .max_model_len = 2048};
}

static void req_free(mk_request_t *r) {
  free(r->prompt), free(r->stop_ids), free(r->pages), free(r->out), free(r->snap_ids), free(r->snap_text);
  for (int i = 0; i < r->n_stop; i++) free(r->stop[i]);
  free(r->stop);
  mk_text_free(&r->text);
  pthread_cond_destroy(&r->cv);
  free(r);
}

static void req_unref(mk_request_t *r) {
  if (--r->refs == 0) req_free(r);
}

/* Under e->mu: end a request (running or waiting, already unlinked from the queue). */
static void finish(mk_engine_t *e, mk_request_t *r, int fin) {
  if (r->state == R_RUNNING) {
    e->be.ops->seq_close(e->be.self, r->slot);
    e->running[r->slot] = NULL;
    e->n_running--;
    mk_kv_pages_free(e->kv, r->pages, r->n_pages);
    mk_kv_pages_unreserve(e->kv, r->reserved);
    r->n_pages = r->reserved = 0;
  }
  r->state = R_DONE;
  r->fin = fin;
  mk_text_finish(&r->text);
  e->st.finished[fin]++;
  pthread_cond_broadcast(&r->cv);
  req_unref(r);
}

static void expire(mk_engine_t *e, int64_t now) {
  for (int s = 0; s < e->cfg.max_batch; s++) {
    mk_request_t *r = e->running[s];
    if (r && (r->cancelled || e->quit)) finish(e, r, FIN_ABORT);
    else if (r && r->deadline && now >= r->deadline) finish(e, r, FIN_TIMEOUT);
  }
  mk_request_t **pp = &e->wait_head, *prev = NULL;
  while (*pp) {
    mk_request_t *r = *pp;
    int fin = r->cancelled || e->quit ? FIN_ABORT : r->deadline && now >= r->deadline ? FIN_TIMEOUT : -1;
    if (fin < 0) {
      prev = r, pp = &r->next;
      continue;
    }
    *pp = r->next;
    if (e->wait_tail == r) e->wait_tail = prev;
    e->n_waiting--;
    finish(e, r, fin);
  }
}

static void admit(mk_engine_t *e) {
  while (e->wait_head && e->n_running < e->cfg.max_batch) {
    mk_request_t *r = e->wait_head;
    int need = mk_kv_pages_for(e->kv, (int64_t)r->n_prompt + r->max_tokens);
    if (mk_kv_pages_reserve(e->kv, need) != MK_STATUS_OK) break; /* FIFO: wait for pages */
    int slot = 0;
    while (e->running[slot]) slot++;
    e->wait_head = r->next;
    if (!e->wait_head) e->wait_tail = NULL;
    e->n_waiting--;
    r->next = NULL;
    r->reserved = need;
    r->pages = malloc(sizeof(int32_t) * (size_t)need);
    mk_status st = r->pages ? e->be.ops->seq_open(e->be.self, slot, r->n_prompt + r->max_tokens)
                            : MK_STATUS_OUT_OF_MEMORY;
    r->state = R_RUNNING, r->slot = slot;
    e->running[slot] = r;
    e->n_running++;
    if (st) {
      MK_WARN(MK_SUBSYS_ENGINE, "engine: cannot open a sequence: %s", mk_status_str(st));
      finish(e, r, FIN_ERROR);
    }
  }
}

static int is_stop_id(const mk_engine_t *e, const mk_request_t *r, int32_t id) {
  for (int i = 0; i < r->n_stop_ids; i++)
    if (r->stop_ids[i] == id) return 1;
  if (!r->ignore_eos)
    for (int i = 0; i < e->cfg.n_eos; i++)
      if (e->eos[i] == id) return 1;
  return 0;
}

/* Under e->mu: one sampled token of a running request. */
static void accept_token(mk_engine_t *e, mk_request_t *r, int32_t id, int64_t now) {
  r->out[r->n_out++] = id;
  e->st.generation_tokens++;
  double dt = (double)(now - (r->n_out == 1 ? r->t_submit : r->t_last)) * 1e-9;
  if (r->n_out == 1) {
    r->first_token_s = dt;
    hist_add(e->st.ttft_count, &e->st.ttft_n, &e->st.ttft_sum, dt);
  } else {
    hist_add(e->st.itl_count, &e->st.itl_n, &e->st.itl_sum, dt);
  }
  r->t_last = now;
  int fin = -1;
  if (is_stop_id(e, r, id)) fin = FIN_STOP;
  else if (e->tok && mk_text_add(&r->text, e->tok, id, (const char *const *)r->stop, r->n_stop, r->max_stop))
    fin = FIN_STOP;
  if (fin < 0 && r->n_out >= r->max_tokens) fin = FIN_LENGTH;
  if (fin >= 0) finish(e, r, fin);
  else pthread_cond_broadcast(&r->cv);
}

static void *engine_main(void *arg) {
  mk_engine_t *e = arg;
  pthread_mutex_lock(&e->mu);
  while (!e->quit) {
    expire(e, mk_engine_now_ns());
    admit(e);
    if (e->n_running == 0) {
      cond_wait_ms(&e->cv, &e->mu, 50);
      if (e->be.ops->idle && !e->quit) {
        pthread_mutex_unlock(&e->mu);
        e->be.ops->idle(e->be.self); /* a failure is the backend's to report */
        pthread_mutex_lock(&e->mu);
      }
      continue;
    }
    int n = 0;
    mk_status st = MK_STATUS_OK;
    for (int s = 0; s < e->cfg.max_batch; s++) {
      mk_request_t *r = e->running[s];
      if (!r) continue;
      mk_batch_seq *q = &e->batch[n];
      q->slot = s, q->pos = r->pos;
      q->tokens = r->pos == 0 ? r->prompt : &r->out[r->n_out - 1];
      q->n_tokens = r->pos == 0 ? r->n_prompt : 1;
      int need = mk_kv_pages_for(e->kv, (int64_t)r->pos + q->n_tokens);
      while (r->n_pages < need && st == MK_STATUS_OK) {
        st = mk_kv_pages_alloc(e->kv, &r->pages[r->n_pages]);
        if (st == MK_STATUS_OK) r->n_pages++, r->reserved--;
      }
      q->pages = r->pages, q->n_pages = r->n_pages;
      e->batch_req[n++] = r;
    }
    pthread_mutex_unlock(&e->mu);
    if (e->cfg.step_delay_ms > 0) {
      struct timespec ts = {e->cfg.step_delay_ms / 1000, (long)(e->cfg.step_delay_ms % 1000) * 1000000};
      nanosleep(&ts, NULL);
    }
    const int64_t t_fwd = mk_engine_now_ns();
    if (st == MK_STATUS_OK) st = e->be.ops->forward(e->be.self, e->batch, n, e->logits);
    pthread_mutex_lock(&e->mu);
    int64_t now = mk_engine_now_ns();
    e->st.steps++;
    hist_add(e->st.forward_count, &e->st.forward_n, &e->st.forward_sum, (double)(now - t_fwd) * 1e-9);
    for (int i = 0; i < n; i++) {
      mk_request_t *r = e->batch_req[i];
      if (st) {
        finish(e, r, FIN_ERROR);
        continue;
      }
      if (r->pos == 0) e->st.prompt_tokens += (uint64_t)r->n_prompt;
      r->pos += e->batch[i].n_tokens;
      int32_t id = mk_sample(e->logits + (size_t)i * e->be.vocab, e->be.vocab, &r->samp, (uint64_t)r->n_out, e->scratch);
      accept_token(e, r, id, now);
    }
    e->st.sample_sum += (double)(mk_engine_now_ns() - now) * 1e-9; /* sampling and token bookkeeping */
    if (st) MK_WARN(MK_SUBSYS_ENGINE, "engine: step failed (%s); its requests end with an error", mk_status_str(st));
  }
  expire(e, mk_engine_now_ns()); /* quit: abort everything */
  pthread_mutex_unlock(&e->mu);
  return NULL;
}

mk_status mk_engine_create(const mk_engine_config *c, mk_backend_t *be, const mk_tokenizer_t *tok, mk_engine_t **out) {
  *out = NULL;
  mk_engine_t *e = calloc(1, sizeof *e);
  mk_status st = MK_STATUS_OK;
  if (!e) {
    be->ops->destroy(be->self);
    return MK_STATUS_OUT_OF_MEMORY;
  }
  e->be = *be;
  e->cfg = *c;
  e->tok = tok;
  pthread_mutex_init(&e->mu, NULL);
  cond_init(&e->cv);
  if (c->max_batch < 1 || c->max_batch > be->max_slots || c->max_waiting < 0 || c->max_model_len < 2 ||
      c->max_model_len > be->max_seq_len || c->request_timeout_ms < 0 || c->n_eos < 0) {
    MK_WARN(MK_SUBSYS_ENGINE, "engine: bad configuration: max_batch %d (backend slots %d), max_waiting %d, "
            "max_model_len %d (backend %d), timeout %lld ms", c->max_batch, be->max_slots, c->max_waiting,
            c->max_model_len, be->max_seq_len, (long long)c->request_timeout_ms);
    st = MK_STATUS_INVALID_ARGUMENT;
    goto fail;
  }
  MK_CHECK_GOTO(mk_kv_pages_create(c->kv_pages, c->block_size, &e->kv), st, fail);
  e->running = calloc((size_t)c->max_batch, sizeof *e->running);
  e->batch = calloc((size_t)c->max_batch, sizeof *e->batch);
  e->batch_req = calloc((size_t)c->max_batch, sizeof *e->batch_req);
  e->own_logits = !be->logits;
  e->logits = be->logits ? be->logits : malloc(sizeof(float) * (size_t)c->max_batch * be->vocab);
  e->scratch = malloc(sizeof(float) * 2 * (size_t)be->vocab);
  e->eos = malloc(sizeof(int32_t) * (size_t)(c->n_eos + 1));
  if (!e->running || !e->batch || !e->batch_req || !e->logits || !e->scratch || !e->eos) {
    st = MK_STATUS_OUT_OF_MEMORY;
    goto fail;
  }
  if (c->n_eos) memcpy(e->eos, c->eos_ids, sizeof(int32_t) * (size_t)c->n_eos);
  e->cfg.eos_ids = e->eos;
  if (pthread_create(&e->thread, NULL, engine_main, e) != 0) {
    st = MK_STATUS_SYSTEM_ERROR;
    goto fail;
  }
  e->started = 1;
  *out = e;
  return MK_STATUS_OK;
fail:
  mk_engine_destroy(e);
  return st;
}

void mk_engine_shutdown(mk_engine_t *e, int abort) {
  pthread_mutex_lock(&e->mu);
  e->shutting_down = 1;
  if (abort) {
    for (int s = 0; s < e->cfg.max_batch; s++)
      if (e->running[s]) e->running[s]->cancelled = 1;
    for (mk_request_t *r = e->wait_head; r; r = r->next) r->cancelled = 1;
  }
  pthread_cond_signal(&e->cv);
  pthread_mutex_unlock(&e->mu);
}

void mk_engine_destroy(mk_engine_t *e) {
  if (!e) return;
  if (e->started) {
    pthread_mutex_lock(&e->mu);
    e->quit = 1;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->thread, NULL);
  }
  if (e->own_logits) free(e->logits);
  if (e->be.ops) e->be.ops->destroy(e->be.self);
  mk_kv_pages_destroy(e->kv);
  free(e->running), free(e->batch), free(e->batch_req), free(e->scratch), free(e->eos);
  pthread_cond_destroy(&e->cv);
  pthread_mutex_destroy(&e->mu);
  free(e);
}

const mk_engine_config *mk_engine_get_config(const mk_engine_t *e) { return &e->cfg; }
int mk_engine_vocab(const mk_engine_t *e) { return e->be.vocab; }

static mk_admit reject(mk_engine_t *e, mk_admit why, char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  pthread_mutex_lock(&e->mu);
  e->st.finished[FIN_REJECTED]++;
  pthread_mutex_unlock(&e->mu);
  return why;
}

mk_admit mk_engine_submit(mk_engine_t *e, const mk_request_params *p, mk_request_t **out, char *err, size_t errlen) {
  *out = NULL;
  int V = e->be.vocab;
  if (p->n_prompt < 1) return reject(e, MK_ADMIT_INVALID, err, errlen, "the prompt is empty");
  for (int i = 0; i < p->n_prompt; i++)
    if (p->prompt[i] < 0 || p->prompt[i] >= V)
      return reject(e, MK_ADMIT_INVALID, err, errlen, "prompt token %d (id %d) is outside the vocabulary [0, %d)", i,
                    (int)p->prompt[i], V);
  for (int i = 0; i < p->n_stop_ids; i++)
    if (p->stop_ids[i] < 0 || p->stop_ids[i] >= V)
      return reject(e, MK_ADMIT_INVALID, err, errlen, "stop token id %d is outside the vocabulary [0, %d)",
                    (int)p->stop_ids[i], V);
  if (p->max_tokens < 1) return reject(e, MK_ADMIT_INVALID, err, errlen, "max_tokens must be at least 1, got %d", p->max_tokens);
  if ((int64_t)p->n_prompt + p->max_tokens > e->cfg.max_model_len)
    return reject(e, MK_ADMIT_INVALID, err, errlen,
                  "this model's maximum context length is %d tokens; the request asks for %lld (%d in the prompt, "
                  "%d to generate)", e->cfg.max_model_len, (long long)p->n_prompt + p->max_tokens, p->n_prompt,
                  p->max_tokens);
  int need = mk_kv_pages_for(e->kv, (int64_t)p->n_prompt + p->max_tokens);
  if (need > e->cfg.kv_pages)
    return reject(e, MK_ADMIT_INVALID, err, errlen, "the request needs %d KV pages; the whole budget is %d", need,
                  e->cfg.kv_pages);
  if (!(p->sampling.temperature >= 0.0f) || !(p->sampling.top_p > 0.0f && p->sampling.top_p <= 1.0f))
    return reject(e, MK_ADMIT_INVALID, err, errlen, "temperature must be >= 0 and top_p in (0, 1]");
  if (p->n_stop && !e->tok)
    return reject(e, MK_ADMIT_INVALID, err, errlen, "stop strings need a tokenizer; this model has none (use stop token ids)");
  mk_request_t *r = calloc(1, sizeof *r);
  int ok = r != NULL;
  if (ok) {
    r->prompt = malloc(sizeof(int32_t) * (size_t)p->n_prompt);
    r->out = malloc(sizeof(int32_t) * (size_t)p->max_tokens);
    r->snap_ids = malloc(sizeof(int32_t) * (size_t)p->max_tokens);
    r->stop_ids = malloc(sizeof(int32_t) * (size_t)(p->n_stop_ids + 1));
    r->stop = calloc((size_t)p->n_stop + 1, sizeof(char *));
    ok = r->prompt && r->out && r->snap_ids && r->stop_ids && r->stop;
    for (int i = 0; ok && i < p->n_stop; i++) {
      ok = (r->stop[i] = strdup(p->stop[i])) != NULL;
      r->n_stop = i + 1;
      int len = (int)strlen(p->stop[i]);
      if (len > r->max_stop) r->max_stop = len;
    }
  }
  if (!ok) {
    if (r) {
      cond_init(&r->cv);
      req_free(r);
    }
    return reject(e, MK_ADMIT_INVALID, err, errlen, "out of host memory");
  }
  memcpy(r->prompt, p->prompt, sizeof(int32_t) * (size_t)p->n_prompt);
  if (p->n_stop_ids) memcpy(r->stop_ids, p->stop_ids, sizeof(int32_t) * (size_t)p->n_stop_ids);
  r->n_prompt = p->n_prompt, r->n_stop_ids = p->n_stop_ids, r->max_tokens = p->max_tokens;
  r->ignore_eos = p->ignore_eos, r->samp = p->sampling;
  r->e = e, r->refs = 2, r->state = R_WAITING, r->first_token_s = -1;
  cond_init(&r->cv);
  r->t_submit = mk_engine_now_ns();
  r->deadline = e->cfg.request_timeout_ms ? r->t_submit + e->cfg.request_timeout_ms * 1000000 : 0;
  pthread_mutex_lock(&e->mu);
  mk_admit why = e->shutting_down ? MK_ADMIT_SHUTTING_DOWN : e->n_waiting >= e->cfg.max_waiting ? MK_ADMIT_QUEUE_FULL : MK_ADMIT_OK;
  if (why == MK_ADMIT_OK) {
    if (e->wait_tail) e->wait_tail->next = r;
    else e->wait_head = r;
    e->wait_tail = r;
    e->n_waiting++;
    pthread_cond_signal(&e->cv);
  }
  pthread_mutex_unlock(&e->mu);
  if (why != MK_ADMIT_OK) {
    req_free(r);
    return reject(e, why, err, errlen, why == MK_ADMIT_QUEUE_FULL ? "the queue is full (%d requests waiting)" : "the server is shutting down",
                  e->cfg.max_waiting);
  }
  *out = r;
  return MK_ADMIT_OK;
}

void mk_request_next(mk_request_t *r, int wait_ms, mk_request_update *u) {
  mk_engine_t *e = r->e;
  pthread_mutex_lock(&e->mu);
  if (wait_ms > 0 && r->state != R_DONE && r->n_out == r->read_ids && r->text.emit == r->read_text)
    cond_wait_ms(&r->cv, &e->mu, wait_ms);
  memset(u, 0, sizeof *u);
  u->n_ids = r->n_out - r->read_ids;
  memcpy(r->snap_ids, r->out + r->read_ids, sizeof(int32_t) * (size_t)u->n_ids);
  u->ids = r->snap_ids;
  r->read_ids = r->n_out;
  size_t tl = r->text.emit - r->read_text;
  free(r->snap_text);
  r->snap_text = malloc(tl + 1);
  if (r->snap_text) {
    memcpy(r->snap_text, r->text.buf + r->read_text, tl);
    r->snap_text[tl] = 0;
    u->text = r->snap_text, u->text_len = tl;
    r->read_text = r->text.emit;
  }
  u->done = r->state == R_DONE && r->read_text == r->text.emit;
  u->finish_reason = r->state == R_DONE ? k_fin[r->fin] : NULL;
  u->prompt_tokens = r->n_prompt, u->completion_tokens = r->n_out;
  u->first_token_s = r->first_token_s;
  pthread_mutex_unlock(&e->mu);
}

void mk_request_release(mk_request_t *r) {
  if (!r) return;
  mk_engine_t *e = r->e;
  pthread_mutex_lock(&e->mu);
  if (r->state != R_DONE) {
    r->cancelled = 1;
    pthread_cond_signal(&e->cv);
  }
  req_unref(r);
  pthread_mutex_unlock(&e->mu);
}

void mk_engine_get_stats(mk_engine_t *e, mk_engine_stats *out) {
  pthread_mutex_lock(&e->mu);
  *out = e->st;
  out->running = e->n_running, out->waiting = e->n_waiting, out->shutting_down = e->shutting_down;
  mk_kv_pages_stats(e->kv, &out->kv);
  pthread_mutex_unlock(&e->mu);
}
