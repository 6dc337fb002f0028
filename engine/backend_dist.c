/* backend_dist.c — one engine over several ranks: rank 0 runs the scheduler and sends each
 * step's plan to the other ranks, which run the same backend calls (collective backends need
 * every rank; the CPU reference just computes the same thing on every rank).
 *
 * Protocol (over the comm's host bootstrap, rank 0 the root of every mk_bootstrap_bcast):
 *   hello    allgather of {vocab, max_slots, max_seq_len}: every rank's backend must agree.
 *   plan     two broadcasts: a header {magic, kind, n_ops, n_seq, n_words}, then (when
 *            n_words > 0) n_words int32: n_ops x {slot, max_tokens (-1 = close)} in the order
 *            rank 0's engine called them, n_seq x {slot, n_tokens, pos, n_pages}, then every
 *            sequence's tokens, then every sequence's pages.
 *            kind STEP: apply the ops, then forward the batch (n_seq may be 0: ops only);
 *            kind IDLE: apply the ops (rank 0 sends one every k_heartbeat_ms while the engine
 *            has nothing to run, so a follower's bounded wait never expires on an idle
 *            server and a dead follower is noticed within that time);
 *            kind STOP: the follower returns MK_STATUS_OK.
 * Opens and closes are queued on rank 0 (the engine calls them under its lock) and go out with
 * the next plan. Failure: a collective that fails (a rank died, a wait ran out: the bootstrap
 * names the rank) breaks the group for good; rank 0's forwards then fail at once and
 * mk_backend_dist_error() says so; a follower returns the error. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/check.h"
#include "engine/engine_internal.h"
#include "engine/mk_engine.h"

enum { PLAN_MAGIC = 0x6d6b706c, KIND_STEP = 1, KIND_IDLE = 2, KIND_STOP = 3 };
enum { k_heartbeat_ms = 250, k_max_words = 1 << 26 };

typedef struct plan_hdr {
  int32_t magic, kind, n_ops, n_seq;
  int64_t n_words;
} plan_hdr;

typedef struct dist_backend {
  mk_bootstrap_t *boot;
  mk_backend_t inner;
  int32_t *ops; /* queued {slot, max_tokens} */
  int n_ops, cap_ops;
  int32_t *words;
  int64_t cap_words;
  int64_t last_ns;
  _Atomic int broken; /* mk_status of the failed collective, 0 while healthy */
} dist_backend;

static mk_status grow(int32_t **p, int64_t *cap, int64_t need) {
  if (need <= *cap) return MK_STATUS_OK;
  int64_t c = *cap ? *cap : 256;
  while (c < need) c *= 2;
  int32_t *q = realloc(*p, sizeof(int32_t) * (size_t)c);
  if (!q) return MK_STATUS_OUT_OF_MEMORY;
  *p = q, *cap = c;
  return MK_STATUS_OK;
}

static mk_status fail_group(dist_backend *d, mk_status st) {
  int zero = 0;
  if (atomic_compare_exchange_strong(&d->broken, &zero, (int)st))
    MK_WARN(MK_SUBSYS_ENGINE, "serve: the plan broadcast to the other ranks failed (%s); this server cannot run "
            "another step", mk_status_str(st));
  return st;
}

/* Rank 0: broadcast header + words. */
static mk_status send_plan(dist_backend *d, int kind, int n_seq, int64_t n_words) {
  mk_status st = atomic_load(&d->broken);
  if (st) return st;
  plan_hdr h = {PLAN_MAGIC, kind, d->n_ops, n_seq, n_words};
  st = mk_bootstrap_bcast(d->boot, &h, sizeof h, 0);
  if (!st && n_words) st = mk_bootstrap_bcast(d->boot, d->words, sizeof(int32_t) * (size_t)n_words, 0);
  d->last_ns = mk_engine_now_ns();
  d->n_ops = 0;
  return st ? fail_group(d, st) : MK_STATUS_OK;
}

static mk_status queue_op(dist_backend *d, int slot, int max_tokens) {
  if (d->n_ops == d->cap_ops) {
    int c = d->cap_ops ? 2 * d->cap_ops : 64;
    int32_t *q = realloc(d->ops, sizeof(int32_t) * 2 * (size_t)c);
    if (!q) return fail_group(d, MK_STATUS_OUT_OF_MEMORY); /* the followers would diverge */
    d->ops = q, d->cap_ops = c;
  }
  d->ops[2 * d->n_ops] = slot, d->ops[2 * d->n_ops + 1] = max_tokens;
  d->n_ops++;
  return MK_STATUS_OK;
}

static mk_status dist_open(void *self, int slot, int max_tokens) {
  dist_backend *d = self;
  MK_CHECK(queue_op(d, slot, max_tokens));
  return d->inner.ops->seq_open(d->inner.self, slot, max_tokens);
}

