/* gemm_combine.cu — fused MoE, second half: the down GEMM with the combine overlapped.
 *
 *   gemm2    (s)  the GEMM core: C2 = act @ w2 per local expert, on SMs - C CTAs (serial
 *                 schedule: every SM); after_store adds 1 to done2[tile-row] (release) as each
 *                 tile is stored. Tiles 128 x 256, or 128 x 128 where the worst case has fewer
 *                 tiles than SMs and split-K is off (decode: bn2, moe.c). d.split_k2 (split_k, or
 *                 under AUTO 8 where the 256-wide tiles are fewer than the SMs): the last wave in
 *                 k-slices; only the slice that sums them stores and signals.
 *   combine  (s2) Cc CTAs, launched once gemm1 is done, concurrent with gemm2 (serial: after
 *                 it, on s). For each home rank s
 *                 (this rank's own first), CTA c takes chunk c of the rows s sent here, in
 *                 batches of 16 rows: warp i waits until the tile-rows of all experts of row i
 *                 are complete (done2 >= tiles across N; polled with a 0.25 us pause, not to
 *                 load the memory system beside GEMM2); then every thread sums one 16-byte
 *                 vector of a row, w_i * C2[row of expert i] in top-k order (fp32), and writes
 *                 the bf16 sum to comb[rank][j] at s (NVLink store, or staged + PUT through
 *                 the proxy); then comb_sig[rank][c] += 1 at s.
 *   reduce   (s)  after both joined: every CTA (at most 128) waits for comb_sig[d][c] >= epoch + 1 for all
 *                 d, c (barrier point 2), then out[t] = sum over ranks d in increasing order
 *                 of comb[d][slot(t, d)] (fp32, one bf16 rounding; one 16-byte vector per
 *                 thread, the ranks' loads together): a fixed order, so results are
 *                 bit-identical across runs.
 * Push combine (d.push, MK_MOE_PUSH: one node group, serial or overlapped schedule) instead of
 * combine and reduce:
 *   gemm2    (s)  on every SM; the epilogue stores row p of C2 not into C2 but straight into
 *                 its home's pland row (token, q) (rowdst[p], written by the dispatch as the row
 *                 landed), over NVLink as the tiles are produced. tail(): each CTA, past its last
 *                 tile, fences (system) and counts itself out on g2_out (local, zeroed each call);
 *                 the last one out fences again and adds psig[rank] += 1 at every rank.
 *   reduce   (s)  waits for psig[d] >= epoch + 1 for all d, then out[t] = sum over q in top-k
 *                 order of w[t, q] pland[t][q] (fp32, one bf16 rounding; pairs with an expert id
 *                 outside [0, E) skipped, as the plan skips them): a fixed order.
 *                 Rows cross NVLink once per (token, expert), not once per (token, rank) as the
 *                 combine's partial sums do, but beside GEMM2 rather than after it. Up to 1024
 *                 CTAs (one node group: no proxy kernel needs SM room beside them). Its last CTA
 *                 out advances the call (no advance kernel after it).
 *   fan           (d.fan, mk_moe_forward_all) the epilogue stores each row into every rank's pland
 *                 (out_also: the same heap offset at each peer), and every rank reduces every
 *                 token of the group (and adds it to the residual): no all-gather after.
 * The epoch advance after reduce closes the call (counters only grow; nothing is reset
 * except the local ready/done2/g2_out counters, which only this rank's kernels touch). */
#include "kernels/gemm/gemm_split.cuh"
#include "kernels/moe/moe_common.cuh"

