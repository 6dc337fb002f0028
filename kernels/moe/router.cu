/* router.cu — MoE router: softmax top-k with and without renormalisation, the Qwen2-MoE
 * shared-expert sigmoid gate, per-expert token counts. One warp per token: each lane keeps
 * its strided share of the logits, k rounds of a warp arg-max (value, then lower id) pick
 * the experts; the softmax denominator is a warp sum of exp(l - max). */
#include <cuda_runtime.h>

#include "core/check.h"
#include "kernels/elementwise/ew_common.cuh"
#include "kernels/moe/mk_moe.h"

namespace {
constexpr int kWarps = 8;
constexpr int kNormRouteMaxH = 8192; /* the normed row and the logits in the default 48 KB of shared memory */

__global__ void __launch_bounds__(kWarps * 32) moe_route_kernel(const float *logits, int64_t T, int E, int K,
                                                                int renorm, const float *shared_logit, int32_t *ids,
                                                                float *wout, float *shared_w, int32_t *counts) {
  const int lane = threadIdx.x & 31;
  const int64_t t = (int64_t)blockIdx.x * kWarps + threadIdx.x / 32;
  if (t >= T) return;
  const float *l = logits + t * E;
  float mx = -INFINITY;
  for (int e = lane; e < E; e += 32) mx = fmaxf(mx, l[e]);
  for (int o = 16; o; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  float sum = 0.f;
  for (int e = lane; e < E; e += 32) sum += expf(l[e] - mx);
  for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  int chosen[MK_MOE_MAX_TOPK];
  float p[MK_MOE_MAX_TOPK], tot = 0.f;
  for (int k = 0; k < K; k++) {
    float bv = -INFINITY;
    int be = 0x7fffffff;
    for (int e = lane; e < E; e += 32) {
      bool taken = false;
      for (int j = 0; j < k; j++) taken |= chosen[j] == e;
      const float v = l[e];
      if (!taken && (v > bv || (v == bv && e < be))) bv = v, be = e;
    }
    for (int o = 16; o; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int oe = __shfl_xor_sync(0xffffffffu, be, o);
      if (ov > bv || (ov == bv && oe < be)) bv = ov, be = oe;
    }
    chosen[k] = be;
    p[k] = expf(bv - mx) / sum;
    tot += p[k];
  }
  if (lane < K) {
    float v = 0.f;
    int e = 0;
    for (int k = 0; k < K; k++)
      if (k == lane) v = p[k], e = chosen[k];
    ids[t * K + lane] = e;
    wout[t * K + lane] = renorm ? v / tot : v;
    if (counts) atomicAdd(&counts[e], 1);
  }
  if (lane == 0 && shared_logit) shared_w[t] = 1.0f / (1.0f + expf(-shared_logit[t]));
}

/* The same routing for E <= 32 kPer with the row in registers, by one warp: lane l holds experts l,
 * l + 32, ... (the order moe_route_kernel reads them in, so the max, the sum and every choice are the same
 * bits); each round takes the warp's largest not yet taken (ties: the lower expert), and its lane marks it
 * taken. moe_route_kernel re-read the row from memory and scanned the chosen list in local memory for every
 * expert of every round: 10.6 us for 64 tokens at E = 128, k = 8 (run 7fa1977-x2). Writes the token's K ids
 * and weights (ids, wout: its rows) and, with shared_logit, the shared expert's gate. */
template <int kPer>
__device__ __forceinline__ void moe_route_row(const float *l, int E, int K, int renorm, const float *shared_logit,
                                              int32_t *ids, float *wout, float *shared_w, int32_t *counts) {
  const int lane = threadIdx.x & 31;
  float v[kPer];
#pragma unroll
  for (int i = 0; i < kPer; i++) v[i] = lane + 32 * i < E ? l[lane + 32 * i] : -INFINITY;
  float mx = -INFINITY;
#pragma unroll
  for (int i = 0; i < kPer; i++)
    if (lane + 32 * i < E) mx = fmaxf(mx, v[i]);
  for (int o = 16; o; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < kPer; i++)
    if (lane + 32 * i < E) sum += expf(v[i] - mx);
  for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  unsigned taken = 0; /* bit i: expert lane + 32 i chosen */
  int my_e = 0;
  float my_p = 0.f, tot = 0.f;
  for (int k = 0; k < K; k++) {
    float bv = -INFINITY;
    int be = 0x7fffffff;
#pragma unroll
    for (int i = 0; i < kPer; i++) { /* ascending e: a tie keeps the lower */
      const int e = lane + 32 * i;
      if (e < E && !((taken >> i) & 1) && (v[i] > bv || (v[i] == bv && e < be))) bv = v[i], be = e;
    }
    for (int o = 16; o; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int oe = __shfl_xor_sync(0xffffffffu, be, o);
      if (ov > bv || (ov == bv && oe < be)) bv = ov, be = oe;
    }
    if ((be & 31) == lane) taken |= 1u << (be >> 5);
    const float pk = expf(bv - mx) / sum;
    tot += pk;
    if (lane == k) my_e = be, my_p = pk;
  }
  if (lane < K) {
    ids[lane] = my_e;
    wout[lane] = renorm ? my_p / tot : my_p;
    if (counts) atomicAdd(&counts[my_e], 1);
  }
  if (lane == 0 && shared_logit) *shared_w = 1.0f / (1.0f + expf(-*shared_logit));
}

template <int kPer>
__global__ void __launch_bounds__(kWarps * 32) moe_route_reg_kernel(const float *logits, int64_t T, int E, int K,
                                                                    int renorm, const float *shared_logit,
                                                                    int32_t *ids, float *wout, float *shared_w,
                                                                    int32_t *counts) {
  const int64_t t = (int64_t)blockIdx.x * kWarps + threadIdx.x / 32;
  if (t >= T) return;
  moe_route_row<kPer>(logits + t * E, E, K, renorm, shared_logit ? shared_logit + t : NULL, ids + t * K, wout + t * K,
                      shared_w ? shared_w + t : NULL, counts);
}

/* mk_moe_norm_route: one CTA a token, of mk_ew_rmsnorm_threads(H) threads (the block mk_rmsnorm_f32 takes, so
 * the sum of squares is the same bits). RMSNorm of the row -> hb (bf16) and the fp32 row in shared memory; the
 * router logits and the shared expert's gate logit, kU outputs a warp, each summed in mk_linear_f32_vec_kernel's
 * order (16-byte weight loads, lane slices in k order, a butterfly: the bits of mk_linear_f32out for any rows a
 * warp); then warp 0 routes the row (moe_route_row). The same outputs, bit for bit, as mk_rmsnorm_f32,
 * mk_linear_f32out (and the gate's) and mk_moe_route in one launch instead of three or four. */
template <int kPer, int kU>
__global__ void __launch_bounds__(1024)
    moe_norm_route_kernel(const float *x, const float *nw, int H, float eps, const uint16_t *router, int E,
                          const uint16_t *seg, int K, int renorm, uint16_t *hb, int32_t *ids, float *wout,
                          float *shared_w) {
  extern __shared__ float4 nr_smem[];
  float *v = (float *)nr_smem, *lg = v + H; /* [H] the normed row, [E + 1] the logits */
  const int64_t t = blockIdx.x;
  mk_ew_rmsnorm_row(x + t * H, nw, H, eps, hb + t * H, v);
  __syncthreads();
  /* a warp takes kU consecutive outputs at once (kU = outputs / warps: 1, 2 or 4), and each lane issues the weight
     loads of 8 / kU steps before their FMAs: 32 to 64 bytes a lane in flight. One output a warp with 2 steps in
     flight took 13.6 us at Mixtral's T = 37 (8 busy warps a CTA, stalled on the loads' latency) and 16.8 us for
     Qwen3's 512 KB router (runs 6df28f0-x2, 36b2940-x2). Each output's sum keeps mk_linear_f32_vec_kernel's order
     (a lane's slices q = lane, lane + 32, ... in turn, then the butterfly), so its bits. */
  constexpr int kSteps = 8 / kU;
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, nwarps = blockDim.x / 32, nv = H / 8;
  const int outs = E + (seg ? 1 : 0);
  for (int j0 = warp * kU; j0 < outs; j0 += nwarps * kU) {
    const uint4 *wr[kU];
    float a[kU];
#pragma unroll
    for (int u = 0; u < kU; u++) {
      const int j = j0 + u < outs ? j0 + u : j0; /* past the last: a copy of the first, not stored */
      wr[u] = (const uint4 *)(j < E ? router + (int64_t)j * H : seg);
      a[u] = 0;
    }
    for (int q0 = lane; q0 < nv; q0 += 32 * kSteps) {
      uint4 wv[kSteps][kU];
#pragma unroll
      for (int st = 0; st < kSteps; st++)
#pragma unroll
        for (int u = 0; u < kU; u++)
          if (q0 + 32 * st < nv) wv[st][u] = wr[u][q0 + 32 * st];
#pragma unroll
      for (int st = 0; st < kSteps; st++) {
        const int q = q0 + 32 * st;
        if (q >= nv) break;
        const float4 xa = nr_smem[2 * q], xb = nr_smem[2 * q + 1];
#pragma unroll
        for (int u = 0; u < kU; u++) a[u] = mk_ew_dot8(a[u], wv[st][u], xa, xb);
      }
    }
#pragma unroll
    for (int u = 0; u < kU; u++) {
      for (int o = 16; o; o >>= 1) a[u] += __shfl_xor_sync(0xffffffffu, a[u], o);
      if (lane == 0 && j0 + u < outs) lg[j0 + u] = a[u];
    }
  }
  __syncthreads();
  if (warp == 0)
    moe_route_row<kPer>(lg, E, K, renorm, seg ? lg + E : NULL, ids + t * K, wout + t * K, seg ? shared_w + t : NULL,
                        NULL);
}
}  // namespace

extern "C" mk_status mk_moe_route(const float *logits, int64_t T, int E, int top_k, int renorm,
                                  const float *shared_logit, int32_t *ids, float *w, float *shared_w, int32_t *counts,
                                  mk_stream_t stream) {
  if (T < 0 || E < 1 || E > MK_MOE_MAX_EXPERTS || top_k < 1 || top_k > E || top_k > MK_MOE_MAX_TOPK ||
      (shared_logit && !shared_w))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "moe_route: bad arguments T=%lld E=%d top_k=%d (need 1 <= top_k <= min(E, %d), E <= %d, shared_w "
                  "with shared_logit)",
                  (long long)T, E, top_k, MK_MOE_MAX_TOPK, MK_MOE_MAX_EXPERTS);
  cudaStream_t s = (cudaStream_t)stream;
  if (counts) MK_CUDA_CHECK(cudaMemsetAsync(counts, 0, sizeof(int32_t) * (size_t)E, s));
  if (T == 0) return MK_STATUS_OK;
  if (!logits || !ids || !w)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "moe_route: logits, ids and w must be non-null");
  const int64_t blocks = (T + kWarps - 1) / kWarps;
