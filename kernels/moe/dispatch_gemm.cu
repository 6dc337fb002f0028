/* dispatch_gemm.cu — fused MoE, first half: plan, device-side count exchange, dispatch of
 * token rows overlapped with the grouped gate/up GEMM, SwiGLU.
 *
 * Kernels of one call (stream s, and s2 forked from it). T <= 1024 (decode): zeroing, plan and
 * exchange run as one kernel of one CTA (moe_plan_exchange_kernel); above, a memset of the
 * counters, the plan, then the exchange.
 *   plan      (s)  one thread per token: the distinct destination ranks of its top-k experts;
 *                  per rank d a landing slot j (one atomicAdd on n_send[d] per warp, its lanes in
 *                  ballot order) and the row's meta (home token, local experts and weights in top-k
 *                  order) -> smeta[d][j]; pairs per global expert (shared memory, then one add per
 *                  CTA). Slots depend on timing; results do not (see below).
 *   exchange  (s)  one CTA: the count record {rows, pairs per local expert} to every rank d
 *                  (NVLink store + signal, or PUT + SIGNAL through the proxy), then waits for
 *                  every source's record (cnt_sig[s] >= epoch + 1), zeroing ready/done2/g2_out while
 *                  the records travel; then GEMM group sizes, row and
 *                  tile-row offsets, and cnt_done = target (release). Barrier point 1: nothing
 *                  below starts before all counts (GEMM1 by stream order, the dispatch by
 *                  cnt_done).
 *   dispatch  (s2) C CTAs, launched (overlapped schedule) before the plan, so they are resident
 *                  and wait on cnt_done instead of a kernel boundary and an event; in one node
 *                  group (send_early) they wait only for the plan (plan_done, set by the exchange
 *                  as it starts) to send, so the rows travel beside the count records, into the
 *                  call's copy (target & 1) of land / lmeta, and for cnt_done to receive. Send: CTA c
 *                  takes chunk c of the rows for every rank d (starting at rank + 1) and writes
 *                  row x[token] and its meta once per destination rank into land[rank][j] /
 *                  lmeta[rank][j] there, all destinations' rows at once (a row cut into parts
 *                  over several warps when the CTA has few), then one barrier and thread d of
 *                  the CTA adds land_sig[rank][c] += 1 at rank d (the W fences in parallel).
 *                  Across node groups the rows are staged here and PUT by the proxy: per chunk,
 *                  or (MK_MOE_REMOTE_WHOLE) the whole area for d by the call's last CTA, then
 *                  every chunk's land_sig (moe_publish).
 *                  Receive: CTA c takes the sources' chunk c in order of arrival (thread 0
 *                  polls every pending land_sig[s][c], paced), copies each landed row to A1
 *                  once per local expert of it, at exp_off[e] + atomicAdd(fill[e]) (grouped by
 *                  local expert), records the row in posmap (and, push combine, in rowdst the
 *                  address of its (token, top-k index) row in pland at home s), and adds 1 to
 *                  ready[tile-row] (release).
 *                  Serial and hybrid schedules (mk_moe_schedule): on s, SMs - 4 CTAs, with
 *                  nothing beside them, and gemm1 after it on every SM.
 *                  Rows by copy engine (ce_send, serial schedule): the send writes only the metas,
 *                  each peer's whole x arrives in land[s] by copy engine (row = token; moe.c), a
 *                  source counts as landed once its land_sig and xflag[s] are set, and the own
 *                  rows are grouped from x.
 *   gemm1     (s)  the GEMM core over the groups on every SM with dynamic tile claims (g1_sync,
 *                  MK_MOE_GEMM1_CLAIM; the C CTAs past SMs - C start as dispatch CTAs exit and take
 *                  the tiles not yet claimed), or on SMs - C CTAs with fixed tiles; before_load waits until its
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
#include "kernels/moe/moe_skinny.cuh"

namespace {

/* Token t's plan: landing slots, metas and pair counts (n_send zeroed before; pairs: the CTA's pair
 * counts per global expert in shared memory, zeroed before, added to cnt_pairs by the caller). Every
 * lane of the warp calls it together (valid: t < T): lane r (and r - 32) takes the slots of the warp's
 * rows for rank r with one atomicAdd, all ranks' at once, not one returning atomic per token and rank,
 * and the pairs are counted in shared memory: at prefill the plan spent ~0.02 ms in returning atomics
 * on the W counters and in T k atomics on E counters of a few L2 lines (T = 4096, session 24). A
 * token's meta for rank r lists its experts there in top-k order. */
