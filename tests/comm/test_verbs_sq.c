/* test_verbs_sq.c (unit) — selective-signalling bookkeeping of the ib transport (mk_sq):
 * the signalling interval is clamped to half the queue; every `every`-th WR and the last of a
 * chain are signalled; and a randomized model of 4 QPs (random commands of 1-3 WRs, doorbell
 * chains rung at random, signalled completions arriving in order per QP but interleaved
 * across QPs) checks that the in-flight WRs never exceed the queue depth and that the reported
 * count of completed commands never runs ahead of the truth, never goes back, and reaches every
 * posted command once all completions are in. */
#include "comm/verbs_common.h"
#include "core/rng.h"
#include "tests/mk_test.h"

enum { NQ = 4, DEPTH = 16, CMDS = 20000, MAXW = 3 };

typedef struct wr { uint64_t cmd; int last; } wr;
typedef struct sig { uint64_t wr_count, cmd; } sig;
static uint64_t g_s, g_i;
static uint64_t rnd(uint64_t n) { return mk_rng_hash(g_s, g_i++) % n; }

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 60);
  g_s = mk_test_seed();
  mk_sq q;
  mk_sq_init(&q, 8, 100);
  ASSERT_EQ(q.every, 4);
  mk_sq_init(&q, 8, 0);
  ASSERT_EQ(q.every, 1);
  mk_sq_init(&q, 64, 4);
  int pattern[10];
  for (int i = 0; i < 10; i++) pattern[i] = mk_sq_next(&q, i == 9);
  const int want[10] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 1};
  for (int i = 0; i < 10; i++) ASSERT_EQ(pattern[i], want[i]);
  ASSERT_EQ(mk_sq_room(&q), 54);
  mk_sq_complete(&q, 8, 0);
  ASSERT_EQ(mk_sq_room(&q), 62);

  /* Model. */
  static mk_sq sq[NQ];
  static wr pend[NQ][DEPTH], fly[NQ][DEPTH * 2];
  static sig sring[NQ][DEPTH];
  static uint8_t done[CMDS + 1];
  int npend[NQ] = {0}, sh[NQ] = {0}, sl[NQ] = {0};
  uint64_t chain_cmd[NQ] = {0}, fly_base[NQ] = {0}, fly_n[NQ] = {0};
  for (int i = 0; i < NQ; i++) mk_sq_init(&sq[i], DEPTH, 1 + (uint32_t)rnd(DEPTH));
  uint64_t posted = 0, reported = 0;
  int wr_left_of_cmd[CMDS + 1];
  /* Ring QP i: its pending chain goes in flight, the last WR and every every-th signalled. */
#define RING(i)                                                                             \
  do {                                                                                      \
    for (int k = 0; k < npend[i]; k++) {                                                    \
      if (pend[i][k].last) chain_cmd[i] = pend[i][k].cmd;                                   \
      fly[i][(fly_base[i] + fly_n[i]++) % (DEPTH * 2)] = pend[i][k];                        \
      if (mk_sq_next(&sq[i], k + 1 == npend[i])) {                                          \
        sring[i][(sh[i] + sl[i]) % DEPTH] = (sig){sq[i].posted, chain_cmd[i]};              \
        sl[i]++;                                                                            \
      }                                                                                     \
      ASSERT_LE(sq[i].posted - sq[i].done, DEPTH);                                          \
    }                                                                                       \
    npend[i] = 0;                                                                           \
  } while (0)
  /* Complete QP i's oldest signalled WR: it and every earlier WR of QP i are done. */
#define COMPLETE(i)                                                                         \
  do {                                                                                      \
    sig s_ = sring[i][sh[i]];                                                               \
    sh[i] = (sh[i] + 1) % DEPTH;                                                            \
    sl[i]--;                                                                                \
    while (fly_base[i] < s_.wr_count) {                                                     \
      wr w_ = fly[i][fly_base[i] % (DEPTH * 2)];                                            \
      fly_base[i]++;                                                                        \
      fly_n[i]--;                                                                           \
      if (--wr_left_of_cmd[w_.cmd] == 0) done[w_.cmd] = 1;                                  \
    }                                                                                       \
    mk_sq_complete(&sq[i], s_.wr_count, s_.cmd);                                            \
  } while (0)
  uint64_t truth = 0;
  for (uint64_t c = 1; c <= CMDS || truth < posted;) {
    int action = (int)rnd(10);
    if (action < 5 && c <= CMDS) { /* post a command */
      int i = (int)rnd(NQ), n = 1 + (int)rnd(MAXW);
      wr_left_of_cmd[c] = n;
      sq[i].last_cmd = c;
      posted = c;
      for (int k = 0; k < n; k++) {
        if ((uint32_t)npend[i] + 1 > mk_sq_room(&sq[i])) { /* reserve: ring, complete until room */
          RING(i);
          while (mk_sq_room(&sq[i]) < 1) COMPLETE(i);
        }
        pend[i][npend[i]++] = (wr){c, k + 1 == n};
      }
      c++;
    } else if (action < 7) {
      int i = (int)rnd(NQ);
      RING(i);
    } else {
      int i = (int)rnd(NQ);
      if (sl[i]) COMPLETE(i);
      else if (c > CMDS) /* drain: ring everything */
        for (int j = 0; j < NQ; j++) RING(j);
    }
    while (truth < posted && done[truth + 1]) truth++;
    uint64_t r = mk_sq_completed_cmds(sq, NQ, posted, reported);
    ASSERT_GE(r, reported);
    if (r > truth) MK_TEST_FAIL_("reported %llu commands complete, only %llu are", (unsigned long long)r, (unsigned long long)truth);
    reported = r;
  }
  ASSERT_UEQ(mk_sq_completed_cmds(sq, NQ, posted, reported), CMDS);
  printf("ok: %d commands over %d QPs\n", CMDS, NQ);
  return 0;
}