#define MK_ROUTE_REG(P)                                                                                     \
  moe_route_reg_kernel<P><<<(unsigned)blocks, kWarps * 32, 0, s>>>(logits, T, E, top_k, renorm, shared_logit, ids, w, \
                                                                   shared_w, counts)
  if (E <= 32) MK_ROUTE_REG(1);
  else if (E <= 64) MK_ROUTE_REG(2);
  else if (E <= 128) MK_ROUTE_REG(4);
  else if (E <= 256) MK_ROUTE_REG(8);
  else moe_route_kernel<<<(unsigned)blocks, kWarps * 32, 0, s>>>(logits, T, E, top_k, renorm, shared_logit, ids, w,
                                                                  shared_w, counts);
#undef MK_ROUTE_REG
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_moe_norm_route(const float *x, const float *norm_w, int64_t T, int H, float eps,
                                       const uint16_t *router, int E, const uint16_t *seg, int top_k, int renorm,
                                       uint16_t *hb, int32_t *ids, float *w, float *shared_w, mk_stream_t stream) {
  if (T == 0) return MK_STATUS_OK;
  if (!mk_moe_norm_route_fits(H, E, top_k) || T < 0 || !x || !norm_w || !router || !hb || !ids || !w ||
      (seg && !shared_w) || ((uintptr_t)x | (uintptr_t)router | (uintptr_t)seg) % 16)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "moe_norm_route: bad arguments T=%lld H=%d E=%d top_k=%d (need H %% 8 == 0, H <= %d, top_k <= E <= "
                  "256, top_k <= %d, x / router / seg 16-byte aligned, shared_w with seg)",
                  (long long)T, H, E, top_k, kNormRouteMaxH, MK_MOE_MAX_TOPK);
  const int threads = mk_ew_rmsnorm_threads(H);
  const size_t smem = sizeof(float) * (size_t)(H + E + 1);
  cudaStream_t s = (cudaStream_t)stream;