static void dist_close(void *self, int slot) {
  dist_backend *d = self;
  d->inner.ops->seq_close(d->inner.self, slot);
  queue_op(d, slot, -1);
}

/* The ops go first (closes and opens in call order), then the batch. */
static mk_status pack(dist_backend *d, const mk_batch_seq *seqs, int n, int64_t *n_words) {
  int64_t w = 2 * (int64_t)d->n_ops + 4 * (int64_t)n;
  for (int i = 0; i < n; i++) w += seqs[i].n_tokens + seqs[i].n_pages;
  if (w > k_max_words) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_ENGINE, "serve: a plan of %lld words", (long long)w);
  MK_CHECK(grow(&d->words, &d->cap_words, w));
  int32_t *p = d->words;
  memcpy(p, d->ops, sizeof(int32_t) * 2 * (size_t)d->n_ops);
  p += 2 * d->n_ops;
  for (int i = 0; i < n; i++, p += 4)
    p[0] = seqs[i].slot, p[1] = seqs[i].n_tokens, p[2] = seqs[i].pos, p[3] = seqs[i].n_pages;
  for (int i = 0; i < n; i++) memcpy(p, seqs[i].tokens, sizeof(int32_t) * (size_t)seqs[i].n_tokens), p += seqs[i].n_tokens;
  for (int i = 0; i < n; i++)
    if (seqs[i].n_pages) memcpy(p, seqs[i].pages, sizeof(int32_t) * (size_t)seqs[i].n_pages), p += seqs[i].n_pages;
  *n_words = w;
  return MK_STATUS_OK;
}

static mk_status dist_forward(void *self, const mk_batch_seq *seqs, int n, float *logits) {
  dist_backend *d = self;
  int64_t w = 0;
  MK_CHECK(pack(d, seqs, n, &w));
  MK_CHECK(send_plan(d, KIND_STEP, n, w));
  return d->inner.ops->forward(d->inner.self, seqs, n, logits);
}

static mk_status dist_idle(void *self) {
  dist_backend *d = self;
  if (atomic_load(&d->broken)) return atomic_load(&d->broken);
  if (!d->n_ops && mk_engine_now_ns() - d->last_ns < (int64_t)k_heartbeat_ms * 1000000) return MK_STATUS_OK;
  int64_t w = 0;
  MK_CHECK(pack(d, NULL, 0, &w));
  return send_plan(d, KIND_IDLE, 0, w);
}

static void dist_destroy(void *self) {
  dist_backend *d = self;
  if (!d) return;
  d->n_ops = 0;
  if (!atomic_load(&d->broken)) send_plan(d, KIND_STOP, 0, 0);
  if (d->inner.ops) d->inner.ops->destroy(d->inner.self);
  free(d->ops);
  free(d->words);
  free(d);
}

static const mk_backend_ops k_dist_ops = {"dist", dist_open, dist_close, dist_forward, dist_destroy, dist_idle};

/* Every rank: the backends must agree. */
static mk_status hello(mk_bootstrap_t *b, const mk_backend_t *be, int size) {
  int32_t mine[3] = {be->vocab, be->max_slots, be->max_seq_len};
  int32_t *all = malloc(sizeof mine * (size_t)size);
  if (!all) return MK_STATUS_OUT_OF_MEMORY;
  mk_status st = mk_bootstrap_allgather(b, mine, all, sizeof mine);
  for (int r = 0; st == MK_STATUS_OK && r < size; r++)
    if (memcmp(all + 3 * r, all, sizeof mine)) {
      MK_WARN(MK_SUBSYS_ENGINE, "serve: rank %d's backend has vocab %d, %d slots, %d positions; rank 0's %d, %d, %d "
              "(every rank needs the same model and flags)", r, all[3 * r], all[3 * r + 1], all[3 * r + 2], all[0],
              all[1], all[2]);
      st = MK_STATUS_INVALID_ARGUMENT;
    }
  free(all);
  return st;
}

mk_status mk_backend_dist_create(mk_bootstrap_t *b, int size, mk_backend_t *inner, mk_backend_t *out) {
  const mk_backend_t in = *inner; /* out may be inner */
  memset(out, 0, sizeof *out);
  dist_backend *d = calloc(1, sizeof *d);
  mk_status st = d ? hello(b, &in, size) : MK_STATUS_OUT_OF_MEMORY;
  if (st) {
    free(d);
    in.ops->destroy(in.self);
    return st;
  }
  d->boot = b, d->inner = in, d->last_ns = mk_engine_now_ns();
  *out = (mk_backend_t){.ops = &k_dist_ops, .self = d, .vocab = in.vocab, .max_slots = in.max_slots,
                        .max_seq_len = in.max_seq_len, .logits = in.logits};
  return MK_STATUS_OK;
}

