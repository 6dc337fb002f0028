/* test_bootstrap.c (unit, under mk-launch) — all-gather, broadcast from every root, barrier,
 * over many rounds with fresh values; then, by mode (argv[1]):
 *   ok      exit 0
 *   kill    rank 2 SIGKILLs itself; every other rank must fail its next barrier within the
 *           timeout with an error naming rank 2 (they ignore mk-launch's SIGTERM meanwhile)
 *   late    rank 3 never enters the next barrier; the others must time out naming rank 3
 * In both failure modes the surviving ranks exit 3 after checking, as a real job would. */
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "comm/mk_comm.h"
#include "tests/mk_test.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 60);
  const char *mode = argc > 1 ? argv[1] : "ok";
  /* In the failure modes, survive mk-launch's stop (SIGTERM once the first survivor exits)
   * long enough to report: a slow rank may still be finishing its rounds then. */
  if (strcmp(mode, "ok") != 0) signal(SIGTERM, SIG_IGN);
  mk_world w;
  ASSERT_OK(mk_world_from_env(&w));
  mk_bootstrap_t *b = NULL;
  ASSERT_OK(mk_bootstrap_create(&w, &b));
  const int n = w.size;
  uint64_t send[3], *all = calloc((size_t)n * 3, sizeof *all);
  ASSERT_TRUE(all);
  for (int round = 0; round < 200; round++) {
    for (int k = 0; k < 3; k++) send[k] = ((uint64_t)round << 32) ^ ((uint64_t)w.rank * 1000 + (uint64_t)k);
    ASSERT_OK(mk_bootstrap_allgather(b, send, all, sizeof send));
    for (int r = 0; r < n; r++)
      for (int k = 0; k < 3; k++) ASSERT_UEQ(all[r * 3 + k], ((uint64_t)round << 32) ^ ((uint64_t)r * 1000 + (uint64_t)k));
    int root = round % n;
    unsigned char id[128];
    for (int i = 0; i < 128; i++) id[i] = (unsigned char)(w.rank == root ? (i * 7 + round) : 0xee);
    ASSERT_OK(mk_bootstrap_bcast(b, id, sizeof id, root));
    for (int i = 0; i < 128; i++) ASSERT_EQ(id[i], (unsigned char)(i * 7 + round));
    ASSERT_OK(mk_bootstrap_barrier(b));
  }
  printf("rank %d: 200 rounds of allgather/bcast/barrier ok\n", w.rank);
  if (!strcmp(mode, "ok")) {
    mk_bootstrap_destroy(b);
    free(all);
    return 0;
  }
  int victim = !strcmp(mode, "kill") ? 2 : 3;
  ASSERT_TRUE(n > victim);
  if (w.rank == victim) {
    if (victim == 2) raise(SIGKILL);
    sleep(30); /* never joins; mk-launch kills it */
    return 0;
  }
  double t0 = now_s();
  mk_status st = mk_bootstrap_barrier(b);
  double dt = now_s() - t0;
  printf("rank %d: barrier returned %s after %.2f s\n", w.rank, mk_status_name(st), dt);
  ASSERT_STATUS(st, victim == 2 ? MK_STATUS_REMOTE_ERROR : MK_STATUS_TIMEOUT);
  ASSERT_STATUS(mk_bootstrap_barrier(b), st); /* stays broken */
  printf("rank %d: detected the failure of rank %d\n", w.rank, victim);
  mk_bootstrap_destroy(b);
  free(all);
  return 3; /* as a real program would: the job failed */
}