#define MK_NORM_ROUTE(P, U)                                                                                     \
  moe_norm_route_kernel<P, U><<<(unsigned)T, threads, smem, s>>>(x, norm_w, H, eps, router, E, seg, top_k, renorm, \
                                                                 hb, ids, w, shared_w)
#define MK_NORM_ROUTE_U(P)                                       \
  do {                                                           \
    if (per_warp <= 1) MK_NORM_ROUTE(P, 1);                      \
    else if (per_warp <= 2) MK_NORM_ROUTE(P, 2);                 \
    else MK_NORM_ROUTE(P, 4);                                    \
  } while (0)
  const int per_warp = (E + (seg ? 1 : 0) + threads / 32 - 1) / (threads / 32); /* router outputs a warp */
  if (E <= 32) MK_NORM_ROUTE_U(1);
  else if (E <= 64) MK_NORM_ROUTE_U(2);
  else if (E <= 128) MK_NORM_ROUTE_U(4);
  else MK_NORM_ROUTE_U(8);
#undef MK_NORM_ROUTE_U
#undef MK_NORM_ROUTE
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" int mk_moe_norm_route_fits(int H, int E, int top_k) {
  return H >= 8 && H % 8 == 0 && H <= kNormRouteMaxH && E >= 1 && E <= 256 && top_k >= 1 && top_k <= E &&
         top_k <= MK_MOE_MAX_TOPK;
}