namespace {

template <bool kPush>
struct moe_gemm2_policy : mk_gemm_order_grouped, mk_gemm_hooks_default {
  static constexpr bool kAfterStore = true;
  static constexpr bool kTail = kPush;
  static constexpr bool kOutAlso = kPush;
  uint64_t *done2;
  const int32_t *exp_off, *tile_base;
  uint64_t *prof;
  /* push */
  uint16_t *const *rowdst;
  const uint64_t *rowinfo, *calls; /* d.ll: row p's home and (token, q) instead of rowdst */
  uint64_t o_pland;
  int64_t H;
  mk_dev_world w;
  uint64_t *g2_out, o_psig;
  int W, rank;
  /* GEMM2 beside GEMM1 (push only): a programmatic dependent of GEMM1; each tile-row's loads wait
     until GEMM1 has stored the act columns they read of that tile-row (done2, reset each call) */
  uint64_t o_done2;
  int g12_need, g12_half, K; /* GEMM1's tiles a tile-row, act columns a GEMM1 tile, GEMM2's K (= I) */
  int fan;                   /* d.fan: every row into every rank's pland [W][Tm][K][H] (tm_k = Tm K rows a home) */
  int64_t tm_k;
  /* d.ll: row's rowinfo carries this call's target (a row of this call, not a stale one of its region) */
  __device__ __forceinline__ bool ll_now(int64_t row, uint64_t *v) const {
    /* plain loads (L1): called for 8 rows a thread and tile, so an L2 round trip each (ld.cg) cost Qwen3's
       decode layer 0.025 ms (run 724d44c); rowinfo was written by peers before this call's GEMM1 acquired
       land_cnt, and this kernel's CTAs read no rowinfo before their tiles wait for GEMM1's done2 */
    *v = rowinfo[row];
    return (*v >> 40) == ((calls[0] + 1) & 0xffffffull);
  }
  __device__ __forceinline__ uint16_t *out_row(State &, const mk_gemm_args &a, int64_t row) const {
    if constexpr (kPush) {
      if (rowinfo) { /* d.ll: this call's rows go home (fan: here, at their home's rows); the rest of a region
                        (and rows past m_end) into C2 */
        uint64_t v;
        if (!ll_now(row, &v)) return a.C + row * a.n;
        const int home = (int)((v >> 32) & 0xff);
        if (fan) return mk_local_ptr<uint16_t>(w, o_pland) + ((uint64_t)home * tm_k + (uint32_t)v) * H;
        return mk_peer_ptr<uint16_t>(w, home, o_pland) + (uint64_t)(uint32_t)v * H;
      }
      return rowdst[row]; /* rows past m_end: read (rowdst has m_cap + 128), never written */
    }
    return a.C + row * a.n;
  }
  /* d.fan: the bytes just stored at p (this rank's pland) into every other rank's pland too, the same offset */
  template <class V>
  __device__ __forceinline__ void out_also(const mk_gemm_args &, int64_t row, uint16_t *p, const V &v) const {
    if constexpr (kPush) {
      uint64_t info;
      if (!fan || (rowinfo && !ll_now(row, &info))) return;
      const uint64_t off = (uint64_t)((char *)p - w.heap);
      for (int j = 1; j < W; j++) {
        const int r = rank + j < W ? rank + j : rank + j - W;
        *mk_peer_ptr<V>(w, r % w.local_size, off) = v;
      }
    }
  }
  /* The 256 consumer threads, after the CTA's last tile: every row this CTA stored happens before
   * thread 128's system fence (named barrier), so its add on g2_out publishes them; the CTA that
   * counts out last has read every other add, fences, and tells every rank (cumulative release). */
  __device__ __forceinline__ void tail(State &, uint8_t *, int) const {
    if constexpr (kPush) {
      /* Launched as GEMM1's dependent (g12_need), this kernel must not end before GEMM1 has (its last
         CTAs may still be exiting): what follows on the stream waits only for this kernel. A no-op
         in a plain launch. */
      asm volatile("griddepcontrol.wait;" ::: "memory");
      mk_sm90::named_bar_sync(1, 256);
      if (threadIdx.x == 128) {
        __threadfence_system();
        if (atomicAdd((unsigned long long *)g2_out, 1ull) == (unsigned long long)gridDim.x - 1) {
          __threadfence_system();
          for (int r = 0; r < W; r++)
            mk_red_add_relaxed_sys(mk_peer_ptr<uint64_t>(w, r, o_psig + (uint64_t)rank * 8), 1);
        }
      }
    }
  }
  __device__ __forceinline__ void before_load(State &, const mk_gemm_tile &t) const {
    if (kPush && g12_need) { /* GEMM1's stores of the act columns this unit reads (generic proxy) before its TMA
                                loads: the chunks of the tile-row's GEMM1 tiles that cover k-iterations [k0, k1) */
      const int tile = tile_base[t.group] + (t.m0 - exp_off[t.group]) / mk_gemm_config::kBM;
      const int64_t a0 = (int64_t)t.k0 * mk_gemm_config::kBK, a1 = min((int64_t)t.k1 * mk_gemm_config::kBK, (int64_t)K);
      const int j0 = (int)(a0 / g12_half), j1 = (int)((a1 + g12_half - 1) / g12_half);
      for (int c = moe_g12_chunk(j0, g12_need); j1 > j0 && c <= moe_g12_chunk(j1 - 1, g12_need); c++)
        mk_wait_ge_paced(w, o_done2 + ((uint64_t)tile * kMoeG12Chunks + c) * 8,
                         (uint64_t)moe_g12_chunk_tiles(c, g12_need) * (uint64_t)(t.m_end - t.m0), MK_OP_MOE, -1,
                         tile, kMoePollNs);
      asm volatile("fence.proxy.async.global;" ::: "memory");
    }
    moe_stamp(prof, MK_MOE_PH_G2_FIRST);
  }
  __device__ __forceinline__ void after_store(State &, const mk_gemm_tile &t) const {
    if constexpr (!kPush) { /* done2 is the combine kernel's; the push needs only the stamp */
      const int tile = tile_base[t.group] + (t.m0 - exp_off[t.group]) / mk_gemm_config::kBM;
      moe_red_add_gpu(done2 + tile, 1);
    }
    moe_stamp(prof, MK_MOE_PH_G2_DONE);
  }
};

__global__ void __launch_bounds__(kMoeCommThreads) moe_combine_kernel(mk_moe_dev d) {
  const int c = blockIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const uint64_t row_bytes = (uint64_t)d.H * 2, area = (uint64_t)d.Tm * row_bytes;
  const int64_t vecs = d.H / 8;
  for (int i = 0; i < d.W; i++) {
    const int s = (d.rank + i) % d.W;
    int64_t j0, j1;
    moe_chunk(d.n_from[s], c, d.Cc, &j0, &j1);
    const bool near = moe_same_node(d, s);
    char *dst = near ? mk_peer_ptr<char>(d.w, moe_local(d, s), d.o_comb + d.rank * area)
                     : mk_local_ptr<char>(d.w, d.o_cstage + s * area);
    const mk_moe_meta *lm = mk_local_ptr<mk_moe_meta>(d.w, moe_lmeta_off(d, moe_target(d))) + (int64_t)s * d.Tm;
    /* Batches of kMoeWarps rows: warp i waits for row b0 + i's tiles, then the whole CTA sums the
     * batch, one 16-byte vector of one row per thread (loads of all experts in flight): a
     * warp-per-row loop is one memory latency per 512 bytes, too slow when rows are few. */
    for (int64_t b0 = j0; b0 < j1; b0 += kMoeWarps) {
      const int64_t jw = b0 + warp, nb = j1 - b0 < kMoeWarps ? j1 - b0 : kMoeWarps;
      if (jw < j1) {
        const int n = lm[jw].n;
        const int32_t *pm = d.posmap + ((int64_t)s * d.Tm + jw) * d.K;
        if (lane < n) {
          const int e = lm[jw].e[lane], pos = pm[lane], tile = moe_tile_of(d, e, pos);
          mk_wait_ge_paced(d.w, d.o_done2 + (uint64_t)tile * 8, (uint64_t)d.tiles_n2, MK_OP_MOE, s, tile,
                           2 * kMoePollNs);
        }
      }
      __syncthreads();
      for (int64_t it = threadIdx.x; it < nb * vecs; it += blockDim.x) {
        const int64_t j = b0 + it / vecs;
        const int v = (int)(it % vecs), n = lm[j].n;
        const int32_t *pm = d.posmap + ((int64_t)s * d.Tm + j) * d.K;
        uint4 yv[MK_MOE_MAX_TOPK]; /* all loads of this vector in flight together */
#pragma unroll
        for (int q = 0; q < MK_MOE_MAX_TOPK; q++)
          if (q < n) yv[q] = *(const uint4 *)(d.C2 + (int64_t)pm[q] * d.H + 8 * v);
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
        for (int q = 0; q < MK_MOE_MAX_TOPK; q++) {
          if (q >= n) break;
          moe_axpy8(acc, lm[j].w[q], yv[q]);
        }
        *(uint4 *)(dst + j * row_bytes + 16 * v) = moe_pack8(acc);
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      const moe_whole wh = {d.pub_cnt ? d.pub_cnt + d.W + s : NULL, d.Cc, d.n_from[s], d.o_cstage + s * area,
                            d.o_comb + d.rank * area, row_bytes, 0, 0, 0, d.o_comb_sig + (uint64_t)d.rank * d.Cc * 8};
      moe_publish(d, s, d.o_cstage + s * area + j0 * row_bytes, d.o_comb + d.rank * area + j0 * row_bytes,
                  (j1 - j0) * row_bytes, 0, 0, 0, d.o_comb_sig + ((uint64_t)d.rank * d.Cc + c) * 8, wh);
    }
  }
  if (threadIdx.x == 0) moe_stamp(d.prof, MK_MOE_PH_COMBINED);
}

constexpr int kReduceWarps = 8;

/* The whole CTA (barrier point 2): waits until each of the n counters at heap offset off (8 bytes
 * apart) reaches this call's target, counter i from rank i / per (and CTA i % per where per > 1,
 * for the error record); then the REDUCE_WAITED stamp. False on abort or timeout. */
__device__ __forceinline__ bool moe_wait_home(const mk_moe_dev &d, uint64_t off, int n, int per) {
  const uint64_t target = moe_target(d);
  int ok = 1;
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    ok &= mk_wait_ge(d.w, off + (uint64_t)i * 8, target, MK_OP_MOE, i / per, per > 1 ? i % per : -1);
  if (!__syncthreads_and(ok)) return false;
  if (threadIdx.x == 0) moe_stamp(d.prof, MK_MOE_PH_REDUCE_WAITED);
  return true;
}

__global__ void __launch_bounds__(kReduceWarps * 32) moe_reduce_kernel(mk_moe_dev d, int64_t T, uint16_t *out) {
  if (!moe_wait_home(d, d.o_comb_sig, d.W * d.Cc, d.Cc)) return;
  /* One 16-byte vector of one token per thread, the rows of up to 8 ranks loaded together,
   * summed in increasing rank order. */
  const int64_t vecs = d.H / 8, n = T * vecs;
  const uint16_t *comb = mk_local_ptr<uint16_t>(d.w, d.o_comb);
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t t = i / vecs, v = i % vecs;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int r0 = 0; r0 < d.W; r0 += 8) {
      uint4 y[8];
      int j[8];
#pragma unroll
      for (int q = 0; q < 8; q++) {
        j[q] = r0 + q < d.W ? d.slot[t * d.W + r0 + q] : -1;
        if (j[q] >= 0) y[q] = *(const uint4 *)(comb + ((int64_t)(r0 + q) * d.Tm + j[q]) * d.H + 8 * v);
      }
#pragma unroll
      for (int q = 0; q < 8; q++)
        if (j[q] >= 0) moe_axpy8(acc, 1.f, y[q]);
    }
    *(uint4 *)(out + t * d.H + 8 * v) = moe_pack8(acc);
  }
  if (d.prof) {
    __syncthreads();
    if (threadIdx.x == 0) moe_stamp(d.prof, MK_MOE_PH_DONE);
  }
}