__device__ __forceinline__ void moe_plan_token(const mk_moe_dev &d, const int32_t *ids, const float *wts, int64_t t,
                                               bool valid, int *pairs) {
  int dk[MK_MOE_MAX_TOPK], e[MK_MOE_MAX_TOPK];
  float w[MK_MOE_MAX_TOPK];
  uint64_t dests = 0; /* bit r: a top-k expert of the token lives on rank r */
  const int lane = threadIdx.x & 31;
  const unsigned below = (1u << lane) - 1u;
  if (valid) {
    for (int k = 0; k < d.K; k++) {
      e[k] = ids[t * d.K + k];
      w[k] = wts[t * d.K + k];
      dk[k] = (unsigned)e[k] < (unsigned)d.E ? e[k] / d.El : -1;
      if (dk[k] >= 0) dests |= 1ull << dk[k];
    }
    for (int r = 0; r < d.W; r++) d.slot[t * d.W + r] = -1;
  }
  int n0 = 0, n1 = 0; /* this lane's ranks lane and lane + 32: the warp's rows for them */
  for (int r = 0; r < d.W; r++) {
    const int n = __popc(__ballot_sync(0xffffffffu, (dests >> r) & 1));
    if (r == lane) n0 = n;
    if (r == lane + 32) n1 = n;
  }
  const int b0 = n0 ? atomicAdd(&d.n_send[lane], n0) : 0, b1 = n1 ? atomicAdd(&d.n_send[lane + 32], n1) : 0;
  for (int r = 0; r < d.W; r++) {
    const bool mine = (dests >> r) & 1;
    const unsigned b = __ballot_sync(0xffffffffu, mine);
    const int base = __shfl_sync(0xffffffffu, r < 32 ? b0 : b1, r & 31);
    if (!mine) continue;
    const int j = base + __popc(b & below);
    d.slot[t * d.W + r] = j;
    mk_moe_meta m;
    m.token = (int32_t)t;
    m.n = 0;
    m.q = 0, m.pad = 0;
    for (int q = 0; q < d.K; q++)
      if (dk[q] == r) {
        m.e[m.n] = e[q] % d.El;
        m.w[m.n] = w[q];
        m.q |= q << (4 * m.n);
        m.n++;
        atomicAdd(&pairs[e[q]], 1);
      }
    for (int q = m.n; q < MK_MOE_MAX_TOPK; q++) m.e[q] = 0, m.w[q] = 0.f;
    mk_moe_meta *dst = mk_local_ptr<mk_moe_meta>(d.w, d.o_smeta) + (int64_t)r * d.Tm + j;
    *dst = m;
  }
}

/* The plan of T tokens by every thread of the grid, a token each per round (whole warps: the ballots). */
__device__ __forceinline__ void moe_plan_tokens(const mk_moe_dev &d, const int32_t *ids, const float *wts, int64_t T,
                                                int64_t t0, int64_t stride, int *pairs) {
  const int lane = threadIdx.x % 32;
  for (int64_t b = t0 - lane; b < T; b += stride) moe_plan_token(d, ids, wts, b + lane, b + lane < T, pairs);
}

__global__ void moe_plan_kernel(mk_moe_dev d, const int32_t *ids, const float *wts, int64_t T) {
  __shared__ int pairs[MK_MOE_MAX_EXPERTS];
  if (threadIdx.x == 0) moe_stamp(d.prof, MK_MOE_PH_START);
  for (int e = threadIdx.x; e < d.E; e += blockDim.x) pairs[e] = 0;
  __syncthreads();
  moe_plan_tokens(d, ids, wts, T, (int64_t)blockIdx.x * blockDim.x + threadIdx.x, (int64_t)gridDim.x * blockDim.x,
                  pairs);
  __syncthreads();
  for (int e = threadIdx.x; e < d.E; e += blockDim.x)
    if (pairs[e]) atomicAdd(&d.cnt_pairs[e], pairs[e]);
}

/* One CTA, after the plan. Zeroes ready/done2/g2_out (read by gemm1, dispatch, gemm2 and combine,
 * which all follow this kernel, or, the dispatch, wait for its cnt_done). The whole CTA builds
 * the W records {rows, pairs per local expert}; warp i sends the record of rank r = i (mod
 * warps), its lanes storing the words in parallel, lane 0 signalling after a __syncwarp (the
 * warp's stores are then performed for lane 0, and mk_signal_add's system fence is cumulative);
 * thread s < W waits for source s. (Until session 6 one thread built and stored each record
 * word by word: 2 (El + 1) dependent global accesses, El = 64 at E = 256 on 4 ranks.) */
