/* paged_decode.cuh — what the pass-1 kernels of paged decode attention share (internal to
 * kernels/attention): the launch configuration, the parameters, and the last step of every
 * pass-1 CTA, which merges the per-warp softmax states left in shared memory and writes O and
 * the LSE (one split) or the split's partial. paged_decode.cu holds kernels 0 and 1, the split
 * plan, pass 2 and the public launcher; paged_decode_mma.cu holds kernel 2 (tensor cores). */
#ifndef MK_PAGED_DECODE_CUH
#define MK_PAGED_DECODE_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "core/mk_core.h"
#include "kernels/attention/attn_tile.cuh"

namespace mk_attn {

struct decode_config {
  static constexpr int kWarps = 4;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kUnroll = 4;       /* token steps of loads in flight per warp */
  static constexpr int kPartAlign = 64;   /* part_len is a multiple of this */
  static constexpr int kMinPart = 256;    /* fewest tokens per split */
  static constexpr int kMaxGroup = 16;    /* hq / hkv */
  static constexpr int kStages = 4;       /* kernel 1: shared-memory stages per warp */
  static constexpr size_t kPipeSmem = (size_t)kWarps * kStages * 2 * kUnroll * 32 * 16; /* 64 KiB */
  static constexpr int kMmaTile = 16;     /* kernel 2: tokens per warp step */
};

struct decode_params {
  const uint16_t *q, *k, *v;
  const int32_t *block_table, *context_lens;
  uint16_t *o;
  float *lse;
  float *o_part, *lse_part; /* workspace; NULL when splits == 1 */
  int batch, hq, hkv, group, block_size, max_blocks, max_ctx, num_blocks, splits, part_len;
  float scale_log2;
};

__device__ __forceinline__ int seq_len(const decode_params &p, int b) {
  return min(max(p.context_lens[b], 0), p.max_ctx);
}

/* A pass-1 CTA's split, KV head and sequence (blockIdx x, y, z) and its tokens [t_begin, t_end). */
struct decode_cta {
  int split, kvh, b, t_begin, t_end;
};

/* False when the CTA has no token; split 0 always goes on, so an empty sequence gets O = 0. */
__device__ __forceinline__ bool decode_cta_range(const decode_params &p, decode_cta &c) {
  c.split = blockIdx.x, c.kvh = blockIdx.y, c.b = blockIdx.z;
  const int ctx = seq_len(p, c.b);
  c.t_begin = c.split * p.part_len;
  c.t_end = min(ctx, c.t_begin + p.part_len);
  return c.t_begin < ctx || c.split == 0;
}

/* Merges the warps' states (sm_m, sm_l: running max in log2 units and sum; sm_acc: the
 * unnormalised accumulator) of the CTA's `group` query heads and writes O and the LSE (one
 * split) or this split's normalised partial. Whole CTA, after a barrier. */
template <int D, int G>
__device__ __forceinline__ void decode_write(const decode_params &p, int split, int kvh, int b,
                                             const float (&sm_acc)[decode_config::kWarps][G][D],
                                             const float (&sm_m)[decode_config::kWarps][G],
                                             const float (&sm_l)[decode_config::kWarps][G]) {
  using C = decode_config;
  const int ng = p.group;
  for (int i = threadIdx.x; i < ng * D; i += C::kThreads) {
    const int h = i / D, x = i % D;
    float mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < C::kWarps; w++) mx = fmaxf(mx, sm_m[w][h]);
    float sum = 0.f, out = 0.f;
    if (mx != -INFINITY) {
#pragma unroll
      for (int w = 0; w < C::kWarps; w++) {
        const float e = sm_m[w][h] == -INFINITY ? 0.f : exp2f(sm_m[w][h] - mx);
        sum += sm_l[w][h] * e;
        out += sm_acc[w][h][x] * e;
      }
    }
    out = sum > 0.f ? out / sum : 0.f;
    const float lse = sum > 0.f ? (mx + log2f(sum)) * 0.6931471805599453f : -INFINITY;
    const int head = kvh * ng + h;
    if (p.splits == 1) {
      const long long oi = ((long long)b * p.hq + head) * D + x;
      p.o[oi] = (uint16_t)(pack_bf16x2(out, 0.f) & 0xffffu);
      if (x == 0 && p.lse) p.lse[(long long)head * p.batch + b] = lse;
    } else {
      const long long pi = ((long long)b * p.hq + head) * p.splits + split;
      p.o_part[pi * D + x] = out;
      if (x == 0) p.lse_part[pi] = lse;
    }
  }
}


/* Kernel 2 (paged_decode_mma.cu): pass 1 on tensor cores, for any group <= kMaxGroup; D = 64, 128. */
template <int D>
mk_status paged_decode_mma_pass1(const decode_params &p, cudaStream_t stream);

}  // namespace mk_attn

#endif /* MK_PAGED_DECODE_CUH */
