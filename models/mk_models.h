/* mk_models.h — model files and the fp32 reference model.
 *
 *   safetensors   mk_st_*: an mmap reader for one file or a sharded checkpoint directory;
 *                 every field of every header is checked before anything is trusted.
 *   config        mk_model_config_t from config.json (mixtral, qwen2_moe, qwen3_moe, olmoe).
 *   model         mk_model_t: config + checkpoint + the tensor-name map, every expected
 *                 weight checked (present, shape, floating dtype, nothing unexpected).
 *   sharding      mk_shard_plan_t: for a layout (world, tp, ep) and a rank, the box of each
 *                 tensor that rank needs; reading a slice touches only its bytes.
 *   mk-gen        mk_model_gen(): a random model (config.json + safetensors) from a seed.
 *   reference     mk_ref_t: fp32 C forward with a KV cache, greedy generation; block-level
 *                 functions (mk_ref_attention_block, mk_ref_moe_block) for GPU kernel tests.
 *
 * Usage:
 *   mk_model_t *m;  mk_ref_t *ref;
 *   MK_CHECK(mk_model_open("/models/tiny", &m));
 *   MK_CHECK(mk_ref_create(m, 256, &ref));
 *   MK_CHECK(mk_ref_generate(ref, prompt, n_prompt, 32, out_ids, NULL));
 *   mk_ref_destroy(ref); mk_model_close(m);
 * Errors are statuses with a logged message naming the file and the tensor (subsystem MODEL). */
#ifndef MK_MODELS_H
#define MK_MODELS_H

#include <stddef.h>
#include <stdint.h>

#include "core/mk_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- safetensors -------------------------------------------------------------------- */
#define MK_ST_MAX_DIMS 8
#define MK_ST_MAX_HEADER (100ull * 1000 * 1000) /* header length limit, bytes */

typedef struct mk_st_tensor {
  const char *name;
  mk_dtype dtype;
  int ndim;
  int64_t shape[MK_ST_MAX_DIMS];
  uint64_t numel;
  uint64_t offset; /* from the start of its file (8 + header length + data_offsets[0]) */
  uint64_t nbytes;
  int file; /* index into the checkpoint's files */
} mk_st_tensor;

typedef struct mk_st mk_st_t; /* one checkpoint: one file or the shards of an index */

/* A .safetensors file, or a directory holding model.safetensors or
 * model.safetensors.index.json (whose shards must lie inside the directory). */
mk_status mk_st_open(const char *path, mk_st_t **out);
/* Parse a whole file image held in memory (tests, fuzzing). `data` must outlive the handle;
 * `label` names it in messages. */
mk_status mk_st_parse(const char *label, const void *data, size_t size, mk_st_t **out);
void mk_st_close(mk_st_t *st);
int mk_st_count(const mk_st_t *st);
const mk_st_tensor *mk_st_get(const mk_st_t *st, int i);
const mk_st_tensor *mk_st_find(const mk_st_t *st, const char *name); /* NULL if absent */
const void *mk_st_data(const mk_st_t *st, const mk_st_tensor *t);     /* mapped bytes */
const char *mk_st_file_name(const mk_st_t *st, int file);
/* __metadata__ value of the first file that has `key`; NULL if none. */
const char *mk_st_metadata(const mk_st_t *st, const char *key);
/* Copy the box [begin[d], end[d]) of a tensor, converted to fp32, into dst (row-major box).
 * Only the bytes of the box are read. begin/end NULL = the whole tensor. */
mk_status mk_st_read_f32(const mk_st_t *st, const mk_st_tensor *t, const int64_t *begin,
                         const int64_t *end, float *dst);
/* The same, raw bytes in the tensor's own dtype. */
mk_status mk_st_read_raw(const mk_st_t *st, const mk_st_tensor *t, const int64_t *begin,
                         const int64_t *end, void *dst);

/* ---- config.json -------------------------------------------------------------------- */
typedef enum mk_model_family {
  MK_FAMILY_MIXTRAL, MK_FAMILY_QWEN2_MOE, MK_FAMILY_QWEN3_MOE, MK_FAMILY_OLMOE, MK_FAMILY_COUNT_
} mk_model_family;
const char *mk_model_family_name(mk_model_family f); /* the config's model_type */
int mk_model_family_from_name(const char *name, mk_model_family *out);

