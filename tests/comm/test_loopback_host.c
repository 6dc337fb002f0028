/* test_loopback_host.c (unit) — the loopback transport on host memory: 4 ranks (threads),
 * each with its own heap, FIFO and proxy, exchange all-pairs PUT_SIGNAL for 500 rounds
 * (double-buffered, every element checked); SIGNAL and FENCE commands; a bad command (rank,
 * offset) stops the proxy with an error status and reaches the error callback. */
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "comm/proxy.h"
#include "core/rng.h"
#include "tests/mk_test.h"

enum { R = 4, ELEMS = 1024, ROUNDS = 500 };
/* heap layout (per rank): staging[2][R][ELEMS] u32 | recv[2][R][ELEMS] u32 | sig[R] u64 | extra u64 */
#define STAGE(par, d) ((((uint64_t)(par) * R + (d)) * ELEMS) * 4)
#define RECV(par, s) (2ull * R * ELEMS * 4 + (((uint64_t)(par) * R + (s)) * ELEMS) * 4)
#define SIGOFF(s) (4ull * R * ELEMS * 4 + (uint64_t)(s) * 8)
#define EXTRA (SIGOFF(R))
#define HEAP (EXTRA + 64)

static char *g_heaps[R];
static mk_fifo *g_fifo[R];
static uint64_t g_seed;

static uint32_t pattern(int src, int dst, int round, int i) {
  return (uint32_t)(g_seed * 2654435761u) ^ (uint32_t)(src * 0x1000193 + dst * 0x9e3779b1 + round * 131 + i);
}

static void *rank_main(void *arg) {
  const int me = (int)(uintptr_t)arg;
  char *h = g_heaps[me];
  for (int round = 1; round <= ROUNDS; round++) {
    const int par = round & 1;
    for (int d = 0; d < R; d++) {
      if (d == me) continue;
      uint32_t *s = (uint32_t *)(h + STAGE(par, d));
      for (int i = 0; i < ELEMS; i++) s[i] = pattern(me, d, round, i);
      mk_fifo_cmd c = {MK_CMD_PUT_SIGNAL, d, STAGE(par, d), RECV(par, me), ELEMS * 4, SIGOFF(me), 1, 0, 0};
      ASSERT_OK(mk_fifo_host_post(g_fifo[me], &c, 10000));
    }
    for (int s = 0; s < R; s++) {
      if (s == me) continue;
      const uint64_t *sig = (const uint64_t *)(h + SIGOFF(s));
      time_t t0 = time(NULL);
      while (__atomic_load_n(sig, __ATOMIC_ACQUIRE) < (uint64_t)round) {
        if (time(NULL) - t0 > 20) MK_TEST_FAIL_("rank %d: no signal from %d in round %d", me, s, round);
        sched_yield();
      }
      const uint32_t *got = (const uint32_t *)(h + RECV(par, s));
      for (int i = 0; i < ELEMS; i++)
        if (got[i] != pattern(s, me, round, i))
          MK_TEST_FAIL_("rank %d round %d: element %d from rank %d is 0x%x, want 0x%x", me, round, i, s, got[i],
                        pattern(s, me, round, i));
    }
  }
  /* A bare SIGNAL and a FENCE to the next rank. */
  mk_fifo_cmd sg = {MK_CMD_SIGNAL, (me + 1) % R, 0, 0, 0, EXTRA, 5, 0, 0};
  ASSERT_OK(mk_fifo_host_post(g_fifo[me], &sg, 10000));
  mk_fifo_cmd fe = {MK_CMD_FENCE, 0, 0, 0, 0, 0, 0, 0, 0};
  ASSERT_OK(mk_fifo_host_post(g_fifo[me], &fe, 10000));
  return NULL;
}