/* The call's end (stream order: after every kernel of it): the handle's next targets, and the profile's END. */
__device__ __forceinline__ void moe_advance_call(unsigned long long *calls, uint64_t *prof) {
  *calls += 1;
  if (prof) { /* prof[MK_MOE_PHASES]: the last call's END, kept across calls (not zeroed with the stamps) */
    prof[MK_MOE_PH_PREV_END] = prof[MK_MOE_PHASES];
    prof[MK_MOE_PHASES] = mk_globaltimer();
  }
  moe_stamp(prof, MK_MOE_PH_END);
}

/* Push combine's reduce: one 16-byte vector of one token per thread, its K rows loaded together. stride > 0 (d.fan):
 * token t of the group's T is row t % stride of rank t / stride, at pland [(rank Tm + t % stride) K + q], and resid
 * (NULL: none) += the bf16 sum; stride 0 with d.fan (mk_moe_forward on a sharing handle): this rank's rows of
 * pland. Every CTA then takes a ticket (after its read of calls in moe_wait_home, and also on a failed wait, as the
 * advance kernel ran regardless); the last one advances the call and re-arms the ticket. */
__global__ void __launch_bounds__(kReduceWarps * 32) moe_push_reduce_kernel(mk_moe_dev d, mk_moe_red r) {
  if (moe_wait_home(d, d.o_psig, d.W, 1)) {
    const int64_t vecs = d.H / 8, n = r.T * vecs;
    const uint16_t *pland = mk_local_ptr<uint16_t>(d.w, d.o_pland);
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
      const int64_t t = i / vecs, v = i % vecs;
      const int64_t pr = r.stride ? t / r.stride * d.Tm + t % r.stride : d.fan ? (int64_t)d.rank * d.Tm + t : t;
      uint4 y[MK_MOE_MAX_TOPK];
      bool on[MK_MOE_MAX_TOPK];
#pragma unroll
      for (int q = 0; q < MK_MOE_MAX_TOPK; q++) {
        on[q] = q < d.K && (unsigned)r.ids[t * d.K + q] < (unsigned)d.E;
        if (on[q]) y[q] = *(const uint4 *)(pland + ((pr * d.K + q) * d.H + 8 * v));
      }
      float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
      for (int q = 0; q < MK_MOE_MAX_TOPK; q++)
        if (on[q]) moe_axpy8(acc, r.w[t * d.K + q], y[q]);
      const uint4 o = moe_pack8(acc);
      *(uint4 *)(r.out + t * d.H + 8 * v) = o;
      if (r.resid) { /* resid += out (bf16 -> fp32; 1 x y is exact), as mk_residual_add */
        float4 *x = (float4 *)(r.resid + t * d.H + 8 * v), xv[2] = {x[0], x[1]};
        moe_axpy8(*(float(*)[8])xv, 1.f, o);
        x[0] = xv[0], x[1] = xv[1];
      }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    if (d.prof) moe_stamp(d.prof, MK_MOE_PH_DONE);
    __threadfence(); /* this CTA's reads of calls before its ticket */
    if (atomicAdd(d.tick, 1u) == gridDim.x - 1) {
      *d.tick = 0;
      moe_advance_call((unsigned long long *)d.calls, d.prof);
    }
  }
}