__device__ __forceinline__ void moe_exchange_cta(const mk_moe_dev &d) {
  const uint64_t target = moe_target(d);
  if (threadIdx.x == 0) {
    moe_stamp(d.prof, MK_MOE_PH_EXCH_START);
    if (d.send_early) { /* the plan (n_send, smeta: the whole CTA's, or the plan kernel's before this one) */
      __threadfence();
      moe_st_release_gpu(mk_local_ptr<uint64_t>(d.w, d.o_plan_done), target);
    }
  }
  const uint64_t rec_bytes = (uint64_t)d.cnt_stride * 4;
  const int words = d.El + 1, lane = threadIdx.x & 31;
  int32_t *recs = mk_local_ptr<int32_t>(d.w, d.o_cnt_out);
  for (int i = threadIdx.x; i < d.W * words; i += blockDim.x) {
    const int r = i / words, e = i - r * words;
    recs[(int64_t)r * d.cnt_stride + e] = e == 0 ? d.n_send[r] : d.cnt_pairs[r * d.El + e - 1];
  }
  __syncthreads();
  for (int r = threadIdx.x / 32; r < d.W; r += blockDim.x / 32) {
    const int32_t *rec = recs + (int64_t)r * d.cnt_stride;
    const uint64_t dst_off = d.o_cnt_in + (uint64_t)d.rank * rec_bytes;
    const uint64_t sig = d.o_cnt_sig + (uint64_t)d.rank * 8;
    if (moe_same_node(d, r)) {
      int32_t *o = mk_peer_ptr<int32_t>(d.w, moe_local(d, r), dst_off);
      for (int i = lane; i < words; i += 32) o[i] = rec[i];
      __syncwarp();
      if (lane == 0) mk_signal_add(d.w, moe_local(d, r), sig, 1);
    } else if (lane == 0) {
      __threadfence_system();
      mk_post(d.w, MK_CMD_PUT, r, d.o_cnt_out + (uint64_t)r * rec_bytes, dst_off, rec_bytes, 0, 0);
      mk_post(d.w, MK_CMD_SIGNAL, r, 0, 0, 0, sig, 1);
    }
  }
  { /* while the records travel */
    uint64_t *rd = mk_local_ptr<uint64_t>(d.w, d.o_ready);
    const int64_t words = (1 + kMoeG12Chunks) * (d.m_cap / 128 + d.El + 1) + 1; /* ready, done2, g2_out */
    for (int64_t i = threadIdx.x; i < words; i += blockDim.x) rd[i] = 0;
  }
  int ok = 1;
  for (int s = threadIdx.x; s < d.W; s += blockDim.x)
    ok &= mk_wait_ge(d.w, d.o_cnt_sig + (uint64_t)s * 8, target, MK_OP_MOE, s, -1);
  if (!__syncthreads_and(ok)) return;
  if (threadIdx.x == 0) moe_stamp(d.prof, MK_MOE_PH_COUNTS);
  const int32_t *in = mk_local_ptr<int32_t>(d.w, d.o_cnt_in);
  for (int s = threadIdx.x; s < d.W; s += blockDim.x) d.n_from[s] = in[(int64_t)s * d.cnt_stride];
  __shared__ int s_rows[512]; /* El <= 512 (mk_moe_create) */
  for (int e = threadIdx.x; e < d.El; e += blockDim.x) {
    int n = 0;
    for (int s = 0; s < d.W; s++) n += in[(int64_t)s * d.cnt_stride + 1 + e];
    d.rows[e] = n;
    s_rows[e] = n;
  }
  __syncthreads();
  if (threadIdx.x < 32) { /* row and tile-row offsets: warp 0, lane l a run of El / 32 experts, scanned */
    const int lane = threadIdx.x, per = (d.El + 31) / 32, e0 = min(lane * per, d.El), e1 = min(e0 + per, d.El);
    int rows = 0, tiles = 0;
    for (int e = e0; e < e1; e++) rows += s_rows[e], tiles += (s_rows[e] + 127) / 128;
    int off = rows, tb = tiles; /* inclusive scan over lanes */
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int a = __shfl_up_sync(0xffffffffu, off, o), b = __shfl_up_sync(0xffffffffu, tb, o);
      if (lane >= o) off += a, tb += b;
    }
    off -= rows, tb -= tiles;
    for (int e = e0; e < e1; e++) {
      d.exp_off[e] = off;
      d.tile_base[e] = tb;
      off += s_rows[e];
      tb += (s_rows[e] + 127) / 128;
    }
    if (lane == 31) d.exp_off[d.El] = off, d.tile_base[d.El] = tb; /* e1 = El on the last lane */
  }
  __syncthreads();
  if (threadIdx.x == 0) { /* release the dispatch (cnt_done): counts, offsets, zeroed ready/done2 */
    __threadfence();
    moe_st_release_gpu(mk_local_ptr<uint64_t>(d.w, d.o_cnt_done), target);
  }
}

__global__ void moe_exchange_kernel(mk_moe_dev d) { moe_exchange_cta(d); }

/* Decode (T <= kPlanCta): zeroing, plan and exchange in one CTA, one launch instead of a
 * memset, the plan and the exchange. */
constexpr int kPlanCta = 1024;
__global__ void __launch_bounds__(kPlanCta) moe_plan_exchange_kernel(mk_moe_dev d, const int32_t *ids,
                                                                     const float *wts, int64_t T) {
  if (threadIdx.x == 0) moe_stamp(d.prof, MK_MOE_PH_START);
  __shared__ int pairs[MK_MOE_MAX_EXPERTS];
  for (int i = threadIdx.x; i < d.W + d.E + d.El; i += blockDim.x) d.n_send[i] = 0; /* n_send, cnt_pairs, fill */
  for (int e = threadIdx.x; e < d.E; e += blockDim.x) pairs[e] = 0;
  __syncthreads();
  moe_plan_tokens(d, ids, wts, T, threadIdx.x, blockDim.x, pairs);
  __syncthreads();
  for (int e = threadIdx.x; e < d.E; e += blockDim.x) d.cnt_pairs[e] = pairs[e];
  __syncthreads();
  moe_exchange_cta(d);
}

