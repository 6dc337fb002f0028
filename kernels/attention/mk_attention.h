/* mk_attention.h — attention launchers (included from kernels/mk_kernels.h):
 *   mk_flash_attn_fwd   prefill flash attention: bf16, varlen batches, GQA, causal or not;
 *                       returns O and the log-sum-exp so partial results merge exactly; split
 *                       along the keys where the query blocks are too few to fill the GPU
 *   mk_attn_merge       (o1, lse1) + (o2, lse2) -> (o, lse): merge two partial attentions
 *   mk_paged_decode     one query token per sequence over a paged KV cache, split along the
 *                       sequence (flash-decoding) with a reduce step
 *   mk_ring_attn_*      sequence-parallel attention over the ranks of an mk_comm_t: each rank
 *                       holds S query and K/V rows; fused (one persistent launch, K/V travel
 *                       while the flash tile loop runs) and unfused (NCCL all-gather + flash)
 * All pointers are device pointers; bf16 tensors are uint16_t bit patterns, row-major.
 *
 * Log-sum-exp convention: lse = log(sum_j exp(scale * q.k_j)) in natural log; a row that
 * sees no key at all gets O = 0 and lse = -inf (the merge treats it as an empty part). */
#ifndef MK_ATTENTION_H
#define MK_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "core/mk_core.h"
#include "kernels/mk_kernels.h" /* mk_stream_t */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mk_attn_mask {
  MK_ATTN_MASK_NONE = 0,
  /* Causal, bottom-right aligned as FlashAttention does: query i of a sequence sees key j
   * iff j <= i + (seqlen_k - seqlen_q). */
  MK_ATTN_MASK_CAUSAL = 1,
  /* Causal with an explicit offset, the same for every sequence: query i sees key j iff
   * j <= i + causal_offset. For one K/V chunk of a longer sequence (ring attention):
   * causal_offset = (global position of query 0) - (global position of key 0). */
  MK_ATTN_MASK_CAUSAL_OFFSET = 2,
} mk_attn_mask;

typedef enum mk_attn_impl {
  MK_ATTN_IMPL_AUTO = 0,     /* the fastest kernel for this GPU: on Hopper WGMMA_WS (WGMMA where the call splits
                                along the keys), MMA elsewhere */
  MK_ATTN_IMPL_MMA = 1,      /* mma.sync (FlashAttention-2 style) */
  MK_ATTN_IMPL_WGMMA = 2,    /* Hopper wgmma (sm_90a), all warps load (cp.async) and compute */
  MK_ATTN_IMPL_WGMMA_WS = 3, /* Hopper wgmma, warp-specialised: a TMA producer warp, two consumer warpgroups
                                taking turns, softmax overlapped with P V (FlashAttention-3 style) */
} mk_attn_impl;

typedef struct mk_attn_fwd_args {
  const uint16_t *q;          /* [total_q, hq, d] bf16 */
  const uint16_t *k;          /* [total_k, hkv, d] bf16 */
  const uint16_t *v;          /* [total_k, hkv, d] bf16 */
  uint16_t *o;                /* [total_q, hq, d] bf16 */
  float *lse;                 /* [hq, total_q] fp32, natural log; may be NULL */
  const int32_t *cu_seqlens_q; /* [batch + 1], device, cu[0] = 0, non-decreasing; both NULL: batch 1, one
                                  sequence of max_seqlen_q queries (= total_q) and max_seqlen_k keys */
  const int32_t *cu_seqlens_k; /* [batch + 1], device */
  int batch;
  int max_seqlen_q;           /* >= every seqlen_q (sizes the grid) */
  int max_seqlen_k;           /* >= every seqlen_k (sizes the split; the grid does not need it) */
  int total_q;                /* cu_seqlens_q[batch]: rows of o and columns of lse */
  int hq, hkv;                /* hq % hkv == 0 */
  int d;                      /* head dim: 64 or 128 */
  mk_attn_mask mask;
  int causal_offset;          /* MK_ATTN_MASK_CAUSAL_OFFSET only */
  float softmax_scale;        /* usually 1/sqrt(d) */
  mk_attn_impl impl;          /* 0 (AUTO) unless comparing kernels */
  /* Split along the keys (flash-decoding) for calls with too few (query block, head, sequence)
   * CTAs to fill the GPU (a few query rows against a long cache: chunked prefill, speculative
   * decode, the model's decode of one sequence): each split attends to an even share of its
   * block's key tiles into fp32 partials in the workspace, and a second kernel merges them by
   * their LSE. num_splits 0: chosen from the shape and the GPU, as many as fit workspace_bytes
   * (none without a workspace); 1: never; > 1: forced (the workspace must hold them). */
  void *workspace;            /* 16-byte aligned; NULL when workspace_bytes is 0 */
  size_t workspace_bytes;
  int num_splits;
} mk_attn_fwd_args;

