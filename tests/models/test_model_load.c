/* test_model_load.c — config.json parsing (families, aliases, refusals by name) and the
 * loading checks: a model written by mk_model_gen loads; the same checkpoint with a tensor
 * missing, an extra one, one transposed or one integer-typed is refused naming the tensor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/mk_models.h"
#include "tests/mk_test.h"

static char g_msg[4096];
static void capture(mk_log_level lvl, unsigned subsys, const char *line, void *user) {
  (void)lvl, (void)subsys, (void)user;
  snprintf(g_msg, sizeof g_msg, "%s", line);
}

static void cfg_ok(const char *json, mk_model_config_t *c) {
  g_msg[0] = 0;
  mk_status st = mk_model_config_parse("test-config", json, strlen(json), c);
  if (st) MK_TEST_FAIL_("config refused (%s): %s\n%s", mk_status_name(st), g_msg, json);
}

static void cfg_refused(const char *json, const char *want) {
  mk_model_config_t c;
  g_msg[0] = 0;
  mk_status st = mk_model_config_parse("test-config", json, strlen(json), &c);
  if (st == MK_STATUS_OK || !strstr(g_msg, want) || !strstr(g_msg, "test-config"))
    MK_TEST_FAIL_("want refusal '%s', got %s '%s' for\n%s", want, mk_status_name(st), g_msg, json);
}

#define BASE "\"hidden_size\":64,\"num_hidden_layers\":4,\"num_attention_heads\":4,\"vocab_size\":100,"
static void configs(void) {
  mk_model_config_t c;
  cfg_ok("{\"model_type\":\"mixtral\"," BASE "\"num_key_value_heads\":2,\"num_local_experts\":8,"
         "\"num_experts_per_tok\":2,\"intermediate_size\":128,\"rms_norm_eps\":1e-5,\"sliding_window\":null}", &c);
  ASSERT_EQ(c.family, MK_FAMILY_MIXTRAL);
  ASSERT_EQ(c.n_experts, 8);
  ASSERT_EQ(c.moe_inter, 128);
  ASSERT_EQ(c.head_dim, 16); /* default hidden / heads */
  ASSERT_EQ(c.n_kv_heads, 2);
  ASSERT_TRUE(c.norm_topk_prob && !c.qkv_bias && c.qk_norm == MK_QK_NORM_NONE && !c.tie_word_embeddings);
  ASSERT_NEAR(c.rope_theta, 1e6, 0);
  ASSERT_NEAR(c.rms_eps, 1e-5, 1e-12);
  for (int l = 0; l < 4; l++) ASSERT_EQ(c.is_moe[l], 1);
  cfg_ok("{\"model_type\":\"qwen2_moe\"," BASE "\"num_experts\":6,\"num_experts_per_tok\":2,\"moe_intermediate_size\":32,"
         "\"intermediate_size\":96,\"shared_expert_intermediate_size\":48,\"decoder_sparse_step\":2,"
         "\"mlp_only_layers\":[3],\"head_dim\":8,\"rope_parameters\":{\"rope_type\":\"default\",\"rope_theta\":5000},"
         "\"tie_word_embeddings\":true,\"use_sliding_window\":false,\"sliding_window\":4096}", &c);
  ASSERT_EQ(c.family, MK_FAMILY_QWEN2_MOE);
  ASSERT_EQ(c.head_dim, 8);
  ASSERT_EQ(c.shared_inter, 48);
  ASSERT_EQ(c.dense_inter, 96);
  ASSERT_TRUE(c.qkv_bias && !c.norm_topk_prob && c.tie_word_embeddings);
  ASSERT_NEAR(c.rope_theta, 5000, 0);
  ASSERT_EQ(c.is_moe[0], 0); /* (l + 1) % 2 */
  ASSERT_EQ(c.is_moe[1], 1);
  ASSERT_EQ(c.is_moe[2], 0);
  ASSERT_EQ(c.is_moe[3], 0); /* mlp_only_layers */
  cfg_ok("{\"model_type\":\"qwen3_moe\"," BASE "\"num_local_experts\":4,\"num_experts_per_tok\":1,"
         "\"moe_intermediate_size\":32,\"norm_topk_prob\":true,\"rope_theta\":1000}", &c);
  ASSERT_EQ(c.n_experts, 4); /* alias */
  ASSERT_TRUE(c.qk_norm == MK_QK_NORM_HEAD && c.norm_topk_prob && !c.qkv_bias && !c.shared_inter);
  ASSERT_NEAR(c.rope_theta, 1000, 0);
  cfg_ok("{\"model_type\":\"olmoe\"," BASE "\"num_experts\":4,\"num_experts_per_tok\":2,\"intermediate_size\":32,"
         "\"clip_qkv\":null}", &c);
  ASSERT_TRUE(c.qk_norm == MK_QK_NORM_FULL && !c.norm_topk_prob);
  ASSERT_NEAR(c.rope_theta, 10000, 0);
  cfg_refused("{\"model_type\":\"llama\"," BASE "\"x\":1}", "model_type 'llama' is not supported");
  cfg_refused("{\"model_type\":\"mixtral\"," BASE "\"num_local_experts\":8,\"num_experts_per_tok\":2,"
              "\"intermediate_size\":128,\"sliding_window\":4096}", "sliding_window");
  cfg_refused("{\"model_type\":\"qwen3_moe\"," BASE "\"num_experts\":4,\"num_experts_per_tok\":1,"
              "\"moe_intermediate_size\":32,\"use_sliding_window\":true}", "sliding_window");
  cfg_refused("{\"model_type\":\"qwen3_moe\"," BASE "\"num_experts\":4,\"num_experts_per_tok\":1,"
              "\"moe_intermediate_size\":32,\"rope_scaling\":{\"rope_type\":\"yarn\",\"factor\":4}}", "'yarn' is not supported");
  cfg_refused("{\"model_type\":\"qwen3_moe\"," BASE "\"num_experts\":4,\"num_experts_per_tok\":1,"
              "\"moe_intermediate_size\":32,\"rope_parameters\":{\"rope_type\":\"llama3\"}}", "'llama3' is not supported");
  cfg_refused("{\"model_type\":\"olmoe\"," BASE "\"num_experts\":4,\"num_experts_per_tok\":2,\"intermediate_size\":32,"
              "\"clip_qkv\":8}", "clip_qkv");
  cfg_refused("{\"model_type\":\"olmoe\"," BASE "\"num_experts\":4,\"num_experts_per_tok\":5,\"intermediate_size\":32}",
              "num_experts_per_tok: out of range");
  cfg_refused("{\"model_type\":\"olmoe\"," BASE "\"num_experts_per_tok\":2,\"intermediate_size\":32}",
              "num_local_experts: missing");
  cfg_refused("{\"model_type\":\"qwen2_moe\"," BASE "\"num_experts\":4,\"num_experts_per_tok\":2,"
              "\"moe_intermediate_size\":32,\"mlp_only_layers\":[1]}", "layer 1 is a dense MLP layer");
  cfg_refused("{\"model_type\":\"mixtral\"," BASE "\"num_local_experts\":8,\"num_experts_per_tok\":2,"
              "\"intermediate_size\":128,\"hidden_act\":\"gelu\"}", "hidden_act 'gelu'");
  cfg_refused("[1]", "not a JSON object");
}

