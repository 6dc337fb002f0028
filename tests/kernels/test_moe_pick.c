/* test_moe_pick.c (unit) — the fused MoE path's split-K choice from the shape at create
 * (mk_moe_pick_split_k): AUTO splits in 8 k-slices where a local expert expects 64 to 256 rows
 * (decode with enough rows per expert), not below (the fix-up costs more than the split gives)
 * nor above (prefill-sized handles); +-1 turns it off; explicit values pass. The down GEMM's
 * (mk_moe_pick_split_k2): GEMM1's, or under AUTO 8 where its 256-wide tiles are fewer than the SMs. */
#include "kernels/moe/moe_internal.h"
#include "tests/mk_test.h"

typedef struct pick_case {
  int64_t T;
  int E, K, split_k, W, want;
  const char *why;
} pick_case;

/* Checks mk_moe_pick_split_k (gemm2 = 0) or mk_moe_pick_split_k2 (1, on 132 SMs) on every case. */
static int check(const pick_case *cases, size_t n, int gemm2) {
  for (size_t i = 0; i < n; i++) {
    const pick_case *c = &cases[i];
    const mk_moe_args a = {.hidden = 4096, .inter = 14336, .n_experts = c->E, .top_k = c->K, .max_tokens = c->T,
                           .split_k = c->split_k};
    const int got = gemm2 ? mk_moe_pick_split_k2(&a, c->W, 132) : mk_moe_pick_split_k(&a, c->W);
    if (got != c->want) {
      fprintf(stderr, "%scase %zu (T=%lld E=%d k=%d split_k=%d W=%d: %s): got %d, want %d\n", gemm2 ? "GEMM2 " : "", i,
              (long long)c->T, c->E, c->K, c->split_k, c->W, c->why, got, c->want);
      return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 30);
  static const pick_case cases[] = {
      {16, 8, 2, 0, 4, 0, "16 * 2 / 2 = 16 rows per local expert: off"},
      {128, 8, 2, 0, 4, 8, "128 * 2 / 2 = 128 rows per local expert: 8"},
      {64, 8, 2, 0, 4, 8, "64 rows (the layer's decode-sized Mixtral handle): 8"},
      {63, 8, 2, 0, 4, 0, "63 rows: off"},
      {16, 128, 8, 0, 4, 0, "E = 128 decode, 4 rows: off"},
      {128, 128, 8, 0, 4, 0, "E = 128 decode, 32 rows: off"},
      {16, 256, 8, 0, 4, 0, "E = 256 decode, 2 rows: off"},
      {128, 256, 8, 0, 4, 0, "E = 256 decode, 16 rows: off"},
      {4096, 8, 2, 0, 4, 0, "prefill shapes: off"},
      {4096, 128, 8, 0, 4, 0, "prefill shapes: off"},
      {8192, 256, 8, 0, 4, 0, "prefill shapes: off"},
      {256, 8, 2, 0, 4, 8, "256 rows per local expert split"},
      {257, 8, 2, 0, 4, 0, "257 do not"},
      {128, 8, 2, 0, 8, 8, "EP 8: one local expert, 256 rows"},
      {256, 8, 2, 0, 8, 0, "EP 8: 512 rows"},
      {16, 8, 2, 1, 4, 0, "+1 is off"},
      {16, 8, 2, -1, 4, 0, "-1 is off"},
      {4096, 8, 2, 4, 4, 4, "explicit N wins over AUTO"},
      {16, 8, 2, -16, 4, -16, "explicit always"},
      {16, 8, 2, 16, 4, 16, "explicit 16"},
  };
  if (check(cases, sizeof cases / sizeof cases[0], 0)) return 1;
  /* GEMM2: hidden 4096 (16 tiles of 256 per tile-row), 132 SMs */
  static const pick_case cases2[] = {
      {16, 8, 2, 0, 4, 8, "E = 8, T = 16, EP 4: (128 / 128 + 2) x 16 = 48 tiles: 8"},
      {16, 8, 2, 0, 2, 8, "EP 2: (64 / 128 + 4) x 16 = 64 tiles: 8"},
      {128, 8, 2, 0, 4, 8, "GEMM1's 8"},
      {1000, 8, 2, 0, 2, 0, "(4000 / 128 + 4) x 16 = 560 tiles: off"},
      {16, 128, 8, 0, 4, 0, "E = 128: (512 / 128 + 32) x 16 tiles: off"},
      {16, 256, 8, 0, 4, 0, "E = 256: off"},
      {4096, 8, 2, 0, 4, 0, "prefill: off"},
      {16, 8, 2, 1, 4, 0, "+1 is off"},
      {16, 8, 2, -1, 4, 0, "-1 is off"},
      {16, 8, 2, -16, 4, 16, "explicit always: 16 slices"},
      {4096, 8, 2, 4, 4, 4, "explicit 4"},
  };
  if (check(cases2, sizeof cases2 / sizeof cases2[0], 1)) return 1;
  /* GEMM2 beside GEMM1 (MK_MOE_G12_SMS = -2): where I W / (W - 1) < 1280, 3/8 of 132 SMs; below 2048, 0 (as
     GEMM1's CTAs exit); else -1 */
  static const struct {
    int inter, W, want;
  } g12[] = {{768, 4, 49},   {768, 2, 0},    {600, 2, 49},    {768, 8, 49},   {1024, 8, 49}, {1120, 8, 0},
             {896, 4, 49},   {960, 4, 0},    {1500, 4, 0},    {1536, 4, -1},  {1023, 2, 0},  {1024, 2, -1},
             {2048, 4, -1},  {14336, 4, -1}, {768, 1, -1}};
  for (size_t i = 0; i < sizeof g12 / sizeof g12[0]; i++) {
    const mk_moe_args a = {.hidden = 2048, .inter = g12[i].inter, .n_experts = 128, .top_k = 8, .max_tokens = 4096};
    const int got = mk_moe_pick_g12(&a, g12[i].W, 132);
    if (got != g12[i].want) {
      fprintf(stderr, "mk_moe_pick_g12(I = %d, W = %d): %d, want %d\n", g12[i].inter, g12[i].W, got, g12[i].want);
      return 1;
    }
  }
  /* the dispatch's rows by copy engine (MK_MOE_CE_SEND = -1, env unset): where a token reaches a given peer with
     probability >= 3/4 (1 - C(E - E/W, k) / C(E, k)); 1 wherever W >= 2; 0 never */
  {
    static const struct {
      int E, k, W, want;
    } ce[] = {{8, 2, 2, 1},   {8, 2, 4, 0},   {128, 8, 2, 1}, {128, 8, 4, 1}, {256, 8, 4, 1},
              {256, 8, 8, 0}, {8, 1, 2, 0},   {8, 2, 1, 0},   {64, 2, 4, 0},  {64, 4, 2, 1}};
    const char *env[] = {NULL, "1", "0"};
    for (int v = 0; v < 3; v++) {
      if (env[v]) setenv("MK_MOE_CE_SEND", env[v], 1);
      mk_param_reset_cache();
      for (size_t i = 0; i < sizeof ce / sizeof ce[0]; i++) {
        const mk_moe_args a = {
            .hidden = 2048, .inter = 768, .n_experts = ce[i].E, .top_k = ce[i].k, .max_tokens = 4096};
        const int want = ce[i].W < 2 ? 0 : v == 0 ? ce[i].want : v == 1;
        const int got = mk_moe_pick_ce_send(&a, ce[i].W);
        if (got != want) {
          fprintf(stderr, "mk_moe_pick_ce_send(E = %d, k = %d, W = %d, MK_MOE_CE_SEND=%s): %d, want %d\n", ce[i].E,
                  ce[i].k, ce[i].W, env[v] ? env[v] : "(unset)", got, want);
          return 1;
        }
      }
    }
    unsetenv("MK_MOE_CE_SEND");
    mk_param_reset_cache();
  }
  /* the unfused path's grouped GEMMs (MK_MOE_UNFUSED_GEMM = -1): >= 16 local experts, none above 256 rows */
  {
    int32_t rows[64];
    for (int e = 0; e < 64; e++) rows[e] = e % 7 * 40; /* 0..240 */
    if (mk_moe_unfused_grouped(64, rows) != 1 || mk_moe_unfused_grouped(15, rows) != 0) {
      fprintf(stderr, "mk_moe_unfused_grouped: 64 experts of <= 240 rows want 1, 15 experts want 0\n");
      return 1;
    }
    rows[9] = 257;
    if (mk_moe_unfused_grouped(64, rows) != 0) {
      fprintf(stderr, "mk_moe_unfused_grouped: an expert of 257 rows wants 0\n");
      return 1;
    }
  }
  /* the gate/up GEMM swapped (MK_MOE_SKINNY): -1 (default, env unset: NULL) 192-row chunks where an expert expects
     97 .. 160 rows (W T k / E) and 2 I >= 256, else off; 0 off; 1 chunks from the expected rows (x 1.25 + 16, up to
     64 / 128 / 192); 64 / 128 / 192 forced; anything else refused (-1). I = 0: 14336 */
  {
    static const struct {
      const char *env;
      int64_t T;
      int E, K, W, want, I;
    } sk[] = {{"-1", 256, 8, 2, 2, 0, 120}, {"-1", 256, 8, 2, 2, 192, 128}, {"0", 128, 8, 2, 4, 0, 0},
              {"1", 16, 8, 2, 4, 64, 0}, {"1", 64, 8, 2, 4, 128, 0}, {"1", 128, 8, 2, 4, 192, 0},
              {"1", 128, 128, 8, 2, 64, 0}, {"1", 16, 256, 8, 2, 64, 0}, {"128", 16, 8, 2, 4, 128, 0},
              {"192", 16, 8, 2, 4, 192, 0}, {"100", 16, 8, 2, 4, -1, 0}, {"256", 16, 8, 2, 4, -1, 0},
              {NULL, 128, 8, 2, 4, 192, 0}, {"-1", 256, 8, 2, 2, 192, 0}, {"-1", 320, 8, 2, 2, 192, 0},
              {"-1", 322, 8, 2, 2, 0, 0}, {"-1", 192, 8, 2, 2, 0, 0}, {"-1", 194, 8, 2, 2, 192, 0},
              {"-1", 4096, 8, 2, 4, 0, 0}, {NULL, 16, 128, 8, 2, 0, 0}, {NULL, 16, 8, 2, 4, 0, 0}};
    for (size_t i = 0; i < sizeof sk / sizeof sk[0]; i++) {
      if (sk[i].env) setenv("MK_MOE_SKINNY", sk[i].env, 1);
      else unsetenv("MK_MOE_SKINNY");
      mk_param_reset_cache();
      const mk_moe_args a = {.hidden = 4096, .inter = sk[i].I ? sk[i].I : 14336, .n_experts = sk[i].E,
                             .top_k = sk[i].K, .max_tokens = sk[i].T};
      const int got = mk_moe_pick_skinny(&a, sk[i].W);
      if (got != sk[i].want) {
        fprintf(stderr, "mk_moe_pick_skinny(MK_MOE_SKINNY=%s, T = %lld, E = %d, k = %d, W = %d): %d, want %d\n",
                sk[i].env ? sk[i].env : "(unset)", (long long)sk[i].T, sk[i].E, sk[i].K, sk[i].W, got, sk[i].want);
        return 1;
      }
    }
    unsetenv("MK_MOE_SKINNY");
    mk_param_reset_cache();
  }
  /* the grouped GEMMs' tile width (MK_MOE_TILE_N): -1 (default) 128 for decode-sized handles whose experts expect
     <= 64 rows (W T k / E), else 0; 0 / 128 / 256 as set; anything else refused (-1) */
  {
    static const struct {
      const char *env; /* NULL: unset (the default) */
      int64_t T;
      int E, K, W, overlapped, want;
    } tn[] = {{NULL, 16, 8, 2, 4, 1, 128},    {NULL, 128, 8, 2, 2, 1, 128}, {NULL, 128, 8, 2, 4, 1, 0},
              {NULL, 256, 8, 2, 2, 1, 0},     {NULL, 128, 128, 8, 4, 1, 128}, {NULL, 16, 8, 2, 4, 0, 0},
              {"0", 16, 8, 2, 4, 1, 0},       {"256", 16, 8, 2, 4, 1, 256}, {"128", 4096, 8, 2, 4, 0, 128},
              {"64", 16, 8, 2, 4, 1, -1}};
    for (size_t i = 0; i < sizeof tn / sizeof tn[0]; i++) {
      if (tn[i].env) setenv("MK_MOE_TILE_N", tn[i].env, 1);
      else unsetenv("MK_MOE_TILE_N");
      mk_param_reset_cache();
      const mk_moe_args a = {.hidden = 4096, .inter = 14336, .n_experts = tn[i].E, .top_k = tn[i].K,
                             .max_tokens = tn[i].T};
      const int got = mk_moe_pick_tile_n(&a, tn[i].W, tn[i].overlapped);
      if (got != tn[i].want) {
        fprintf(stderr, "mk_moe_pick_tile_n(MK_MOE_TILE_N=%s, T = %lld, E = %d, k = %d, W = %d, overlapped %d): %d, "
                "want %d\n", tn[i].env ? tn[i].env : "(unset)", (long long)tn[i].T, tn[i].E, tn[i].K, tn[i].W,
                tn[i].overlapped, got, tn[i].want);
        return 1;
      }
    }
    unsetenv("MK_MOE_TILE_N");
    mk_param_reset_cache();
  }
  printf("test_moe_pick: %zu + %zu cases ok\n", sizeof cases / sizeof cases[0], sizeof cases2 / sizeof cases2[0]);
  return 0;
}
