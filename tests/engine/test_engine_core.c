/* test_engine_core.c — the serving core without HTTP, on a tiny random model:
 *  - KV pages: reservations bound allocation, frees return pages, never past the budget;
 *  - sampler: greedy is argmax; a seed gives the same draws; top_p -> 0 is greedy; the
 *    draws follow softmax(logits / T) (two-token case, 4000 draws, 5 sigma);
 *  - engine: 12 requests submitted at once with a KV budget that holds 3 of them (so they
 *    queue) give exactly the tokens of sequential greedy mk_ref_generate; the queue bound
 *    gives QUEUE_FULL; bad requests give INVALID; a released request is cancelled and its
 *    pages come back; a request past its timeout ends with "timeout". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/mk_engine.h"
#include "models/mk_models.h"
#include "tests/mk_test.h"

enum { NREQ = 12, NEW = 9 };

static void test_kv(void) {
  mk_kv_pages_t *p;
  ASSERT_STATUS(mk_kv_pages_create(0, 4, &p), MK_STATUS_INVALID_ARGUMENT);
  ASSERT_OK(mk_kv_pages_create(10, 4, &p));
  ASSERT_EQ(mk_kv_pages_for(p, 0), 0);
  ASSERT_EQ(mk_kv_pages_for(p, 4), 1);
  ASSERT_EQ(mk_kv_pages_for(p, 5), 2);
  ASSERT_OK(mk_kv_pages_reserve(p, 6));
  ASSERT_STATUS(mk_kv_pages_reserve(p, 5), MK_STATUS_OUT_OF_MEMORY);
  int32_t pg[10];
  for (int i = 0; i < 6; i++) ASSERT_OK(mk_kv_pages_alloc(p, &pg[i]));
  ASSERT_STATUS(mk_kv_pages_alloc(p, &pg[6]), MK_STATUS_INTERNAL);
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < i; j++) ASSERT_NE(pg[i], pg[j]);
  mk_kv_stats s;
  mk_kv_pages_stats(p, &s);
  ASSERT_EQ(s.used, 6);
  ASSERT_EQ(s.reserved, 0);
  ASSERT_OK(mk_kv_pages_reserve(p, 4));
  ASSERT_STATUS(mk_kv_pages_reserve(p, 1), MK_STATUS_OUT_OF_MEMORY);
  mk_kv_pages_free(p, pg, 6);
  mk_kv_pages_unreserve(p, 4);
  mk_kv_pages_stats(p, &s);
  ASSERT_EQ(s.used, 0);
  ASSERT_EQ(s.reserved, 0);
  ASSERT_OK(mk_kv_pages_reserve(p, 10));
  mk_kv_pages_destroy(p);
  mk_kv_pages_destroy(NULL);
}

static void test_sampler(uint64_t seed) {
  enum { V = 50 };
  float lg[V], scratch[2 * V];
  for (int i = 0; i < V; i++) lg[i] = sinf((float)(i + seed % 97));
  int am = 0;
  for (int i = 1; i < V; i++)
    if (lg[i] > lg[am]) am = i;
  mk_sampling_t g = {0.0f, 1.0f, seed};
  ASSERT_EQ(mk_sample(lg, V, &g, 0, scratch), am);
  mk_sampling_t t = {0.8f, 0.9f, seed};
  for (uint64_t k = 0; k < 20; k++) ASSERT_EQ(mk_sample(lg, V, &t, k, scratch), mk_sample(lg, V, &t, k, scratch));
  mk_sampling_t tp = {1.0f, 1e-6f, seed};
  ASSERT_EQ(mk_sample(lg, V, &tp, 3, scratch), am);
  float two[2] = {0.0f, logf(3.0f)};
  int ones = 0, n = 4000;
  mk_sampling_t s1 = {1.0f, 1.0f, seed};
  for (int k = 0; k < n; k++) ones += mk_sample(two, 2, &s1, (uint64_t)k, scratch) == 1;
  double sd = sqrt(n * 0.75 * 0.25);
  if (fabs(ones - 0.75 * n) > 5 * sd) MK_TEST_FAIL_("P(token 1) = %d/%d, want 0.75", ones, n);
}

static mk_engine_t *make_engine(mk_model_t *m, int kv_pages, int max_waiting, int64_t timeout_ms, int delay_ms) {
  mk_backend_t be;
  ASSERT_OK(mk_backend_cpu_create(m, 4, 64, &be));
  mk_engine_config c;
  mk_engine_config_default(&c);
  c.kv_pages = kv_pages, c.block_size = 4, c.max_batch = 4, c.max_waiting = max_waiting, c.max_model_len = 64;
  c.request_timeout_ms = timeout_ms, c.step_delay_ms = delay_ms;
  mk_engine_t *e;
  ASSERT_OK(mk_engine_create(&c, &be, NULL, &e));
  return e;
}

static void wait_done(mk_request_t *r, int32_t *ids, int *n, const char **fin) {
  *n = 0;
  for (int it = 0; it < 3000; it++) {
    mk_request_update u;
    mk_request_next(r, 100, &u);
    memcpy(ids + *n, u.ids, sizeof(int32_t) * (size_t)u.n_ids);
    *n += u.n_ids;
    if (u.done) {
      *fin = u.finish_reason;
      return;
    }
  }
  MK_TEST_FAIL_("request never finished");
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 100);
  uint64_t seed = mk_test_seed();
  test_kv();
  test_sampler(seed);
  char dir[] = "/tmp/mk_test_engine_XXXXXX";
  ASSERT_TRUE(mkdtemp(dir) != NULL);
  mk_gen_params gp;
  mk_gen_params_default(MK_FAMILY_QWEN3_MOE, &gp);
  gp.seed = seed;
  ASSERT_OK(mk_model_gen(&gp, dir));
  mk_model_t *m;
  ASSERT_OK(mk_model_open(dir, &m));
  int V = mk_model_config(m)->vocab;
  /* sequential greedy reference */
  int32_t prompts[NREQ][8], want[NREQ][NEW];
  int plen[NREQ];
  mk_ref_t *ref;
  ASSERT_OK(mk_ref_create(m, 64, &ref));
  for (int i = 0; i < NREQ; i++) {
    plen[i] = 1 + i % 7;
    for (int k = 0; k < plen[i]; k++) prompts[i][k] = (int32_t)((seed + 31u * i + 7u * k) % (uint64_t)V);
    ASSERT_OK(mk_ref_generate(ref, prompts[i], plen[i], NEW, want[i], NULL));
  }
  mk_ref_destroy(ref);
  /* 3 requests' worth of pages (<= 4 + 8 = ... 5 pages each at block 4): they queue */
  mk_engine_t *e = make_engine(m, 15, NREQ, 0, 0);
  mk_request_t *req[NREQ];
  char err[256];
  for (int i = 0; i < NREQ; i++) {
    mk_request_params p = {.prompt = prompts[i], .n_prompt = plen[i], .max_tokens = NEW, .sampling = {0, 1, 0}};
    ASSERT_EQ(mk_engine_submit(e, &p, &req[i], err, sizeof err), MK_ADMIT_OK);
  }
  mk_engine_stats st;
  mk_engine_get_stats(e, &st);
  ASSERT_LE(st.kv.used + st.kv.reserved, 15);
  for (int i = 0; i < NREQ; i++) {
    int32_t got[NEW + 4];
    int n;
    const char *fin;
    wait_done(req[i], got, &n, &fin);
    ASSERT_STREQ(fin, "length");
    ASSERT_EQ(n, NEW);
    for (int k = 0; k < NEW; k++)
      if (got[k] != want[i][k]) MK_TEST_FAIL_("request %d token %d: %d, sequential greedy %d", i, k, got[k], want[i][k]);
    mk_request_release(req[i]);
  }
  mk_engine_get_stats(e, &st);
  ASSERT_EQ(st.kv.used, 0);
  ASSERT_EQ(st.kv.reserved, 0);
  ASSERT_EQ(st.finished[0], NREQ);
  ASSERT_EQ(st.generation_tokens, NREQ * NEW);
  ASSERT_EQ(st.ttft_n, NREQ);
  /* bad requests */
  int32_t bad[2] = {1, V};
  mk_request_t *r;
  mk_request_params p = {.prompt = bad, .n_prompt = 2, .max_tokens = 4, .sampling = {0, 1, 0}};
  ASSERT_EQ(mk_engine_submit(e, &p, &r, err, sizeof err), MK_ADMIT_INVALID);
  ASSERT_TRUE(strstr(err, "outside the vocabulary") != NULL);
  p.n_prompt = 1, p.max_tokens = 0;
  ASSERT_EQ(mk_engine_submit(e, &p, &r, err, sizeof err), MK_ADMIT_INVALID);
  p.max_tokens = 64;
  ASSERT_EQ(mk_engine_submit(e, &p, &r, err, sizeof err), MK_ADMIT_INVALID);
  ASSERT_TRUE(strstr(err, "maximum context length") != NULL);
  mk_engine_shutdown(e, 0);
  p.max_tokens = 4;
  ASSERT_EQ(mk_engine_submit(e, &p, &r, err, sizeof err), MK_ADMIT_SHUTTING_DOWN);
  mk_engine_destroy(e);
  /* cancel, queue full, timeout: slow steps */
  e = make_engine(m, 100, 1, 300, 20);
  p = (mk_request_params){.prompt = prompts[3], .n_prompt = 3, .max_tokens = 60, .sampling = {0.7f, 0.9f, 5}};
  mk_request_t *run[5];
  for (int i = 0; i < 4; i++) {
    if (mk_engine_submit(e, &p, &run[i], err, sizeof err) != MK_ADMIT_OK) MK_TEST_FAIL_("submit: %s", err);
    for (int it = 0; it < 100; it++) { /* wait until it runs */
      mk_engine_get_stats(e, &st);
      if (st.running == i + 1) break;
      usleep(5000);
    }
  }
  ASSERT_EQ(st.running, 4);
  ASSERT_EQ(mk_engine_submit(e, &p, &run[4], err, sizeof err), MK_ADMIT_OK); /* waits */
  ASSERT_EQ(mk_engine_submit(e, &p, &r, err, sizeof err), MK_ADMIT_QUEUE_FULL);
  mk_request_release(run[0]); /* client gone */
  int32_t got[64];
  int n;
  const char *fin;
  wait_done(run[1], got, &n, &fin);
  ASSERT_STREQ(fin, "timeout");
  ASSERT_LT(n, 60);
  for (int i = 1; i < 5; i++) mk_request_release(run[i]);
  for (int it = 0; it < 200; it++) {
    mk_engine_get_stats(e, &st);
    if (st.running == 0 && st.waiting == 0) break;
    usleep(10000);
  }
  ASSERT_EQ(st.running + st.waiting, 0);
  ASSERT_EQ(st.kv.used, 0);
  ASSERT_EQ(st.kv.reserved, 0);
  ASSERT_GE(st.finished[3], 1); /* abort */
  mk_engine_destroy(e);
  mk_engine_destroy(NULL);
  mk_model_close(m);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  ASSERT_EQ(system(cmd), 0);
  printf("ok\n");
  return 0;
}
