/* test_step_host.c (unit, under mk-launch -n 4) — the host side of one serving step at the
 * shape of the GPU serving runs (64 sequences, vocab 151936, greedy, no tokenizer), with a
 * backend that computes nothing (a fake: row i's largest logit is a hash of the sequence's
 * last token and its position, written over a random [64, V] base filled once), so what is
 * left is the host's own work. Checks behaviour, prints times (it never fails on a time):
 *   - mk_sample greedy on 64 rows of random logits = the reference argmax (lowest id on
 *     ties, NaN never chosen); the time per 64 rows;
 *   - a 64 x V fp32 host memcpy (what model_batch's pass added after the logits copy);
 *   - the engine on rank 0 over mk_backend_dist (the other ranks follow over the bootstrap):
 *     64 requests x NEW greedy tokens, every token as the fake predicts; per step: the
 *     forward (plan pack + two broadcasts + the fake's few stores) and the sampling phase
 *     (mk_sample of 64 rows + per-token bookkeeping), from mk_engine_get_stats. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/mk_comm.h"
#include "core/rng.h"
#include "engine/mk_engine.h"
#include "tests/mk_test.h"

enum { V = 151936, S = 64, PROMPT = 16, NEW = 48 };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The fake's next token after token `last` at position `pos`. */
static int32_t next_id(int32_t last, int pos) { return (int32_t)(mk_rng_hash((uint64_t)last, (uint64_t)pos) % V); }

typedef struct fake {
  float *buf;         /* the logits buffer filled with the base */
  int32_t peak[S];    /* per row: where the previous step's peak went (-1 none) */
  float base_at[S];
} fake;

static mk_status fake_open(void *self, int slot, int max_tokens) { return (void)self, (void)slot, (void)max_tokens, MK_STATUS_OK; }
static void fake_close(void *self, int slot) { (void)self, (void)slot; }
static mk_status fake_forward(void *self, const mk_batch_seq *seqs, int n, float *logits) {
  fake *f = self;
  if (f->buf != logits) { /* first call with this buffer: the random base, once */
    for (size_t i = 0; i < (size_t)S * V; i++) logits[i] = mk_rng_uniform(7, i, -1.0f, 2.0f);
    f->buf = logits;
    for (int i = 0; i < S; i++) f->peak[i] = -1;
  }
  for (int i = 0; i < n; i++) {
    float *row = logits + (size_t)i * V;
    if (f->peak[i] >= 0) row[f->peak[i]] = f->base_at[i];
    const int p = seqs[i].pos + seqs[i].n_tokens - 1;
    const int32_t id = next_id(seqs[i].tokens[seqs[i].n_tokens - 1], p);
    f->peak[i] = id, f->base_at[i] = row[id];
    row[id] = 3.0f;
  }
  return MK_STATUS_OK;
}
static void fake_destroy(void *self) { free(self); }
static const mk_backend_ops k_fake = {"fake", fake_open, fake_close, fake_forward, fake_destroy, NULL};

static mk_backend_t fake_backend(void) {
  fake *f = calloc(1, sizeof *f);
  ASSERT_TRUE(f);
  return (mk_backend_t){.ops = &k_fake, .self = f, .vocab = V, .max_slots = S, .max_seq_len = PROMPT + NEW};
}

/* mk_sample greedy on 64 random rows against a plain scan; returns the best ms of 64 rows. */
static double test_sampler(uint64_t seed, float *lg) {
  for (size_t i = 0; i < (size_t)S * V; i++) lg[i] = mk_rng_uniform(seed, i, -8.0f, 16.0f);
  for (int r = 0; r < S; r++) { /* ties (the lowest id wins), NaN (never chosen), -inf */
    float *row = lg + (size_t)r * V;
    const int a = (int)(mk_rng_hash(seed + 1, (uint64_t)r) % V), b = (int)(mk_rng_hash(seed + 2, (uint64_t)r) % V);
    if (r % 4 == 0) row[a] = row[b] = 9.0f;
    if (r % 4 == 1) row[a] = NAN, row[0] = NAN;
    if (r % 4 == 2) row[b] = -INFINITY;
    if (r == 3) for (int i = 0; i < V; i++) row[i] = -1.0f; /* all equal: id 0 */
  }
  mk_sampling_t g = {0.0f, 1.0f, seed};
  for (int r = 0; r < S; r++) {
    const float *row = lg + (size_t)r * V;
    int32_t want = -1;
    for (int i = 0; i < V; i++)
      if (row[i] == row[i] && (want < 0 || row[i] > row[want])) want = i;
    ASSERT_EQ(mk_sample(row, V, &g, 0, NULL), want);
  }
  double best = 1e30;
  volatile int32_t sink = 0;
  for (int k = 0; k < 9; k++) {
    const double t0 = now_s();
    for (int r = 0; r < S; r++) sink += mk_sample(lg + (size_t)r * V, V, &g, 0, NULL);
    best = fmin(best, (now_s() - t0) * 1e3);
  }
  return best;
}