enum { MK_QK_NORM_NONE = 0, MK_QK_NORM_HEAD = 1, MK_QK_NORM_FULL = 2 };
#define MK_MODEL_MAX_LAYERS 1024

typedef struct mk_model_config {
  mk_model_family family;
  int hidden, n_layers, n_heads, n_kv_heads, head_dim, vocab;
  int n_experts, top_k;
  int moe_inter;    /* per-expert intermediate size */
  int dense_inter;  /* intermediate size of dense-MLP layers (0 if none) */
  int shared_inter; /* qwen2_moe shared expert (0 if none) */
  int norm_topk_prob;
  int qkv_bias;     /* q/k/v projections have biases (qwen2_moe) */
  int qk_norm;      /* MK_QK_NORM_*: per head (qwen3_moe) or full width (olmoe) */
  int tie_word_embeddings;
  int max_positions;
  float rms_eps;
  double rope_theta;
  unsigned char is_moe[MK_MODEL_MAX_LAYERS]; /* decoder_sparse_step / mlp_only_layers */
} mk_model_config_t;

/* Parse config.json text; `label` names it in messages. Refuses an unknown model_type and
 * features not implemented (sliding window, rope scaling, ...) by name. */
mk_status mk_model_config_parse(const char *label, const char *json, size_t len, mk_model_config_t *out);
mk_status mk_model_config_load(const char *path, mk_model_config_t *out);

/* ---- the model: config + checkpoint + name map ---------------------------------------- */
typedef enum mk_weight_role {
  MK_W_EMBED, MK_W_FINAL_NORM, MK_W_LM_HEAD,
  MK_W_ATTN_NORM, MK_W_MLP_NORM,
  MK_W_Q, MK_W_K, MK_W_V, MK_W_O, MK_W_Q_BIAS, MK_W_K_BIAS, MK_W_V_BIAS, MK_W_Q_NORM, MK_W_K_NORM,
  MK_W_ROUTER,
  MK_W_EXPERT_GATE, MK_W_EXPERT_UP, MK_W_EXPERT_DOWN, /* per expert: [I,H], [I,H], [H,I] */
  MK_W_DENSE_GATE, MK_W_DENSE_UP, MK_W_DENSE_DOWN,
  MK_W_SHARED_GATE, MK_W_SHARED_UP, MK_W_SHARED_DOWN, MK_W_SHARED_EXPERT_GATE,
  MK_W_ROLE_COUNT_
} mk_weight_role;
const char *mk_weight_role_name(mk_weight_role r);

/* One logical weight: a contiguous [rows, cols] matrix (cols = 1 for vectors) starting at
 * element `elem_offset` of `tensor`. Per-expert weights of a fused 3-D tensor
 * (mlp.experts.gate_up_proj [E, 2I, H], mlp.experts.down_proj [E, H, I]) are views into it. */
typedef struct mk_weight {
  mk_weight_role role;
  int layer, expert; /* -1 where not applicable */
  int64_t rows, cols;
  uint64_t elem_offset;
  const mk_st_tensor *tensor;
} mk_weight;

typedef struct mk_model mk_model_t;

/* Open a model directory (config.json + safetensors). Every expected tensor must be present
 * with the expected shape and a floating dtype; a missing, unexpected, transposed or
 * integer-typed tensor is refused by name. */
mk_status mk_model_open(const char *dir, mk_model_t **out);
void mk_model_close(mk_model_t *m);
const mk_model_config_t *mk_model_config(const mk_model_t *m);
const mk_st_t *mk_model_checkpoint(const mk_model_t *m);
/* The weight of (role, layer, expert); NULL if the model has none (e.g. a tied lm_head). */
const mk_weight *mk_model_weight(const mk_model_t *m, mk_weight_role role, int layer, int expert);
/* Every weight of the model, in load order (0 <= i < count). */
int mk_model_weight_count(const mk_model_t *m);
const mk_weight *mk_model_weight_at(const mk_model_t *m, int i);
/* Read rows [r0, r1) of a weight as fp32 ([r1-r0, cols]). */
mk_status mk_model_read_f32(const mk_model_t *m, const mk_weight *w, int64_t r0, int64_t r1, float *dst);

/* ---- sharding plans ----------------------------------------------------------------- */
/* world ranks; attention and dense MLP tensor-parallel over tp (tp rank = rank % tp), the
 * experts of each layer owned in contiguous blocks by ep ranks (ep rank = rank % ep);
 * world % tp == 0, world % ep == 0. */