/* Thread 0: wait until chunk c of one of the sources still in `pending` (bit s) has landed
 * (land_sig[s][c] >= target; with ce_send a peer's xflag[s] set too), checking them in the order
 * rank, rank - 1, ... and pausing kMoePollNs between rounds (beside GEMM1). Returns that source and
 * clears its bit, or -1 on abort or timeout (error record: the first source still pending, with the
 * value it waits for: its land_sig, or 1 for an xflag not set). */
__device__ __forceinline__ int moe_wait_any_source(const mk_moe_dev &d, uint64_t *pending, uint64_t target, int c) {
  const uint64_t t0 = mk_globaltimer();
  for (uint32_t it = 1;; it++) {
    int first = -1;
    uint64_t seen = 0, want = target;
    for (int i = 0; i < d.W; i++) {
      const int s = (d.rank + d.W - i) % d.W;
      if (!((*pending >> s) & 1)) continue;
      const uint64_t v = mk_ld_acquire_sys(mk_local_ptr<uint64_t>(d.w, d.o_land_sig + ((uint64_t)s * d.C + c) * 8));
      /* rows by copy engine: a peer's rows are in once its xflag is set too (its metas came with land_sig) */
      const uint64_t xf = v >= target && d.ce_send && s != d.rank
                              ? mk_ld_acquire_sys(mk_local_ptr<uint64_t>(d.w, d.o_xflag + 8ull * s))
                              : 1;
      if (v >= target && xf) {
        *pending &= ~(1ull << s);
        return s;
      }
      if (first < 0) first = s, seen = v >= target ? xf : v, want = v >= target ? 1 : target;
    }
    if ((it & 31) == 0) {
      if (mk_aborted(d.w)) return -1;
      if (mk_globaltimer() - t0 > d.w.timeout_ns) {
        mk_raise_timeout(d.w, MK_OP_MOE, first, c, want, seen);
        return -1;
      }
    }
    __nanosleep(kMoePollNs);
  }
}

/* Rows of a CTA's send units: at decode a CTA has ~1 row per destination, so a row is cut into
 * up to kMoeRowParts parts (multiples of 512 bytes: a warp's 16-byte vectors) to keep all warps
 * copying. */
constexpr int kMoeRowParts = 8;