mk_status mk_backend_dist_error(const mk_backend_t *dist) {
  return dist && dist->ops == &k_dist_ops ? (mk_status)atomic_load(&((dist_backend *)dist->self)->broken) : MK_STATUS_OK;
}

/* Follower: check a received plan against the backend and unpack it into seqs. */
static mk_status unpack(const mk_backend_t *be, const plan_hdr *h, const int32_t *w, mk_batch_seq *seqs) {
  const int32_t *p = w + 2 * (int64_t)h->n_ops, *end = w + h->n_words;
  for (int i = 0; i < h->n_ops; i++)
    if (w[2 * i] < 0 || w[2 * i] >= be->max_slots || w[2 * i + 1] < -1 || w[2 * i + 1] > be->max_seq_len)
      MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_ENGINE, "serve: plan op %d: slot %d, %d tokens (of %d slots, %d)",
                    i, w[2 * i], w[2 * i + 1], be->max_slots, be->max_seq_len);
  const int32_t *tok = p + 4 * (int64_t)h->n_seq;
  int64_t nt = 0, np = 0;
  for (int i = 0; i < h->n_seq; i++, p += 4) {
    if (p[0] < 0 || p[0] >= be->max_slots || p[1] < 1 || p[1] > be->max_seq_len || p[2] < 0 || p[3] < 0)
      MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_ENGINE, "serve: plan sequence %d: slot %d, %d tokens at %d, "
                    "%d pages", i, p[0], p[1], p[2], p[3]);
    seqs[i] = (mk_batch_seq){.slot = p[0], .n_tokens = p[1], .pos = p[2], .n_pages = p[3]};
    nt += p[1], np += p[3];
  }
  if (tok + nt + np != end)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_ENGINE, "serve: plan of %lld words holds %lld", (long long)h->n_words,
                  (long long)(tok + nt + np - w));
  const int32_t *pg = tok + nt;
  for (int i = 0; i < h->n_seq; i++) {
    seqs[i].tokens = tok, tok += seqs[i].n_tokens;
    seqs[i].pages = pg, pg += seqs[i].n_pages;
  }
  return MK_STATUS_OK;
}

mk_status mk_backend_follow(mk_bootstrap_t *b, int size, mk_backend_t *be, uint64_t *steps) {
  mk_status st = hello(b, be, size);
  int32_t *w = NULL;
  int64_t cap = 0;
  mk_batch_seq *seqs = calloc((size_t)be->max_slots, sizeof *seqs);
  float *logits = be->logits ? be->logits : malloc(sizeof(float) * (size_t)be->max_slots * be->vocab);
  if (!st && (!seqs || !logits)) st = MK_STATUS_OUT_OF_MEMORY;
  while (st == MK_STATUS_OK) {
    plan_hdr h;
    if ((st = mk_bootstrap_bcast(b, &h, sizeof h, 0))) break;
    if (h.magic != PLAN_MAGIC || h.kind < KIND_STEP || h.kind > KIND_STOP || h.n_ops < 0 || h.n_seq < 0 ||
        h.n_seq > be->max_slots || h.n_words < 2 * (int64_t)h.n_ops + 4 * (int64_t)h.n_seq || h.n_words > k_max_words) {
      MK_WARN(MK_SUBSYS_ENGINE, "serve: malformed plan header from rank 0 (magic %x, kind %d, %d ops, %d sequences, "
              "%lld words)", (unsigned)h.magic, h.kind, h.n_ops, h.n_seq, (long long)h.n_words);
      st = MK_STATUS_INVALID_ARGUMENT;
      break;
    }
    if (h.kind == KIND_STOP) break;
    if ((st = grow(&w, &cap, h.n_words ? h.n_words : 1))) break;
    if (h.n_words && (st = mk_bootstrap_bcast(b, w, sizeof(int32_t) * (size_t)h.n_words, 0))) break;
    if ((st = unpack(be, &h, w, seqs))) break;
    for (int i = 0; i < h.n_ops && st == MK_STATUS_OK; i++) {
      if (w[2 * i + 1] < 0) be->ops->seq_close(be->self, w[2 * i]);
      else st = be->ops->seq_open(be->self, w[2 * i], w[2 * i + 1]);
    }
    if (st == MK_STATUS_OK && h.kind == KIND_STEP && h.n_seq) {
      st = be->ops->forward(be->self, seqs, h.n_seq, logits);
      if (steps) (*steps)++;
    }
  }
  free(w);
  free(seqs);
  if (logits != be->logits) free(logits);
  return st;
}
