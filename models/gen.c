/* gen.c — mk_model_gen: a random model of one family (config.json + safetensors, one file or
 * N shards with model.safetensors.index.json). Element i of tensor `name` is a function of
 * (seed, name, i) only, so the shard count never changes a value. Linear weights are
 * uniform in +-1/sqrt(fan_in), norms 1 +- 0.1, biases +-0.1, embeddings +-1. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"
#include "core/rng.h"
#include "models/mk_models.h"

typedef struct gen_tensor {
  char name[160];
  int nd;
  int64_t shape[3];
  float lo, scale; /* uniform in [lo, lo + scale) */
  int fused;       /* 1: experts.gate_up_proj, 2: experts.down_proj (values of the per-expert tensors) */
} gen_tensor;

typedef struct gen_list {
  gen_tensor *t;
  int n, cap;
} gen_list;

void mk_gen_params_default(mk_model_family f, mk_gen_params *p) {
  memset(p, 0, sizeof *p);
  *p = (mk_gen_params){.family = f, .layers = 2, .hidden = 64, .heads = 4, .kv_heads = 2, .head_dim = 16,
                       .experts = 4, .top_k = 2, .expert_inter = 32, .vocab = 256, .shards = 1, .seed = 1,
                       .mlp_only_layer = -1, .dtype = MK_DTYPE_BF16};
  p->norm_topk_prob = f == MK_FAMILY_MIXTRAL || f == MK_FAMILY_QWEN3_MOE;
  if (f == MK_FAMILY_QWEN2_MOE || f == MK_FAMILY_QWEN3_MOE) p->dense_inter = 96;
  if (f == MK_FAMILY_QWEN2_MOE) p->shared_inter = 48;
}

static mk_status push(gen_list *L, const char *name, int nd, int64_t a, int64_t b, int64_t c, float lo, float scale) {
  if (L->n == L->cap) {
    int cap = L->cap ? 2 * L->cap : 256;
    gen_tensor *n = realloc(L->t, (size_t)cap * sizeof *n);
    if (!n) return MK_STATUS_OUT_OF_MEMORY;
    L->t = n;
    L->cap = cap;
  }
  gen_tensor *t = &L->t[L->n++];
  snprintf(t->name, sizeof t->name, "%s", name);
  t->nd = nd;
  t->shape[0] = a, t->shape[1] = b, t->shape[2] = c;
  t->lo = lo, t->scale = scale;
  t->fused = strstr(name, ".experts.gate_up_proj") ? 1 : strstr(name, ".experts.down_proj") ? 2 : 0;
  return MK_STATUS_OK;
}

/* Linear [out, in] */
#define LIN(name, o, i) MK_CHECK(push(L, name, 2, (o), (i), 0, -sc / sqrtf((float)(i)), 2.0f * sc / sqrtf((float)(i))))
#define VEC(name, n, lo, sc) MK_CHECK(push(L, name, 1, (n), 0, 0, (lo), (sc)))
#define NM(...) (snprintf(nm, sizeof nm, __VA_ARGS__), nm)

