/* test_attn_ws_pick.cu (unit; no GPU) — which warp-specialised flash kernel a call runs (ws_pick,
 * kernels/attention/flash_fwd_ws.cuh): the shapes measured in session 52 (docs/perf/NOTES.md, attention/flash_fwd),
 * 3072 (inside the rule, not measured) and the forced modes, then fresh random calls against the rule: by default a non-causal unsplit call runs persistent
 * exactly when it has at most 4096 keys and the persistent kernel's 128-key tiles cover no more keys than 176-key
 * tiles would; a causal call exactly when it has at most 8192 keys; the environment's forced modes always win. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "core/rng.h"
#include "kernels/attention/flash_fwd_ws.cuh"
#include "tests/mk_test.h"

using mk_attn::ws_kernel;
using mk_attn::ws_pick;

static mk_attn::fwd_params call(int seqlen_k, int mask, int splits) {
  mk_attn::fwd_params p = {};
  p.seqlen_k = seqlen_k;
  p.seqlen_q = seqlen_k;
  p.mask = mask;
  p.splits = splits;
  p.batch = 1;
  return p;
}

/* Keys that tiles of bn cover: counted tile by tile, not by the formula ws_pick uses. */
static long long covered(long long keys, int bn) {
  long long c = 0;
  while (c < keys) c += bn;
  return c;
}

static uint64_t g_seed, g_draws;
static uint64_t next_u64(void) { return mk_rng_hash(g_seed, g_draws++); }

int main(void) {
  const int none = MK_ATTN_MASK_NONE, causal = MK_ATTN_MASK_CAUSAL, offset = MK_ATTN_MASK_CAUSAL_OFFSET;
  /* The measured shapes, at the defaults (-1, -1). */
  const struct {
    int keys, mask, splits;
    ws_kernel want;
  } table[] = {
      {1024, none, 1, mk_attn::WS_PERSISTENT},  {2048, none, 1, mk_attn::WS_PERSISTENT},
      {3072, none, 1, mk_attn::WS_PERSISTENT},  {4096, none, 1, mk_attn::WS_PERSISTENT},
      {2112, none, 1, mk_attn::WS_ITEM_176},    {8192, none, 1, mk_attn::WS_ITEM_176},
      {16384, none, 1, mk_attn::WS_ITEM_176},   {2048, none, 4, mk_attn::WS_ITEM_128},
      {2048, causal, 1, mk_attn::WS_PERSISTENT}, {8192, causal, 1, mk_attn::WS_PERSISTENT},
      {16384, causal, 1, mk_attn::WS_ITEM_128}, {4096, offset, 1, mk_attn::WS_PERSISTENT},
  };
  for (const auto &c : table) {
    const ws_kernel k = ws_pick(call(c.keys, c.mask, c.splits), -1, -1);
    printf("  %5d keys, mask %d, splits %d: kernel %d (want %d)\n", c.keys, c.mask, c.splits, (int)k, (int)c.want);
    ASSERT_EQ((int)k, (int)c.want);
  }
  /* Forced modes. */
  ASSERT_EQ((int)ws_pick(call(16384, none, 1), 1, -1), (int)mk_attn::WS_PERSISTENT);
  ASSERT_EQ((int)ws_pick(call(2048, none, 1), 0, -1), (int)mk_attn::WS_ITEM_176);
  ASSERT_EQ((int)ws_pick(call(2048, none, 1), 0, 0), (int)mk_attn::WS_ITEM_128);
  ASSERT_EQ((int)ws_pick(call(2048, causal, 1), 0, -1), (int)mk_attn::WS_ITEM_128);
  ASSERT_EQ((int)ws_pick(call(2048, causal, 1), 0, 1), (int)mk_attn::WS_ITEM_176);

  g_seed = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
  printf("test_attn_ws_pick: seed %llu\n", (unsigned long long)g_seed);
  long long persistent_nc = 0, item_nc_short = 0;
  for (int i = 0; i < 200000; i++) {
    const int keys = 1 + (int)(next_u64() % (next_u64() % 4 ? 9000 : 100000));
    const int mask = (int)(next_u64() % 3), splits = next_u64() % 4 ? 1 : 2 + (int)(next_u64() % 15);
    const long long mode = (long long)(next_u64() % 3) - 1, bn176 = (long long)(next_u64() % 3) - 1;
    const ws_kernel k = ws_pick(call(keys, mask, splits), mode, bn176);
    const bool plain = mask == none && splits == 1;
    bool want_persistent;
    if (mode >= 0)
      want_persistent = mode == 1;
    else if (mask != none)
      want_persistent = keys <= 8192;
    else
      want_persistent = splits == 1 && keys <= 4096 && covered(keys, 128) <= covered(keys, 176);
    if ((k == mk_attn::WS_PERSISTENT) != want_persistent)
      fprintf(stderr, "  %d keys mask %d splits %d mode %lld bn176 %lld: kernel %d\n", keys, mask, splits, mode,
              bn176, (int)k);
    ASSERT_EQ((int)(k == mk_attn::WS_PERSISTENT), (int)want_persistent);
    if (!want_persistent) {
      const bool wide = bn176 == 1 || (bn176 < 0 && plain);
      ASSERT_EQ((int)k, (int)(wide ? mk_attn::WS_ITEM_176 : mk_attn::WS_ITEM_128));
    }
    if (mode < 0 && plain && keys <= 4096) (k == mk_attn::WS_PERSISTENT ? persistent_nc : item_nc_short)++;
  }
  printf("  default, non-causal unsplit, at most 4096 keys: %lld persistent, %lld one CTA an item\n", persistent_nc,
         item_nc_short);
  ASSERT_GT(persistent_nc, 1000);
  ASSERT_GT(item_nc_short, 1000);
  printf("test_attn_ws_pick: OK\n");
  return 0;
}
