/* config.c — config.json of the supported MoE families (HF transformers spelling):
 *   mixtral    num_local_experts, intermediate_size = expert size, top-k renormalised
 *   qwen2_moe  num_experts, moe_intermediate_size, shared expert with a sigmoid gate,
 *              q/k/v biases, decoder_sparse_step, mlp_only_layers, norm_topk_prob
 *   qwen3_moe  as qwen2_moe without the shared expert and biases; per-head q/k RMSNorm
 *   olmoe      num_experts, intermediate_size = expert size, full-width q/k RMSNorm
 * Aliases: num_experts/num_local_experts, head_dim (default hidden/heads), rope_theta at the
 * top level or under rope_parameters. Features not implemented are refused by name. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "models/mk_models.h"

mk_status mk_models_read_text_(const char *path, size_t max, char **out, size_t *len);

static const char *k_family_names[MK_FAMILY_COUNT_] = {"mixtral", "qwen2_moe", "qwen3_moe", "olmoe"};

const char *mk_model_family_name(mk_model_family f) {
  return (unsigned)f < MK_FAMILY_COUNT_ ? k_family_names[f] : "?";
}

int mk_model_family_from_name(const char *name, mk_model_family *out) {
  for (int i = 0; i < MK_FAMILY_COUNT_; i++)
    if (name && !strcmp(name, k_family_names[i])) {
      *out = (mk_model_family)i;
      return 0;
    }
  return -1;
}

#define CFG_ERR(...)                                                  \
  do {                                                                \
    char m_[384];                                                     \
    snprintf(m_, sizeof m_, __VA_ARGS__);                             \
    MK_WARN(MK_SUBSYS_MODEL, "config %s: %s", label, m_);             \
    st = MK_STATUS_INVALID_ARGUMENT;                                  \
    goto fail;                                                        \
  } while (0)

static const cJSON *item(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return v && !cJSON_IsNull(v) ? v : NULL;
}

/* Integer field in [lo, hi]; absent/null -> def (def < lo means required). 0 = ok. */
static int get_int(const cJSON *o, const char *key, long long def, long long lo, long long hi, int *out,
                   const char **why) {
  const cJSON *v = item(o, key);
  if (!v) {
    if (def < lo) return *why = "missing", -1;
    *out = (int)def;
    return 0;
  }
  if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble)) return *why = "not an integer", -1;
  if (v->valuedouble < (double)lo || v->valuedouble > (double)hi) return *why = "out of range", -1;
  *out = (int)v->valuedouble;
  return 0;
}

static int get_bool(const cJSON *o, const char *key, int def, int *out) {
  const cJSON *v = item(o, key);
  if (!v) return *out = def, 0;
  if (!cJSON_IsBool(v)) return -1;
  *out = cJSON_IsTrue(v);
  return 0;
}

static int get_num(const cJSON *o, const char *key, double def, double *out) {
  const cJSON *v = item(o, key);
  if (!v) return *out = def, 0;
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble <= 0) return -1;
  *out = v->valuedouble;
  return 0;
}

/* rope_scaling / rope_parameters: only the default (unscaled) rope is implemented. */
static const char *rope_unsupported(const cJSON *r) {
  if (!r) return NULL;
  if (!cJSON_IsObject(r)) return "not an object";
  const cJSON *t = item(r, "rope_type");
  if (!t) t = item(r, "type");
  if (t && (!cJSON_IsString(t) || strcmp(t->valuestring, "default"))) return cJSON_IsString(t) ? t->valuestring : "?";
  const cJSON *f = item(r, "partial_rotary_factor");
  if (f && (!cJSON_IsNumber(f) || f->valuedouble != 1.0)) return "partial_rotary_factor";
  return NULL;
}