static mk_status build_list(const mk_gen_params *p, gen_list *L) {
  char nm[160], moe[96];
  int64_t H = p->hidden, hd = p->head_dim, q = (int64_t)p->heads * hd, kv = (int64_t)p->kv_heads * hd;
  int64_t E = p->experts, I = p->expert_inter;
  int qwen = p->family == MK_FAMILY_QWEN2_MOE || p->family == MK_FAMILY_QWEN3_MOE;
  const float sc = p->init_scale > 0 ? p->init_scale : 1.0f;
  MK_CHECK(push(L, "model.embed_tokens.weight", 2, p->vocab, H, 0, -sc, 2.0f * sc));
  for (int l = 0; l < p->layers; l++) {
    VEC(NM("model.layers.%d.input_layernorm.weight", l), H, 0.9f, 0.2f);
    VEC(NM("model.layers.%d.post_attention_layernorm.weight", l), H, 0.9f, 0.2f);
    LIN(NM("model.layers.%d.self_attn.q_proj.weight", l), q, H);
    LIN(NM("model.layers.%d.self_attn.k_proj.weight", l), kv, H);
    LIN(NM("model.layers.%d.self_attn.v_proj.weight", l), kv, H);
    LIN(NM("model.layers.%d.self_attn.o_proj.weight", l), H, q);
    if (p->family == MK_FAMILY_QWEN2_MOE) {
      VEC(NM("model.layers.%d.self_attn.q_proj.bias", l), q, -0.1f, 0.2f);
      VEC(NM("model.layers.%d.self_attn.k_proj.bias", l), kv, -0.1f, 0.2f);
      VEC(NM("model.layers.%d.self_attn.v_proj.bias", l), kv, -0.1f, 0.2f);
    }
    if (p->family == MK_FAMILY_QWEN3_MOE || p->family == MK_FAMILY_OLMOE) {
      int full = p->family == MK_FAMILY_OLMOE;
      VEC(NM("model.layers.%d.self_attn.q_norm.weight", l), full ? q : hd, 0.9f, 0.2f);
      VEC(NM("model.layers.%d.self_attn.k_norm.weight", l), full ? kv : hd, 0.9f, 0.2f);
    }
    if (qwen && l == p->mlp_only_layer) {
      LIN(NM("model.layers.%d.mlp.gate_proj.weight", l), p->dense_inter, H);
      LIN(NM("model.layers.%d.mlp.up_proj.weight", l), p->dense_inter, H);
      LIN(NM("model.layers.%d.mlp.down_proj.weight", l), H, p->dense_inter);
      continue;
    }
    int mx = p->family == MK_FAMILY_MIXTRAL;
    snprintf(moe, sizeof moe, "model.layers.%d.%s", l, mx && !p->fused_experts ? "block_sparse_moe" : "mlp");
    LIN(NM("%s.gate.weight", moe), E, H);
    if (p->fused_experts) {
      float a = sc / sqrtf((float)H), b = sc / sqrtf((float)I);
      MK_CHECK(push(L, NM("%s.experts.gate_up_proj", moe), 3, E, 2 * I, H, -a, 2 * a));
      MK_CHECK(push(L, NM("%s.experts.down_proj", moe), 3, E, H, I, -b, 2 * b));
    } else {
      for (int e = 0; e < E; e++) {
        LIN(NM("%s.experts.%d.%s.weight", moe, e, mx ? "w1" : "gate_proj"), I, H);
        LIN(NM("%s.experts.%d.%s.weight", moe, e, mx ? "w3" : "up_proj"), I, H);
        LIN(NM("%s.experts.%d.%s.weight", moe, e, mx ? "w2" : "down_proj"), H, I);
      }
    }
    if (p->family == MK_FAMILY_QWEN2_MOE && p->shared_inter) {
      LIN(NM("%s.shared_expert.gate_proj.weight", moe), p->shared_inter, H);
      LIN(NM("%s.shared_expert.up_proj.weight", moe), p->shared_inter, H);
      LIN(NM("%s.shared_expert.down_proj.weight", moe), H, p->shared_inter);
      LIN(NM("%s.shared_expert_gate.weight", moe), 1, H);
    }
  }
  VEC("model.norm.weight", H, 0.9f, 0.2f);
  if (!p->tie_embeddings) LIN("lm_head.weight", p->vocab, H);
  return MK_STATUS_OK;
}

static uint64_t numel(const gen_tensor *t) {
  uint64_t n = 1;
  for (int d = 0; d < t->nd; d++) n *= (uint64_t)t->shape[d];
  return n;
}

/* The random stream of a tensor is keyed by its canonical (transformers 5, per-expert) name,
 * so mixtral's old names and fused expert tensors hold the same values. */
