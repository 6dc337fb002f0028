/* test_verbs_qpinfo.c (unit) — the QP-info record and the QP-number table the RDMA transports
 * all-gather: random records survive pack/unpack; the bytes are big-endian at fixed offsets;
 * every field a peer can get wrong (length, magic, version, kind, rank, QP count, MTU, QP
 * numbers, padding) is a FORMAT_ERROR, not a crash or a silent accept. */
#include "comm/verbs_common.h"
#include "core/rng.h"
#include "tests/mk_test.h"

static uint64_t g_s, g_i;
static uint64_t rnd(void) { return mk_rng_hash(g_s, g_i++); }

static mk_qp_info random_info(int kind, int rank) {
  mk_qp_info q;
  memset(&q, 0, sizeof q);
  q.kind = (uint8_t)kind;
  q.nqps = (uint8_t)(1 + rnd() % MK_QPINFO_MAX_QPS);
  q.rank = (uint32_t)rank;
  q.lid = (uint16_t)rnd();
  q.port = (uint8_t)(1 + rnd() % 2);
  q.mtu = (uint8_t)(1 + rnd() % 5);
  for (int i = 0; i < 16; i++) q.gid[i] = (uint8_t)rnd();
  q.rkey = (uint32_t)rnd();
  q.qkey = (uint32_t)rnd();
  q.heap_addr = rnd();
  q.heap_bytes = rnd();
  for (int i = 0; i < q.nqps; i++) q.qpn[i] = 1 + (uint32_t)(rnd() % 0xfffffe);
  return q;
}

static void expect_bad(const uint8_t *good, int at, uint8_t value, int kind, int rank) {
  uint8_t b[MK_QPINFO_BYTES];
  mk_qp_info out;
  memcpy(b, good, sizeof b);
  b[at] = value;
  mk_status st = mk_qpinfo_unpack(b, sizeof b, rank, kind, &out);
  if (st != MK_STATUS_FORMAT_ERROR) MK_TEST_FAIL_("byte %d = 0x%02x accepted (%s)", at, value, mk_status_name(st));
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 30);
  g_s = mk_test_seed();
  uint8_t buf[MK_QPINFO_BYTES];
  for (int it = 0; it < 2000; it++) {
    const int kind = it & 1 ? MK_TRANSPORT_EFA : MK_TRANSPORT_IB, rank = (int)(rnd() % 4096);
    mk_qp_info in = random_info(kind, rank), out;
    mk_qpinfo_pack(&in, buf);
    ASSERT_OK(mk_qpinfo_unpack(buf, sizeof buf, rank, kind, &out));
    ASSERT_EQ(memcmp(&in, &out, sizeof in), 0);
    /* Big-endian at fixed offsets. */
    ASSERT_EQ(memcmp(buf, "MKQP", 4), 0);
    ASSERT_UEQ((uint32_t)buf[8] << 24 | buf[9] << 16 | buf[10] << 8 | buf[11], in.rank);
    uint64_t a = 0;
    for (int i = 40; i < 48; i++) a = a << 8 | buf[i];
    ASSERT_UEQ(a, in.heap_addr);
  }
  /* Each field a peer can get wrong. */
  mk_qp_info in = random_info(MK_TRANSPORT_EFA, 3), out;
  in.nqps = 2;
  in.qpn[0] = 0xabcdef;
  in.qpn[1] = 0x123456;
  in.qpn[2] = in.qpn[3] = 0;
  mk_qpinfo_pack(&in, buf);
  ASSERT_OK(mk_qpinfo_unpack(buf, sizeof buf, 3, MK_TRANSPORT_EFA, &out));
  ASSERT_STATUS(mk_qpinfo_unpack(buf, sizeof buf - 1, 3, MK_TRANSPORT_EFA, &out), MK_STATUS_FORMAT_ERROR);
  ASSERT_STATUS(mk_qpinfo_unpack(buf, sizeof buf, 2, MK_TRANSPORT_EFA, &out), MK_STATUS_FORMAT_ERROR); /* rank */
  ASSERT_STATUS(mk_qpinfo_unpack(buf, sizeof buf, 3, MK_TRANSPORT_IB, &out), MK_STATUS_FORMAT_ERROR);  /* kind */
  expect_bad(buf, 0, 'X', MK_TRANSPORT_EFA, 3);   /* magic */
  expect_bad(buf, 5, 2, MK_TRANSPORT_EFA, 3);     /* version */
  expect_bad(buf, 7, 0, MK_TRANSPORT_EFA, 3);     /* no QPs */
  expect_bad(buf, 7, MK_QPINFO_MAX_QPS + 1, MK_TRANSPORT_EFA, 3);
  expect_bad(buf, 15, 0, MK_TRANSPORT_EFA, 3);    /* MTU code */
  expect_bad(buf, 15, 6, MK_TRANSPORT_EFA, 3);
  expect_bad(buf, 56 + 4 * 2 + 3, 1, MK_TRANSPORT_EFA, 3); /* QP slot beyond nqps */
  expect_bad(buf, 56 + 4 * 0, 1, MK_TRANSPORT_EFA, 3);     /* QP number over 24 bits */
  expect_bad(buf, MK_QPINFO_BYTES - 1, 1, MK_TRANSPORT_EFA, 3); /* padding */
  uint8_t z[MK_QPINFO_BYTES];
  memcpy(z, buf, sizeof z);
  memset(z + 56, 0, 4); /* efa QP number 0 */
  ASSERT_STATUS(mk_qpinfo_unpack(z, sizeof z, 3, MK_TRANSPORT_EFA, &out), MK_STATUS_FORMAT_ERROR);

  /* The ib QP-number table: numbers exactly towards the expected peers. */
  enum { N = 6, Q = 3 };
  uint32_t qpn[N * Q], back[N * Q];
  uint8_t peer[N] = {0, 0, 0, 1, 1, 1}, tab[N * Q * 4];
  for (int r = 0; r < N; r++)
    for (int q = 0; q < Q; q++) qpn[r * Q + q] = peer[r] ? 1 + (uint32_t)(rnd() % 0xfffffe) : 0;
  mk_qpn_table_pack(qpn, N, Q, tab);
  ASSERT_OK(mk_qpn_table_unpack(tab, N, Q, 1, peer, back));
  ASSERT_EQ(memcmp(qpn, back, sizeof qpn), 0);
  ASSERT_UEQ((uint32_t)tab[4 * 9] << 24 | tab[4 * 9 + 1] << 16 | tab[4 * 9 + 2] << 8 | tab[4 * 9 + 3], qpn[9]);
  tab[3] = 1; /* a number towards a rank of the own node group */
  ASSERT_STATUS(mk_qpn_table_unpack(tab, N, Q, 1, peer, back), MK_STATUS_FORMAT_ERROR);
  tab[3] = 0;
  memset(tab + 4 * 10, 0, 4); /* a missing number towards a peer */
  ASSERT_STATUS(mk_qpn_table_unpack(tab, N, Q, 1, peer, back), MK_STATUS_FORMAT_ERROR);
  tab[4 * 10] = 1; /* over 24 bits */
  ASSERT_STATUS(mk_qpn_table_unpack(tab, N, Q, 1, peer, back), MK_STATUS_FORMAT_ERROR);
  printf("ok\n");
  return 0;
}