static double time_memcpy(float *dst, const float *src) {
  double best = 1e30;
  for (int k = 0; k < 5; k++) {
    const double t0 = now_s();
    memcpy(dst, src, sizeof(float) * (size_t)S * V);
    best = fmin(best, (now_s() - t0) * 1e3);
  }
  return best;
}

/* Submits S requests of PROMPT random tokens x `new` greedy tokens and checks every token. */
static void wave(mk_engine_t *e, uint64_t seed, int new) {
  mk_request_t *req[S];
  int32_t prompt[S][PROMPT];
  char err[256];
  for (int i = 0; i < S; i++) {
    for (int j = 0; j < PROMPT; j++) prompt[i][j] = (int32_t)(mk_rng_hash(seed + (uint64_t)i, (uint64_t)j) % V);
    mk_request_params p = {.prompt = prompt[i], .n_prompt = PROMPT, .max_tokens = new, .sampling = {0.0f, 1.0f, 0},
                           .ignore_eos = 1};
    if (mk_engine_submit(e, &p, &req[i], err, sizeof err) != MK_ADMIT_OK) MK_TEST_FAIL_("submit: %s", err);
  }
  for (int i = 0; i < S; i++) {
    int32_t last = prompt[i][PROMPT - 1];
    int got = 0;
    for (;;) {
      mk_request_update u;
      mk_request_next(req[i], 200, &u);
      for (int k = 0; k < u.n_ids; k++, got++) {
        const int32_t want = next_id(last, PROMPT - 1 + got);
        if (u.ids[k] != want) MK_TEST_FAIL_("request %d token %d: %d, want %d", i, got, u.ids[k], want);
        last = want;
      }
      if (u.done) {
        ASSERT_STREQ(u.finish_reason, "length");
        break;
      }
    }
    ASSERT_EQ(got, new);
    mk_request_release(req[i]);
  }
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 240);
  mk_world w;
  ASSERT_OK(mk_world_from_env(&w));
  mk_bootstrap_t *b = NULL;
  ASSERT_OK(mk_bootstrap_create(&w, &b));
  mk_backend_t be = fake_backend();
  if (w.rank > 0) { /* follow rank 0's plans */
    uint64_t steps = 0;
    ASSERT_OK(mk_backend_follow(b, w.size, &be, &steps));
    ASSERT_GT(steps, 0);
    be.ops->destroy(be.self);
    mk_bootstrap_destroy(b);
    return 0;
  }
  const uint64_t seed = mk_test_seed();
  float *lg = malloc(sizeof(float) * (size_t)S * V), *cp = malloc(sizeof(float) * (size_t)S * V);
  ASSERT_TRUE(lg && cp);
  const double t_sample = test_sampler(seed, lg);
  memset(cp, 0, sizeof(float) * (size_t)S * V);
  const double t_copy = time_memcpy(cp, lg);
  free(lg), free(cp);

  ASSERT_OK(mk_backend_dist_create(b, w.size, &be, &be));
  mk_engine_config c;
  mk_engine_config_default(&c);
  c.max_batch = S, c.kv_pages = 1024, c.block_size = 16, c.max_model_len = PROMPT + NEW;
  mk_engine_t *e = NULL;
  ASSERT_OK(mk_engine_create(&c, &be, NULL, &e));
  wave(e, seed, 2); /* warm-up: the fakes fill their base logits */
  mk_engine_stats s0, s1;
  mk_engine_get_stats(e, &s0);
  const double t0 = now_s();
  wave(e, seed + 100, NEW);
  const double wall = now_s() - t0;
  mk_engine_get_stats(e, &s1);
  const double steps = (double)(s1.steps - s0.steps);
  ASSERT_GE(s1.steps - s0.steps, NEW);
  ASSERT_UEQ(s1.generation_tokens - s0.generation_tokens, (uint64_t)S * NEW);
  const double fwd = (s1.forward_sum - s0.forward_sum) / steps * 1e3, smp = (s1.sample_sum - s0.sample_sum) / steps * 1e3;
  printf("host per engine step, %d sequences x vocab %d, greedy, %d ranks (this CPU):\n", S, V, w.size);
  printf("  mk_sample, 64 rows (best of 9)               %8.3f ms\n", t_sample);
  printf("  memcpy of the 64 x V fp32 logits (best of 5)   %8.3f ms\n", t_copy);
  printf("  engine sampling phase (mk_sample + tokens)   %8.3f ms  (bookkeeping ~ %.3f ms)\n", smp, smp - t_sample);
  printf("  engine forward: plan pack + broadcast + fake %8.3f ms\n", fwd);
  printf("  wall per step                                %8.3f ms  (%.0f steps)\n", wall / steps * 1e3, steps);
  mk_engine_destroy(e); /* the dist backend tells the followers to stop */
  mk_bootstrap_destroy(b);
  return 0;
}
