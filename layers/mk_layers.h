/* mk_layers.h — parallel transformer blocks and the whole model on N GPUs (one process per GPU).
 *
 *   layout   mk_layers_layout_choose(): attention (and dense MLPs, the Qwen2 shared expert)
 *            tensor-parallel over tp ranks of one node group (heads split; tp divides the
 *            ranks per node and the heads and KV heads), experts over all ranks (EP = world).
 *            tp = 0 asks for the default: the largest tp that fits the node and the model.
 *   model    mk_model_gpu_t: each rank loads only its slices (rows / columns of the TP
 *            weights, its experts), runs prefill and decode over a contiguous KV cache of
 *            max_seq positions per layer, and returns fp32 logits.
 *
 * Paths, chosen per instance (mk_model_gpu_set_path; the default from MK_PATH), over the same
 * weights and buffers:
 *   UNFUSED  cuBLASLt GEMMs, NCCL all-reduce over the TP group for the row-parallel O and down
 *            projections, the MoE block's unfused path (NCCL all-to-allv + cuBLASLt).
 *   FUSED    the row-parallel O projection (and dense-MLP / shared-expert down projection) as
 *            one mk_gemm_ar each; the MoE block as mk_moe_forward(MK_MOE_FUSED). The QKV and
 *            gate/up projections stay plain GEMMs (every rank holds every token). The fused ops
 *            run over this rank's TP group alone (mk_fused_create_group; a TP group lies in one
 *            node group, so over NVLink even with several node groups). Their activations
 *            (inputs and outputs) live in the symmetric heap.
 * Sequence parallel (both paths; model_gpu calls of n >= MK_LAYER_SP_MIN tokens, n a multiple of
 * tp, MK_LAYER_SP; not the serving model): each rank of a TP group keeps n / tp rows of the
 * residual stream; the q/k/v and gate/up projections start with an all-gather of the normed rows,
 * the O and down projections end with a reduce-scatter, the MoE block runs on the rank's rows with
 * no all-gather after it, and the forward gathers x once after the last layer. FUSED: mk_ag_gemm
 * over the TP group (the normed rows written into its gathered buffer) and mk_gemm_rs; UNFUSED:
 * NCCL and cuBLASLt (mk_model_gpu_sp_mode says which).
 * Both paths, tensor parallel: the ranks of a TP group split the tokens for the MoE block (each dispatches
 * ceil(n / tp) of them) and an all-gather over the TP group brings the block's output back to
 * every rank (it moves n x H bf16 once): NCCL on the unfused path; on the fused one SM stores
 * into the peers' symmetric heaps where a rank's slice is at most 1 MiB (mk_gather_rows;
 * MK_TP_GATHER_SM=0: NCCL). The fused path runs calls whose share fits MK_MOE_DECODE_TOKENS
 * (decode) on a second, decode-sized MoE handle per layer (overlapped schedule and split-K, as
 * the op at that size), the others on the layer's handle (made for max_seq tokens: serial from
 * 1024 on).
 * Numerics: the residual stream is fp32 (as the reference; it is summed over every layer, so
 * bf16 rounding would accumulate), block inputs are bf16 (GEMM operands), RMSNorm, RoPE,
 * softmax and all accumulation in fp32; the router, the shared-expert gate and the logits come
 * from fp32 normed activations (mk_linear_f32out) so top-k choices and argmax see fp32 values.
 *
 * Usage (every rank, same order of calls):
 *   mk_comm_t *comm; mk_comm_create(&comm);
 *   mk_layout_t lay; mk_layers_layout_choose(cfg, mk_comm_world(comm), 0, &lay);
 *   mk_model_gpu_t *g; mk_model_gpu_create(model, comm, &lay, max_seq, &g);
 *   mk_model_gpu_generate(g, prompt, n, 32, out_ids, logits_or_NULL);   // same ids on every rank
 *   mk_model_gpu_destroy(g); mk_comm_destroy(comm); */
#ifndef MK_LAYERS_H
#define MK_LAYERS_H

#include <stdint.h>

#include "comm/mk_comm.h"
#include "core/mk_core.h"
#include "models/mk_models.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Check or choose a layout for a model on a world. tp_req = 0: the default. A layout that
 * cannot work (tp not dividing the ranks per node, heads or KV heads, slice widths that are
 * not multiples of 8, experts not divisible by the world) is MK_STATUS_INVALID_ARGUMENT with
 * a message saying which number does not divide which. Pure host code. */
mk_status mk_layers_layout_choose(const mk_model_config_t *c, const mk_world *w, int tp_req, mk_layout_t *out);