template <bool kPush>
static mk_status launch_gemm2(const mk_moe_dev *d, int grid, cudaStream_t stream) {
  moe_gemm2_policy<kPush> p;
  p.group_m = mk_gemm_config::kGroupM;
  p.done2 = (uint64_t *)(d->w.heap + d->o_done2);
  p.exp_off = d->exp_off;
  p.tile_base = d->tile_base;
  p.prof = d->prof;
  p.rowdst = d->rowdst;
  p.rowinfo = d->ll ? (const uint64_t *)(d->w.heap + d->o_rowinfo) : NULL, p.calls = d->calls;
  p.o_pland = d->o_pland, p.H = d->H;
  p.w = d->w;
  p.g2_out = (uint64_t *)(d->w.heap + d->o_g2_out);
  p.o_psig = d->o_psig;
  p.W = d->W, p.rank = d->rank;
  p.o_done2 = d->o_done2;
  p.g12_need = kPush ? d->g12_need : 0;
  p.g12_half = d->g12_bn / 2, p.K = d->I;
  p.fan = d->fan, p.tm_k = d->Tm * d->K;
  mk_gemm_args args = {d->C2, d->m_cap, d->H, d->I, d->El, d->rows};
  args.wg_skip = d->wg_skip;
  if (p.g12_need) { /* beside GEMM1: claims, so tiles start in order on whichever SMs come free */
    args.claim = d->g12_claim, args.pdl = 1;
    if (d->split_k2) { /* MK_MOE_G12_DECODE=2: k-slices too (GEMM1 is unsplit: the workspace is GEMM2's) */
      args.splits = -d->split_k2, args.split_mode = d->split_force, args.ws = d->sk_ws, args.flags = d->sk_flags;
      return mk_gemm_core_launch_split(d->act, d->w2, args, MK_GEMM_B_NK, p, grid, d->bn2, stream);
    }
    return mk_gemm_core_launch(d->act, d->w2, args, MK_GEMM_B_NK, p, grid, d->bn2, stream);
  }
  /* Dynamic claims on GEMM1's counter (re-armed by GEMM1's last CTA; stream order): tiles start in
   * order however long each took, so the tile-rows of one expert keep reading its B panels side by
   * side (L2) where the warpgroup skip makes some tiles cheaper. */
  if (d->g1_sync && d->g2_claim) args.claim = (uint32_t *)(d->g1_sync + 1);
  if (d->split_k2) { /* k-slices of the last wave, planned on the device (gemm_split.cuh) */
    args.splits = -d->split_k2, args.split_mode = d->split_force, args.ws = d->sk_ws, args.flags = d->sk_flags;
    return mk_gemm_core_launch_split(d->act, d->w2, args, MK_GEMM_B_NK, p, grid, d->bn2, stream);
  }
  return mk_gemm_core_launch(d->act, d->w2, args, MK_GEMM_B_NK, p, grid, d->bn2, stream);
}

}  // namespace

