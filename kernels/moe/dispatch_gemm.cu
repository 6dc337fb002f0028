/* dispatch_gemm.cu — fused MoE, first half: plan, device-side count exchange, dispatch of
 * token rows overlapped with the grouped gate/up GEMM, SwiGLU.
 *
 * Kernels of one call (stream s, and s2 forked from it). T <= 1024 (decode): zeroing, plan and
 * exchange run as one kernel of one CTA (moe_plan_exchange_kernel); above, a memset of the
 * counters, the plan, then the exchange.
 *   plan      (s)  one thread per token: the distinct destination ranks of its top-k experts;
 *                  per rank d a landing slot j = atomicAdd(n_send[d]) and the row's meta (home
 *                  token, local experts and weights in top-k order) -> smeta[d][j]; pairs per
 *                  global expert. Slots depend on timing; results do not (see below).
 *   exchange  (s)  one CTA: the count record {rows, pairs per local expert} to every rank d
 *                  (NVLink store + signal, or PUT + SIGNAL through the proxy), then waits for
 *                  every source's record (cnt_sig[s] >= epoch + 1), zeroing ready/done2 while
 *                  the records travel; then GEMM group sizes, row and
 *                  tile-row offsets. Barrier point 1: nothing below starts before all counts.
 *   dispatch  (s2) C CTAs. Send: CTA c takes chunk c of the rows for each rank d (starting at
 *                  rank + 1) and writes row x[token] and its meta once per destination rank
 *                  into land[rank][j] / lmeta[rank][j] there, then land_sig[rank][c] += 1.
 *                  Receive: for each source s, CTA c waits (paced) for land_sig[s][c], copies each
 *                  landed row to A1 once per local expert of it, at exp_off[e] + atomicAdd(
 *                  fill[e]) (grouped by local expert), records the row in posmap, and adds 1 to
 *                  ready[tile-row] (release).
 *                  Serial and hybrid schedules (mk_moe_schedule): on s, SMs - 4 CTAs, with
 *                  nothing beside them, and gemm1 after it on every SM.
 *   gemm1     (s)  the GEMM core over the groups on SMs - C CTAs; before_load waits until its
 *                  tile-row has all its rows (ready >= rows of the tile; paced polls), so tiles
 *                  start as their rows land, in any order of arrival; while a tile waits, its
 *                  first k-blocks of weights are prefetched into L2. args.split_k: the last
 *                  wave's tiles in k-slices (planned on the device, gemm_split.cuh); before_load
 *                  runs for each slice.
 *   swiglu         SwiGLU in gemm1's epilogue (default: w1 interleaved by 8 rows at create, the
 *                  core's kGluPairs epilogue writes act directly), or a separate pass (s) act[m, i]
 *                  = silu(C1[m, i]) * C1[m, I + i] when args.swiglu_pass.
 * Determinism: a row's GEMM result does not depend on where it sits in A1, and every
 * reduction (combine) runs in a fixed order, so outputs are bit-identical across runs. */
#include "kernels/gemm/gemm_split.cuh"
#include "kernels/moe/moe_common.cuh"

namespace {

/* Token t's plan: landing slots, metas and pair counts (n_send, cnt_pairs zeroed before). */
__device__ __forceinline__ void moe_plan_token(const mk_moe_dev &d, const int32_t *ids, const float *wts, int64_t t) {
  int dk[MK_MOE_MAX_TOPK], e[MK_MOE_MAX_TOPK];
  float w[MK_MOE_MAX_TOPK];
  for (int k = 0; k < d.K; k++) {
    e[k] = ids[t * d.K + k];
    w[k] = wts[t * d.K + k];
    dk[k] = (unsigned)e[k] < (unsigned)d.E ? e[k] / d.El : -1;
  }
  for (int r = 0; r < d.W; r++) d.slot[t * d.W + r] = -1;
  for (int k = 0; k < d.K; k++) {
    const int r = dk[k];
    if (r < 0) continue;
    bool first = true;
    for (int q = 0; q < k; q++) first &= dk[q] != r;
    if (!first) continue;
    const int j = atomicAdd(&d.n_send[r], 1);
    d.slot[t * d.W + r] = j;
    mk_moe_meta m;
    m.token = (int32_t)t;
    m.n = 0;
    m.pad[0] = m.pad[1] = 0;
    for (int q = k; q < d.K; q++)
      if (dk[q] == r) {
        m.e[m.n] = e[q] % d.El;
        m.w[m.n] = w[q];
        m.n++;
        atomicAdd(&d.cnt_pairs[e[q]], 1);
      }
    for (int q = m.n; q < MK_MOE_MAX_TOPK; q++) m.e[q] = 0, m.w[q] = 0.f;
    mk_moe_meta *dst = mk_local_ptr<mk_moe_meta>(d.w, d.o_smeta) + (int64_t)r * d.Tm + j;
    *dst = m;
  }
}

__global__ void moe_plan_kernel(mk_moe_dev d, const int32_t *ids, const float *wts, int64_t T) {
  const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t < T) moe_plan_token(d, ids, wts, t);
}

