/* test_fifo_stress.c (unit) — the FIFO + proxy under load, CPU threads standing in for the
 * GPU: 2 producers post 2^20 PUT_SIGNAL commands each through a 256-slot FIFO (constant
 * back-pressure) to a proxy running the loopback transport on host memory. A checker watches
 * the counters: whenever counter p reads c, the data of command c-1 must be there (never an
 * older value: no signal before its data). At the end: no command lost, none twice. */
#include <pthread.h>
#include <sched.h>

#include "comm/proxy.h"
#include "tests/mk_test.h"

enum { P = 2, CAP = 256, W = 4 * CAP };
static const uint64_t N = 1u << 20;
static char *g_heap; /* [0, P*W*8) sources, [DST, ..) destinations, [SIG, ..) counters */
enum { DST = P * W * 8, SIG = 2 * P * W * 8, HEAP = SIG + 64 * P };
static mk_fifo *g_fifo;
static int g_done;

static void *producer(void *arg) {
  const uint64_t p = (uint64_t)(uintptr_t)arg;
  uint64_t *src = (uint64_t *)g_heap + p * W;
  for (uint64_t k = 0; k < N; k++) {
    src[k % W] = (p << 40) | k; /* safe: command k - W has completed (W >= CAP + 2) */
    mk_fifo_cmd c = {MK_CMD_PUT_SIGNAL, 1, (p * W + k % W) * 8, DST + (p * W + k % W) * 8, 8, SIG + 64 * p, 1, 0, 0};
    ASSERT_OK(mk_fifo_host_post(g_fifo, &c, 20000));
  }
  return NULL;
}

static void *checker(void *arg) {
  (void)arg;
  uint64_t checks = 0;
  for (;;) {
    int all_done = 1;
    for (uint64_t p = 0; p < P; p++) {
      uint64_t c = __atomic_load_n((uint64_t *)(g_heap + HEAP + SIG + 64 * p), __ATOMIC_ACQUIRE);
      if (c < N) all_done = 0;
      if (!c) continue;
      uint64_t k = c - 1, v = __atomic_load_n((uint64_t *)(g_heap + HEAP + DST) + p * W + k % W, __ATOMIC_RELAXED);
      uint64_t vk = v & ((1ull << 40) - 1);
      if ((v >> 40) != p || vk < k || vk % W != k % W)
        MK_TEST_FAIL_("producer %llu: counter %llu but slot holds command %llu (signal before data)",
                      (unsigned long long)p, (unsigned long long)c, (unsigned long long)vk);
      checks++;
    }
    if (all_done) break;
    sched_yield();
  }
  printf("checker: %llu checks\n", (unsigned long long)checks);
  __atomic_store_n(&g_done, 1, __ATOMIC_RELEASE);
  return NULL;
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 170);
  g_heap = calloc(2, HEAP); /* rank 0's heap, then rank 1's */
  ASSERT_TRUE(g_heap);
  char *bases[2] = {g_heap, g_heap + HEAP};
  mk_transport tr;
  ASSERT_OK(mk_fifo_create(CAP, 0, &g_fifo));
  ASSERT_OK(mk_loopback_create(0, 2, bases, HEAP, 0, &tr));
  mk_proxy_t *px;
  ASSERT_OK(mk_proxy_create(g_fifo, tr, -1, NULL, NULL, &px));
  pthread_t th[P + 1];
  for (uintptr_t p = 0; p < P; p++) ASSERT_EQ(pthread_create(&th[p], NULL, producer, (void *)p), 0);
  ASSERT_EQ(pthread_create(&th[P], NULL, checker, NULL), 0);
  for (int p = 0; p <= P; p++) pthread_join(th[p], NULL);
  mk_fifo_cmd fence = {MK_CMD_FENCE, 0, 0, 0, 0, 0, 0, 0, 0};
  ASSERT_OK(mk_fifo_host_post(g_fifo, &fence, 1000));
  mk_proxy_destroy(px); /* drains */
  ASSERT_UEQ(*g_fifo->tail, (uint64_t)P * N + 1);
  ASSERT_UEQ(*g_fifo->head, (uint64_t)P * N + 1);
  for (uint64_t p = 0; p < P; p++) {
    ASSERT_UEQ(*(uint64_t *)(g_heap + HEAP + SIG + 64 * p), N); /* each command signalled once */
    for (uint64_t j = 0; j < W; j++) {
      uint64_t last = N - W + j; /* the last command that wrote slot j */
      ASSERT_UEQ(((uint64_t *)(g_heap + HEAP + DST))[p * W + last % W], (p << 40) | last);
    }
  }
  mk_fifo_destroy(g_fifo);
  free(g_heap);
  printf("ok: %llu commands through a %d-slot FIFO\n", (unsigned long long)(P * N), CAP);
  return 0;
}