/* Pointers 16-byte aligned. Empty sequences are allowed. */
mk_status mk_flash_attn_fwd(const mk_attn_fwd_args *a, mk_stream_t stream);
/* Bytes of workspace the call with these args splits into (num_splits 0: the automatic choice
 * with an unlimited workspace; 0 bytes when it does not split). Same validation as the call. */
mk_status mk_flash_attn_fwd_workspace_size(const mk_attn_fwd_args *a, size_t *bytes);

/* o = (exp(lse1) o1 + exp(lse2) o2) / (exp(lse1) + exp(lse2)), lse = log(exp(lse1) + exp(lse2)),
 * for o* [n, h, d] bf16 and lse* [h, n] fp32 (the layouts mk_flash_attn_fwd writes).
 * o may alias o1 or o2 and lse may alias lse1 or lse2 (one warp reads a (row, head) before
 * writing it). d a multiple of 8, at most 256. */
mk_status mk_attn_merge(const uint16_t *o1, const float *lse1, const uint16_t *o2, const float *lse2, uint16_t *o,
                        float *lse, int n, int h, int d, mk_stream_t stream);

/* CPU reference (double accumulation) of one output row of mk_flash_attn_fwd: query row i of
 * sequence b, head h, from the same args with HOST pointers in q, k, v and cu_seqlens_* (o and
 * lse unused; d <= 256). Writes o_row[d] and *lse (zeros and -inf for a row that sees no key). */
void mk_attn_ref_row(const mk_attn_fwd_args *a, int b, int h, int i, float *o_row, float *lse);

/* Causal attention of n new tokens (positions pos0 .. pos0 + n - 1) over a contiguous KV cache
 * of one sequence: q [n, hq, d], k_cache / v_cache [>= pos0 + n, hkv, d], o [n, hq, d], bf16,
 * fp32 online softmax. Any d <= 256, hq % hkv == 0. Simple (one warp per token and head): the
 * model's path for head dims flash attention does not take and for decode. */
mk_status mk_attn_cache_fwd(const uint16_t *q, const uint16_t *k_cache, const uint16_t *v_cache, uint16_t *o, int n,
                            int pos0, int hq, int hkv, int d, float scale, mk_stream_t stream);

typedef struct mk_paged_decode_args {
  const uint16_t *q;            /* [batch, hq, d] bf16: one new token per sequence */
  const uint16_t *k_cache;      /* [num_blocks, block_size, hkv, d] bf16 */
  const uint16_t *v_cache;      /* [num_blocks, block_size, hkv, d] bf16 */
  const int32_t *block_table;   /* [batch, max_blocks_per_seq]: block of token t is row[t / block_size] */
  const int32_t *context_lens;  /* [batch]: tokens in the cache for each sequence (0 allowed) */
  uint16_t *o;                  /* [batch, hq, d] bf16 */
  float *lse;                   /* [hq, batch] fp32 natural log (as mk_flash_attn_fwd); may be NULL */
  void *workspace;              /* mk_paged_decode_workspace_size() bytes, 16-byte aligned; NULL if 0 */
  int batch, hq, hkv, d;        /* d: 64 or 128; hq / hkv <= 16 */
  int block_size;               /* tokens per cache block, >= 1 */
  int max_blocks_per_seq;
  int max_context_len;          /* >= every context_lens[b] (sizes the split) */
  int num_blocks;               /* blocks in the cache (bounds the block ids; not checked on the device) */
  int num_splits;               /* 0: chosen from the shape and the GPU; else forced (>= 1) */
  float softmax_scale;
} mk_paged_decode_args;

/* Bytes of workspace the call with these args needs (0 when it does not split). */
mk_status mk_paged_decode_workspace_size(const mk_paged_decode_args *a, size_t *bytes);
mk_status mk_paged_decode(const mk_paged_decode_args *a, mk_stream_t stream);

/* Paged KV cache rows (kv_copy.cu): cache [num_slots, width] bf16, slot = page * block_size +
 * offset (the layout mk_paged_decode reads, width = hkv d). scatter: cache[slots[t]] = rows[t];
 * gather: rows[t] = cache[slots[t]], t < n. Slots outside [0, num_slots) are skipped / give zeros. */
mk_status mk_kv_scatter_bf16(const uint16_t *rows, const int32_t *slots, int64_t n, int width, uint16_t *cache,
                             int64_t num_slots, mk_stream_t stream);