__global__ void __launch_bounds__(kMoeCommThreads) moe_dispatch_kernel(mk_moe_dev d, const uint16_t *x) {
  const uint64_t target = moe_target(d);
  const int c = blockIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const uint64_t row_bytes = (uint64_t)d.H * 2, area = (uint64_t)d.Tm * row_bytes;
  __shared__ int64_t s_j0[MK_MOE_MAX_RANKS], s_pre[MK_MOE_MAX_RANKS + 1];
  __shared__ int s_src[2];
  if (threadIdx.x == 0) moe_stamp(d.prof, MK_MOE_PH_DISPATCH_START);
  /* GEMM1's CTAs past SMs - C join its tiles only once every dispatch CTA is resident (g1_sync[0]:
   * then none of them can be kept off an SM by a GEMM1 CTA waiting for rows). */
  if (d.g1_sync && threadIdx.x == 0) atomicAdd((unsigned long long *)d.g1_sync, 1ull);
  /* Launched beside the plan and exchange (overlapped schedule) or after them: wait for the
   * exchange's cnt_done (n_send, n_from, exp_off and the zeroed ready are this call's), or with
   * send_early for the plan's plan_done (n_send, smeta) now and cnt_done before the receive. */
  if (!mk_wait_ge_cta(d.w, d.send_early ? d.o_plan_done : d.o_cnt_done, target, MK_OP_MOE, -1, -1)) return;
  const uint64_t o_land = moe_land_off(d, target), o_lmeta = moe_lmeta_off(d, target);
  /* ---- send: chunk c of the rows for every destination (i-th: rank + 1 + i), all copies
     first, then one barrier and the W signals in parallel (one fence each, overlapped) ---- */
  for (int i = threadIdx.x; i < d.W; i += blockDim.x) {
    int64_t j0, j1;
    moe_chunk(d.n_send[(d.rank + 1 + i) % d.W], c, d.C, &j0, &j1);
    s_j0[i] = j0;
    s_pre[i + 1] = j1 - j0;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    s_pre[0] = 0;
    for (int i = 0; i < d.W; i++) s_pre[i + 1] += s_pre[i];
  }
  __syncthreads();
  const int64_t nrows = s_pre[d.W];
  const int parts = d.ce_send ? 1 /* metas only */
                              : (int)max((int64_t)1, min((int64_t)kMoeRowParts,
                                                         (int64_t)kMoeWarps / max(nrows, (int64_t)1)));
  const uint64_t part_bytes = (row_bytes / parts + 511) / 512 * 512;
  int i = 0; /* destination of unit u (units grow with u: the scan only moves forward) */
  for (int64_t u = warp; u < nrows * parts; u += kMoeWarps) {
    const int64_t q = u / parts;
    const int part = (int)(u % parts);
    while (s_pre[i + 1] <= q) i++;
    const int r = (d.rank + 1 + i) % d.W;
    const int64_t j = s_j0[i] + (q - s_pre[i]);
    const uint64_t b0 = (uint64_t)part * part_bytes;
    if (b0 >= row_bytes) continue;
    const bool near = moe_same_node(d, r);
    const mk_moe_meta *sm = mk_local_ptr<mk_moe_meta>(d.w, d.o_smeta) + (int64_t)r * d.Tm;
    if (!d.ce_send) { /* else the row is in the copy engine's transfer of the whole x */
      char *rows_dst = near ? mk_peer_ptr<char>(d.w, moe_local(d, r), o_land + d.rank * area)
                            : mk_local_ptr<char>(d.w, d.o_stage + r * area);
      moe_copy_row(rows_dst + j * row_bytes + b0, (const char *)(x + (int64_t)sm[j].token * d.H) + b0,
                   (int64_t)min(part_bytes, row_bytes - b0));
    }
    if (near && part == 0 && lane < (int)(sizeof(mk_moe_meta) / 16)) {
      mk_moe_meta *lm = mk_peer_ptr<mk_moe_meta>(d.w, moe_local(d, r), o_lmeta) + (int64_t)d.rank * d.Tm + j;
      ((uint4 *)lm)[lane] = ((const uint4 *)(sm + j))[lane];
    }
  }
  __syncthreads();
  for (int k = threadIdx.x; k < d.W; k += blockDim.x) { /* thread k publishes destination k */
    const int r = (d.rank + 1 + k) % d.W;
    const int64_t j0 = s_j0[k], n = s_pre[k + 1] - s_pre[k];
    const uint64_t msz = sizeof(mk_moe_meta);
    const moe_whole wh = {d.pub_cnt ? d.pub_cnt + r : NULL, d.C, d.n_send[r], d.o_stage + r * area,
                          o_land + d.rank * area, row_bytes, d.o_smeta + (uint64_t)r * d.Tm * msz,
                          o_lmeta + (uint64_t)d.rank * d.Tm * msz, msz,
                          d.o_land_sig + (uint64_t)d.rank * d.C * 8};
    moe_publish(d, r, d.o_stage + r * area + j0 * row_bytes, o_land + d.rank * area + j0 * row_bytes,
                n * row_bytes, d.o_smeta + ((uint64_t)r * d.Tm + j0) * msz,
                o_lmeta + ((uint64_t)d.rank * d.Tm + j0) * msz, n * msz,
                d.o_land_sig + ((uint64_t)d.rank * d.C + c) * 8, wh);
  }
  if (threadIdx.x == 0) moe_stamp(d.prof, MK_MOE_PH_SENT);
  if (d.send_early && !mk_wait_ge_cta(d.w, d.o_cnt_done, target, MK_OP_MOE, -1, -1)) return;
  /* ---- receive: chunk c of each source in order of arrival, grouped by local expert into A1 ---- */
  uint64_t pending = d.W >= 64 ? ~0ull : (1ull << d.W) - 1; /* thread 0's */
  for (int n_src = 0; n_src < d.W; n_src++) {
    if (threadIdx.x == 0) s_src[n_src & 1] = moe_wait_any_source(d, &pending, target, c);
    __syncthreads(); /* s_src[n & 1] is rewritten two rounds on, after the next barrier */
    const int s = s_src[n_src & 1];
    if (s < 0) return;
    int64_t j0, j1;
    moe_chunk(d.n_from[s], c, d.C, &j0, &j1);
    /* a landed row: slot j of land[s], or (ce_send) the token's row of land[s] (a peer's whole x) or of x */
    const char *land = d.ce_send && s == d.rank ? (const char *)x : mk_local_ptr<char>(d.w, o_land + s * area);
    const mk_moe_meta *lm = mk_local_ptr<mk_moe_meta>(d.w, o_lmeta) + (int64_t)s * d.Tm;
    for (int64_t j = j0 + warp; j < j1; j += kMoeWarps) {
      const int64_t src_row = d.ce_send ? lm[j].token : j;
      const int n = lm[j].n;
      int e = 0, p = 0; /* lane q < n: expert q of the row and its row of A1 */
      if (lane < n) {
        e = lm[j].e[lane];
        p = d.exp_off[e] + atomicAdd(&d.fill[e], 1);
      }
      int pos[MK_MOE_MAX_TOPK];
#pragma unroll
      for (int q = 0; q < MK_MOE_MAX_TOPK; q++) pos[q] = __shfl_sync(0xffffffffu, p, q);
      moe_copy_row_multi((char *)d.A1, pos, n, land + src_row * row_bytes, (int64_t)row_bytes);
      __syncwarp();
      if (lane < n) {
        d.posmap[((int64_t)s * d.Tm + j) * d.K + lane] = p;
        if (d.push) /* GEMM2 stores row p straight into row (token, q) of pland at home s (fan: row (s, token, q)
                       here, and at every rank through out_also) */
          d.rowdst[p] = (d.fan ? mk_local_ptr<uint16_t>(d.w, d.o_pland) + (int64_t)s * d.Tm * d.K * d.H
                               : mk_peer_ptr<uint16_t>(d.w, moe_local(d, s), d.o_pland)) +
                        ((int64_t)lm[j].token * d.K + ((lm[j].q >> (4 * lane)) & 15)) * d.H;
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

/* Decode without the count exchange (d.ll; moe_internal.h): C CTAs, a unit is (token, part of its row)
 * per warp. Token t's pair (t, q) with expert e (rank r = e / El, local expert l) goes to row
 * l R + rank Tm + slot of A1 at r, slot = the number of this rank's pairs with e before (t, q) (lane i
 * tests tokens i and i + 32 of the T <= 64, one warp sum: no atomics, the same rows on every run; an expert
 * listed twice in a token counts twice, and where that overfills a region of Tm rows the call is aborted
 * with an error record of tile -2, nothing stored out of the region). Part 0
 * also writes the row's rowinfo there. Then each CTA adds 1 to land_cnt at every rank (one system fence
 * per rank, in parallel), so every rank waits for W x C adds a call. CTA 0 first zeroes done2 and g2_out
 * (this rank's; GEMM1 and GEMM2 follow on the stream). */
constexpr int kLlParts = 8;
__global__ void __launch_bounds__(kMoeCommThreads) moe_ll_send_kernel(mk_moe_dev d, const uint16_t *x,
                                                                      const int32_t *ids, int64_t T) {
  const uint64_t target = moe_target(d);
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  if (threadIdx.x == 0) {
    moe_stamp(d.prof, MK_MOE_PH_START);
    moe_stamp(d.prof, MK_MOE_PH_EXCH_START);
  }
  if (blockIdx.x == 0) {
    uint64_t *rd = mk_local_ptr<uint64_t>(d.w, d.o_done2);
    const int64_t words = kMoeG12Chunks * (d.m_cap / 128 + d.El + 1) + 1; /* done2, g2_out */
    for (int64_t i = threadIdx.x; i < words; i += blockDim.x) rd[i] = 0;
  }
  const uint64_t row_bytes = (uint64_t)d.H * 2;
  const uint64_t part_bytes = (row_bytes / kLlParts + 15) / 16 * 16;
  int mine[MK_MOE_MAX_TOPK], mine2[MK_MOE_MAX_TOPK]; /* lane's tokens lane and lane + 32 */
  for (int q = 0; q < MK_MOE_MAX_TOPK; q++) {
    mine[q] = q < d.K && lane < T ? ids[lane * d.K + q] : -1;
    mine2[q] = q < d.K && lane + 32 < T ? ids[(lane + 32) * d.K + q] : -1;
  }
  const int64_t units = T * kLlParts;
  int over = 0; /* a pair that found no room: the call fails (error record after the loop, out of its registers) */
  for (int64_t u = (int64_t)blockIdx.x * kMoeWarps + warp; u < units; u += (int64_t)gridDim.x * kMoeWarps) {
    const int t = (int)(u / kLlParts), part = (int)(u % kLlParts);
    const uint64_t b0 = (uint64_t)part * part_bytes;
    int te[MK_MOE_MAX_TOPK]; /* token t's ids, from the lane that holds them (-1 past K) */
#pragma unroll
    for (int q = 0; q < MK_MOE_MAX_TOPK; q++) te[q] = __shfl_sync(0xffffffffu, t < 32 ? mine[q] : mine2[q], t & 31);
    for (int q = 0; q < d.K; q++) {
      const int e = te[q];
      if ((unsigned)e >= (unsigned)d.E) continue; /* skipped, as the plan skips it */
      /* pairs with e before (t, q): earlier tokens' (an id twice counts twice; one warp sum), then this token's */
      int c = 0;
#pragma unroll
      for (int i = 0; i < MK_MOE_MAX_TOPK; i++) c += (mine[i] == e && lane < t) + (mine2[i] == e && lane + 32 < t);
      int slot = (int)__reduce_add_sync(0xffffffffu, (unsigned)c);
      for (int i = 0; i < q; i++) slot += te[i] == e;
      if (slot >= d.Tm) { /* only with an expert twice in some token's top-k: no room in the region */
        over = max(over, slot + 1);
        continue;
      }
      const int r = e / d.El;
      const int64_t p = (int64_t)(e % d.El) * d.R + (int64_t)d.rank * d.Tm + slot;
      if (b0 < row_bytes)
        moe_copy_row(mk_peer_ptr<char>(d.w, moe_local(d, r), d.o_a1) + p * row_bytes + b0,
                     (const char *)(x + (int64_t)t * d.H) + b0, (int64_t)min(part_bytes, row_bytes - b0));
      if (part == 0 && lane == 0)
        *mk_peer_ptr<uint64_t>(d.w, moe_local(d, r), d.o_rowinfo + (uint64_t)p * 8) =
            (target & 0xffffffull) << 40 | (uint64_t)d.rank << 32 | (uint32_t)(t * d.K + q);
    }
  }
  if (over && lane == 0) mk_raise_timeout(d.w, MK_OP_MOE, d.rank, -2, (uint64_t)d.Tm, (uint64_t)(over - 1));
  __syncthreads();
  for (int r = threadIdx.x; r < d.W; r += blockDim.x) mk_signal_add(d.w, moe_local(d, r), d.o_land_cnt, 1);
  if (threadIdx.x == 0) moe_stamp(d.prof, MK_MOE_PH_SENT);
}

/* GEMM1 hooks: a tile-row's loads wait until all its rows have landed in A1. Weights do not
 * depend on the routing: while the rows are still in flight, the producer first has the
 * tile's next pf_kblocks k-blocks of B (its weights) fetched into L2 (one bulk prefetch per
 * B row), so those loads hit L2 once the rows are in. kGlu: SwiGLU in the epilogue (B = w1
 * with gate/up rows interleaved by 8, C = act). kG12 (GEMM2 beside GEMM1, mk_moe_dev.g12_need):
 * every CTA lets GEMM2, launched next as a programmatic dependent, start on the SMs left free,
 * and each stored tile adds its rows to done2[its tile-row][its chunk] (release, GPU scope), which
 * GEMM2's tiles of that tile-row wait for. */
template <bool kGlu, bool kG12 = false>
struct moe_gemm1_policy : mk_gemm_order_grouped, mk_gemm_hooks_default {
  static constexpr bool kAfterStore = kG12;
  static constexpr bool kTrigger = kG12;
  static constexpr bool kGluPairs = kGlu;
  mk_dev_world w;
  uint64_t o_ready;
  uint64_t *done2; /* kG12: [tile-row][kMoeG12Chunks] */
  int g12_bn, g12_need; /* kG12: GEMM1's tile width and tiles a tile-row */
  const int32_t *exp_off, *tile_base;
  uint64_t *prof;
  const uint16_t *B; /* [groups][nb][kb] */
  int64_t nb, kb;
  int pf_kblocks;
  /* Dynamic claims (g1_sync): GEMM1 runs on every SM, CTAs >= join_from (SMs - C) on the SMs the
   * dispatch leaves. Such a CTA takes tiles only if every dispatch CTA has started (started >= C x
   * this call's target): a CTA that got an SM before them would wait for rows that the dispatch,
   * kept off the SMs, could never land. Normally they start as dispatch CTAs exit, so they join. */
  const uint64_t *started, *calls;
  int join_from, C;
  uint64_t o_land_cnt, ll_need; /* d.ll: every tile waits for land_cnt >= (calls + 1) ll_need (W x C adds) */
  struct State {                 /* per thread (gemm_core.cuh: the policy is read-only in the kernel) */
    bool ll_seen = false;        /* d.ll: this CTA's producer has seen every row land (its later tiles skip the wait) */
  };
  __device__ __forceinline__ bool join() const {
    return (int)blockIdx.x < join_from || mk_ld_volatile(started) >= (uint64_t)C * (mk_ld_volatile(calls) + 1);
  }
  __device__ __forceinline__ void before_load(State &st, const mk_gemm_tile &t) const {
    if (st.ll_seen) { /* every row landed when this CTA's first tile waited */
      moe_stamp(prof, MK_MOE_PH_G1_LAST);
      return;
    }
    const int tile = tile_base[t.group] + (t.m0 - exp_off[t.group]) / mk_gemm_config::kBM;
    const uint64_t need = ll_need ? (mk_ld_volatile(calls) + 1) * ll_need : (uint64_t)(t.m_end - t.m0);
    const uint64_t o_wait = ll_need ? o_land_cnt : o_ready + (uint64_t)tile * 8;
    const int64_t k0 = (int64_t)t.k0 * mk_gemm_config::kBK;
    if (pf_kblocks && k0 < kb && mk_ld_volatile(mk_local_ptr<uint64_t>(w, o_wait)) < need) {
      const int64_t cols = min((int64_t)pf_kblocks * mk_gemm_config::kBK, kb - k0);
      const uint16_t *b = B + ((int64_t)t.group * nb + t.n0) * kb + k0;
      for (int n = t.n0; n < t.n_end; n++, b += kb) moe_prefetch_l2(b, (uint32_t)cols * 2);
    }
    mk_wait_ge_paced(w, o_wait, need, MK_OP_MOE, -1, tile, kMoePollNs);
    if (ll_need) { /* peers' stores, then TMA loads; once a CTA: every row has landed */
      asm volatile("fence.proxy.async.global;" ::: "memory");
      st.ll_seen = true;
    }
    if (prof) {
      moe_stamp(prof, MK_MOE_PH_G1_FIRST);
      moe_stamp(prof, MK_MOE_PH_G1_LAST);
    }
  }
  __device__ __forceinline__ void after_store(State &, const mk_gemm_tile &t) const {
    if constexpr (kG12) {
      const int row = tile_base[t.group] + (t.m0 - exp_off[t.group]) / mk_gemm_config::kBM;
      moe_red_add_gpu(done2 + (int64_t)row * kMoeG12Chunks + moe_g12_chunk(t.n0 / g12_bn, g12_need),
                      (uint64_t)(t.m_end - t.m0));
    }
  }
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

extern "C" mk_status mk_moe_launch_ll_send(const mk_moe_dev *d, const uint16_t *x, const int32_t *ids, int64_t T,
                                           void *stream) {
  moe_ll_send_kernel<<<d->C, kMoeCommThreads, 0, (cudaStream_t)stream>>>(*d, x, ids, T);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_moe_launch_dispatch(const mk_moe_dev *d, const uint16_t *x, void *stream) {
  moe_dispatch_kernel<<<d->C, kMoeCommThreads, 0, (cudaStream_t)stream>>>(*d, x);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

template <bool kGlu, bool kG12>
static mk_status launch_gemm1(const mk_moe_dev *d, int grid, cudaStream_t stream) {
  moe_gemm1_policy<kGlu, kG12> p;
  p.done2 = (uint64_t *)(d->w.heap + d->o_done2);
  p.g12_bn = d->g12_bn, p.g12_need = d->g12_need;
  p.group_m = (int)mk_param_gemm_group_m();
  p.w = d->w;
  p.o_ready = d->o_ready;
  p.exp_off = d->exp_off;
  p.tile_base = d->tile_base;
  p.prof = d->prof;
  p.B = kGlu ? d->w1g : d->w1;
  p.nb = 2 * (int64_t)d->I, p.kb = d->H, p.pf_kblocks = d->pf_kblocks;
  mk_gemm_args args = {kGlu ? d->act : d->C1, d->m_cap, 2 * (int64_t)d->I, d->H, d->El, d->rows};
  args.wg_skip = d->wg_skip;
  p.started = d->g1_sync, p.calls = d->calls, p.C = d->C;
  p.join_from = d->g1_sync && !d->ll ? grid - d->C : grid;
  p.o_land_cnt = d->o_land_cnt, p.ll_need = d->ll ? (uint64_t)d->W * (uint64_t)d->C : 0;
  if (d->g1_sync) args.claim = (uint32_t *)(d->g1_sync + 1);
  if constexpr (!kG12) {
    if (d->split_k) { /* k-slices of the last wave, planned on the device (gemm_split.cuh) */
      args.splits = -d->split_k, args.split_mode = d->split_force, args.ws = d->sk_ws, args.flags = d->sk_flags;
      return mk_gemm_core_launch_split(d->A1, kGlu ? d->w1g : d->w1, args, MK_GEMM_B_NK, p, grid, d->tile_n1,
                                       stream);
    }
  }
  /* kG12: g12_bn-wide tiles, so that GEMM2 knows how many stores complete a tile-row (g12_need) */
  return mk_gemm_core_launch(d->A1, kGlu ? d->w1g : d->w1, args, MK_GEMM_B_NK, p, grid,
                             kG12 ? d->g12_bn : d->tile_n1, stream);
}

/* GEMM1 swapped (moe_skinny.cuh), d->sk_nt rows a chunk. */
static mk_status launch_gemm1_skinny(const mk_moe_dev *d, int grid, cudaStream_t stream) {
  moe_sk_args a;
  a.w = d->w;
  a.rows = d->rows, a.exp_off = d->exp_off, a.tile_base = d->tile_base;
  a.o_ready = d->o_ready;
  a.act = d->act;
  a.prof = d->prof;
  a.done2 = d->g12_need ? (uint64_t *)(d->w.heap + d->o_done2) : NULL; /* create: g12_bn = kBW */
  a.El = d->El, a.I = d->I, a.K = d->H;
  if (d->sk_nt == 64) return moe_sk_gemm1_launch<64>(d->A1, d->m_cap, d->w1g, a, grid, stream);
  if (d->sk_nt == 128) return moe_sk_gemm1_launch<128>(d->A1, d->m_cap, d->w1g, a, grid, stream);
  return moe_sk_gemm1_launch<192>(d->A1, d->m_cap, d->w1g, a, grid, stream);
}

extern "C" mk_status mk_moe_launch_gemm1(const mk_moe_dev *d, int grid, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  if (d->sk_nt) return launch_gemm1_skinny(d, grid, s); /* create: glu, overlapped schedule */
  if (d->g12_need) return launch_gemm1<true, true>(d, grid, s); /* create: g12 needs glu, no split-K */
  return d->glu ? launch_gemm1<true, false>(d, grid, s) : launch_gemm1<false, false>(d, grid, s);
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
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)moe_ll_send_kernel));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)moe_swiglu_kernel));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm1_policy<false>, 0, 256>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm1_policy<false>, 0, 128>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm1_policy<true>, 0, 256>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm1_policy<true>, 0, 128>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm1_policy<true, true>, 0, 256>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm1_policy<true, true>, 0, 128>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)moe_sk_gemm1_kernel<64>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)moe_sk_gemm1_kernel<128>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)moe_sk_gemm1_kernel<192>));
  if (split_k) {
    MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm1_policy<false>, 0, 256, true>));
    MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm1_policy<false>, 0, 128, true>));
    MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm1_policy<true>, 0, 256, true>));
    MK_CUDA_CHECK(cudaFuncGetAttributes(&a, (const void *)mk_gemm_core_kernel<moe_gemm1_policy<true>, 0, 128, true>));
  }
  return MK_STATUS_OK;
}
