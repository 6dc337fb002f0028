/* paged_decode.cu — decode attention (one query token per sequence) over a paged KV cache,
 * split along the sequence (flash-decoding), GQA-aware.
 *
 * Cache layout: k_cache/v_cache [num_blocks, block_size, hkv, d] bf16; token t of sequence b
 * lives in block block_table[b][t / block_size], slot t % block_size.
 *
 * Pass 1 (grid: splits x hkv x batch, 128 threads): a CTA takes one KV head and one range of
 * part_len tokens, and all `group` query heads that share that KV head, so each K/V row is
 * read from HBM once. A token's d-vector is spread over d/8 lanes (16 bytes each); a warp
 * covers 32/(d/8) tokens per step and keeps U steps of loads in flight. Every token group
 * of lanes keeps its own online-softmax state (max, sum, accumulator, in log2 units); the
 * groups of a warp merge by shuffles, the 4 warps through shared memory.
 * With one split the CTA writes O (bf16) and the LSE directly; with more, each split writes
 * a normalised fp32 partial O and its LSE to the workspace:
 *   o_part [batch, hq, splits, d] fp32, then lse_part [batch, hq, splits] fp32,
 * and pass 2 (grid: hq x batch) merges the splits of each (sequence, head) by LSE.
 * Three pass-1 kernels (MK_PAGED_DECODE_KERNEL): 0 loads K/V straight into registers; 1 streams
 * them through a cp.async pipeline in shared memory with the block-table lookups one step
 * ahead, for more bytes in flight per SM (0 and 1 share the softmax step); 2 computes q.k and
 * p.v with tensor-core MMAs (paged_decode_mma.cu). All three share the epilogue
 * (paged_decode.cuh). */
#include <cuda_runtime.h>
#include <math.h>

#include "core/check.h"
#include "kernels/attention/attn_tile.cuh"
#include "kernels/attention/paged_decode.cuh"
#include "kernels/mk_kernels.h"

/* Pass-1 kernel (default 2: 2.2x kernel 0 at batch 64 x 8k, docs/perf/NOTES.md): 0 = loads into registers, U token steps per warp (the first version);
 * 1 = cp.async pipeline through shared memory, kStages steps in flight per warp;
 * 2 = tensor cores (mma.sync) for q.k and p.v (paged_decode_mma.cu). */
MK_PARAM_INT(paged_decode_kernel, "PAGED_DECODE_KERNEL", 2, 0, 2)
/* CTAs per SM the automatic split count aims at. */
MK_PARAM_INT(paged_decode_ctas_per_sm, "PAGED_DECODE_CTAS_PER_SM", 16, 1, 256)

namespace {

using namespace mk_attn;

/* This thread's 8 elements (chunk c of d) of the group's query heads, scaled to log2 units,
 * and the empty online-softmax state. */
template <int D, int G>
__device__ __forceinline__ void decode_init(const decode_params &p, int b, int kvh, int c, float (&qv)[G][8],
                                            float (&acc)[G][8], float (&m)[G], float (&l)[G]) {
#pragma unroll
  for (int h = 0; h < G; h++) {
    m[h] = -INFINITY;
    l[h] = 0.f;
    uint4 raw = make_uint4(0, 0, 0, 0);
    if (h < p.group)
      raw = *reinterpret_cast<const uint4 *>(p.q + ((long long)b * p.hq + kvh * p.group + h) * D + c * 8);
    const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int x = 0; x < 4; x++) {
      qv[h][2 * x] = bf16_lo(w[x]) * p.scale_log2;
      qv[h][2 * x + 1] = bf16_hi(w[x]) * p.scale_log2;
    }
#pragma unroll
    for (int x = 0; x < 8; x++) acc[h][x] = 0.f;
  }
}

/* Offset of lane chunk c of token t's K/V row for KV head kvh, or -1 when t is past t_end or
 * its block-table entry is out of range (a corrupt entry drops the token, never faults). */
template <int D>
__device__ __forceinline__ long long decode_kv_off(const decode_params &p, const int32_t *table, int t, int t_end,
                                                   int kvh, int c) {
  if (t >= t_end) return -1;
  const int blk = __ldg(table + t / p.block_size);
  if (blk < 0 || blk >= p.num_blocks) return -1;
  return ((long long)blk * p.block_size + t % p.block_size) * ((long long)p.hkv * D) + (long long)kvh * D + c * 8;
}

/* The online-softmax update with U tokens per lane group (a token's d spread over LPT lanes):
 * s = q.k, running max and sum, acc += p v, for every query head of the group. */
