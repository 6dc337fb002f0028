/* test_efa_rx.c (unit) — the EFA receiver's completion counting (mk_efa_rx), fed synthetic
 * completions: 3 senders x 3000 signals each (0-4 tagged writes per signal, some signals
 * preceded by bare puts), every completion delivered in a random order (SRD does not order),
 * within the window. Each signal must be released exactly once, and only after its
 * descriptor and every write tagged with its epoch were fed; the counters end at the sums.
 * Then what a broken or hostile peer can send: a window overrun, more writes than announced,
 * a duplicate descriptor, unknown or own sender rank, a malformed descriptor. */
#include "comm/verbs_common.h"
#include "core/rng.h"
#include "tests/mk_test.h"

enum { R = 4, SELF = 2, SIGS = 3000, WIN = 64, MAXD = 4 };

typedef struct ev { int is_desc; uint32_t src, epoch; mk_efa_desc d; } ev;
static uint64_t g_s, g_i;
static uint64_t rnd(uint64_t n) { return mk_rng_hash(g_s, g_i++) % n; }

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 60);
  g_s = mk_test_seed();
  mk_efa_rx rx;
  ASSERT_OK(mk_efa_rx_init(&rx, SELF, R, WIN));
  /* Build each sender's completions; deliver in windows of WIN/2 signals per sender, shuffled
   * across senders and within (the sender keeps at most WIN/2 signals in flight). */
  static ev evs[R * SIGS * (MAXD + 2)];
  static uint32_t want_data[R][SIGS], fed_data[R][SIGS], fed_desc[R][SIGS], released[R][SIGS];
  uint64_t want_ctr[R] = {0}, ctr[R] = {0};
  for (uint32_t base = 0; base < SIGS; base += WIN / 2) {
    size_t n = 0;
    for (uint32_t src = 0; src < R; src++) {
      if (src == SELF) continue;
      for (uint32_t e = base; e < base + WIN / 2 && e < SIGS; e++) {
        uint32_t nd = (uint32_t)rnd(MAXD + 1);
        want_data[src][e] = nd;
        for (uint32_t k = 0; k < nd; k++) evs[n++] = (ev){0, src, e, {0}};
        uint64_t add = 1 + rnd(3);
        want_ctr[src] += add;
        evs[n++] = (ev){1, src, e, {src, e, nd, 8 * src, add}};
      }
    }
    for (size_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
      size_t j = (size_t)rnd(i + 1);
      ev t = evs[i];
      evs[i] = evs[j];
      evs[j] = t;
    }
    for (size_t i = 0; i < n; i++) {
      int ready = 0;
      mk_efa_desc sig;
      if (evs[i].is_desc) {
        fed_desc[evs[i].src][evs[i].epoch]++;
        ASSERT_OK(mk_efa_rx_desc(&rx, &evs[i].d, &ready, &sig));
      } else {
        fed_data[evs[i].src][evs[i].epoch]++;
        ASSERT_OK(mk_efa_rx_data(&rx, mk_efa_imm((int)evs[i].src, evs[i].epoch), &ready, &sig));
      }
      if (!ready) continue;
      ASSERT_LT(sig.src, R);
      ASSERT_LT(sig.epoch, SIGS);
      if (!fed_desc[sig.src][sig.epoch] || fed_data[sig.src][sig.epoch] != want_data[sig.src][sig.epoch])
        MK_TEST_FAIL_("signal %u of rank %u released with %u of %u writes in, descriptor %s", sig.epoch, sig.src,
                      fed_data[sig.src][sig.epoch], want_data[sig.src][sig.epoch], fed_desc[sig.src][sig.epoch] ? "in" : "missing");
      ASSERT_EQ(released[sig.src][sig.epoch]++, 0);
      ASSERT_UEQ(sig.sig_off, 8 * sig.src);
      ctr[sig.src] += sig.sig_add;
    }
  }
  for (int s = 0; s < R; s++) {
    ASSERT_UEQ(ctr[s], want_ctr[s]);
    for (int e = 0; s != SELF && e < SIGS; e++) ASSERT_EQ(released[s][e], 1);
  }
  printf("in-order release under shuffled delivery: %d senders x %d signals ok\n", R - 1, SIGS);

  /* The epoch wraps at 2^20: a sender's imm stays within its bits. */
  ASSERT_UEQ(mk_efa_imm(3, MK_EFA_EPOCH_MASK + 5), (3u << MK_EFA_EPOCH_BITS) | 4);

  /* Broken peers. */
  int ready;
  mk_efa_desc sig, d;
  ASSERT_OK(mk_efa_rx_data(&rx, mk_efa_imm(0, 7000), &ready, &sig)); /* epoch 7000 open */
  ASSERT_STATUS(mk_efa_rx_data(&rx, mk_efa_imm(0, 7000 + WIN), &ready, &sig), MK_STATUS_NET_ERROR); /* overrun */
  d = (mk_efa_desc){0, 7000 + WIN, 0, 0, 1};
  ASSERT_STATUS(mk_efa_rx_desc(&rx, &d, &ready, &sig), MK_STATUS_NET_ERROR);
  ASSERT_OK(mk_efa_rx_data(&rx, mk_efa_imm(0, 7000), &ready, &sig));
  d = (mk_efa_desc){0, 7000, 1, 0, 1}; /* announces 1 write, 2 arrived */
  ASSERT_STATUS(mk_efa_rx_desc(&rx, &d, &ready, &sig), MK_STATUS_NET_ERROR);
  d = (mk_efa_desc){1, 9000, 2, 8, 1};
  ASSERT_OK(mk_efa_rx_desc(&rx, &d, &ready, &sig));
  ASSERT_EQ(ready, 0);
  ASSERT_STATUS(mk_efa_rx_desc(&rx, &d, &ready, &sig), MK_STATUS_NET_ERROR); /* duplicate */
  ASSERT_OK(mk_efa_rx_data(&rx, mk_efa_imm(1, 9000), &ready, &sig));
  ASSERT_OK(mk_efa_rx_data(&rx, mk_efa_imm(1, 9000), &ready, &sig));
  ASSERT_EQ(ready, 1);
  ASSERT_STATUS(mk_efa_rx_data(&rx, mk_efa_imm(1, 9000), &ready, &sig), MK_STATUS_OK); /* opens 9000 anew: no desc yet */
  ASSERT_EQ(ready, 0);
  ASSERT_STATUS(mk_efa_rx_data(&rx, mk_efa_imm(R, 1), &ready, &sig), MK_STATUS_NET_ERROR);    /* unknown rank */
  ASSERT_STATUS(mk_efa_rx_data(&rx, mk_efa_imm(SELF, 1), &ready, &sig), MK_STATUS_NET_ERROR); /* own rank */
  d = (mk_efa_desc){0, MK_EFA_EPOCH_MASK + 1, 0, 0, 1};
  ASSERT_STATUS(mk_efa_rx_desc(&rx, &d, &ready, &sig), MK_STATUS_NET_ERROR);
  mk_efa_rx_free(&rx);

  /* Descriptor wire format. */
  uint8_t b[MK_EFA_DESC_BYTES];
  mk_efa_desc in = {3, 0xabcde, 17, 0x123456789aull, 0xfedcba9876543210ull}, out;
  mk_efa_desc_pack(&in, b);
  ASSERT_OK(mk_efa_desc_unpack(b, sizeof b, &out));
  ASSERT_UEQ(out.src, in.src);
  ASSERT_UEQ(out.epoch, in.epoch);
  ASSERT_UEQ(out.ndata, in.ndata);
  ASSERT_UEQ(out.sig_off, in.sig_off);
  ASSERT_UEQ(out.sig_add, in.sig_add);
  ASSERT_EQ(b[31], 0x10); /* big-endian */
  ASSERT_EQ(memcmp(b, "MKSG", 4), 0);
  ASSERT_STATUS(mk_efa_desc_unpack(b, sizeof b - 1, &out), MK_STATUS_NET_ERROR);
  b[0] = 0;
  ASSERT_STATUS(mk_efa_desc_unpack(b, sizeof b, &out), MK_STATUS_NET_ERROR);
  ASSERT_STATUS(mk_efa_rx_init(&rx, 0, R, 48), MK_STATUS_INVALID_ARGUMENT); /* not a power of two */
  printf("ok\n");
  return 0;
}