typedef struct mk_model_gpu mk_model_gpu_t;

typedef enum mk_path { MK_PATH_FUSED = 0, MK_PATH_UNFUSED = 1 } mk_path;
/* "fused" / "unfused"; anything else is MK_STATUS_INVALID_ARGUMENT with a message. */
mk_status mk_path_parse(const char *name, mk_path *out);
const char *mk_path_name(mk_path p);
/* MK_PATH (fused | unfused, default fused); a bad value is reported and the default used. */
mk_path mk_path_default(void);

/* Collective. Loads this rank's shard to the GPU of comm, creates the TP communicator (NCCL)
 * and one MoE block per MoE layer (symmetric heap buffers for max_seq tokens). */
mk_status mk_model_gpu_create(const mk_model_t *m, mk_comm_t *comm, const mk_layout_t *layout, int max_seq,
                              mk_model_gpu_t **out);
void mk_model_gpu_destroy(mk_model_gpu_t *g); /* NULL: no-op */
/* Local, between forwards; every rank must choose the same path (the ops are collective). */
mk_status mk_model_gpu_set_path(mk_model_gpu_t *g, mk_path p);
mk_path mk_model_gpu_path(const mk_model_gpu_t *g);
void mk_model_gpu_reset(mk_model_gpu_t *g);    /* empty the KV cache */
int mk_model_gpu_position(const mk_model_gpu_t *g);
/* Collective. n tokens (host ids, the same on every rank) at the current position, appended
 * to the KV cache; logits [n, vocab] fp32 on the host (NULL: not wanted). */
mk_status mk_model_gpu_forward(mk_model_gpu_t *g, const int32_t *ids, int n, float *logits);
/* For tests: routes NULL: off (the default); else every later mk_model_gpu_forward writes
 * each MoE layer's top-k experts of its tokens to routes (host, [n_layers][max_seq][top_k],
 * mk_ref_routes' layout: position p of layer l at (l max_seq + p) top_k), so that a
 * reference can follow them (mk_ref_force_routes). routes must outlive the forwards. */
void mk_model_gpu_record_routes(mk_model_gpu_t *g, int32_t *routes);
/* Collective. Greedy, as mk_ref_generate: resets, prefills the prompt, then max_new tokens;
 * rank 0's argmax is broadcast so every rank continues with the same token. logits_out NULL
 * or [(n_prompt + max_new - 1), vocab]. */
mk_status mk_model_gpu_generate(mk_model_gpu_t *g, const int32_t *prompt, int n_prompt, int max_new, int32_t *out_ids,
                                float *logits_out);

/* ---- serving: many sequences per step over a paged KV cache (model_batch.c) -----------
 * One set of weights (this rank's shard) for
 * every sequence; the KV cache per layer is [n_pages, block_size, KV width] and a sequence
 * names its pages (the engine's page ids); a step takes every sequence's new tokens (decode:
 * one, prefill: the prompt) and gives the fp32 logits of each one's last token. Needs head_dim
 * 64 or 128. Collective: every rank the same calls with the same sequences. */
typedef struct mk_model_batch_config {
  int max_seqs;    /* sequences in one step */
  int max_seq_len; /* positions of one sequence */
  int max_tokens;  /* new tokens in one pass (>= max_seq_len); a larger step runs in several */
  int n_pages, block_size;
} mk_model_batch_config;
typedef struct mk_model_batch_seq {
  const int32_t *tokens; /* host ids */
  int n_tokens, pos;     /* tokens[0] at position pos; positions below pos are in the cache */
  const int32_t *pages;  /* the pages of positions 0 .. pos + n_tokens - 1 */
  int n_pages;
} mk_model_batch_seq;
typedef struct mk_model_batch mk_model_batch_t;
mk_status mk_model_batch_create(const mk_model_t *m, mk_comm_t *comm, const mk_layout_t *layout,
                                const mk_model_batch_config *bc, mk_model_batch_t **out);
void mk_model_batch_destroy(mk_model_batch_t *b); /* NULL: no-op */
mk_status mk_model_batch_set_path(mk_model_batch_t *b, mk_path p);
/* logits [n, vocab] fp32 host, row i for seqs[i]. */
mk_status mk_model_batch_forward(mk_model_batch_t *b, const mk_model_batch_seq *seqs, int n, float *logits);

/* ---- layer benchmarks (mk-bench layer) ---------------------------------------------- */
/* Collective. As mk_model_gpu_create, with random weights drawn on the GPU from seed (no
 * checkpoint; c's sizes at full scale are fine) and a random residual stream. */