template <int D, int G, int U>
__device__ __forceinline__ void decode_step(const uint4 (&kr)[U], const uint4 (&vr)[U], const bool (&valid)[U],
                                            const float (&qv)[G][8], float (&acc)[G][8], float (&m)[G], float (&l)[G],
                                            int ng) {
  constexpr int LPT = D / 8;
  float kf[U][8];
#pragma unroll
  for (int u = 0; u < U; u++) {
    const uint32_t w[4] = {kr[u].x, kr[u].y, kr[u].z, kr[u].w};
#pragma unroll
    for (int x = 0; x < 4; x++) {
      kf[u][2 * x] = bf16_lo(w[x]);
      kf[u][2 * x + 1] = bf16_hi(w[x]);
    }
  }
#pragma unroll
  for (int h = 0; h < G; h++) {
    if (h >= ng) break; /* uniform across the CTA */
    float s[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
      float dot = 0.f;
#pragma unroll
      for (int x = 0; x < 8; x++) dot = fmaf(qv[h][x], kf[u][x], dot);
#pragma unroll
      for (int o = 1; o < LPT; o <<= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
      s[u] = valid[u] ? dot : -INFINITY;
    }
    float mx = m[h];
#pragma unroll
    for (int u = 0; u < U; u++) mx = fmaxf(mx, s[u]);
    if (mx == -INFINITY) continue; /* nothing valid yet in this token group */
    const float alpha = exp2f(m[h] - mx);
    m[h] = mx;
    l[h] *= alpha;
#pragma unroll
    for (int x = 0; x < 8; x++) acc[h][x] *= alpha;
#pragma unroll
    for (int u = 0; u < U; u++) {
      const float pu = exp2f(s[u] - mx);
      l[h] += pu;
      const uint32_t w[4] = {vr[u].x, vr[u].y, vr[u].z, vr[u].w};
#pragma unroll
      for (int x = 0; x < 4; x++) {
        acc[h][2 * x] = fmaf(pu, bf16_lo(w[x]), acc[h][2 * x]);
        acc[h][2 * x + 1] = fmaf(pu, bf16_hi(w[x]), acc[h][2 * x + 1]);
      }
    }
  }
}

/* Merges the token groups of each warp (shuffles), then the warps (shared memory), and writes
 * O and the LSE (one split) or this split's partial. Whole CTA. */
template <int D, int G>
__device__ __forceinline__ void decode_finish(const decode_params &p, int split, int kvh, int b, float (&acc)[G][8],
                                              float (&m)[G], float (&l)[G],
                                              float (&sm_acc)[decode_config::kWarps][G][D],
                                              float (&sm_m)[decode_config::kWarps][G],
                                              float (&sm_l)[decode_config::kWarps][G]) {
  constexpr int LPT = D / 8;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, tg = lane / LPT, c = lane % LPT, ng = p.group;
#pragma unroll
  for (int o = LPT; o < 32; o <<= 1) {
#pragma unroll
    for (int h = 0; h < G; h++) {
      if (h >= ng) break;
      const float mo = __shfl_xor_sync(0xffffffffu, m[h], o);
      const float lo = __shfl_xor_sync(0xffffffffu, l[h], o);
      const float mx = fmaxf(m[h], mo);
      const float a = m[h] == -INFINITY ? 0.f : exp2f(m[h] - mx);
      const float bw = mo == -INFINITY ? 0.f : exp2f(mo - mx);
      l[h] = l[h] * a + lo * bw;
#pragma unroll
      for (int x = 0; x < 8; x++) {
        const float ao = __shfl_xor_sync(0xffffffffu, acc[h][x], o);
        acc[h][x] = acc[h][x] * a + ao * bw;
      }
      m[h] = mx;
    }
  }
  if (tg == 0) {
#pragma unroll
    for (int h = 0; h < G; h++) {
      if (h >= ng) break;
#pragma unroll
      for (int x = 0; x < 8; x++) sm_acc[warp][h][c * 8 + x] = acc[h][x];
      if (c == 0) {
        sm_m[warp][h] = m[h];
        sm_l[warp][h] = l[h];
      }
    }
  }
  __syncthreads();
  decode_write<D, G>(p, split, kvh, b, sm_acc, sm_m, sm_l);
}

/* Kernel 0 (registers): each warp loads U token steps of K/V into registers, then computes on
 * them; the block-table lookups sit on the path of the loads. */
template <int D, int G>
__global__ void __launch_bounds__(decode_config::kThreads)
    paged_decode_kernel(const decode_params p) {
  using C = decode_config;
  constexpr int LPT = D / 8, TPW = 32 / LPT, U = C::kUnroll;
  __shared__ float sm_acc[C::kWarps][G][D];
  __shared__ float sm_m[C::kWarps][G], sm_l[C::kWarps][G];

  decode_cta cta;
  if (!decode_cta_range(p, cta)) return;
  const int split = cta.split, kvh = cta.kvh, b = cta.b, t_begin = cta.t_begin, t_end = cta.t_end;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int tg = lane / LPT, c = lane % LPT; /* token group in the warp, 16-byte chunk of d */
  float qv[G][8], acc[G][8], m[G], l[G];
  decode_init<D, G>(p, b, kvh, c, qv, acc, m, l);
  const int32_t *table = p.block_table + (long long)b * p.max_blocks;
  for (int base = t_begin + warp * TPW * U; base < t_end; base += C::kWarps * TPW * U) {
    uint4 kr[U], vr[U];
    bool valid[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
      const long long off = decode_kv_off<D>(p, table, base + u * TPW + tg, t_end, kvh, c);
      valid[u] = off >= 0;
      kr[u] = vr[u] = make_uint4(0, 0, 0, 0);
      if (valid[u]) {
        kr[u] = __ldg(reinterpret_cast<const uint4 *>(p.k + off));
        vr[u] = __ldg(reinterpret_cast<const uint4 *>(p.v + off));
      }
    }
    decode_step<D, G, U>(kr, vr, valid, qv, acc, m, l, p.group);
  }
  decode_finish<D, G>(p, split, kvh, b, acc, m, l, sm_acc, sm_m, sm_l);
}

/* Kernel 1 (cp.async pipeline): each warp streams its token steps through kStages stages of
 * shared memory (each lane copies and later reads back only its own 16-byte chunks, so no
 * barrier is needed); the loads of step i + kStages - 1 are in flight while step i is computed,
 * and the block-table entries of the step after that are fetched one step ahead. */
template <int D, int G>
__global__ void __launch_bounds__(decode_config::kThreads)
    paged_decode_pipe_kernel(const decode_params p) {
  using C = decode_config;
  constexpr int LPT = D / 8, TPW = 32 / LPT, U = C::kUnroll, S = C::kStages;
  extern __shared__ __align__(16) uint4 sm_kv[]; /* [warp][stage][K u.., V u..][lane] */
  __shared__ float sm_acc[C::kWarps][G][D];
  __shared__ float sm_m[C::kWarps][G], sm_l[C::kWarps][G];

  decode_cta cta;
  if (!decode_cta_range(p, cta)) return;
  const int split = cta.split, kvh = cta.kvh, b = cta.b, t_begin = cta.t_begin, t_end = cta.t_end;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int tg = lane / LPT, c = lane % LPT;
  float qv[G][8], acc[G][8], m[G], l[G];
  decode_init<D, G>(p, b, kvh, c, qv, acc, m, l);
  const int32_t *table = p.block_table + (long long)b * p.max_blocks;
  const int step = C::kWarps * TPW * U, first = t_begin + warp * TPW * U;
  const int n_iter = first < t_end ? (t_end - first + step - 1) / step : 0;
  uint4 *ring = sm_kv + (size_t)warp * S * 2 * U * 32;
  long long next_off[U]; /* K/V offsets of the next step to issue (-1: no token) */
  auto offsets = [&](int i) {
#pragma unroll
    for (int u = 0; u < U; u++)
      next_off[u] = decode_kv_off<D>(p, table, first + i * step + u * TPW + tg, t_end, kvh, c);
  };
  auto issue = [&](int i) { /* step i from next_off; always one commit group */
    uint4 *st = ring + (i % S) * 2 * U * 32;
#pragma unroll
    for (int u = 0; u < U; u++) {
      const bool ok = next_off[u] >= 0;
      cp_async16(smem_u32(st + u * 32 + lane), ok ? p.k + next_off[u] : p.k, ok);
      cp_async16(smem_u32(st + (U + u) * 32 + lane), ok ? p.v + next_off[u] : p.v, ok);
    }
    cp_async_commit();
  };
  offsets(0);
#pragma unroll
  for (int i = 0; i < S - 1; i++) {
    issue(i);
    offsets(i + 1);
  }
  for (int i = 0; i < n_iter; i++) {
    issue(i + S - 1);
    offsets(i + S);
    cp_async_wait<S - 1>(); /* step i has landed (this lane's own copies) */
    const uint4 *st = ring + (i % S) * 2 * U * 32;
    uint4 kr[U], vr[U];
    bool valid[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
      kr[u] = st[u * 32 + lane];
      vr[u] = st[(U + u) * 32 + lane];
      valid[u] = decode_kv_off<D>(p, table, first + i * step + u * TPW + tg, t_end, kvh, c) >= 0;
    }
    decode_step<D, G, U>(kr, vr, valid, qv, acc, m, l, p.group);
  }
  cp_async_wait<0>();
  decode_finish<D, G>(p, split, kvh, b, acc, m, l, sm_acc, sm_m, sm_l);
}

/* Pass 2: merge the splits of one (head, sequence) by their LSE. Sequences with no token get
 * O = 0 and LSE = -inf. */
template <int D>
__global__ void __launch_bounds__(128) paged_decode_reduce_kernel(const decode_params p) {
  const int head = blockIdx.x, b = blockIdx.y;
  const int ctx = seq_len(p, b);
  const int ns = (ctx + p.part_len - 1) / p.part_len;
  const long long pi = ((long long)b * p.hq + head) * p.splits;
  float mx, sum;
  lse_max_sum(p.lse_part + pi, 1, ns, mx, sum);
  for (int x = threadIdx.x; x < D; x += blockDim.x) {
    float out = 0.f;
    if (sum > 0.f) {
      for (int s = 0; s < ns; s++) out += expf(p.lse_part[pi + s] - mx) * p.o_part[(pi + s) * D + x];
      out /= sum;
    }
    p.o[((long long)b * p.hq + head) * D + x] = (uint16_t)(pack_bf16x2(out, 0.f) & 0xffffu);
  }
  if (threadIdx.x == 0 && p.lse) p.lse[(long long)head * p.batch + b] = sum > 0.f ? mx + logf(sum) : -INFINITY;
}

/* Splits and tokens per split for this shape on the current device. */
mk_status plan(const mk_paged_decode_args *a, int *splits, int *part_len) {
  int dev = 0, sms = 0;
  MK_CUDA_CHECK(cudaGetDevice(&dev));
  MK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  using C = decode_config;
  const long long ctx = a->max_context_len > 0 ? a->max_context_len : 1;
  long long s = a->num_splits;
  if (s <= 0) {
    const long long base = (long long)a->batch * a->hkv;
    /* About 16 CTAs per SM (MK_PAGED_DECODE_CTAS_PER_SM): several waves of short CTAs keep the
     * tail of the last wave small; the partials cost 2 * splits * d * 4 bytes per (sequence,
     * head), far below its K/V. */
    s = (mk_param_paged_decode_ctas_per_sm() * sms + base - 1) / base;
    const long long most = (ctx + C::kMinPart - 1) / C::kMinPart;
    if (s > most) s = most;
  }
  if (s < 1) s = 1;
  if (s > ctx) s = ctx;
  long long part = (ctx + s - 1) / s;
  part = (part + C::kPartAlign - 1) / C::kPartAlign * C::kPartAlign;
  *part_len = (int)part;
  *splits = (int)((ctx + part - 1) / part);
  return MK_STATUS_OK;
}

mk_status validate(const mk_paged_decode_args *a) {
  if (!a) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "paged_decode: args is NULL");
  if (a->d != 64 && a->d != 128)
    MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_KERNEL, "paged_decode: head dim %d (supported: 64, 128)", a->d);
  if (a->hkv <= 0 || a->hq <= 0 || a->hq % a->hkv || a->hq / a->hkv > decode_config::kMaxGroup || a->hkv > 65535)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "paged_decode: hq %d must be a multiple of hkv %d, at most %d times it", a->hq, a->hkv,
                  decode_config::kMaxGroup);
  if (a->batch < 0 || a->batch > 65535 || a->block_size <= 0 || a->max_blocks_per_seq < 0 ||
      a->max_context_len < 0 || a->num_blocks < 0 || a->num_splits < 0)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "paged_decode: batch %d (<= 65535), block_size %d (> 0), max_blocks_per_seq %d, "
                  "max_context_len %d, num_blocks %d, num_splits %d must be >= 0",
                  a->batch, a->block_size, a->max_blocks_per_seq, a->max_context_len, a->num_blocks, a->num_splits);
  if ((long long)a->max_blocks_per_seq * a->block_size < a->max_context_len)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "paged_decode: max_context_len %d does not fit in %d blocks of %d tokens", a->max_context_len,
                  a->max_blocks_per_seq, a->block_size);
  if ((long long)a->num_blocks * a->block_size > INT32_MAX)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "paged_decode: %d blocks of %d tokens: the cache holds more than 2^31 tokens", a->num_blocks,
                  a->block_size);
  if (!(a->softmax_scale == a->softmax_scale) || isinf(a->softmax_scale))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "paged_decode: softmax_scale is not finite");
  return MK_STATUS_OK;
}