typedef struct mk_layout {
  int world, tp, ep;
} mk_layout_t;

typedef enum mk_split { MK_SPLIT_NONE, MK_SPLIT_ROWS, MK_SPLIT_COLS, MK_SPLIT_EXPERTS } mk_split;

typedef struct mk_shard_slice {
  const mk_st_tensor *tensor;
  mk_split split;
  int64_t begin[MK_ST_MAX_DIMS], end[MK_ST_MAX_DIMS]; /* the box this rank reads */
} mk_shard_slice;

typedef struct mk_shard_plan mk_shard_plan_t;
mk_status mk_shard_plan_create(const mk_model_t *m, const mk_layout_t *layout, int rank, mk_shard_plan_t **out);
void mk_shard_plan_destroy(mk_shard_plan_t *p);
int mk_shard_plan_count(const mk_shard_plan_t *p);
const mk_shard_slice *mk_shard_plan_get(const mk_shard_plan_t *p, int i);
uint64_t mk_shard_plan_bytes(const mk_shard_plan_t *p); /* bytes this rank reads */
/* Experts of a layer owned by ep rank r: [first, first + count). */
void mk_shard_experts(int n_experts, int ep, int ep_rank, int *first, int *count);
/* Read one slice as raw bytes / as fp32 (box, row-major). */
mk_status mk_shard_plan_read(const mk_shard_plan_t *p, const mk_model_t *m, int i, void *dst);
mk_status mk_shard_plan_read_f32(const mk_shard_plan_t *p, const mk_model_t *m, int i, float *dst);

/* ---- mk-gen ------------------------------------------------------------------------- */
typedef struct mk_gen_params {
  mk_model_family family;
  int layers, hidden, heads, kv_heads, head_dim, experts, top_k, expert_inter, vocab;
  int dense_inter;  /* qwen2/qwen3: intermediate_size of dense layers (mlp_only_layers) */
  int shared_inter; /* qwen2_moe shared expert size */
  int shards;       /* number of safetensors files (1 = model.safetensors) */
  int fused_experts;/* write mlp.experts.gate_up_proj / down_proj 3-D tensors */
  int tie_embeddings;
  int norm_topk_prob;
  int mlp_only_layer; /* qwen: one dense layer index (-1 = none) */
  mk_dtype dtype;   /* BF16 or F32 */
  uint64_t seed;
  float init_scale; /* linear weights uniform in +-init_scale/sqrt(fan_in), embeddings in +-init_scale
                     * (0 = 1; sqrt(3) gives the standard deviations of the parity script's randn init) */
} mk_gen_params;
/* Tiny defaults for a family (load in well under a second). */
void mk_gen_params_default(mk_model_family family, mk_gen_params *p);
/* Write config.json and the safetensors into dir (created if missing). Values depend only on
 * (seed, tensor name, element index), so sharding never changes them. */
mk_status mk_model_gen(const mk_gen_params *p, const char *dir);

/* ---- fp32 reference model ------------------------------------------------------------- */
typedef struct mk_ref mk_ref_t;
/* Converts every weight to fp32; KV cache for max_seq positions. Matmuls and attention run
 * on a process-wide pool of MK_REF_THREADS threads (default: the online CPUs); results do
 * not depend on the thread count. */
mk_status mk_ref_create(const mk_model_t *m, int max_seq, mk_ref_t **out);
/* bf16-faithful mode (opt-in, for precision studies): the same forward with every weight
 * matrix rounded to bf16 and every activation rounded to bf16 exactly where the GPU model
 * (mk_model_gpu_t) stores bf16: norm outputs fed to GEMMs, q/k/v (again after bias, q/k norm
 * and RoPE), the KV cache, the attention output, the o/down projections' outputs, expert and
 * MLP intermediates, the MoE block's routed output; fp32 where the GPU keeps fp32: residual
 * stream, norms' weights, biases, router and shared-expert-gate inputs, final norm, logits. */
mk_status mk_ref_create_bf16(const mk_model_t *m, int max_seq, mk_ref_t **out);
/* A second handle that borrows base's fp32 weights (base must outlive it) and has its own
 * KV cache of max_seq positions: one per running sequence when serving. */
