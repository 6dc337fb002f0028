/* layers_internal.h — the per-rank GPU model shared by model_load.c (weights, buffers) and
 * model_gpu.c (forward). Not a public header. */
#ifndef MK_LAYERS_INTERNAL_H
#define MK_LAYERS_INTERNAL_H

#include "kernels/mk_kernels.h"
#include "layers/mk_layers.h"

typedef struct gpu_mlp { /* SwiGLU MLP, column/row parallel over tp: gate/up [I_r, H], down [H, I_r] */
  uint16_t *gate, *up, *down;
  int inter_r;
} gpu_mlp;

typedef struct gpu_layer {
  float *attn_norm, *mlp_norm;             /* [H] */
  uint16_t *wq, *wk, *wv, *wo;             /* [qw_r, H], [kw_r, H] x2, [H, qw_r]; wq, wk, wv one block (wk =
                                              wq + qw_r H, wv = wk + kw_r H): the fused path's merged q/k/v GEMM */
  float *bq, *bk, *bv;                     /* this rank's slices; NULL if none */
  float *q_norm, *k_norm;                  /* [hd] (per head) or this rank's slice of the full width */
  uint16_t *kc, *vc;                       /* [max_seq, kw_r] */
  int is_moe;
  uint16_t *router, *seg;                  /* [E, H], shared expert gate [1, H] (NULL if none) */
  uint16_t *w1, *w2;                       /* local experts: [El, 2I, H], [El, H, I] */
  mk_moe_t *moe;
  mk_moe_t *moe_dec;                       /* decode-sized fused-only handle over the same experts
                                              (NULL: none; mk_layers_moe_dec_cap_) */
  gpu_mlp shared, dense;
} gpu_layer;

struct mk_model_gpu {
  mk_model_config_t cfg;
  mk_layout_t lay;
  mk_comm_t *comm;
  int rank, tp_rank, max_seq, pos;
  int moe_dec_cap;                         /* tokens per rank of the layers' moe_dec (0: none) */
  int nh_r, nkv_r, qw_r, kw_r;             /* heads, kv heads and widths on this rank */
  void *stream;                            /* cudaStream_t */
  mk_cublaslt_t *lt;
  mk_nccl_t *tp_nccl;                      /* NULL when tp == 1 */
  mk_path path;                            /* per instance; both paths over the same weights */
  mk_fused_t *fused;                       /* GEMM+AR over this rank's TP group; NULL when tp == 1 */
  mk_gather_t *gather;                     /* fused path: the MoE output's all-gather over the TP group
                                              on the SMs (NULL: tp == 1 or MK_TP_GATHER_SM=0: NCCL) */
  int sp_ok;                               /* sequence parallel allowed (model_gpu; MK_LAYER_SP != 0) */
  int fused_sp;                            /* g->fused has AG+GEMM and GEMM+RS (sp_ok) */
  uint16_t *embed, *lm_head;               /* [V, H] (lm_head may alias embed) */
  float *final_norm;
  gpu_layer *layers;
  /* activations for max_seq tokens */
  int32_t *ids, *topk_ids;
  int32_t *routes;                         /* host, mk_model_gpu_record_routes (NULL: off) */
  void *attn_ws;                           /* flash attention's split along the keys (few query rows, */
  size_t attn_ws_bytes;                    /* a long cache: decode of one sequence); NULL: none */
  float *x, *hf, *router_logits, *topk_w, *shared_logit, *shared_w, *sumsq, *logits;
  uint64_t x_seed;                         /* random weights: x's fill at create (mk_model_gpu_reset_residual) */
  int x_random;                            /* random weights (no checkpoint): x was filled from x_seed */
  uint16_t *hb, *q, *o, *y, *y2, *g, *u;  /* hb, o, y, y2, g in the symmetric heap (fused ops' in/out) */
  uint16_t *qkv;                           /* [max_seq, qw_r + 2 kw_r]: the merged q/k/v GEMM's output (attn_block) */
  void **allocs;                           /* device allocations, freed at destroy */
  int nallocs, cap;
};

/* model_gpu.c: the blocks, shared with model_batch.c */
mk_status mk_layers_create_(const mk_model_t *m, const mk_model_config_t *c, uint64_t seed, mk_comm_t *comm,
                           const mk_layout_t *layout, int max_seq, int logit_rows, int sp_ok, mk_model_gpu_t **out);
mk_status mk_layers_attn_qkv_(mk_model_gpu_t *g, gpu_layer *L, int n, uint16_t *k, uint16_t *v, int comm);
mk_status mk_layers_attn_out_(mk_model_gpu_t *g, gpu_layer *L, int n, int reduce);
mk_status mk_layers_ffn_(mk_model_gpu_t *g, gpu_layer *L, int n);
/* layout.c: the decode-sized MoE handle (pure host logic, test_layers_moe_dec). The MoE handle of
 * a layer is made for max_seq tokens per rank; from max_tokens >= 1024 its AUTO schedule is serial
 * and split-K off (kernels/moe/moe.c), which its decode calls of a few tokens per rank then pay.
 * dec_cap: the second, fused-only handle's max_tokens for MK_MOE_DECODE_TOKENS = want (< 0: ceil(64 /
 * tp); 0: no second handle: want is 0 or the main handle is not larger). use_dec: whether a call of n tokens
 * split over tp ranks (ceil(n / tp) each) on the fused path (fused != 0) goes to it. */
int mk_layers_moe_dec_cap_(int max_seq, int want, int tp);
int mk_layers_moe_use_dec_(int cap, int fused, int n, int tp);
/* model_load.c */
mk_status mk_layers_load_(mk_model_gpu_t *g, const mk_model_t *m);
/* wq, wk, wv of a layer as one block [wq; wk; wv] (the fused path's merged q/k/v GEMM reads it whole) */
mk_status mk_layers_qkv_alloc_(mk_model_gpu_t *g, gpu_layer *L);
/* model_random.c: the same buffers with random weights (benchmarks) */
mk_status mk_layers_random_(mk_model_gpu_t *g, uint64_t seed);
void *mk_layers_dalloc_(mk_model_gpu_t *g, size_t bytes); /* zeroed device memory, tracked; NULL on failure */

#endif