static uint64_t name_hash(uint64_t seed, const char *name) {
  static const char *from[] = {"block_sparse_moe", ".w1.", ".w3.", ".w2."};
  static const char *to[] = {"mlp", ".gate_proj.", ".up_proj.", ".down_proj."};
  char c[256], tmp[256];
  snprintf(c, sizeof c, "%s", name);
  for (int k = 0; k < 4; k++) {
    char *at = strstr(c, from[k]);
    if (!at) continue;
    snprintf(tmp, sizeof tmp, "%.*s%s%s", (int)(at - c), c, to[k], at + strlen(from[k]));
    memcpy(c, tmp, sizeof c);
  }
  uint64_t h = 1469598103934665603ull;
  for (const char *s = c; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return mk_rng_hash(seed, h);
}

/* The stream of segment `seg` of a tensor: the whole tensor, or one expert's gate/up/down. */
static uint64_t segment_hash(uint64_t seed, const gen_tensor *t, int64_t seg) {
  if (!t->fused) return name_hash(seed, t->name);
  char n[200];
  int pre = (int)(strstr(t->name, ".experts.") - t->name);
  const char *which = t->fused == 2 ? "down_proj" : seg % 2 ? "up_proj" : "gate_proj";
  snprintf(n, sizeof n, "%.*s.experts.%lld.%s.weight", pre, t->name, (long long)(t->fused == 2 ? seg : seg / 2), which);
  return name_hash(seed, n);
}

static mk_status write_config(const mk_gen_params *p, const char *dir) {
  cJSON *c = cJSON_CreateObject();
  mk_model_family f = p->family;
  int qwen = f == MK_FAMILY_QWEN2_MOE || f == MK_FAMILY_QWEN3_MOE;
  cJSON_AddStringToObject(c, "model_type", mk_model_family_name(f));
  cJSON_AddNumberToObject(c, "hidden_size", p->hidden);
  cJSON_AddNumberToObject(c, "num_hidden_layers", p->layers);
  cJSON_AddNumberToObject(c, "num_attention_heads", p->heads);
  cJSON_AddNumberToObject(c, "num_key_value_heads", p->kv_heads);
  cJSON_AddNumberToObject(c, "head_dim", p->head_dim);
  cJSON_AddNumberToObject(c, "vocab_size", p->vocab);
  cJSON_AddNumberToObject(c, f == MK_FAMILY_MIXTRAL ? "num_local_experts" : "num_experts", p->experts);
  cJSON_AddNumberToObject(c, "num_experts_per_tok", p->top_k);
  if (qwen) {
    cJSON_AddNumberToObject(c, "moe_intermediate_size", p->expert_inter);
    cJSON_AddNumberToObject(c, "intermediate_size", p->dense_inter ? p->dense_inter : 4 * p->hidden);
    cJSON_AddNumberToObject(c, "decoder_sparse_step", 1);
    cJSON *mo = cJSON_AddArrayToObject(c, "mlp_only_layers");
    if (p->mlp_only_layer >= 0) cJSON_AddItemToArray(mo, cJSON_CreateNumber(p->mlp_only_layer));
    cJSON_AddBoolToObject(c, "use_sliding_window", 0);
  } else {
    cJSON_AddNumberToObject(c, "intermediate_size", p->expert_inter);
  }
  if (f == MK_FAMILY_QWEN2_MOE) cJSON_AddNumberToObject(c, "shared_expert_intermediate_size", p->shared_inter);
  cJSON_AddBoolToObject(c, "norm_topk_prob", p->norm_topk_prob);
  cJSON_AddBoolToObject(c, "tie_word_embeddings", p->tie_embeddings);
  cJSON_AddNumberToObject(c, "rms_norm_eps", 1e-6);
  cJSON_AddNumberToObject(c, "rope_theta", f == MK_FAMILY_MIXTRAL ? 1e6 : 10000);
  cJSON_AddNumberToObject(c, "max_position_embeddings", 4096);
  cJSON_AddStringToObject(c, "hidden_act", "silu");
  cJSON_AddStringToObject(c, "torch_dtype", p->dtype == MK_DTYPE_F32 ? "float32" : "bfloat16");
  char *text = cJSON_Print(c);
  cJSON_Delete(c);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/config.json", dir);
  FILE *fp = text ? fopen(path, "w") : NULL;
  int ok = fp && fputs(text, fp) >= 0 && fputc('\n', fp) != EOF;
  if (fp && fclose(fp)) ok = 0;
  free(text);
  if (!ok) MK_ERR_RETURN(MK_STATUS_SYSTEM_ERROR, MK_SUBSYS_MODEL, "mk-gen: cannot write %s: %s", path, strerror(errno));
  return MK_STATUS_OK;
}

/* One safetensors file holding tensors [a, b) of the list. */
static mk_status write_shard(const mk_gen_params *p, const gen_list *L, int a, int b, const char *path) {
  size_t es = mk_dtype_size(p->dtype);
  size_t cap = 4096 + (size_t)(b - a) * 256, len = 0;
  char *hdr = malloc(cap);
  float *buf = malloc(sizeof(float) << 16);
  FILE *fp = NULL;
  mk_status st = MK_STATUS_OK;
  if (!hdr || !buf) { st = MK_STATUS_OUT_OF_MEMORY; goto fail; }
  len += (size_t)snprintf(hdr + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
  uint64_t off = 0;
  for (int i = a; i < b; i++) {
    const gen_tensor *t = &L->t[i];
    uint64_t nb = numel(t) * es;
    len += (size_t)snprintf(hdr + len, cap - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t->name, mk_dtype_name(p->dtype));
    for (int d = 0; d < t->nd; d++) len += (size_t)snprintf(hdr + len, cap - len, "%s%lld", d ? "," : "", (long long)t->shape[d]);
    len += (size_t)snprintf(hdr + len, cap - len, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                            (unsigned long long)(off + nb));
    off += nb;
  }
  len += (size_t)snprintf(hdr + len, cap - len, "}");
  while (len % 8) hdr[len++] = ' ';
  fp = fopen(path, "wb");
  if (!fp) MK_ERR_RETURN(MK_STATUS_SYSTEM_ERROR, MK_SUBSYS_MODEL, "mk-gen: cannot write %s: %s", path, strerror(errno));
  uint8_t lb[8];
  for (int i = 0; i < 8; i++) lb[i] = (uint8_t)((uint64_t)len >> (8 * i));
  int ok = fwrite(lb, 1, 8, fp) == 8 && fwrite(hdr, 1, len, fp) == len;
  for (int i = a; ok && i < b; i++) {
    const gen_tensor *t = &L->t[i];
    uint64_t n = numel(t), segn = t->fused ? (uint64_t)t->shape[2] * (uint64_t)(t->fused == 1 ? t->shape[1] / 2 : t->shape[1]) : n;
    uint64_t cur = UINT64_MAX, hs = 0;
    for (uint64_t j = 0; ok && j < n; j += 1u << 16) {
      size_t k = (size_t)(n - j < (1u << 16) ? n - j : (1u << 16));
      for (size_t x = 0; x < k; x++) {
        uint64_t g = j + x, seg = g / segn;
        if (seg != cur) cur = seg, hs = segment_hash(p->seed, t, (int64_t)seg);
        buf[x] = mk_rng_uniform(hs, g % segn, t->lo, t->scale);
      }
      if (p->dtype == MK_DTYPE_BF16) {
        uint16_t *h = (uint16_t *)buf;
        for (size_t x = 0; x < k; x++) h[x] = mk_bf16_from_float(buf[x]);
      }
      ok = fwrite(buf, es, k, fp) == k;
    }
  }
  if (fclose(fp)) ok = 0;
  if (!ok) { MK_WARN(MK_SUBSYS_MODEL, "mk-gen: write to %s failed: %s", path, strerror(errno)); st = MK_STATUS_SYSTEM_ERROR; }
fail:
  free(hdr);
  free(buf);
  return st;
}

mk_status mk_model_gen(const mk_gen_params *p, const char *dir) {
  if (!p || !dir || p->layers < 1 || p->layers > MK_MODEL_MAX_LAYERS || p->hidden < 1 || p->heads < 1 || p->kv_heads < 1 ||
      p->heads % p->kv_heads || p->head_dim < 2 || p->head_dim % 2 || p->experts < 1 || p->top_k < 1 ||
      p->top_k > p->experts || p->expert_inter < 1 || p->vocab < 1 || p->shards < 1 ||
      (p->dtype != MK_DTYPE_BF16 && p->dtype != MK_DTYPE_F32) || (unsigned)p->family >= MK_FAMILY_COUNT_)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL,
                  "mk-gen: bad sizes (need layers, hidden, heads, kv_heads dividing heads, even head_dim, experts, "
                  "top_k <= experts, expert_inter, vocab, shards >= 1; dtype BF16 or F32)");
  if (p->mlp_only_layer >= 0 && (p->mlp_only_layer >= p->layers || !p->dense_inter ||
                                 (p->family != MK_FAMILY_QWEN2_MOE && p->family != MK_FAMILY_QWEN3_MOE)))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "mk-gen: a dense layer needs a qwen family and dense_inter");
  if (mkdir(dir, 0755) && errno != EEXIST)
    MK_ERR_RETURN(MK_STATUS_SYSTEM_ERROR, MK_SUBSYS_MODEL, "mk-gen: cannot create %s: %s", dir, strerror(errno));
  gen_list L = {0};
  mk_status st;
  char path[PATH_MAX];
  cJSON *idx = NULL;
  char *text = NULL;
  MK_CHECK_GOTO(build_list(p, &L), st, fail);
  MK_CHECK_GOTO(write_config(p, dir), st, fail);
  int ns = p->shards < L.n ? p->shards : L.n;
  snprintf(path, sizeof path, "%s/%s", dir, ns == 1 ? "model.safetensors.index.json" : "model.safetensors");
  unlink(path); /* a stale file of the other layout would win */
  if (ns == 1) {
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    MK_CHECK_GOTO(write_shard(p, &L, 0, L.n, path), st, fail);
    goto fail; /* done */
  }
  idx = cJSON_CreateObject();
  cJSON *meta = cJSON_AddObjectToObject(idx, "metadata");
  cJSON *wm = cJSON_AddObjectToObject(idx, "weight_map");
  uint64_t total = 0;
  for (int s = 0; s < ns; s++) {
    int a = (int)((int64_t)L.n * s / ns), b = (int)((int64_t)L.n * (s + 1) / ns);
    char file[64];
    snprintf(file, sizeof file, "model-%05d-of-%05d.safetensors", s + 1, ns);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    MK_CHECK_GOTO(write_shard(p, &L, a, b, path), st, fail);
    for (int i = a; i < b; i++) {
      cJSON_AddStringToObject(wm, L.t[i].name, file);
      total += numel(&L.t[i]) * mk_dtype_size(p->dtype);
    }
  }
  cJSON_AddNumberToObject(meta, "total_size", (double)total);
  text = cJSON_Print(idx);
  snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
  FILE *fp = text ? fopen(path, "w") : NULL;
  int ok = fp && fputs(text, fp) >= 0;
  if (fp && fclose(fp)) ok = 0;
  if (!ok) {
    MK_WARN(MK_SUBSYS_MODEL, "mk-gen: cannot write %s", path);
    st = MK_STATUS_SYSTEM_ERROR;
  }
fail:
  free(text);
  cJSON_Delete(idx);
  free(L.t);
  return st;
}