template <int D, int G>
mk_status launch_pass1(const decode_params &p, cudaStream_t stream) {
  dim3 grid((unsigned)p.splits, (unsigned)p.hkv, (unsigned)p.batch);
  if (mk_param_paged_decode_kernel() == 2) return paged_decode_mma_pass1<D>(p, stream);
  if (mk_param_paged_decode_kernel() == 0) {
    paged_decode_kernel<D, G><<<grid, decode_config::kThreads, 0, stream>>>(p);
    return MK_STATUS_OK;
  }
  const size_t smem = decode_config::kPipeSmem;
  MK_CUDA_CHECK(cudaFuncSetAttribute(paged_decode_pipe_kernel<D, G>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)smem));
  paged_decode_pipe_kernel<D, G><<<grid, decode_config::kThreads, smem, stream>>>(p);
  return MK_STATUS_OK;
}

template <int D>
mk_status launch_d(const decode_params &p, cudaStream_t stream) {
  mk_status st = p.group <= 1   ? launch_pass1<D, 1>(p, stream)
                 : p.group <= 2 ? launch_pass1<D, 2>(p, stream)
                 : p.group <= 4 ? launch_pass1<D, 4>(p, stream)
                 : p.group <= 8 ? launch_pass1<D, 8>(p, stream)
                                : launch_pass1<D, 16>(p, stream);
  if (st != MK_STATUS_OK) return st;
  if (p.splits > 1) paged_decode_reduce_kernel<D><<<dim3((unsigned)p.hq, (unsigned)p.batch), 128, 0, stream>>>(p);
  return MK_STATUS_OK;
}

}  // namespace