mk_status mk_ref_create_shared(const mk_ref_t *base, int max_seq, mk_ref_t **out);
int mk_ref_max_seq(const mk_ref_t *r);
void mk_ref_destroy(mk_ref_t *r);
void mk_ref_reset(mk_ref_t *r); /* empty the KV cache */
int mk_ref_position(const mk_ref_t *r);
/* Run n tokens at the current position (prefill or decode), appending to the KV cache;
 * logits [n, vocab] (NULL: not wanted). */
mk_status mk_ref_forward(mk_ref_t *r, const int32_t *ids, int n, float *logits);
/* How near a tie the expert choice of position pos (already run) was: over the MoE layers,
 * the smallest (k-th largest - (k+1)-th largest router logit) / (largest - smallest); INFINITY
 * for a model without MoE layers, NAN for a position not run. A lower-precision engine may
 * pick another expert where this is small, and then its logits at that position differ by
 * more than rounding. */
float mk_ref_route_margin(const mk_ref_t *r, int pos);
/* The experts chosen at every (layer, position) run so far: [n_layers][max_seq][top_k] (a dense
 * layer's rows and positions not run: -1). */
const int32_t *mk_ref_routes(const mk_ref_t *r);
/* routes NULL: route with the model's router (the default). Else the MoE layers take their
 * experts from routes (mk_ref_routes' layout and max_seq, e.g. another handle's of the same
 * model, which must outlive the runs) and weigh them with this handle's own router
 * probabilities: a bf16-faithful run that follows the fp32 run's expert choices shows the
 * rounding error without expert flips. */
void mk_ref_force_routes(mk_ref_t *r, const int32_t *routes);
/* 1 if the top_k experts a[] and b[] are not the same set (an "expert flip"), else 0. */
int mk_ref_route_differs(const int32_t *a, const int32_t *b, int top_k);
/* Greedy: prefill the prompt, then max_new tokens; out_ids [max_new]; logits_out NULL or
 * [(n_prompt + max_new - 1), vocab]: the logits of every position that was run. Resets first. */
mk_status mk_ref_generate(mk_ref_t *r, const int32_t *prompt, int n_prompt, int max_new, int32_t *out_ids,
                          float *logits_out);

/* Block-level references (fp32, row-major, weights as torch Linear: [out, in]). */
typedef struct mk_ref_attn_weights {
  int hidden, n_heads, n_kv_heads, head_dim, qk_norm; /* MK_QK_NORM_* */
  float rms_eps;
  double rope_theta;
  const float *wq, *wk, *wv, *wo;          /* [nH*hd, H], [nKV*hd, H], [nKV*hd, H], [H, nH*hd] */
  const float *bq, *bk, *bv;               /* NULL = no bias */
  const float *q_norm, *k_norm;            /* [hd] or [nH*hd]/[nKV*hd]; NULL if none */
  int bf16_acts;                           /* 1: round activations as the GPU model does (mk_ref_create_bf16) */
} mk_ref_attn_weights;
/* Attention of n tokens at positions pos0.. over cached keys/values 0..pos0+n-1:
 * k_cache, v_cache [>= pos0+n, nKV*hd] get rows pos0..pos0+n-1 written (post-RoPE keys).
 * x [n, H] (already normed), out [n, H] (o_proj applied, no residual). */
mk_status mk_ref_attention_block(const mk_ref_attn_weights *w, const float *x, int n, int pos0, float *k_cache,
                                 float *v_cache, float *out);

typedef struct mk_ref_moe_weights {
  int hidden, n_experts, top_k, inter, norm_topk_prob;
  const float *router;                          /* [E, H] */
  const float *const *gate, *const *up, *const *down; /* per expert: [I,H], [I,H], [H,I] */
  int shared_inter;                             /* 0 = no shared expert */
  const float *shared_gate, *shared_up, *shared_down, *shared_expert_gate; /* [Is,H],[Is,H],[H,Is],[1,H] */
  int bf16_acts; /* 1: experts see x rounded to bf16 (the router fp32 x); bf16 intermediates and output */
} mk_ref_moe_weights;
/* MoE block: x [n, H] (already normed) -> out [n, H]. topk_ids / topk_w [n, top_k] may be NULL. */
mk_status mk_ref_moe_block(const mk_ref_moe_weights *w, const float *x, int n, float *out, int32_t *topk_ids,
                           float *topk_w);

#ifdef __cplusplus
}
#endif
#endif /* MK_MODELS_H */