mk_status mk_model_config_parse(const char *label, const char *json, size_t len, mk_model_config_t *c) {
  mk_status st = MK_STATUS_OK;
  memset(c, 0, sizeof *c);
  if (!label) label = "config.json";
  cJSON *root = cJSON_ParseWithLength(json, len);
  const char *why = "";
  if (!cJSON_IsObject(root)) CFG_ERR("not a JSON object");
  const cJSON *mt = item(root, "model_type");
  if (!cJSON_IsString(mt)) CFG_ERR("missing model_type");
  if (mk_model_family_from_name(mt->valuestring, &c->family))
    CFG_ERR("model_type '%.64s' is not supported (mixtral, qwen2_moe, qwen3_moe, olmoe)", mt->valuestring);
  mk_model_family F = c->family;
  int qwen = F == MK_FAMILY_QWEN2_MOE || F == MK_FAMILY_QWEN3_MOE;
#define INT_(key, def, lo, hi, dst) \
  if (get_int(root, key, def, lo, hi, dst, &why)) CFG_ERR("%s: %s", key, why)
  INT_("hidden_size", -1, 1, 1 << 20, &c->hidden);
  INT_("num_hidden_layers", -1, 1, MK_MODEL_MAX_LAYERS, &c->n_layers);
  INT_("num_attention_heads", -1, 1, 1 << 12, &c->n_heads);
  INT_("num_key_value_heads", c->n_heads, 1, c->n_heads, &c->n_kv_heads);
  INT_("vocab_size", -1, 1, 1 << 26, &c->vocab);
  INT_("max_position_embeddings", 4096, 1, 1 << 30, &c->max_positions);
  if (c->n_heads % c->n_kv_heads) CFG_ERR("num_attention_heads %d is not a multiple of num_key_value_heads %d", c->n_heads, c->n_kv_heads);
  int def_hd = c->hidden % c->n_heads ? 0 : c->hidden / c->n_heads;
  INT_("head_dim", def_hd ? def_hd : -1, 1, 1 << 12, &c->head_dim);
  if (c->head_dim % 2) CFG_ERR("head_dim %d is odd (RoPE needs pairs)", c->head_dim);
  const char *ek = item(root, "num_experts") ? "num_experts" : "num_local_experts";
  INT_(ek, -1, 1, 1 << 16, &c->n_experts);
  INT_("num_experts_per_tok", -1, 1, c->n_experts, &c->top_k);
  if (qwen) {
    INT_("moe_intermediate_size", -1, 1, 1 << 20, &c->moe_inter);
    INT_("intermediate_size", 0, 0, 1 << 20, &c->dense_inter);
  } else {
    INT_("intermediate_size", -1, 1, 1 << 20, &c->moe_inter);
  }
  if (F == MK_FAMILY_QWEN2_MOE) INT_("shared_expert_intermediate_size", 0, 0, 1 << 20, &c->shared_inter);
  int step = 1;
  INT_("decoder_sparse_step", 1, 1, 1 << 20, &step);
#undef INT_
  if (get_bool(root, "norm_topk_prob", F == MK_FAMILY_MIXTRAL, &c->norm_topk_prob)) CFG_ERR("norm_topk_prob: not a bool");
  if (F == MK_FAMILY_MIXTRAL && !c->norm_topk_prob) CFG_ERR("norm_topk_prob false is not how mixtral routes");
  if (get_bool(root, "tie_word_embeddings", 0, &c->tie_word_embeddings)) CFG_ERR("tie_word_embeddings: not a bool");
  double eps;
  if (get_num(root, "rms_norm_eps", 1e-6, &eps)) CFG_ERR("rms_norm_eps: not a positive number");
  c->rms_eps = (float)eps;
  /* rope: rope_parameters (transformers 5) or rope_theta/rope_scaling at the top level. */
  const cJSON *rp = item(root, "rope_parameters");
  const char *bad = rope_unsupported(rp);
  if (bad) CFG_ERR("rope_parameters: rope type '%s' is not supported (only default rope)", bad);
  bad = rope_unsupported(item(root, "rope_scaling"));
  if (bad) CFG_ERR("rope_scaling: '%s' is not supported (only default rope)", bad);
  if (item(root, "partial_rotary_factor")) {
    double f;
    if (get_num(root, "partial_rotary_factor", 1, &f) || f != 1.0) CFG_ERR("partial_rotary_factor != 1 is not supported");
  }
  double theta_def = F == MK_FAMILY_MIXTRAL ? 1e6 : 10000.0;
  if (rp && item(rp, "rope_theta")) {
    if (get_num(rp, "rope_theta", theta_def, &c->rope_theta)) CFG_ERR("rope_parameters.rope_theta: not a positive number");
  } else if (get_num(root, "rope_theta", theta_def, &c->rope_theta)) {
    CFG_ERR("rope_theta: not a positive number");
  }
  /* Features not implemented. */
  const cJSON *act = item(root, "hidden_act");
  if (act && (!cJSON_IsString(act) || strcmp(act->valuestring, "silu")))
    CFG_ERR("hidden_act '%s' is not supported (silu only)", cJSON_IsString(act) ? act->valuestring : "?");
  int use_sw = F == MK_FAMILY_MIXTRAL ? item(root, "sliding_window") != NULL : 0;
  if (qwen && get_bool(root, "use_sliding_window", 0, &use_sw)) CFG_ERR("use_sliding_window: not a bool");
  if (use_sw) CFG_ERR("sliding_window attention is not supported");
  const cJSON *lt = item(root, "layer_types");
  for (const cJSON *e = lt ? lt->child : NULL; e; e = e->next)
    if (!cJSON_IsString(e) || strcmp(e->valuestring, "full_attention"))
      CFG_ERR("layer_types: '%s' is not supported (sliding window)", cJSON_IsString(e) ? e->valuestring : "?");
  if (item(root, "clip_qkv")) CFG_ERR("clip_qkv is not supported");
  int ab = 0;
  if (get_bool(root, "attention_bias", 0, &ab)) CFG_ERR("attention_bias: not a bool");
  if (ab) CFG_ERR("attention_bias true is not supported for %s", mk_model_family_name(F));
  if (F == MK_FAMILY_QWEN2_MOE && get_bool(root, "qkv_bias", 1, &c->qkv_bias)) CFG_ERR("qkv_bias: not a bool");
  if (F == MK_FAMILY_OLMOE && c->head_dim * c->n_heads != c->hidden)
    CFG_ERR("olmoe needs head_dim x num_attention_heads == hidden_size (its q/k norms are sized from hidden_size)");
  c->qk_norm = F == MK_FAMILY_QWEN3_MOE ? MK_QK_NORM_HEAD : F == MK_FAMILY_OLMOE ? MK_QK_NORM_FULL : MK_QK_NORM_NONE;
  /* Which layers are MoE. */
  for (int l = 0; l < c->n_layers; l++) c->is_moe[l] = qwen ? (l + 1) % step == 0 : 1;
  const cJSON *mo = item(root, "mlp_only_layers");
  if (mo && !cJSON_IsArray(mo)) CFG_ERR("mlp_only_layers: not an array");
  for (const cJSON *e = mo ? mo->child : NULL; e; e = e->next) {
    if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 0 ||
        e->valuedouble >= c->n_layers)
      CFG_ERR("mlp_only_layers: entry is not a layer index below %d", c->n_layers);
    if (!qwen) CFG_ERR("mlp_only_layers is not supported for %s", mk_model_family_name(F));
    c->is_moe[(int)e->valuedouble] = 0;
  }
  for (int l = 0; l < c->n_layers; l++)
    if (!c->is_moe[l] && !c->dense_inter) CFG_ERR("layer %d is a dense MLP layer but intermediate_size is missing", l);
fail:
  cJSON_Delete(root);
  return st;
}

mk_status mk_model_config_load(const char *path, mk_model_config_t *out) {
  char *text;
  size_t len;
  MK_CHECK(mk_models_read_text_(path, 16u << 20, &text, &len));
  mk_status st = mk_model_config_parse(path, text, len, out);
  free(text);
  return st;
}