extern "C" mk_status mk_paged_decode_workspace_size(const mk_paged_decode_args *a, size_t *bytes) {
  if (!bytes) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "paged_decode: bytes is NULL");
  *bytes = 0;
  MK_CHECK(validate(a));
  int splits = 1, part = 0;
  MK_CHECK(plan(a, &splits, &part));
  if (splits > 1) *bytes = (size_t)a->batch * a->hq * splits * ((size_t)a->d + 1) * sizeof(float);
  return MK_STATUS_OK;
}

extern "C" mk_status mk_paged_decode(const mk_paged_decode_args *a, mk_stream_t stream) {
  MK_CHECK(validate(a));
  if (a->batch == 0) return MK_STATUS_OK;
  if (!a->q || !a->k_cache || !a->v_cache || !a->block_table || !a->context_lens || !a->o)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "paged_decode: a NULL tensor pointer");
  if (((uintptr_t)a->q | (uintptr_t)a->k_cache | (uintptr_t)a->v_cache | (uintptr_t)a->workspace) % 16)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "paged_decode: q, k_cache, v_cache, workspace must be 16-byte aligned");
  decode_params p;
  p.q = a->q;
  p.k = a->k_cache;
  p.v = a->v_cache;
  p.block_table = a->block_table;
  p.context_lens = a->context_lens;
  p.o = a->o;
  p.lse = a->lse;
  p.batch = a->batch;
  p.hq = a->hq;
  p.hkv = a->hkv;
  p.group = a->hq / a->hkv;
  p.block_size = a->block_size;
  p.max_blocks = a->max_blocks_per_seq;
  p.max_ctx = a->max_context_len;
  p.num_blocks = a->num_blocks;
  p.scale_log2 = a->softmax_scale * 1.4426950408889634f;
  MK_CHECK(plan(a, &p.splits, &p.part_len));
  p.o_part = p.lse_part = NULL;
  if (p.splits > 1) {
    if (!a->workspace)
      MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                    "paged_decode: %d splits need a workspace (mk_paged_decode_workspace_size)", p.splits);
    p.o_part = (float *)a->workspace;
    p.lse_part = p.o_part + (size_t)a->batch * a->hq * p.splits * a->d;
  }
  cudaStream_t s = (cudaStream_t)stream;
  MK_CHECK(a->d == 64 ? launch_d<64>(p, s) : launch_d<128>(p, s));
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}