/* One CTA, after the plan. Zeroes ready/done2 (read by gemm1, dispatch, gemm2 and combine,
 * which all follow this kernel). Thread r < W sends the record for rank r; thread s < W waits
 * for source s. */
__device__ __forceinline__ void moe_exchange_cta(const mk_moe_dev &d) {
  if (threadIdx.x == 0) moe_stamp(d.prof, MK_MOE_PH_EXCH_START);
  const uint64_t target = moe_target(d);
  const uint64_t rec_bytes = (uint64_t)d.cnt_stride * 4;
  for (int r = threadIdx.x; r < d.W; r += blockDim.x) {
    int32_t *rec = mk_local_ptr<int32_t>(d.w, d.o_cnt_out) + (int64_t)r * d.cnt_stride;
    rec[0] = d.n_send[r];
    for (int e = 0; e < d.El; e++) rec[1 + e] = d.cnt_pairs[r * d.El + e];
    const uint64_t dst_off = d.o_cnt_in + (uint64_t)d.rank * rec_bytes;
    const uint64_t sig = d.o_cnt_sig + (uint64_t)d.rank * 8;
    if (moe_same_node(d, r)) {
      int32_t *o = mk_peer_ptr<int32_t>(d.w, moe_local(d, r), dst_off);
      for (int i = 0; i < d.El + 1; i++) o[i] = rec[i];
      mk_signal_add(d.w, moe_local(d, r), sig, 1);
    } else {
      __threadfence_system();
      mk_post(d.w, MK_CMD_PUT, r, d.o_cnt_out + (uint64_t)r * rec_bytes, dst_off, rec_bytes, 0, 0);
      mk_post(d.w, MK_CMD_SIGNAL, r, 0, 0, 0, sig, 1);
    }
  }
  { /* while the records travel */
    uint64_t *rd = mk_local_ptr<uint64_t>(d.w, d.o_ready);
    const int64_t words = 2 * (d.m_cap / 128 + d.El + 1);
    for (int64_t i = threadIdx.x; i < words; i += blockDim.x) rd[i] = 0;
  }
  int ok = 1;
  for (int s = threadIdx.x; s < d.W; s += blockDim.x)
    ok &= mk_wait_ge(d.w, d.o_cnt_sig + (uint64_t)s * 8, target, MK_OP_MOE, s, -1);
  if (!__syncthreads_and(ok)) return;
  if (threadIdx.x == 0) moe_stamp(d.prof, MK_MOE_PH_COUNTS);
  const int32_t *in = mk_local_ptr<int32_t>(d.w, d.o_cnt_in);
  for (int s = threadIdx.x; s < d.W; s += blockDim.x) d.n_from[s] = in[(int64_t)s * d.cnt_stride];
  for (int e = threadIdx.x; e < d.El; e += blockDim.x) {
    int n = 0;
    for (int s = 0; s < d.W; s++) n += in[(int64_t)s * d.cnt_stride + 1 + e];
    d.rows[e] = n;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    int off = 0, tiles = 0;
    for (int e = 0; e < d.El; e++) {
      d.exp_off[e] = off;
      d.tile_base[e] = tiles;
      off += d.rows[e];
      tiles += (d.rows[e] + 127) / 128;
    }
    d.exp_off[d.El] = off;
    d.tile_base[d.El] = tiles;
  }
}