mk_status mk_kv_gather_bf16(const uint16_t *cache, int64_t num_slots, const int32_t *slots, int64_t n, int width,
                            uint16_t *rows, mk_stream_t stream);

/* ---- ring attention (sequence parallel) -------------------------------------------------
 * W ranks each hold S rows of Q, K and V of one sequence of W * S tokens (batch 1).
 *   non-causal: rank r holds rows [r S, (r + 1) S) of the sequence;
 *   causal (zigzag, balanced): the sequence is cut into 2W chunks, chunks 0..W-1 of S1 =
 *     ceil(S/2) tokens, then chunks W..2W-1 of S2 = floor(S/2); rank r holds chunk r in its
 *     rows [0, S1) and chunk 2W-1-r in its rows [S1, S) (mk_ring_attn_position).
 * Usage (every rank, same order; create is collective):
 *   mk_ring_attn_t *ra; mk_ring_attn_create(comm, max_s, hkv, d, &ra);
 *   uint16_t *k, *v; mk_ring_attn_kv(ra, &k, &v);    // this rank's K/V shard buffers [max_s, hkv, d]
 *   ... write the shard's S rows into k and v (stream-ordered before the call) ...
 *   mk_ring_attn_args a = {q, o, lse, S, hq, causal, 1/sqrt(d)};
 *   mk_ring_attn_fwd(ra, &a, stream);                  // fused
 *   mk_ring_attn_unfused(ra, nccl, &a, MK_RING_ATTN_GATHER | MK_RING_ATTN_ATTEND, stream);
 *   cudaStreamSynchronize(stream); mk_comm_check(comm);  // TIMEOUT / REMOTE_ERROR of the fused path
 *   mk_ring_attn_destroy(ra);
 * The handle's K/V buffers live in the symmetric heap (2 W max_s hkv d bf16 each way, taken from
 * MK_HEAP_BYTES for the comm's lifetime: heap allocations are never returned). o and lse are
 * this rank's rows: o [S, hq, d] bf16, lse [hq, S] fp32 natural log (may be NULL). Hopper only.
 * Calls on one handle must be stream-ordered (one stream, or the caller orders them). */
typedef struct mk_ring_attn mk_ring_attn_t;

typedef struct mk_ring_attn_args {
  const uint16_t *q;   /* [s, hq, d] bf16, this rank's query rows */
  uint16_t *o;         /* [s, hq, d] bf16 */
  float *lse;          /* [hq, s] fp32; may be NULL */
  int s;               /* rows per rank, 1..max_s; the same on every rank */
  int hq;              /* a multiple of the handle's hkv */
  int causal;          /* 0: no mask; 1: causal over the zigzag layout */
  float softmax_scale; /* usually 1/sqrt(d) */
} mk_ring_attn_args;

enum { MK_RING_ATTN_GATHER = 1, MK_RING_ATTN_ATTEND = 2 }; /* parts of mk_ring_attn_unfused */

/* Collective. hkv >= 1, d 64 or 128, max_s >= 1, at most 64 ranks. */
mk_status mk_ring_attn_create(mk_comm_t *comm, int max_s, int hkv, int d, mk_ring_attn_t **out);
void mk_ring_attn_destroy(mk_ring_attn_t *ra); /* NULL: no-op; the heap space stays taken */
/* This rank's K and V shard buffers ([max_s, hkv, d] bf16 each, device, in the heap). */
mk_status mk_ring_attn_kv(const mk_ring_attn_t *ra, uint16_t **k, uint16_t **v);
/* Global position of row `row` of rank `rank`'s shard (world size w, s rows per rank). */
int64_t mk_ring_attn_position(int rank, int w, int s, int causal, int row);

/* Fused: one persistent launch on every rank. Completion and errors as for any fused op:
 * synchronise, then mk_comm_check (a peer that does not arrive is MK_STATUS_TIMEOUT). */
mk_status mk_ring_attn_fwd(mk_ring_attn_t *ra, const mk_ring_attn_args *a, mk_stream_t stream);
/* Unfused: MK_RING_ATTN_GATHER = NCCL all-gather of K and V (plus, causal, a reorder into
 * sequence order) into a local buffer; MK_RING_ATTN_ATTEND = mk_flash_attn_fwd of the local
 * queries over the gathered keys (needs a gather of the same s before). Both = the unfused
 * path; each alone = its part (the benchmark's comm and compute times). */
mk_status mk_ring_attn_unfused(mk_ring_attn_t *ra, mk_nccl_t *nccl, const mk_ring_attn_args *a, int parts,
                               mk_stream_t stream);

#ifdef __cplusplus
}
#endif
#endif /* MK_ATTENTION_H */
