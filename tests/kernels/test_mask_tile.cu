/* test_mask_tile.cu (unit; no GPU) — the attention kernels' S-tile mask (mask_tile, kernels/attention/flash_fwd.cuh),
 * called on the host: for tiles of 64, 128 and 176 keys and fresh random sequences, blocks, causal offsets (up to
 * +-2^31), tail tiles started BN keys before the end (ws_tile_start's lo) and threads, every element of the thread's
 * fragment must be -inf exactly where the key lies before lo, past the sequence, or (causal) after its row's diagonal,
 * and untouched elsewhere. That includes the tiles the mask skips as having no such key. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "kernels/attention/flash_fwd.cuh"
#include "tests/mk_test.h"

static uint64_t g_rng;
static uint64_t next_u64(void) { /* splitmix64 */
  uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static long long uniform(long long lo, long long hi) { return lo + (long long)(next_u64() % (uint64_t)(hi - lo + 1)); }

/* Cases of tiles of NT * 8 keys; returns the elements that differ from the rule. */
template <int NT>
static long long check(int cases, long long *masked, long long *unmasked) {
  constexpr int BN = NT * 8;
  long long bad = 0;
  for (int c = 0; c < cases; c++) {
    mk_attn::fwd_block blk = {};
    blk.seqlen_k = (int)uniform(1, 40000);
    blk.causal = next_u64() & 1;
    blk.off = next_u64() % 4 ? uniform(-40000, 40000) : uniform(-(1ll << 31), (1ll << 31) - 1);
    blk.m_start = 128 * (int)uniform(0, 300);
    const int row0 = blk.m_start + (int)uniform(0, 119), t = (int)uniform(0, 3);
    const int nb = (int)uniform(0, blk.seqlen_k / BN + 1);
    int n0 = nb * BN, lo = n0;
    if (n0 + BN > blk.seqlen_k && blk.seqlen_k >= BN) n0 = blk.seqlen_k - BN; /* ws_tile_start: lo stays nb * BN */
    if (next_u64() % 8 == 0) lo = n0 + (int)uniform(0, BN + 8);
    float s[NT][4];
    for (int j = 0; j < NT; j++)
      for (int e = 0; e < 4; e++) s[j][e] = 1.f + j + 0.25f * e;
    mk_attn::mask_tile<NT>(s, blk, n0, row0, t, lo);
    bool any = false;
    for (int j = 0; j < NT; j++)
      for (int e = 0; e < 4; e++) {
        const long long key = n0 + j * 8 + 2 * t + (e & 1), row = row0 + (e >> 1) * 8;
        const bool want = key < lo || key >= blk.seqlen_k || (blk.causal && key > row + blk.off);
        const bool got = s[j][e] == -INFINITY;
        any |= want;
        bad += want != got || (!got && s[j][e] != 1.f + j + 0.25f * e);
        if ((want != got) && bad <= 4)
          fprintf(stderr, "  BN %d: seqlen_k %d causal %d off %lld m_start %d row0 %d t %d n0 %d lo %d: key %lld row "
                  "%lld expected %s\n", BN, blk.seqlen_k, (int)blk.causal, blk.off, blk.m_start, row0, t, n0, lo,
                  key, row, want ? "masked" : "kept");
      }
    *masked += any;
    *unmasked += !any;
  }
  return bad;
}

int main(void) {
  g_rng = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
  printf("test_mask_tile: seed %llu\n", (unsigned long long)g_rng);
  const int cases = 200000;
  long long masked = 0, unmasked = 0;
  const long long b8 = check<8>(cases, &masked, &unmasked), b16 = check<16>(cases, &masked, &unmasked),
                  b22 = check<22>(cases, &masked, &unmasked);
  printf("  %d cases a tile width: %lld tiles with masked keys, %lld without; wrong elements: BN 64 %lld, 128 %lld, "
         "176 %lld\n", cases, masked, unmasked, b8, b16, b22);
  ASSERT_GT(masked, cases / 10);
  ASSERT_GT(unmasked, cases / 10);
  ASSERT_EQ(b8 + b16 + b22, 0);
  printf("test_mask_tile: OK\n");
  return 0;
}
