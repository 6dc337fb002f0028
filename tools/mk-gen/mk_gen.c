/* mk_gen.c — mk-gen: write a random MoE model (config.json + safetensors) of one family.
 *   mk-gen --family qwen3_moe --out /tmp/tiny            tiny defaults, loads in well under a second
 *   mk-gen --family mixtral --full --layers 2 --out DIR   the real model's layer sizes (benchmarks) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/mk_models.h"

static void usage(FILE *o) {
  fprintf(o,
          "usage: mk-gen --family {mixtral,qwen2_moe,qwen3_moe,olmoe} --out DIR [flags]\n"
          "  --full                 the family's real layer sizes (1 layer unless --layers)\n"
          "  --layers N --hidden N --heads N --kv-heads N --head-dim N --vocab N\n"
          "  --experts N --top-k N --expert-inter N\n"
          "  --dense-inter N        qwen: intermediate_size of dense layers\n"
          "  --shared-inter N       qwen2_moe: shared expert size (0 = none)\n"
          "  --mlp-only-layer N     qwen: make layer N a dense MLP layer\n"
          "  --norm-topk 0|1        renormalise the top-k routing weights\n"
          "  --shards N             write N safetensors files and an index (default 1)\n"
          "  --fused-experts        3-D mlp.experts.gate_up_proj / down_proj tensors\n"
          "  --tie-embeddings       lm_head shares model.embed_tokens\n"
          "  --dtype bf16|f32       (default bf16)\n"
          "  --seed N               (default 1); the same seed gives the same bytes\n");
}

static void full_sizes(mk_gen_params *p) {
  switch (p->family) {
    case MK_FAMILY_MIXTRAL: /* Mixtral-8x7B */
      p->hidden = 4096, p->heads = 32, p->kv_heads = 8, p->head_dim = 128, p->experts = 8, p->top_k = 2;
      p->expert_inter = 14336, p->vocab = 32000;
      break;
    case MK_FAMILY_QWEN2_MOE: /* Qwen1.5-MoE-A2.7B */
      p->hidden = 2048, p->heads = 16, p->kv_heads = 16, p->head_dim = 128, p->experts = 60, p->top_k = 4;
      p->expert_inter = 1408, p->shared_inter = 5632, p->dense_inter = 5632, p->vocab = 151936;
      break;
    case MK_FAMILY_QWEN3_MOE: /* Qwen3-30B-A3B */
      p->hidden = 2048, p->heads = 32, p->kv_heads = 4, p->head_dim = 128, p->experts = 128, p->top_k = 8;
      p->expert_inter = 768, p->dense_inter = 6144, p->vocab = 151936;
      break;
    default: /* OLMoE-1B-7B */
      p->hidden = 2048, p->heads = 16, p->kv_heads = 16, p->head_dim = 128, p->experts = 64, p->top_k = 8;
      p->expert_inter = 1024, p->vocab = 50304;
      break;
  }
  p->layers = 1;
}

static int int_arg(const char *flag, const char *v, int lo, int *out) {
  int64_t x;
  if (!v || mk_param_parse_int(flag, v, lo, 1 << 30, &x)) {
    fprintf(stderr, "mk-gen: %s needs an integer >= %d\n", flag, lo);
    return -1;
  }
  *out = (int)x;
  return 0;
}

int main(int argc, char **argv) {
  mk_gen_params p;
  const char *out = NULL, *fam = NULL;
  int full = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return usage(stdout), 0;
    if (!strcmp(argv[i], "--family") && i + 1 < argc) fam = argv[i + 1];
    if (!strcmp(argv[i], "--full")) full = 1;
  }
  mk_model_family f;
  if (!fam || mk_model_family_from_name(fam, &f)) {
    fprintf(stderr, "mk-gen: --family must be one of mixtral, qwen2_moe, qwen3_moe, olmoe\n");
    usage(stderr);
    return 2;
  }
  mk_gen_params_default(f, &p);
  if (full) full_sizes(&p);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int seed = 0, bad = 0;
    if (!strcmp(a, "--full") || !strcmp(a, "--fused-experts") || !strcmp(a, "--tie-embeddings")) {
      if (!strcmp(a, "--fused-experts")) p.fused_experts = 1;
      if (!strcmp(a, "--tie-embeddings")) p.tie_embeddings = 1;
      continue;
    }
    i++;
    if (!strcmp(a, "--family")) continue;
    else if (!strcmp(a, "--out")) out = v;
    else if (!strcmp(a, "--layers")) bad = int_arg(a, v, 1, &p.layers);
    else if (!strcmp(a, "--hidden")) bad = int_arg(a, v, 1, &p.hidden);
    else if (!strcmp(a, "--heads")) bad = int_arg(a, v, 1, &p.heads);
    else if (!strcmp(a, "--kv-heads")) bad = int_arg(a, v, 1, &p.kv_heads);
    else if (!strcmp(a, "--head-dim")) bad = int_arg(a, v, 2, &p.head_dim);
    else if (!strcmp(a, "--vocab")) bad = int_arg(a, v, 1, &p.vocab);
    else if (!strcmp(a, "--experts")) bad = int_arg(a, v, 1, &p.experts);
    else if (!strcmp(a, "--top-k")) bad = int_arg(a, v, 1, &p.top_k);
    else if (!strcmp(a, "--expert-inter")) bad = int_arg(a, v, 1, &p.expert_inter);
    else if (!strcmp(a, "--dense-inter")) bad = int_arg(a, v, 1, &p.dense_inter);
    else if (!strcmp(a, "--shared-inter")) bad = int_arg(a, v, 0, &p.shared_inter);
    else if (!strcmp(a, "--mlp-only-layer")) bad = int_arg(a, v, 0, &p.mlp_only_layer);
    else if (!strcmp(a, "--norm-topk")) bad = int_arg(a, v, 0, &p.norm_topk_prob);
    else if (!strcmp(a, "--shards")) bad = int_arg(a, v, 1, &p.shards);
    else if (!strcmp(a, "--seed")) bad = int_arg(a, v, 0, &seed), p.seed = (uint64_t)seed;
    else if (!strcmp(a, "--dtype") && v && (!strcmp(v, "bf16") || !strcmp(v, "f32")))
      p.dtype = !strcmp(v, "f32") ? MK_DTYPE_F32 : MK_DTYPE_BF16;
    else {
      fprintf(stderr, "mk-gen: unknown or incomplete flag '%s'\n", a);
      usage(stderr);
      return 2;
    }
    if (bad) return 2;
  }
  if (!out) {
    fprintf(stderr, "mk-gen: --out DIR is required\n");
    return 2;
  }
  mk_status st = mk_model_gen(&p, out);
  if (st) {
    fprintf(stderr, "mk-gen: %s\n", mk_status_str(st));
    return 1;
  }
  printf("mk-gen: wrote %s model to %s: %d layers, hidden %d, %d/%d heads x %d, %d experts top-%d x %d, vocab %d, "
         "%d shard(s), %s, seed %llu\n",
         fam, out, p.layers, p.hidden, p.heads, p.kv_heads, p.head_dim, p.experts, p.top_k, p.expert_inter, p.vocab,
         p.shards, mk_dtype_name(p.dtype), (unsigned long long)p.seed);
  return 0;
}