static int g_errors;
static mk_status g_err_status;
static int g_err_dst;
static void on_error(void *user, mk_status st, const mk_fifo_cmd *cmd) {
  (void)user;
  g_errors++;
  g_err_status = st;
  g_err_dst = cmd ? cmd->dst_rank : -2;
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 120);
  g_seed = mk_test_seed();
  mk_proxy_t *px[R];
  for (int r = 0; r < R; r++) ASSERT_TRUE((g_heaps[r] = calloc(1, HEAP)));
  for (int r = 0; r < R; r++) {
    mk_transport tr;
    ASSERT_OK(mk_fifo_create(64, 0, &g_fifo[r]));
    ASSERT_OK(mk_loopback_create(r, R, g_heaps, HEAP, 0, &tr));
    ASSERT_OK(mk_proxy_create(g_fifo[r], tr, -1, on_error, NULL, &px[r]));
  }
  pthread_t th[R];
  for (uintptr_t r = 0; r < R; r++) ASSERT_EQ(pthread_create(&th[r], NULL, rank_main, (void *)r), 0);
  for (int r = 0; r < R; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < R; r++) mk_proxy_destroy(px[r]);
  for (int r = 0; r < R; r++) {
    ASSERT_UEQ(*(uint64_t *)(g_heaps[r] + EXTRA), 5);
    for (int s = 0; s < R; s++) ASSERT_UEQ(*(uint64_t *)(g_heaps[r] + SIGOFF(s)), s == r ? 0 : ROUNDS);
  }
  printf("all-pairs: %d rounds x %d pairs ok\n", ROUNDS, R * (R - 1));

  /* Bad commands: each stops its proxy with INVALID_ARGUMENT and calls on_error once. */
  mk_fifo_cmd bad[3] = {{MK_CMD_PUT, 7, 0, 0, 8, 0, 0, 0, 0},                  /* no such rank */
                        {MK_CMD_PUT_SIGNAL, 1, 0, HEAP - 4, 8, 0, 1, 0, 0},  /* past the heap */
                        {MK_CMD_SIGNAL, 1, 0, 0, 0, 3, 1, 0, 0}};             /* misaligned counter */
  for (int i = 0; i < 3; i++) {
    mk_transport tr;
    mk_proxy_t *p;
    ASSERT_OK(mk_loopback_create(0, R, g_heaps, HEAP, 0, &tr));
    ASSERT_OK(mk_proxy_create(g_fifo[0], tr, -1, on_error, NULL, &p));
    ASSERT_OK(mk_fifo_host_post(g_fifo[0], &bad[i], 1000));
    time_t t0 = time(NULL);
    while (mk_proxy_status(p) == MK_STATUS_OK && time(NULL) - t0 < 10) sched_yield();
    ASSERT_STATUS(mk_proxy_status(p), MK_STATUS_INVALID_ARGUMENT);
    mk_proxy_destroy(p);
    ASSERT_EQ(g_errors, i + 1);
    ASSERT_EQ(g_err_status, MK_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(g_err_dst, bad[i].dst_rank);
  }

  /* The transport alone, n signals to rank 1 without a flush: batched (MK_LOOPBACK_SIG_BATCH=1),
     the full lists of MK_SIGNAL_BATCH are added as the next one starts and the rest wait for the
     flush, nothing counted complete before it; one at a time (=0), every add at once. */
  for (int batched = 0; batched < 2; batched++) {
    setenv("MK_LOOPBACK_SIG_BATCH", batched ? "1" : "0", 1);
    mk_param_reset_cache();
    mk_transport tr;
    ASSERT_OK(mk_loopback_create(0, R, g_heaps, HEAP, 0, &tr));
    uint64_t *ctr = (uint64_t *)(g_heaps[1] + EXTRA + 8), done = 0;
    const uint64_t before = *ctr, n = 2 * MK_SIGNAL_BATCH + 1 + mk_rng_hash(g_seed, 7) % (MK_SIGNAL_BATCH - 1);
    for (uint64_t i = 0; i < n; i++) {
      mk_fifo_cmd sg = {MK_CMD_SIGNAL, 1, 0, 0, 0, EXTRA + 8, 1 + i % 3, 0, 0};
      ASSERT_OK(tr.post(tr.ctx, &sg));
    }
    uint64_t want = 0, want_early = 0;
    for (uint64_t i = 0; i < n; i++) want += 1 + i % 3;
    for (uint64_t i = 0; i < 2 * MK_SIGNAL_BATCH; i++) want_early += 1 + i % 3;
    ASSERT_OK(tr.progress(tr.ctx, &done));
    ASSERT_UEQ(*ctr - before, batched ? want_early : want);
    ASSERT_UEQ(done, batched ? 0 : n);
    ASSERT_OK(tr.flush(tr.ctx));
    ASSERT_OK(tr.progress(tr.ctx, &done));
    ASSERT_UEQ(*ctr - before, want);
    ASSERT_UEQ(done, n);
    tr.destroy(tr.ctx);
  }
  unsetenv("MK_LOOPBACK_SIG_BATCH");
  mk_param_reset_cache();
  printf("signal batches ok\n");
  for (int r = 0; r < R; r++) {
    mk_fifo_destroy(g_fifo[r]);
    free(g_heaps[r]);
  }
  printf("ok\n");
  return 0;
}