/* ---- checkpoint mutations --------------------------------------------------------------- */
typedef struct {
  char name[160];
  mk_dtype dt;
  int nd;
  int64_t shape[3];
  const void *data;
  uint64_t nbytes;
} wt;

static void write_st(const char *path, const wt *t, int n) {
  char *hdr = malloc(1 << 20);
  size_t o = (size_t)sprintf(hdr, "{");
  uint64_t off = 0;
  for (int i = 0; i < n; i++) {
    o += (size_t)sprintf(hdr + o, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", i ? "," : "", t[i].name, mk_dtype_name(t[i].dt));
    for (int d = 0; d < t[i].nd; d++) o += (size_t)sprintf(hdr + o, "%s%lld", d ? "," : "", (long long)t[i].shape[d]);
    o += (size_t)sprintf(hdr + o, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                         (unsigned long long)(off + t[i].nbytes));
    off += t[i].nbytes;
  }
  o += (size_t)sprintf(hdr + o, "}");
  FILE *f = fopen(path, "wb");
  uint64_t h = o;
  ASSERT_TRUE(f && fwrite(&h, 8, 1, f) == 1 && fwrite(hdr, 1, o, f) == o);
  for (int i = 0; i < n; i++) ASSERT_EQ(fwrite(t[i].data, 1, t[i].nbytes, f), t[i].nbytes);
  ASSERT_EQ(fclose(f), 0);
  free(hdr);
}

static void expect_load_refused(const char *dir, const char *want) {
  mk_model_t *m = NULL;
  g_msg[0] = 0;
  mk_status st = mk_model_open(dir, &m);
  if (st == MK_STATUS_OK || m || !strstr(g_msg, want)) MK_TEST_FAIL_("want refusal '%s', got %s '%s'", want, mk_status_name(st), g_msg);
}

static void loading(const char *base) {
  char dir[512], path[600];
  snprintf(dir, sizeof dir, "%s/qwen2", base);
  mk_gen_params p;
  mk_gen_params_default(MK_FAMILY_QWEN2_MOE, &p);
  p.dtype = MK_DTYPE_F32;
  p.mlp_only_layer = 1;
  p.seed = mk_test_seed();
  ASSERT_OK(mk_model_gen(&p, dir));
  mk_model_t *m;
  ASSERT_OK(mk_model_open(dir, &m));
  const mk_model_config_t *c = mk_model_config(m);
  ASSERT_EQ(c->is_moe[1], 0);
  ASSERT_TRUE(mk_model_weight(m, MK_W_DENSE_GATE, 1, -1) != NULL);
  ASSERT_TRUE(mk_model_weight(m, MK_W_ROUTER, 1, -1) == NULL);
  ASSERT_TRUE(mk_model_weight(m, MK_W_EXPERT_DOWN, 0, 3) != NULL);
  ASSERT_TRUE(mk_model_weight(m, MK_W_Q_BIAS, 0, -1) != NULL);
  ASSERT_TRUE(mk_model_weight(m, MK_W_SHARED_EXPERT_GATE, 0, -1) != NULL);
  /* Copy the checkpoint's tensors, then write mutated copies. */
  const mk_st_t *st = mk_model_checkpoint(m);
  int n = mk_st_count(st);
  /* (m is closed before the file is rewritten) */
  wt *t = calloc((size_t)n + 1, sizeof *t);
  for (int i = 0; i < n; i++) {
    const mk_st_tensor *s = mk_st_get(st, i);
    snprintf(t[i].name, sizeof t[i].name, "%s", s->name);
    t[i].dt = s->dtype, t[i].nd = s->ndim, t[i].nbytes = s->nbytes;
    void *copy = malloc(s->nbytes + 1); /* the file is rewritten below while mapped: copy */
    memcpy(copy, mk_st_data(st, s), s->nbytes);
    t[i].data = copy;
    memcpy(t[i].shape, s->shape, sizeof t[i].shape);
  }
  mk_model_close(m);
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  const char *victim = "model.layers.0.self_attn.o_proj.weight";
  int v = -1;
  for (int i = 0; i < n; i++)
    if (!strcmp(t[i].name, victim)) v = i;
  ASSERT_GE(v, 0);
  wt save = t[v];
  t[v] = t[n - 1]; /* missing */
  write_st(path, t, n - 1);
  expect_load_refused(dir, "missing tensor 'model.layers.0.self_attn.o_proj.weight'");
  t[v] = save;
  t[v].dt = MK_DTYPE_I32; /* integer-typed */
  write_st(path, t, n);
  expect_load_refused(dir, "'model.layers.0.self_attn.o_proj.weight' has dtype I32, not a floating dtype");
  t[v] = save;
  for (int i = 0; i < n; i++) /* transposed */
    if (!strcmp(t[i].name, "model.layers.0.mlp.experts.2.down_proj.weight")) v = i;
  save = t[v];
  t[v].shape[0] = save.shape[1], t[v].shape[1] = save.shape[0];
  write_st(path, t, n);
  expect_load_refused(dir, "'model.layers.0.mlp.experts.2.down_proj.weight' has shape [32, 64], expected [64, 32] (transposed)");
  t[v] = save;
  t[n] = t[v]; /* an extra tensor the config does not explain: an o_proj bias */
  snprintf(t[n].name, sizeof t[n].name, "model.layers.0.self_attn.o_proj.bias");
  t[n].nd = 1, t[n].shape[0] = 64, t[n].nbytes = 256;
  write_st(path, t, n + 1);
  expect_load_refused(dir, "unexpected tensor 'model.layers.0.self_attn.o_proj.bias'");
  snprintf(t[n].name, sizeof t[n].name, "model.layers.0.self_attn.rotary_emb.inv_freq"); /* ignored */
  t[n].nd = 1, t[n].shape[0] = 8, t[n].nbytes = 32;
  write_st(path, t, n + 1);
  mk_model_t *m2;
  ASSERT_OK(mk_model_open(dir, &m2)); /* the unmutated copy loads */
  mk_model_close(m2);
  for (int i = 0; i < n; i++) free((void *)t[i].data);
  free(t);
  mk_model_close(NULL);
  /* every family, both expert layouts, tied embeddings */
  for (int f = 0; f < MK_FAMILY_COUNT_; f++)
    for (int fused = 0; fused < 2; fused++) {
      mk_gen_params_default((mk_model_family)f, &p);
      p.fused_experts = fused, p.tie_embeddings = fused, p.shards = 1 + fused;
      snprintf(dir, sizeof dir, "%s/f%d_%d", base, f, fused);
      ASSERT_OK(mk_model_gen(&p, dir));
      ASSERT_OK(mk_model_open(dir, &m));
      const mk_weight *g = mk_model_weight(m, MK_W_EXPERT_UP, 1, 3);
      ASSERT_TRUE(g != NULL && g->rows == p.expert_inter && g->cols == p.hidden);
      ASSERT_UEQ(g->elem_offset, fused ? (uint64_t)(3 * 2 + 1) * p.expert_inter * p.hidden : 0);
      ASSERT_TRUE((mk_model_weight(m, MK_W_LM_HEAD, -1, -1) == NULL) == fused);
      mk_model_close(m);
    }
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 60);
  mk_log_set_callback(capture, NULL);
  configs();
  char base[] = "/tmp/mk_test_load_XXXXXX";
  ASSERT_TRUE(mkdtemp(base) != NULL);
  loading(base);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  ASSERT_EQ(system(cmd), 0);
  printf("ok\n");
  return 0;
}
