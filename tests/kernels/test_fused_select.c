/* test_fused_select.c (unit, no GPU) — the fused ops' transfer mode (mk_fused_ce_select): AG
 * on copy engines by shape from N >= its column threshold; RS and AR from their M x N x 2 thresholds on
 * (at, just below, and 0 / huge thresholds), AR and RS only with M a multiple of W; the forced
 * values 0 and 1 override the shape; one rank or several node groups always the SM path; the
 * create-time question (provision) ignores M % W; the defaults of the measured shapes (NOTES,
 * "Session 4") pick what was faster there. */
#include "kernels/mk_kernels.h"
#include "tests/mk_test.h"

enum { SM = 0, CE = 1, AUTO = -1 };
static const mk_fused_op AG = MK_FUSED_AG_GEMM, RS = MK_FUSED_GEMM_RS, AR = MK_FUSED_GEMM_AR;

static int sel(mk_fused_op op, int64_t m, int64_t n, int world, int nnodes, int copy, int64_t min_mb) {
  return mk_fused_ce_select(op, m, n, world, nnodes, copy, min_mb, 0);
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 30);
  const int64_t MiB = 1 << 20;

  /* AG: copy engines from N >= the threshold (min_mb is MK_FUSED_AG_CE_MIN_N there: columns) with one node
   * group and W > 1, unless forced; narrower N on the SM pushers. */
  for (int w = 2; w <= 8; w++) {
    ASSERT_EQ(sel(AG, 2048, 7168, w, 1, AUTO, 0), CE);
    ASSERT_EQ(sel(AG, 2048, 7168, w, 1, AUTO, 4096), CE); /* the default threshold, measured shapes */
    ASSERT_EQ(sel(AG, 8192, 4096, w, 1, AUTO, 4096), CE); /* at the threshold */
    ASSERT_EQ(sel(AG, 8192, 4088, w, 1, AUTO, 4096), SM); /* just below */
    ASSERT_EQ(sel(AG, 8192, 1024, w, 1, AUTO, 4096), SM);
    ASSERT_EQ(sel(AG, 8192, 1024, w, 1, CE, 4096), CE);   /* forced */
    ASSERT_EQ(sel(AG, 8, 8, w, 1, AUTO, 0), CE);          /* threshold 0: always */
    ASSERT_EQ(mk_fused_ce_select(AG, 8, 8, w, 1, AUTO, 1 << 20, 1), CE); /* provision: nothing to stage */
    ASSERT_EQ(sel(AG, 2048, 7168, w, 1, CE, 0), CE);
    ASSERT_EQ(sel(AG, 2048, 7168, w, 1, SM, 0), SM);
    ASSERT_EQ(sel(AG, 2048, 7168, w, 2, AUTO, 0), SM); /* several node groups */
    ASSERT_EQ(sel(AG, 2048, 7168, w, 2, CE, 0), SM);
  }
  ASSERT_EQ(sel(AG, 2048, 7168, 1, 1, AUTO, 0), SM); /* one rank: nothing to move */
  ASSERT_EQ(sel(AG, 2048, 7168, 1, 1, CE, 0), SM);

  /* RS / AR by shape: M x N x 2 >= min_mb MiB, exactly at the threshold included. */
  for (int i = 0; i < 2; i++) {
    const mk_fused_op op = i ? AR : RS;
    const int64_t mb = i ? 8 : 32;
    const int64_t n = 8192, m_at = mb * MiB / (2 * n); /* 2048 (RS), 512 (AR) */
    ASSERT_EQ(sel(op, m_at, n, 4, 1, AUTO, mb), CE);
    ASSERT_EQ(sel(op, m_at - 4, n, 4, 1, AUTO, mb), SM); /* just below */
    ASSERT_EQ(sel(op, m_at, n - 8, 4, 1, AUTO, mb), SM);
    ASSERT_EQ(sel(op, 4 * m_at, n, 4, 1, AUTO, mb), CE);
    ASSERT_EQ(sel(op, 4, 8, 4, 1, AUTO, 0), CE);                   /* threshold 0: always */
    ASSERT_EQ(sel(op, 1 << 14, 1 << 14, 4, 1, AUTO, 1 << 20), SM); /* 512 MiB < 1 TiB */
    ASSERT_EQ(sel(op, m_at + 1, n, 4, 1, AUTO, mb), SM);            /* M % W != 0 */
    ASSERT_EQ(sel(op, m_at + 1, n, 4, 1, CE, mb), SM);
    /* Forced values override the shape (but not M % W, one node group, W > 1). */
    ASSERT_EQ(sel(op, 16, n, 4, 1, CE, mb), CE);
    ASSERT_EQ(sel(op, 4 * m_at, n, 4, 1, SM, mb), SM);
    ASSERT_EQ(sel(op, 4 * m_at, n, 4, 2, AUTO, mb), SM);
    ASSERT_EQ(sel(op, 4 * m_at, n, 4, 2, CE, mb), SM);
    ASSERT_EQ(sel(op, 4 * m_at, n, 1, 1, AUTO, mb), SM);
    ASSERT_EQ(sel(op, 4 * m_at, n, 1, 1, CE, mb), SM);
    /* The 32-bit progress counters: rows per rank x N / 8 below 2^31. */
    ASSERT_EQ(sel(op, 4ll << 20, 1 << 13, 4, 1, CE, mb), CE);
    ASSERT_EQ(sel(op, 4ll << 20, 1 << 14, 4, 1, CE, mb), SM);
    /* Provision (mk_fused_create's staging): the threshold at the maxima, M % W not tested. */
    ASSERT_EQ(mk_fused_ce_select(op, m_at + 1, n, 4, 1, AUTO, mb, 1), CE);
    ASSERT_EQ(mk_fused_ce_select(op, m_at - 1, n, 4, 1, AUTO, mb, 1), SM);
    ASSERT_EQ(mk_fused_ce_select(op, 16, n, 4, 1, CE, mb, 1), CE);
    ASSERT_EQ(mk_fused_ce_select(op, 1 << 20, n, 4, 1, SM, mb, 1), SM);
    ASSERT_EQ(mk_fused_ce_select(op, 1 << 20, n, 4, 2, AUTO, mb, 1), SM);
    ASSERT_EQ(mk_fused_ce_select(op, 1 << 20, n, 1, 1, CE, mb, 1), SM);
  }
  /* Bad values: never copy engines. */
  ASSERT_EQ(sel(RS, 0, 8192, 4, 1, CE, 0), SM);
  ASSERT_EQ(sel(AR, 4096, 0, 4, 1, CE, 0), SM);
  ASSERT_EQ(sel((mk_fused_op)3, 4096, 8192, 4, 1, CE, 0), SM);

  /* The measured shapes (4 x H200, NOTES "Session 4"; RS M = 2048 session 9, run 5bdcff7) with the
   * defaults (32 / 8 MiB): the faster mode of each row. */
  const struct {
    mk_fused_op op;
    int64_t m, n;
    int want;
  } rows[] = {
      {AG, 2048, 7168, CE}, {AG, 8192, 7168, CE}, {AG, 16384, 7168, CE},                     /* AG+GEMM */
      {RS, 2048, 8192, CE}, {RS, 8192, 8192, CE}, {RS, 16384, 8192, CE},                     /* GEMM+RS */
      {AR, 16, 8192, SM},   {AR, 128, 8192, SM},  {AR, 1024, 8192, CE}, {AR, 4096, 8192, CE}, /* GEMM+AR */
      {AR, 8192, 4096, CE}, {AR, 8192, 2048, CE},        /* the layer's row-parallel projections at prefill */
      {AR, 64, 4096, SM},                                /* decode at batch 64 */
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const int64_t mb = rows[i].op == RS ? 32 : 8;
    ASSERT_EQ(sel(rows[i].op, rows[i].m, rows[i].n, 4, 1, AUTO, mb), rows[i].want);
  }
  printf("ok\n");
  return 0;
}