__global__ void moe_exchange_kernel(mk_moe_dev d) { moe_exchange_cta(d); }

/* Decode (T <= kPlanCta): zeroing, plan and exchange in one CTA, one launch instead of a
 * memset, the plan and the exchange. */
constexpr int kPlanCta = 1024;
__global__ void __launch_bounds__(kPlanCta) moe_plan_exchange_kernel(mk_moe_dev d, const int32_t *ids,
                                                                     const float *wts, int64_t T) {
  for (int i = threadIdx.x; i < d.W + d.E + d.El; i += blockDim.x) d.n_send[i] = 0; /* n_send, cnt_pairs, fill */
  __syncthreads();
  for (int64_t t = threadIdx.x; t < T; t += blockDim.x) moe_plan_token(d, ids, wts, t);
  __syncthreads();
  moe_exchange_cta(d);
}

__global__ void __launch_bounds__(kMoeCommThreads) moe_dispatch_kernel(mk_moe_dev d, const uint16_t *x) {
  const uint64_t target = moe_target(d);
  const int c = blockIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const uint64_t row_bytes = (uint64_t)d.H * 2, area = (uint64_t)d.Tm * row_bytes;
  /* ---- send: chunk c of the rows for each destination ---- */
  for (int i = 1; i <= d.W; i++) {
    const int r = (d.rank + i) % d.W;
    int64_t j0, j1;
    moe_chunk(d.n_send[r], c, d.C, &j0, &j1);
    const bool near = moe_same_node(d, r);
    const mk_moe_meta *sm = mk_local_ptr<mk_moe_meta>(d.w, d.o_smeta) + (int64_t)r * d.Tm;
    char *rows_dst = near ? mk_peer_ptr<char>(d.w, moe_local(d, r), d.o_land + d.rank * area)
                          : mk_local_ptr<char>(d.w, d.o_stage + r * area);
    for (int64_t j = j0 + warp; j < j1; j += kMoeWarps) {
      const int t = sm[j].token;
      moe_copy_row(rows_dst + j * row_bytes, x + (int64_t)t * d.H, (int64_t)row_bytes);
      if (near && lane < (int)(sizeof(mk_moe_meta) / 16)) {
        mk_moe_meta *lm = mk_peer_ptr<mk_moe_meta>(d.w, moe_local(d, r), d.o_lmeta) + (int64_t)d.rank * d.Tm + j;
        ((uint4 *)lm)[lane] = ((const uint4 *)(sm + j))[lane];
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      const uint64_t msz = sizeof(mk_moe_meta);
      moe_publish(d, r, d.o_stage + r * area + j0 * row_bytes, d.o_land + d.rank * area + j0 * row_bytes,
                  (j1 - j0) * row_bytes, d.o_smeta + ((uint64_t)r * d.Tm + j0) * msz,
                  d.o_lmeta + ((uint64_t)d.rank * d.Tm + j0) * msz, (j1 - j0) * msz,
                  d.o_land_sig + ((uint64_t)d.rank * d.C + c) * 8);
    }
  }
  if (threadIdx.x == 0) moe_stamp(d.prof, MK_MOE_PH_SENT);
  /* ---- receive: chunk c of each source, grouped by local expert into A1 ---- */
  for (int i = 0; i < d.W; i++) {
    const int s = (d.rank + d.W - i) % d.W;
    int64_t j0, j1;
    moe_chunk(d.n_from[s], c, d.C, &j0, &j1);
    int ok = 1; /* paced: beside GEMM1 in the overlapped schedule */
    if (threadIdx.x == 0)
      ok = mk_wait_ge_paced(d.w, d.o_land_sig + ((uint64_t)s * d.C + c) * 8, target, MK_OP_MOE, s, c, kMoePollNs);
    if (!__syncthreads_and(ok)) return;
    const char *land = mk_local_ptr<char>(d.w, d.o_land + s * area);
    const mk_moe_meta *lm = mk_local_ptr<mk_moe_meta>(d.w, d.o_lmeta) + (int64_t)s * d.Tm;
    for (int64_t j = j0 + warp; j < j1; j += kMoeWarps) {
      const int n = lm[j].n;
      int e = 0, p = 0; /* lane q < n: expert q of the row and its row of A1 */
      if (lane < n) {
        e = lm[j].e[lane];
        p = d.exp_off[e] + atomicAdd(&d.fill[e], 1);
      }
      int pos[MK_MOE_MAX_TOPK];
#pragma unroll
      for (int q = 0; q < MK_MOE_MAX_TOPK; q++) pos[q] = __shfl_sync(0xffffffffu, p, q);
      moe_copy_row_multi((char *)d.A1, pos, n, land + j * row_bytes, (int64_t)row_bytes);
      __syncwarp();
      if (lane < n) {
        d.posmap[((int64_t)s * d.Tm + j) * d.K + lane] = p;
        __threadfence();
        moe_red_add_gpu(mk_local_ptr<uint64_t>(d.w, d.o_ready) + moe_tile_of(d, e, p), 1);
      }
    }
  }
  if (d.prof) {
    __syncthreads();
    if (threadIdx.x == 0) moe_stamp(d.prof, MK_MOE_PH_LANDED);
  }
}

/* GEMM1 hooks: a tile-row's loads wait until all its rows have landed in A1. Weights do not
 * depend on the routing: while the rows are still in flight, the producer first has the
 * tile's next pf_kblocks k-blocks of B (its weights) fetched into L2 (one bulk prefetch per
 * B row), so those loads hit L2 once the rows are in. kGlu: SwiGLU in the epilogue (B = w1
 * with gate/up rows interleaved by 8, C = act). */
template <bool kGlu>
struct moe_gemm1_policy : mk_gemm_order_grouped, mk_gemm_hooks_default {
  static constexpr bool kAfterStore = false;
  static constexpr bool kGluPairs = kGlu;
  mk_dev_world w;
  uint64_t o_ready;
  const int32_t *exp_off, *tile_base;
  uint64_t *prof;
  const uint16_t *B; /* [groups][nb][kb] */
  int64_t nb, kb;
  int pf_kblocks;
  __device__ __forceinline__ void before_load(const mk_gemm_tile &t) {
    const int tile = tile_base[t.group] + (t.m0 - exp_off[t.group]) / mk_gemm_config::kBM;
    const uint64_t need = (uint64_t)(t.m_end - t.m0);
    const int64_t k0 = (int64_t)t.k0 * mk_gemm_config::kBK;
    if (pf_kblocks && k0 < kb && mk_ld_volatile(mk_local_ptr<uint64_t>(w, o_ready) + tile) < need) {
      const int64_t cols = min((int64_t)pf_kblocks * mk_gemm_config::kBK, kb - k0);
      const uint16_t *b = B + ((int64_t)t.group * nb + t.n0) * kb + k0;
      for (int n = t.n0; n < t.n_end; n++, b += kb) moe_prefetch_l2(b, (uint32_t)cols * 2);
    }
    mk_wait_ge_paced(w, o_ready + (uint64_t)tile * 8, (uint64_t)(t.m_end - t.m0), MK_OP_MOE, -1, tile, kMoePollNs);
    if (prof) {
      moe_stamp(prof, MK_MOE_PH_G1_FIRST);
      moe_stamp(prof, MK_MOE_PH_G1_LAST);
    }
  }
  __device__ __forceinline__ void after_store(const mk_gemm_tile &) {}
};

__global__ void moe_swiglu_kernel(const uint16_t *C1, uint16_t *act, const int32_t *total_dev, int64_t total_host,
                                  int I) {
  const int64_t M = total_host >= 0 ? total_host : (int64_t)*total_dev;
  const int64_t per_row = I / 8, n = M * per_row;
  for (int64_t v = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += (int64_t)gridDim.x * blockDim.x) {
    const int64_t m = v / per_row, i = (v % per_row) * 8;
    const uint4 g = *(const uint4 *)(C1 + m * 2 * I + i), u = *(const uint4 *)(C1 + m * 2 * I + I + i);
    const __nv_bfloat162 *g2 = (const __nv_bfloat162 *)&g, *u2 = (const __nv_bfloat162 *)&u;
    uint4 o;
    __nv_bfloat162 *o2 = (__nv_bfloat162 *)&o;
#pragma unroll
    for (int q = 0; q < 4; q++) {
      const float2 a = __bfloat1622float2(g2[q]), b = __bfloat1622float2(u2[q]);
      o2[q] = __floats2bfloat162_rn(a.x / (1.f + __expf(-a.x)) * b.x, a.y / (1.f + __expf(-a.y)) * b.y);
    }
    *(uint4 *)(act + m * I + i) = o;
  }
}

}  // namespace