mk_status mk_model_gpu_create_random(const mk_model_config_t *c, mk_comm_t *comm, const mk_layout_t *layout,
                                     int max_seq, uint64_t seed, mk_model_gpu_t **out);
/* Random-weight instances only: rows [0, n) of the residual stream back to their values at create, on the
 * instance's stream (one fill kernel; not collective). A layer benchmark calls it before each timed call: run_part
 * adds the blocks' outputs to the stream in place, and call after call the rows drift toward one direction that
 * every token shares (the attention output over one context, the experts of that output), until every token is
 * routed to the same experts (docs/perf/NOTES.md, layer, session 27). */
mk_status mk_model_gpu_reset_residual(mk_model_gpu_t *g, int n);

/* How a forward (or layer part) of n tokens runs between the TP linears: 0 tensor parallel (the
 * O / down projections all-reduced), 1 sequence parallel with NCCL collectives, 2 sequence
 * parallel on the fused ops (mk_ag_gemm / mk_gemm_rs: the fused path, one TP group). Sequence
 * parallel needs tp > 1 and n a multiple of tp; MK_LAYER_SP (-1: from MK_LAYER_SP_MIN tokens, 0
 * off, 1 on) decides, with the instance's path. Same value on every rank. */
int mk_model_gpu_sp_mode(const mk_model_gpu_t *g, int n);

typedef enum mk_layer_part {
  MK_PART_ATTN = 0,      /* the attention block (norm ... residual) on the instance's path */
  MK_PART_FFN,           /* the MoE (or dense MLP) block on the instance's path */
  MK_PART_ATTN_COMPUTE,  /* the attention block without its TP reduction (compute alone) */
  MK_PART_ATTN_COMM,     /* the TP all-reduce of [n, H] bf16 alone (NCCL; nothing when tp == 1); sequence
                            parallel: the all-gather of the normed rows and the reduce-scatter */
  MK_PART_FFN_COMPUTE,   /* norm, router, the MoE grouped GEMMs alone (+ shared expert GEMMs) */
  MK_PART_FFN_COMM       /* the MoE all-to-allv + TP all-gather alone (+ the shared expert's all-reduce);
                            sequence parallel: no TP all-gather, the shared expert's gather and reduce-scatter */
} mk_layer_part;
/* Collective. Enqueue one part of one layer for n tokens at KV position pos on the instance's
 * stream (mk_model_gpu_stream); the position is not advanced. The FFN_COMPUTE / FFN_COMM
 * parts of a MoE layer time the routing of the last UNFUSED FFN call (mk_moe_time_parts):
 * run MK_PART_FFN on the unfused path with the same n first. */
mk_status mk_model_gpu_run_part(mk_model_gpu_t *g, int layer, mk_layer_part part, int n, int pos);
void *mk_model_gpu_stream(const mk_model_gpu_t *g); /* cudaStream_t */

/* The same for the serving model (model_batch.c; run by mk-serve --gpus and mk-bench layer --decode batch):
 * decode of many sequences over the paged KV cache.
 * create_random: as mk_model_batch_create with random weights from seed and every page of the
 * KV cache filled with random K/V (so a sequence at position pos has pos cached positions
 * without a prefill), and a random residual stream.
 * prepare: checks and uploads the tables of one step of n sequences (as mk_model_batch_forward;
 * it must fit one pass: at most max_tokens new tokens and gathered K/V rows) and synchronizes;
 * run_part then enqueues one part of one layer of that step on mk_model_batch_stream (the
 * attention parts write the new tokens' K/V into their pages, the same slots every call; the
 * FFN parts run over the step's new tokens as mk_model_gpu_run_part). A forward discards the
 * prepared step. Collective, as the rest. */
mk_status mk_model_batch_create_random(const mk_model_config_t *c, mk_comm_t *comm, const mk_layout_t *layout,
                                       const mk_model_batch_config *bc, uint64_t seed, mk_model_batch_t **out);
mk_status mk_model_batch_prepare(mk_model_batch_t *b, const mk_model_batch_seq *seqs, int n);
mk_status mk_model_batch_run_part(mk_model_batch_t *b, int layer, mk_layer_part part);
/* mk_model_gpu_reset_residual of the prepared step's rows (create_random instances). */
mk_status mk_model_batch_reset_residual(mk_model_batch_t *b);
void *mk_model_batch_stream(const mk_model_batch_t *b); /* cudaStream_t */

#ifdef __cplusplus
}
#endif
#endif /* MK_LAYERS_H */