extern "C" mk_status mk_moe_launch_gemm2(const mk_moe_dev *d, int grid, void *stream) {
  return d->push ? launch_gemm2<true>(d, grid, (cudaStream_t)stream) : launch_gemm2<false>(d, grid, (cudaStream_t)stream);
}

extern "C" mk_status mk_moe_launch_push_reduce(const mk_moe_dev *d, const mk_moe_red *r, void *stream) {
  const int64_t per = kReduceWarps * 32, items = r->T * (int64_t)(d->H / 8);
  int64_t blocks = items > 0 ? (items + per - 1) / per : 1;
  if (blocks > 1024) blocks = 1024; /* 128 (the combine's reduce) left ~1 TB/s of HBM: too few loads in flight */
  moe_push_reduce_kernel<<<(unsigned)blocks, kReduceWarps * 32, 0, (cudaStream_t)stream>>>(*d, *r);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_moe_launch_combine(const mk_moe_dev *d, void *stream) {
  moe_combine_kernel<<<d->Cc, kMoeCommThreads, 0, (cudaStream_t)stream>>>(*d);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_moe_launch_reduce(const mk_moe_dev *d, int64_t T, uint16_t *out, void *stream) {
  /* Few enough CTAs that spinning ones leave SM room (the loopback proxy's signal kernel). 1024 in one
   * node group measured no faster in all (session 24: 256 comb_sig flags polled by every CTA). */
  const int64_t per = kReduceWarps * 32, items = T * (int64_t)(d->H / 8);
  int64_t blocks = items > 0 ? (items + per - 1) / per : 1;
  if (blocks > 128) blocks = 128;
  moe_reduce_kernel<<<(unsigned)blocks, kReduceWarps * 32, 0, (cudaStream_t)stream>>>(*d, T, out);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

/* After a fused call (every kernel of it done, stream-ordered): the handle's next targets. */
__global__ void moe_advance_kernel(unsigned long long *calls, uint64_t *prof) { moe_advance_call(calls, prof); }

extern "C" mk_status mk_moe_launch_advance(const mk_moe_dev *d, void *stream) {
  moe_advance_kernel<<<1, 1, 0, (cudaStream_t)stream>>>((unsigned long long *)d->calls, d->prof);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

template <bool kPush>
static mk_status preload_gemm2(int split_k) {
  cudaFuncAttributes a;
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm2_policy<kPush>, 0, 256>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm2_policy<kPush>, 0, 128>));
  if (split_k) {
    MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm2_policy<kPush>, 0, 256, true>));
    MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm2_policy<kPush>, 0, 128, true>));
  }
  return MK_STATUS_OK;
}

extern "C" mk_status mk_moe_preload_combine(int split_k) {
  cudaFuncAttributes a;
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)moe_advance_kernel));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)moe_combine_kernel));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)moe_reduce_kernel));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)moe_push_reduce_kernel));
  MK_CHECK(preload_gemm2<false>(split_k));
  return preload_gemm2<true>(split_k);
}