int64_t mk_param_gemm_group_m(void); /* gemm.cu: MK_GEMM_GROUP_M */

extern "C" mk_status mk_moe_launch_plan(const mk_moe_dev *d, const int32_t *ids, const float *w, int64_t T,
                                        void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  if (T <= kPlanCta) {
    moe_plan_exchange_kernel<<<1, kPlanCta, 0, s>>>(*d, ids, w, T);
    MK_CUDA_LAUNCH_CHECK();
    return MK_STATUS_OK;
  }
  MK_CUDA_CHECK(cudaMemsetAsync(d->n_send, 0, sizeof(int32_t) * (size_t)(d->W + d->E + d->El), s));
  moe_plan_kernel<<<(unsigned)((T + 255) / 256), 256, 0, s>>>(*d, ids, w, T);
  MK_CUDA_LAUNCH_CHECK();
  moe_exchange_kernel<<<1, 256, 0, s>>>(*d);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_moe_launch_dispatch(const mk_moe_dev *d, const uint16_t *x, void *stream) {
  moe_dispatch_kernel<<<d->C, kMoeCommThreads, 0, (cudaStream_t)stream>>>(*d, x);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

template <bool kGlu>
static mk_status launch_gemm1(const mk_moe_dev *d, int grid, cudaStream_t stream) {
  moe_gemm1_policy<kGlu> p;
  p.group_m = (int)mk_param_gemm_group_m();
  p.w = d->w;
  p.o_ready = d->o_ready;
  p.exp_off = d->exp_off;
  p.tile_base = d->tile_base;
  p.prof = d->prof;
  p.B = kGlu ? d->w1g : d->w1;
  p.nb = 2 * (int64_t)d->I, p.kb = d->H, p.pf_kblocks = d->pf_kblocks;
  mk_gemm_args args = {kGlu ? d->act : d->C1, d->m_cap, 2 * (int64_t)d->I, d->H, d->El, d->rows};
  if (d->split_k) { /* k-slices of the last wave, planned on the device (gemm_split.cuh) */
    args.splits = -d->split_k, args.split_mode = d->split_force, args.ws = d->sk_ws, args.flags = d->sk_flags;
    return mk_gemm_core_launch_split(d->A1, kGlu ? d->w1g : d->w1, args, MK_GEMM_B_NK, p, grid, 0, stream);
  }
  return mk_gemm_core_launch(d->A1, kGlu ? d->w1g : d->w1, args, MK_GEMM_B_NK, p, grid, 0, stream);
}

extern "C" mk_status mk_moe_launch_gemm1(const mk_moe_dev *d, int grid, void *stream) {
  return d->glu ? launch_gemm1<true>(d, grid, (cudaStream_t)stream) : launch_gemm1<false>(d, grid, (cudaStream_t)stream);
}

extern "C" mk_status mk_moe_launch_swiglu(const mk_moe_dev *d, int64_t rows_host, void *stream) {
  moe_swiglu_kernel<<<1024, 256, 0, (cudaStream_t)stream>>>(d->C1, d->act, d->exp_off + d->El, rows_host, d->I);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_moe_preload_dispatch(int split_k) {
  cudaFuncAttributes a;
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)moe_plan_kernel));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)moe_exchange_kernel));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)moe_plan_exchange_kernel));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)moe_dispatch_kernel));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)moe_swiglu_kernel));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm1_policy<false>, 0, 256>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm1_policy<false>, 0, 128>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm1_policy<true>, 0, 256>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm1_policy<true>, 0, 128>));
  if (split_k) {
    MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm1_policy<false>, 0, 256, true>));
    MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm1_policy<false>, 0, 128, true>));
    MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm1_policy<true>, 0, 256, true>));
    MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm1_policy<true>, 0, 128, true>));
  }
  return MK_STATUS_OK;
}
