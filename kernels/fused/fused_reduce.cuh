/* fused_reduce.cuh — the GEMM + reduction policy shared by GEMM+RS (gemm_rs.cu) and GEMM+AR
 * (gemm_ar.cu): every rank computes its partial P_r = A_r @ B_r into its own heap; the ranks
 * that need rows of the sum ("readers": the owner of the rows for RS, every rank for AR) pull
 * them from every rank and add them in the fixed order 0..W-1, so equal inputs give equal bits.
 *
 * Buffer layout (heap workspace of the op, same offsets on every rank):
 *   P       [2][M, N] bf16        this rank's partial (the GEMM's C), two of them: a call of
 *                                 epoch e uses P[e & 1] (read on the device: graph replays too)
 *   cnt     u64 [W][tiles_m][ncb] cnt[p][tm][cb] = epoch + 1 once rank p's partial of (128-row
 *                                 tile-row tm, 128-column block cb) is stored in p's P
 *   arrive  u64 [16]              entry handshake inside the node group (fused_common.cuh)
 *   xsig    u64 [3][16]           proxied counters (+1 per call): arrive_x, xdata, ack
 *   X       [W][R][N] bf16        several node groups only: X[p] = the rows this rank reads of
 *                                 remote rank p's partial (R = M/W rows for RS, M for AR)
 * Flag ownership: cnt[] lives in the reader's heap and is set by the producer p (its compute
 * CTA's after_store, over NVLink); xdata/ack/arrive_x are added by the remote rank's proxy.
 *
 * Tile order (RS, when M/W is a multiple of 128 and tiles_m of W, i.e. at round shapes): the
 * tile-rows of the W owners are interleaved (logical tile-row q is owner q % W's tile-row
 * q / W) under the grouped order, so every owner's blocks complete at the same pace over the
 * whole GEMM and its reducers keep up, instead of owner W-1 getting all of its blocks in the
 * last quarter (a reduce tail after the GEMM). Owner o's reducers walk its own tile-rows in
 * the same order (groups of group_m / W). Other shapes: the plain grouped order.
 * Split-K: the GEMM core's split of the last wave (mk_gemm_split_plan over the compute CTAs,
 * fp32 workspace split_ws of the handle) fills SMs a short last wave or a small M leaves idle.
 * Roles: compute CTAs run the GEMM core into P (local stores) and, after each tile, set the
 * tile's flags on every reader in the node group (and on this rank). Reducer CTAs walk the
 * 128 x 128 blocks of the rows this rank reduces in the order the GEMM produces them (all
 * ranks use the same grouped tile order, so a block is complete on all ranks at about the
 * same time), wait for its W flags (xdata for remote ranks), pull the W partial blocks (peers
 * over NVLink, remote ranks from X) and write the sum. With several node groups one more CTA
 * (inter) waits until P is complete, then, per remote rank q, waits for q's arrival and posts
 * one PUT_SIGNAL of the rows q reads into q's X[me] (+1 on q's xdata[me]); it acknowledges
 * remote data that has landed and waits for the acknowledgements of its own puts
 * (mk_fused_inter_finish). Inter-node data thus moves after the GEMM, in one put per pair.
 * Barrier points: (1) none before the GEMM: call e writes P[e & 1], last read by peers in
 * call e - 2, and those reads are over — this rank's call e - 1 waited (through the blocks' flags) for every local peer's call-(e - 1) GEMM, which
 * began after that peer's call e - 2 ended (stream order). The epoch handshake of run 1
 * (wait until every peer entered call e) serialised back-to-back calls on the slowest rank's
 * reduce tail; (2) reducers wait per block; (3) the inter CTA waits for the arrival of the
 * remote rank whose staging area X it writes (X is single-buffered), as above.
 * Copy-engine mode (MK_FUSED_RS_COPY=1 / MK_FUSED_AR_COPY=1, one node group; protocol in
 * copy_engine.c): no reducer CTAs and no split-K; the GEMM stores into a local P (owner-
 * interleaved order for AR too) and counts its progress per (owner, piece); side streams push
 * finished pieces to the owners' staging X by peer copies, and mk_rs_ce_reduce_kernel sums
 * them after the GEMM; AR then pushes each owner's sums to every rank (two-shot). With
 * MK_FUSED_CE_OVERLAP=1 the sum runs beside the GEMM instead (mk_ce_overlap_reduce_kernel, on
 * its own stream and SMs, piece by piece as they arrive; the GEMM also counts the own rows).
 * Fold mode (MK_FUSED_FOLD=1, one node group, whole 128-row tile-rows per owner, W dividing the
 * GEMM's group of tile-rows): no role CTAs, no copy engines, no split-K. The GEMM walks the
 * owners' rows one owner after the other from me + 1 (the copy-engine order) and its own rows
 * last; it stores a peer's rows into the owner's PX (push mode) and flags each block there.
 * When an own tile's warp has stored its rows, it waits for the peers' flags of the tile (set
 * long before: every peer computed this rank's rows in an earlier phase of its own GEMM) and
 * rewrites the rows as the rank-order sum: RS is complete when the GEMM is. AR: the sums also
 * go to every peer's Y (its P[e & 1]: the partial is not stored in this mode), flagged per
 * block, and the GEMM CTAs past their last tile copy the peers' sums Y -> C (the tail's
 * gather). Reuse: PX as push mode (by epoch parity). Y of this rank is written by o's call e
 * only after o saw this rank's call-e flags, i.e. after this rank's call e - 1 (its gather, the
 * last reader) ended; the flags are epoch-valued. No cycle: a peer's tile waits for nothing, an
 * own tile only for peers' tiles, which every CTA computes before its own ones. */
#pragma once
#include <cstring>

#include "kernels/fused/beside.cuh"
#include "kernels/fused/fused_common.cuh"

/* kOp (the mk_fused_op) only makes the kernel of each op its own instantiation (one per .cu). */
template <int kOp>
struct mk_reduce_policy : mk_gemm_order_grouped, mk_gemm_hooks_default {
  static constexpr bool kAfterStore = true;
  static constexpr bool kRoles = true;
  static constexpr bool kTail = true;
  static constexpr bool kWarpDone = true; /* fold mode's sums (warp_done) */
  static constexpr bool kSmemPolicy = true; /* read from shared memory (gemm_core.cuh) */
  mk_dev_world w;
  mk_fused_view v;
  uint16_t *out;     /* the rows this rank reduces: C [r1 - r0, N] */
  int64_t m, n, ms;  /* ms: rows per owner (RS) */
  int ncb, tiles_m;
  int op;            /* MK_OP_GEMM_RS or MK_OP_GEMM_AR, for error records */
  int all_read;      /* AR one-shot: every rank reads every row; RS, AR two-shot: the owner of the rows */
  int reducers;      /* role CTAs [0, reducers) reduce; role CTA `reducers` is the inter CTA */
  int two;           /* AR two-shot (MK_FUSED_AR_TWO_SHOT): role CTAs [0, two) reduce this rank's rows (as
                        RS) and publish the sums, [two, reducers) gather the other owners' sums into C */
  uint16_t *c_all;   /* AR two-shot: the whole C [M, N] (out = this rank's rows of it) */
  const CUtensorMap *rmap; /* MK_FUSED_REDUCE_TMA: [2][MK_MAX_LOCAL] maps of the local ranks' partials
                              (device memory), box 64 columns x R rows; NULL = register loads */
  uint32_t *claims;  /* MK_FUSED_TAIL: device u32 [2] (reduce tasks, gather tasks) taken so far this call, by
                        atomics (role CTAs and GEMM CTAs past their last tile); zeroed by the epoch advance
                        after the kernel. NULL: role CTA i takes tasks i, i + reducers, ... (no tail) */
  int perm_q;        /* > 0: owner-interleaved tile order, tiles_m = W * perm_q; 0: plain grouped */
  int ce_seq;        /* with perm_q, copy-engine mode without the overlapped reduce: the owners' rows one owner
                        after the other in push order (me + 1, me + 2, ...), this rank's own rows last, so the
                        copies of every peer's rows run beside the GEMM's later owners and none is left at its
                        end but the owner's sum (copy_engine.c pushes owner by owner) */
  uint64_t pbytes;   /* bytes of one P: P[e & 1] is at v.buf + (e & 1) * pbytes */
  int ce;            /* RS copy-engine mode (copy_engine.c): P local, progress counters, no reducers */
  uint64_t ce_cnt;   /* heap offset of ce_cnt[W][ce_np] */
  int64_t ce_rows;   /* rows per piece */
  int ce_np;         /* pieces per owner */
  int ce_own;        /* MK_FUSED_CE_OVERLAP: count the own rows too (the overlapped reduce waits for them) */
  int push;          /* push mode (ws.px, MK_FUSED_PUSH; RS and AR two-shot on SM roles, one node group): the
                        epilogue stores rows of owner o != me into o's PX[e & 1][me], the reducers read PX */
  uint64_t px, pxbytes;
  int bs;            /* beside mode (beside.cuh; with ce): count each tile in prog[o][i][k] of bsg */
  mk_beside_geom bsg;
  uint64_t *bs_prog; /* prog (local device memory) */
  int fold_dbg;      /* MK_FUSED_FOLD_DEBUG (timing only, wrong results): 1 no sums (AR: no gather), 2 the peers'
                        rows stored into this rank's own P, 4 no fence and flags (and no sums), 8 every row into
                        this rank's own P (out_row's plain path), 16 the plain GEMM into P instead (launch), 32 the
                        plain grouped order (launch: no perm_q) */
  int fold;          /* fold mode (MK_FUSED_FOLD; with push, ce_seq, no role CTAs, no split-K): the GEMM walks the
                        peers' rows first, pushing them into their owners' PX, and its own rows last; the epilogue of
                        an own tile adds the peers' partials (waiting for their flags) in rank order and stores the
                        sums into C (AR: and into every peer's P[e & 1], the sums' staging Y, flagged per block; the
                        GEMM CTAs past their last tile copy the peers' sums Y -> C in the gather) */
  int ce_fold;          /* copy-engine mode, owner by owner (MK_FUSED_CE_FOLD): the own rows go to C and their
                           epilogue adds the peers' partials from X (px = X, pxbytes = 0) once the peers' copies of
                           their piece are in (ce_piece[p][i] >= 1), as fold mode does from PX; no reduce kernel. AR:
                           then as fold mode, the sums into every peer's Y (P[e & 1]), flagged, and the gather */
  uint64_t ce_piece, ce_arrive; /* heap offsets: ce_piece[W][ce_np], ce_arrive[16] (released on a failed wait) */
  mk_fused_trace tr;    /* MK_TRACE */
  uint64_t ep;          /* this call's epoch: read once a CTA into its copy of the policy (prepare) */
  /* Per thread (gemm_core.cuh: the policy is read-only in the kernel); MK_TRACE only. */
  struct State {
    uint64_t tprev = 0; /* the signaller (after_store): when the previous tile was published */
    int tn = 0;         /* MK_TRACE events recorded */
  };
  /* One thread, into the CTA's shared-memory copy before the others read it (gemm_core.cuh): this call's epoch, read
   * once instead of a volatile load in every out_row call (fold's GEMM alone at RS 8192: 1.618 ms against 1.636,
   * runs 7b94fc5-x2 / af3dcfe-x2, NOTES fused s32). */
  __device__ __forceinline__ void prepare() { ep = mk_epoch(w, v.slot); }

  /* Rows rank q reads (and reduces). */
  __device__ __forceinline__ void rows_of(int q, int64_t *lo, int64_t *hi) const {
    *lo = all_read ? 0 : (int64_t)q * ms;
    *hi = all_read ? m : (int64_t)(q + 1) * ms;
  }
  /* Block (tm, cb) of the rows [lo, hi) this rank reduces: rows [r0, r1), columns [c0, c0 + cols). */
  __device__ __forceinline__ void block_span(int tm, int cb, int64_t lo, int64_t hi, int64_t *r0, int64_t *r1,
                                             int64_t *c0, int *cols) const {
    *r0 = max((int64_t)tm * 128, lo);
    *r1 = min((int64_t)tm * 128 + 128, hi);
    *c0 = (int64_t)cb * 128;
    *cols = (int)min((int64_t)128, n - *c0);
  }
  __device__ __forceinline__ uint64_t flag(int p, int tm, int cb) const {
    return v.cnt + 8ull * (((uint64_t)p * tiles_m + tm) * ncb + cb);
  }

  __device__ __forceinline__ void tile_order(int idx, int tiles_m_, int tiles_n, int *tm, int *tn_) const {
    int q;
    mk_gemm_order_grouped::tile_order(idx, tiles_m_, tiles_n, &q, tn_);
    if (ce_seq) *tm = ((v.me + 1 + q / perm_q) % v.W) * perm_q + q % perm_q;
    else *tm = perm_q ? (q % v.W) * perm_q + q / v.W : q;
  }
  /* Heap offset of P of the call with this epoch. */
  __device__ __forceinline__ uint64_t pbuf(uint64_t epoch) const { return v.buf + (epoch & 1) * pbytes; }
  /* Heap offset of PX[p] (push mode) of the call with this epoch: [ms][n] rows of rank p's partial. */
  __device__ __forceinline__ uint64_t pxbuf(uint64_t epoch, int p) const {
    return px + (epoch & 1) * pxbytes + (uint64_t)p * ms * n * 2;
  }
  /* The GEMM's C (args.C = P[0]) rows go to P[epoch & 1]; push mode: rows of another owner o to o's
   * PX[epoch & 1][me] (rows past m are never written: o is clipped, not checked). */
  __device__ __forceinline__ uint16_t *out_row(State &, const mk_gemm_args &a, int64_t row) const {
    if (fold_dbg & 8) return a.C + row * a.n;
    if (ce_fold) return owner_of(row) == v.me ? own_row(row) : a.C + row * a.n; /* a.C: the local P */
    if (push) {
      const int o = owner_of(row);
      if (o != v.me && fold && (fold_dbg & 2)) return mk_local_ptr<uint16_t>(w, pbuf(ep)) + row * a.n;
      if (o != v.me)
        return mk_peer_ptr<uint16_t>(w, v.lp(o), pxbuf(ep, v.me)) + (row - (int64_t)o * ms) * a.n;
      if (fold) return own_row(row);
    }
    return a.C + (ce ? 0 : (ep & 1) * (pbytes / 2)) + row * a.n;
  }
  /* The owner of row `row` (push mode: one node group, W <= MK_MAX_LOCAL), W - 1 past the last owner's rows. Compares,
   * not row / ms: out_row runs for every row the epilogue stores (16 times a lane and tile in the staged epilogue),
   * and with a 64-bit division there the GEMM took RS 8192 1.60 ms against 1.43 (run 7df6626-x2, NOTES fused s32). */
  __device__ __forceinline__ int owner_of(int64_t row) const {
    int o = 0;
#pragma unroll
    for (int q = 1; q < MK_MAX_LOCAL; q++) o += q < v.W && row >= q * ms;
    return o;
  }
  /* Fold mode: where own row `row` of the sum goes (RS: out = C [ms, N]; AR: the whole C). */
  __device__ __forceinline__ uint16_t *own_row(int64_t row) const {
    return op == MK_OP_GEMM_AR ? c_all + row * n : out + (row - (int64_t)v.me * ms) * n;
  }
  __device__ __forceinline__ void before_load(State &, const mk_gemm_tile &) const {}
  __device__ __forceinline__ void after_store(State &st, const mk_gemm_tile &t) const {
    if (tr.buf) {
      const uint64_t now = mk_globaltimer();
      /* half 0: the signaller's (gemm_core.cuh) part of the GEMM CTA's buffer; its tail crew writes half 1 */
      mk_trace_ev(tr, 0, &st.tn, MK_TRACE_COMPUTE, st.tprev ? st.tprev : now, now);
      st.tprev = now;
    }
    if (ce) {
      ce_progress(t);
      if (ce_fold && op == MK_OP_GEMM_AR && owner_of(t.m0) == v.me) fold_publish(t); /* the sums in the peers' Y */
      return;
    }
    if (fold) {
      fold_publish(t);
      return;
    }
    const int tm = t.m0 / 128;
    const uint64_t e1 = mk_epoch(w, v.slot) + 1;
    __threadfence_system(); /* one fence for every flag of the tile (mk_st_relaxed_sys) */
    for (int p = v.node * v.L; p < (v.node + 1) * v.L && p < v.W; p++) {
      if (p != v.me && !all_read && (p + 1) * ms <= t.m0) continue; /* RS: p owns none of the rows */
      if (p != v.me && !all_read && p * ms >= t.m_end) continue;
      for (int cb = t.n0 / 128; cb * 128 < t.n_end; cb++)
        mk_st_relaxed_sys(mk_peer_ptr<uint64_t>(w, v.lp(p), flag(v.me, tm, cb)), e1);
    }
  }

  /* Fold mode, the signaller: a peer's tile (in the owner's PX) flagged on its owner; AR: an own tile's sums (in
   * every peer's Y) flagged on every peer (flag(me, tm, cb) there: a block of this rank's rows, which no producer
   * flags on a peer in this mode). RS's own tiles are final in C: nobody waits for them. */
  __device__ __forceinline__ void fold_publish(const mk_gemm_tile &t) const {
    const int o = owner_of(t.m0), tm = t.m0 / 128;
    if ((o == v.me && op != MK_OP_GEMM_AR) || (fold_dbg & 4)) return;
    const uint64_t e1 = mk_epoch(w, v.slot) + 1;
    __threadfence_system(); /* one fence for every flag of the tile */
    for (int q = 0; q < v.W; q++) {
      if (q == v.me || (o != v.me && q != o)) continue;
      for (int cb = t.n0 / 128; cb * 128 < t.n_end; cb++)
        mk_st_relaxed_sys(mk_peer_ptr<uint64_t>(w, v.lp(q), flag(v.me, tm, cb)), e1);
    }
  }
  /* Fold mode, every lane of a consumer warp after it stored rows [rb, rb + 16) of tile t: for an own tile, wait
   * for the W - 1 peers' flags of the tile's 128-column blocks (one lane each), then rewrite those rows of C as the
   * sum in rank order of the W partials (its own as stored, bf16; the peers' from PX) in fp32: the bits of
   * mk_fused_reduce_block, so of every other mode. AR: the sums also go to every peer's Y. A failed wait (recorded)
   * leaves the rows as they are. */
  __device__ __forceinline__ void warp_done(State &, const mk_gemm_args &, const mk_gemm_tile &t, int64_t rb,
                                            int lane) const {
    if (((fold && !(fold_dbg & 5)) || ce_fold) && owner_of(t.m0) == v.me) fold_rows(t, rb, lane, ep);
  }
  __device__ __forceinline__ void fold_rows(const mk_gemm_tile &t, int64_t rb, int lane, uint64_t e) const {
    const int tm = t.m0 / 128, cb0 = t.n0 / 128, nb = (t.n_end - t.n0 + 127) / 128;
    int ok = 1;
    if (lane < (v.W - 1) * nb) {
      const int p = lane / nb + (lane / nb >= v.me), cb = cb0 + lane % nb;
      const uint64_t piece = (uint64_t)p * ce_np + (uint64_t)((t.m0 - (int64_t)v.me * ms) / ce_rows);
      ok = ce_fold ? mk_wait_ge(w, ce_piece + 8ull * piece, 1, op, p, tm * ncb + cb)
                   : mk_wait_ge(w, flag(p, tm, cb), e + 1, op, p, tm * ncb + cb);
    }
    if (!__all_sync(0xffffffffu, ok)) {
      if (ce_fold && lane == 0) /* as the reduce kernel does: this rank's side streams drain */
        for (int p = 0; p < v.W; p++) mk_st_release_sys(mk_local_ptr<uint64_t>(w, ce_arrive + 8ull * p), 1ull);
      return;
    }
    __syncwarp(); /* the waiting lanes' acquire, and the warp's stores of the tile, before every lane's loads */
    const int64_t r1 = min(rb + 16, (int64_t)t.m_end);
    if (r1 <= rb) return;
    fold_sum<4>(t, rb, r1, lane, e); /* W = 2 or 4 (mk_fused_fold); one instantiation: a second one (W = 2 with
                                        16 loads in flight, or W = 8) made ptxas spill kilobytes in the GEMM kernel
                                        (-Xptxas -v; docs/perf/raw/ptxas-s32/) */
  }
  /* Rows [rb, r1) of tile t's columns: lane l sums 16-byte chunk l of each row (a row has at most 32), U = 16 / kW
   * rows at a time with all of their W loads in flight (16 at W = kW). kW >= W. Every address is formed once, in
   * registers: the policy lives in shared memory, which each generic store here may alias, so member reads in the
   * loop would be reloaded after every store. */
  template <int kW>
  __device__ __forceinline__ void fold_sum(const mk_gemm_tile &t, int64_t rb, int64_t r1, int lane, uint64_t e) const {
    constexpr int U = 16 / kW;
    const int W = v.W, me = v.me;
    if (lane >= (t.n_end - t.n0) / 8) return;
    const int64_t nn = n, own0 = (int64_t)me * ms, c = t.n0 + (int64_t)lane * 8;
    const bool ar = op == MK_OP_GEMM_AR;
    /* source p of row r: src[p] + (r - rb) * nn (PX[e & 1][p] for a peer, C's own rows here); AR: the sums also
       to dst[q] + (r - rb) * nn on every peer q (its Y, P[e & 1]) */
    const uint16_t *src[kW];
    uint16_t *dst[kW];
    const uint16_t *px0 = mk_local_ptr<uint16_t>(w, pxbuf(e, 0)) + (rb - own0) * nn + c;
    uint16_t *own = own_row(rb) + c;
#pragma unroll
    for (int p = 0; p < kW; p++) {
      src[p] = p == me ? own : px0 + (int64_t)p * ms * nn;
      dst[p] = ar && p < W && p != me ? mk_peer_ptr<uint16_t>(w, v.lp(p), pbuf(e)) + rb * nn + c : nullptr;
    }
    const int rows = (int)(r1 - rb);
    for (int j0 = 0; j0 < rows; j0 += U) {
      uint4 x[U][kW];
#pragma unroll
      for (int u = 0; u < U; u++)
#pragma unroll
        for (int p = 0; p < kW; p++)
          if (j0 + u < rows && p < W) x[u][p] = __ldcg(reinterpret_cast<const uint4 *>(src[p] + (j0 + u) * nn));
#pragma unroll
      for (int u = 0; u < U; u++) {
        if (j0 + u >= rows) break;
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
        for (int p = 0; p < kW; p++)
          if (p < W) mk_fused_acc8(acc, x[u][p]);
        const uint4 sum = mk_fused_pack8(acc);
        *reinterpret_cast<uint4 *>(own + (j0 + u) * nn) = sum;
#pragma unroll
        for (int q = 0; q < kW; q++)
          if (dst[q]) *reinterpret_cast<uint4 *>(dst[q] + (j0 + u) * nn) = sum;
      }
    }
  }

  /* Copy-engine mode: the tile's elements / 8 per (owner, piece) it covers, to the side
   * stream's progress counters (own heap; the stream waits for rows x N / 8). */
  __device__ __forceinline__ void ce_progress(const mk_gemm_tile &t) const {
    if (bs) { /* one part of one piece (whole 128-row tile-rows per owner; bsg.cw a multiple of the tile width) */
      const int o = owner_of(t.m0), lt = (int)((t.m0 - (int64_t)o * ms) / 128);
      const int i = lt / bsg.gmo * bsg.ncs + t.n0 / bsg.cw;
      __threadfence(); /* read by this GPU's comm kernel only */
      atomicAdd(reinterpret_cast<unsigned long long *>(bs_prog + bsg.idx(o, i, lt % bsg.gmo)),
                (unsigned long long)(t.m_end - t.m0) * (unsigned long long)(t.n_end - t.n0) / 8);
      return;
    }
    const uint64_t cols8 = (uint64_t)(t.n_end - t.n0) / 8;
    __threadfence_system();
    for (int64_t o = t.m0 / ms; o < v.W && o * ms < t.m_end; o++) {
      if (o == v.me && !ce_own) continue; /* the own rows stay here (counted for the overlapped reduce) */
      const int64_t lo = max((int64_t)t.m0, o * ms) - o * ms, hi = min((int64_t)t.m_end, (o + 1) * ms) - o * ms;
      for (int64_t i = lo / ce_rows; i * ce_rows < hi; i++) {
        const int64_t r = min(hi, (i + 1) * ce_rows) - max(lo, i * ce_rows);
        mk_red_add_relaxed_sys(mk_local_ptr<uint64_t>(w, ce_cnt + 8ull * ((uint64_t)o * ce_np + i)), (uint64_t)r * cols8);
      }
    }
  }

  /* Inlined: as a call (__noinline__) beside the read-only policy, ptxas failed to fit the GEMM kernel in the
   * consumers' 232 registers ("Register allocation failed"); inlined, its spills stay in the role CTAs' code. */
  __device__ __forceinline__ void run_role(State &st, int i, uint8_t *smem, int smem_bytes) const {
    const uint64_t epoch = mk_epoch(w, v.slot);
    if (i == 0 && threadIdx.x == 0) mk_fused_arrive(w, v, epoch);
    if (i >= reducers) {
      if (threadIdx.x == 0) inter(st, epoch);
      return;
    }
    const mk_crew c = {(int)threadIdx.x, (int)blockDim.x, 0, 0};
    int *box = reinterpret_cast<int *>(smem);
    if (two && i >= two) {
      gather(st, c, i - two, reducers - two, epoch, box);
      return;
    }
    const int nred = two ? two : reducers;
    if (rmap && !two && reduce_tma(st, i, epoch, smem, smem_bytes)) return;
    /* With claims the reduce CTAs go on to the gather tasks once no reduce task is left. */
    if (reduce(st, c, i, nred, epoch, box) && two && claims) gather(st, c, 0, 1, epoch, box);
  }

  /* MK_FUSED_TAIL: the GEMM CTA's consumer threads, past its last tile, join the reducers (the
   * reduce tasks left, then AR two-shot's gather tasks), taking tasks from the same claims. */
  __device__ __forceinline__ void tail(State &st, uint8_t *smem, int) const {
    if (claims) tail_run(st, smem);
  }
  __device__ __noinline__ void tail_run(State &st, uint8_t *smem) const {
    const mk_crew c = {(int)threadIdx.x - 128, 256, 1, 1};
    const uint64_t epoch = mk_epoch(w, v.slot);
    int *box = reinterpret_cast<int *>(smem);
    c.sync(); /* after a split-K slice without a store, the other warpgroup may still read the ring */
    if (fold || ce_fold) gather(st, c, 0, 1, epoch, box); /* AR fold: the peers' sums Y -> C */
    else if (reduce(st, c, 0, 1, epoch, box) && two) gather(st, c, 0, 1, epoch, box);
  }

  /* The task hand-over of a crew: its thread 0 takes the next task of queue q (0 reduce, 1 gather):
   * claims[q]++ where there are claims (any order of claimers: the tasks are the same blocks in the
   * same order, each summed in rank order), else *next (static: first, first + stride, ...); it
   * waits with ready(task) unless none is left (task >= total) and writes the task, or -1 after a
   * failed wait (recorded), to slot[it & 1]. Every thread returns it after one crew barrier; the
   * slot is rewritten two barriers later, once every thread has read it. */
  template <class Ready>
  __device__ __forceinline__ int hand_over(const mk_crew &c, int q, int *next, int stride, int it, int total, int *slot,
                                           Ready &&ready) const {
    if (c.t == 0) {
      const int t = claims ? (int)atomicAdd(claims + q, 1u) : *next;
      slot[it & 1] = t >= total || ready(t) ? t : -1;
      *next = t + stride;
    }
    c.sync();
    return slot[it & 1];
  }
  /* MK_TRACE of one task by the crew's thread 0: the wait (if over 1 us) since t0, then `kind` since t1. */
  __device__ __forceinline__ void trace_task(State &st, const mk_crew &c, int kind, uint64_t t0, uint64_t t1) const {
    if (!tr.buf || c.t != 0) return;
    if (t1 - t0 > 1000) mk_trace_ev(tr, c.half, &st.tn, MK_TRACE_WAIT, t0, t1);
    mk_trace_ev(tr, c.half, &st.tn, kind, t1, mk_globaltimer());
  }

  /* Crew c sums this rank's blocks (tasks first, first + stride, ... or claimed) in the GEMM's
   * order, each once its W flags are set (hand_over through box[0], box[1]), pulling the W
   * partials. False after a failed wait (recorded). */
  __device__ bool reduce(State &st, const mk_crew &c, int first, int stride, uint64_t epoch, int *box) const {
    int64_t lo, hi;
    rows_of(v.me, &lo, &hi);
    const int64_t xrows = hi - lo;
    const int tm_lo = (int)(lo / 128), ntm = (int)((hi - 1) / 128) - tm_lo + 1, total = ntm * ncb;
    const int gm = perm_q ? group_m / v.W : group_m; /* own tile-rows per group of the GEMM order */
    const uint64_t pb = pbuf(epoch);
    const uint16_t *src[MK_FUSED_ARRIVE_SLOTS];
    int next = first;
    for (int it = 0;; it++) {
      int tm, cb;
      const uint64_t t0 = tr.buf ? mk_globaltimer() : 0;
      const int task = hand_over(c, 0, &next, stride, it, total, box, [&](int t) {
        mk_fused_task_block(t, tm_lo, ntm, ncb, gm, &tm, &cb);
        bool ok = true;
        for (int p = 0; p < v.W && ok; p++)
          ok = v.local(p) ? mk_wait_ge(w, flag(p, tm, cb), epoch + 1, op, p, tm * ncb + cb)
                          : mk_wait_ge(w, v.xdata(p), v.xtarget(), op, p, tm * ncb + cb);
        return ok;
      });
      if (task < 0) return false;
      if (task >= total) return true;
      mk_fused_task_block(task, tm_lo, ntm, ncb, gm, &tm, &cb);
      int64_t r0, r1, c0;
      int cols;
      block_span(tm, cb, lo, hi, &r0, &r1, &c0, &cols);
      for (int p = 0; p < v.W; p++)
        src[p] = push && p != v.me ? mk_local_ptr<uint16_t>(w, pxbuf(epoch, p)) + (r0 - lo) * n + c0
                 : v.local(p)      ? mk_peer_ptr<uint16_t>(w, v.lp(p), pb) + r0 * n + c0
                                   : mk_local_ptr<uint16_t>(w, v.xbuf) + ((int64_t)p * xrows + r0 - lo) * n + c0;
      const uint64_t t1 = tr.buf ? mk_globaltimer() : 0;
      /* Two-shot: the sums also overwrite this rank's own partial of the block (read only
       * here), where the peers' gather CTAs pull them once the block's flag is set. */
      mk_fused_reduce_block(out + (r0 - lo) * n + c0, src, v.W, (int)(r1 - r0), cols, n,
                            two ? mk_local_ptr<uint16_t>(w, pb) + r0 * n + c0 : nullptr, c.t, c.n);
      if (two) {
        c.sync(); /* every thread's sums are stored before thread 0's system fence */
        if (c.t == 0) {
          __threadfence_system();
          for (int q = 0; q < v.W; q++)
            if (q != v.me) mk_st_relaxed_sys(mk_peer_ptr<uint64_t>(w, v.lp(q), flag(v.me, tm, cb)), epoch + 1);
        }
      }
      trace_task(st, c, MK_TRACE_REDUCE, t0, t1);
    }
  }

  /* AR two-shot, crew c gathers (tasks first, first + stride, ... or claimed; hand_over through
   * box[2], box[3]): copy every other owner o's sums of its blocks (left in
   * o's P[e & 1] by o's reduce crews) into C, in the order the owners finish them (block t of
   * each owner in the GEMM's order, owners from me + 1 on), each once o has set flag(o, tm, cb)
   * = epoch + 1 here. That flag index is free on this rank for a row block of o: with whole
   * 128-row tile-rows per owner (the mode's condition), producers flag a block only on its
   * owner and on themselves. Gather waits depend on the owners' reduce CTAs, which depend only
   * on GEMM tiles: no cycle between CTAs or ranks. Fold mode: o's epilogue pushed its sums into
   * this rank's own P[e & 1] (Y) and flagged them here; the copy is local (the own rows' group of
   * the GEMM's order, group_m, not perm_q's). */
  __device__ bool gather(State &st, const mk_crew &c, int first, int stride, uint64_t epoch, int *box) const {
    const bool fo = fold || ce_fold;
    const int ntm = (int)(ms / 128), O = v.W - 1, gm = perm_q && !fo ? group_m / v.W : group_m, total = ntm * ncb * O;
    const uint64_t pb = pbuf(epoch);
    int next = first;
    auto owner = [&](int u) { return (v.me + 1 + u % O) % v.W; };
    for (int it = 0;; it++) {
      int tm, cb;
      const uint64_t t0 = tr.buf ? mk_globaltimer() : 0;
      const int task = hand_over(c, 1, &next, stride, it, total, box + 2, [&](int u) {
        const int o = owner(u);
        mk_fused_task_block(u / O, (int)(o * ms / 128), ntm, ncb, gm, &tm, &cb);
        return mk_wait_ge(w, flag(o, tm, cb), epoch + 1, op, o, tm * ncb + cb);
      });
      if (task < 0) return false;
      if (task >= total) return true;
      const int o = owner(task);
      mk_fused_task_block(task / O, (int)(o * ms / 128), ntm, ncb, gm, &tm, &cb);
      int64_t r0, r1, c0;
      int cols;
      block_span(tm, cb, o * ms, (o + 1) * ms, &r0, &r1, &c0, &cols);
      /* fold: o pushed its sums into this rank's Y (P[e & 1]) */
      const uint16_t *src = (fo ? mk_local_ptr<uint16_t>(w, pb) : mk_peer_ptr<uint16_t>(w, v.lp(o), pb)) + r0 * n + c0;
      const uint64_t t1 = tr.buf ? mk_globaltimer() : 0;
      mk_fused_reduce_block(c_all + r0 * n + c0, &src, 1, (int)(r1 - r0), cols, n, nullptr, c.t, c.n);
      trace_task(st, c, MK_TRACE_SEND, t0, t1);
    }
  }

  /* Reducer CTA i with 2-D TMA loads (MK_FUSED_REDUCE_TMA=1, one node group): the same blocks in
   * the same order as the register path, each cut into sub-blocks of R = max(8, 128 / W) rows;
   * a sub-block's W sources land in one shared-memory stage as boxes of 64 columns x R rows
   * (layout [source][column half][R][64], <= 32 KB a stage), up to 8 stages in flight (~190 KB
   * per CTA against ~48 KB of 16-byte register loads). One box is one TMA copy of R x 128
   * bytes (4 KB at W = 4): session 7's 1-D copies of one 256-byte row each were bound by the
   * copies' count (~5 GB/s per CTA). Warp 0 produces: lane 0 waits for the block's W flags,
   * fences the async proxy and issues the boxes on the stage's `full` barrier (rows past the
   * block or the tensor arrive as zeros or other owners' rows and are not summed). Warps 1..
   * consume: they sum a landed stage in rank order 0..W-1 in fp32 (the bits of
   * mk_fused_reduce_block), store it to out and release the stage (`empty`, one arrive per
   * warp). A failed flag wait marks its stage and every later one bad (nothing loaded, the
   * phase still completes: no warp hangs, no copy is in flight when the CTA ends). Returns
   * false, having done nothing, when shared memory holds fewer than 2 stages. */
  __device__ __noinline__ bool reduce_tma(State &st, int i, uint64_t epoch, uint8_t *smem, int smem_bytes) const {
    const int W = v.W, R = max(8, 128 / W), stage_bytes = W * R * 256, nwarps = (int)blockDim.x / 32;
    const int stages = min(8, (smem_bytes - 256) / stage_bytes);
    if (stages < 2 || nwarps < 2 || v.L < v.W) return false;
    int64_t lo, hi;
    rows_of(v.me, &lo, &hi);
    const int tm_lo = (int)(lo / 128), ntm = (int)((hi - 1) / 128) - tm_lo + 1;
    const int gm = perm_q ? group_m / W : group_m, mine = ntm * ncb, per_task = (128 + R - 1) / R;
    const int total = i < mine ? (mine - i + reducers - 1) / reducers * per_task : 0;
    uint64_t *full = reinterpret_cast<uint64_t *>(smem + (size_t)stages * stage_bytes), *empty = full + stages;
    int *sbad = reinterpret_cast<int *>(empty + stages); /* per stage: nothing loaded (a wait failed) */
    const CUtensorMap *maps = rmap + (epoch & 1) * MK_MAX_LOCAL;
    const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x & 31;
    if (threadIdx.x == 0) {
      for (int s = 0; s < stages; s++) {
        mk_sm90::mbar_init(&full[s], 1);
        mk_sm90::mbar_init(&empty[s], nwarps - 1);
      }
      mk_sm90::mbar_fence_init();
    }
    __syncthreads();
    /* Sub-block j: task i + (j / per_task) * reducers, block (tm, cb), rows [a, b), columns
     * [c0, c0 + cols); a >= b past the block's last row. */
    struct sub_block {
      int tm, cb, cols;
      int64_t a, b, c0;
    };
    auto geom = [&](int j) {
      sub_block g;
      int64_t r1;
      mk_fused_task_block(i + (j / per_task) * reducers, tm_lo, ntm, ncb, gm, &g.tm, &g.cb);
      block_span(g.tm, g.cb, lo, hi, &g.a, &r1, &g.c0, &g.cols);
      g.a += (int64_t)(j % per_task) * R;
      g.b = min(g.a + R, r1);
      return g;
    };
    if (warp == 0) {
      if (lane != 0) return true;
      int failed = 0;
      for (int p = 0; p < W; p++) mk_sm90::tma_prefetch_desc(&maps[p]);
      for (int j = 0; j < total; j++) {
        const int s = j % stages;
        const sub_block g = geom(j);
        if (j >= stages) mk_sm90::mbar_wait(&empty[s], (uint32_t)(((j / stages) & 1) ^ 1));
        if (j % per_task == 0 && !failed) { /* the block's W flags */
          int ok = 1;
          const uint64_t t0 = tr.buf ? mk_globaltimer() : 0;
          for (int p = 0; p < W && ok; p++)
            ok = mk_wait_ge(w, flag(p, g.tm, g.cb), epoch + 1, op, p, g.tm * ncb + g.cb);
          if (tr.buf) {
            const uint64_t t1 = mk_globaltimer();
            if (t1 - t0 > 1000) mk_trace_ev(tr, 0, &st.tn, MK_TRACE_WAIT, t0, t1);
          }
          failed = !ok;
          mk_fence_proxy_async(); /* the TMA reads (async proxy) after the flags' acquire */
        }
        sbad[s] = failed; /* published by the arrive (release) below */
        if (failed || g.a >= g.b) {
          mk_sm90::mbar_arrive(&full[s]);
          continue;
        }
        const int halves = g.cols > 64 ? 2 : 1;
        mk_sm90::mbar_expect_tx(&full[s], (uint32_t)(W * halves * R * 128));
        uint8_t *sp = smem + (size_t)s * stage_bytes;
        for (int p = 0; p < W; p++)
          for (int h = 0; h < halves; h++)
            mk_sm90::tma_load_2d(sp + (size_t)p * R * 256 + (size_t)h * R * 128, &maps[v.lp(p)], &full[s],
                                 (int)g.c0 + 64 * h, (int)g.a);
      }
      return true;
    }
    const int cthr = (int)blockDim.x - 32, ct = (int)threadIdx.x - 32;
    uint64_t tstart = 0;
    for (int j = 0; j < total; j++) {
      const int s = j % stages;
      const sub_block g = geom(j);
      if (tr.buf && ct == 0 && j % per_task == 0) tstart = mk_globaltimer();
      mk_sm90::mbar_wait(&full[s], (uint32_t)((j / stages) & 1));
      const int vec = g.cols / 8, cnt = sbad[s] || g.a >= g.b ? 0 : (int)(g.b - g.a) * vec;
      const uint8_t *sp = smem + (size_t)s * stage_bytes;
      for (int e = ct; e < cnt; e += cthr) {
        const int r = e / vec, c = e - r * vec; /* c: 16-byte vector of the row */
        const size_t off = (size_t)(c / 8) * R * 128 + (size_t)r * 128 + (size_t)(c % 8) * 16;
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int p = 0; p < W; p++)
          mk_fused_acc8(acc, *reinterpret_cast<const uint4 *>(sp + (size_t)p * R * 256 + off));
        *reinterpret_cast<uint4 *>(out + (g.a + r - lo) * n + g.c0 + c * 8) = mk_fused_pack8(acc);
      }
      __syncwarp();
      if ((threadIdx.x & 31) == 0) mk_sm90::mbar_arrive(&empty[s]); /* this warp is done reading stage s */
      if (tr.buf && ct == 0 && j % per_task == per_task - 1) /* the consumers' half of the CTA's track */
        mk_trace_ev(tr, 1, &st.tn, MK_TRACE_REDUCE, tstart, mk_globaltimer());
    }
    return true;
  }

  /* One thread: send this rank's partial rows to every remote reader once P is complete. */
  __device__ void inter(State &st, uint64_t epoch) const {
    const uint64_t t0 = tr.buf ? mk_globaltimer() : 0;
    for (int tm = 0; tm < tiles_m; tm++)
      for (int cb = 0; cb < ncb; cb++)
        if (!mk_wait_ge(w, flag(v.me, tm, cb), epoch + 1, op, v.me, tm * ncb + cb)) return;
    for (int q = 0; q < v.W; q++) {
      if (v.local(q)) continue;
      int64_t lo, hi;
      rows_of(q, &lo, &hi);
      if (!mk_fused_wait_arrived(w, v, q, epoch, op)) return;
      const uint64_t bytes = (uint64_t)(hi - lo) * (uint64_t)n * 2;
      if (!mk_post(w, MK_CMD_PUT_SIGNAL, q, pbuf(epoch) + (uint64_t)lo * n * 2, v.xbuf + (uint64_t)v.me * bytes, bytes,
                   v.xdata(v.me), 1))
        return;
    }
    const uint64_t t1 = tr.buf ? mk_globaltimer() : 0;
    mk_fused_inter_finish(w, v, epoch, op);
    if (tr.buf) {
      mk_trace_ev(tr, 0, &st.tn, MK_TRACE_SEND, t0, t1);
      mk_trace_ev(tr, 0, &st.tn, MK_TRACE_WAIT, t1, mk_globaltimer());
    }
  }
};

/* RS copy-engine mode (copy_engine.c), after the GEMM: once every peer s has set ce_done[s],
 * C[r] = sum over s = 0..W-1 in order of (s == me ? P[me Ms + r] : X[s][r]), rb rows per task.
 * A failed (timed-out) wait sets this rank's own ce_arrive flags so that its side stream drains. */
static __global__ void __launch_bounds__(256) mk_rs_ce_reduce_kernel(mk_dev_world w, mk_fused_view v, const uint16_t *P,
                                                                     uint64_t x, uint64_t ce, uint16_t *C, int64_t ms,
                                                                     int64_t n, int rb, int op) {
  int ok = 1;
  if (threadIdx.x == 0)
    for (int s = 0; s < v.W && ok; s++)
      if (s != v.me) ok = mk_wait_ge(w, ce + 8ull * (MK_FUSED_ARRIVE_SLOTS + s), 1, op, s, -1);
  if (!__syncthreads_and(ok)) {
    if (threadIdx.x == 0)
      for (int p = 0; p < v.W; p++) mk_st_release_sys(mk_local_ptr<uint64_t>(w, ce + 8ull * p), 1ull);
    return;
  }
  const uint16_t *src[MK_FUSED_ARRIVE_SLOTS];
  for (int64_t r0 = (int64_t)blockIdx.x * rb; r0 < ms; r0 += (int64_t)gridDim.x * rb) {
    for (int s = 0; s < v.W; s++)
      src[s] = s == v.me ? P + ((int64_t)v.me * ms + r0) * n : mk_local_ptr<uint16_t>(w, x) + ((int64_t)s * ms + r0) * n;
    mk_fused_reduce_block(C + r0 * n, src, v.W, (int)min((int64_t)rb, ms - r0), (int)n, n, nullptr, threadIdx.x,
                          blockDim.x);
  }
}

/* Whole CTA, MK_FUSED_CE_OVERLAP: dst[e] = bf16(sum_{s = 0..W-1} src_s[e]) for the `total8`
 * 8-element groups of a contiguous run of whole rows, fp32, in rank order (the bits of
 * mk_fused_reduce_block). The sources are local HBM: U x W 16-byte loads per thread in flight,
 * through L2 only (ld.cg: this kernel reads data other agents wrote while it ran). */
template <int W>
__device__ __noinline__ void mk_ce_sum_run_w(uint16_t *dst, const uint16_t *const *src, int64_t total8) {
  constexpr int U = W >= 16 ? 1 : 16 / W;
  const uint4 *s[W];
#pragma unroll
  for (int p = 0; p < W; p++) s[p] = reinterpret_cast<const uint4 *>(src[p]);
  uint4 *d = reinterpret_cast<uint4 *>(dst);
  const int64_t nthr = blockDim.x;
  for (int64_t base = threadIdx.x; base < total8; base += nthr * U) {
    uint4 v[U][W];
#pragma unroll
    for (int u = 0; u < U; u++) {
      const int64_t e = base + u * nthr;
      if (e < total8) {
#pragma unroll
        for (int p = 0; p < W; p++) v[u][p] = __ldcg(s[p] + e);
      }
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
      const int64_t e = base + u * nthr;
      if (e >= total8) break;
      float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
      for (int p = 0; p < W; p++) mk_fused_acc8(acc, v[u][p]);
      d[e] = mk_fused_pack8(acc);
    }
  }
}

static __device__ __noinline__ void mk_ce_sum_run(uint16_t *dst, const uint16_t *const *src, int W, int64_t total8) {
  switch (W) {
    case 2: mk_ce_sum_run_w<2>(dst, src, total8); break;
    case 4: mk_ce_sum_run_w<4>(dst, src, total8); break;
    case 8: mk_ce_sum_run_w<8>(dst, src, total8); break;
    default:
      for (int64_t e = threadIdx.x; e < total8; e += blockDim.x) {
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int p = 0; p < W; p++) mk_fused_acc8(acc, __ldcg(reinterpret_cast<const uint4 *>(src[p]) + e));
        reinterpret_cast<uint4 *>(dst)[e] = mk_fused_pack8(acc);
      }
  }
}

/* The overlapped reduce of the RS/AR copy-engine mode (MK_FUSED_CE_OVERLAP=1; protocol in
 * copy_engine.c), launched on its own stream before the GEMM and resident beside it. The
 * owner's rows are np pieces of R rows (MK_FUSED_CE_ROWS), each split into `tpp` tasks of
 * whole rows; CTA c takes tasks c, c + grid, ... (piece by piece, in the order the GEMM and
 * the pushes finish them). Before the first task of a piece one thread waits (bounded, paced)
 * for ce_piece[s][i] >= 1 of every peer s (its rows are in X[s]) and for the GEMM's own count
 * ce_cnt[me][i] = rows x N / 8 (P's own rows are stored); the CTA then sums P's own rows and
 * X[s] in rank order into dst (RS: C; AR: this rank's rows of Y). AR (sum != 0): after each task,
 * its rows are added to ce_sum[i], which the second shot's pushes wait for. A failed wait
 * releases the side streams: own ce_arrive[*] := 1 and ce_sum[i] := the piece's rows. */
static __global__ void __launch_bounds__(512, 1)
    mk_ce_overlap_reduce_kernel(mk_dev_world w, mk_fused_view v, const uint16_t *P, uint64_t x, uint64_t ce,
                                uint64_t cnt, uint64_t piece, uint64_t sum, uint16_t *dst, int64_t ms, int64_t n,
                                int64_t R, int np, int tpp, int op) {
  const uint16_t *src[MK_FUSED_ARRIVE_SLOTS];
  int waited = -1;
  for (int64_t t = blockIdx.x; t < (int64_t)np * tpp; t += gridDim.x) {
    const int i = (int)(t / tpp), j = (int)(t - (int64_t)i * tpp);
    const int64_t rp = min(R, ms - (int64_t)i * R), chunk = (rp + tpp - 1) / tpp;
    const int64_t r0 = (int64_t)i * R + j * chunk, rows = min(chunk, rp - j * chunk);
    if (rows <= 0) continue;
    if (waited != i) {
      int ok = 1;
      if (threadIdx.x == 0) {
        ok = mk_wait_ge_paced(w, cnt + 8ull * ((uint64_t)v.me * np + i), (uint64_t)(rp * n / 8), op, v.me, i, 256);
        for (int s = 0; s < v.W && ok; s++)
          if (s != v.me) ok = mk_wait_ge_paced(w, piece + 8ull * ((uint64_t)s * np + i), 1, op, s, i, 256);
      }
      if (!__syncthreads_and(ok)) {
        if (threadIdx.x == 0) {
          for (int p = 0; p < v.W; p++) mk_st_release_sys(mk_local_ptr<uint64_t>(w, ce + 8ull * p), 1ull);
          for (int k = 0; sum && k < np; k++)
            mk_st_release_sys(mk_local_ptr<uint64_t>(w, sum + 8ull * k), (uint64_t)min(R, ms - (int64_t)k * R));
        }
        return;
      }
      waited = i;
    }
    for (int s = 0; s < v.W; s++)
      src[s] = s == v.me ? P + ((int64_t)v.me * ms + r0) * n : mk_local_ptr<uint16_t>(w, x) + ((int64_t)s * ms + r0) * n;
    mk_ce_sum_run(dst + r0 * n, src, v.W, rows * n / 8);
    if (sum) { /* the sums are read next by a copy engine (the second shot): system-scope fence */
      __threadfence_system();
      __syncthreads();
      if (threadIdx.x == 0) mk_red_add_release_sys(mk_local_ptr<uint64_t>(w, sum + 8ull * i), (uint64_t)rows);
    }
  }
}

/* AR copy-engine mode, second shot: one thread waits (bounded) until every peer's sums are in its Y
 * (with MK_FUSED_CE_OVERLAP: in this rank's Y). */
static __global__ void mk_ar_ce_wait_kernel(mk_dev_world w, mk_fused_view v, uint64_t done2) {
  for (int s = 0; s < v.W; s++)
    if (s != v.me && !mk_wait_ge(w, done2 + 8ull * s, 1, MK_OP_GEMM_AR, s, -1)) return;
}

/* The copy-engine tail of RS / AR after the GEMM (the side streams' pushes are enqueued):
 * the reduce kernel (RS: into C; AR: into this rank's rows of Y), for AR the second shot, the
 * wait for it and Y -> C; then the join. */
static mk_status mk_rs_ce_finish(mk_fused_t *f, mk_fused_op op, const mk_fused_args *a, const mk_fused_view &v,
                                 cudaStream_t stream) {
  const int64_t ms = a->m / f->world, per = 2 * (int64_t)f->sms;
  const int rb = (int)std::max<int64_t>(1, (ms + per - 1) / per);
  const int grid = (int)std::min<int64_t>(per, (ms + rb - 1) / rb);
  const mk_fused_ws *ws = &f->ws[op];
  uint16_t *Y = op == MK_FUSED_GEMM_AR ? (uint16_t *)(f->w.heap + ws->cey) : NULL;
  uint16_t *dst = Y ? Y + (int64_t)f->me * ms * a->n : a->C;
  if (f->ce_red_used) { /* the sums ran beside the GEMM, AR's second shot too: join, then Y -> C */
    MK_CHECK(mk_fused_ce_join(f, (mk_stream_t)stream));
    if (Y) {
      mk_ar_ce_wait_kernel<<<1, 1, 0, stream>>>(f->w, v, ws->ce + 8ull * 2 * MK_FUSED_ARRIVE_SLOTS);
      MK_CUDA_CHECK(cudaGetLastError());
      MK_CUDA_CHECK(cudaMemcpyAsync(a->C, Y, (size_t)(a->m * a->n) * 2, cudaMemcpyDefault, stream));
    }
    return MK_STATUS_OK;
  }
  mk_rs_ce_reduce_kernel<<<grid, 256, 0, stream>>>(f->w, v, f->ce_p[op], ws->cex, ws->ce, dst, ms, a->n, rb,
                                                   Y ? MK_OP_GEMM_AR : MK_OP_GEMM_RS);
  MK_CUDA_CHECK(cudaGetLastError());
  if (Y) { /* second shot: tell the peers, wait for theirs, pull their rows straight into C */
    MK_CHECK(mk_fused_ar_ce_tell(f, (mk_stream_t)stream));
    mk_ar_ce_wait_kernel<<<1, 1, 0, stream>>>(f->w, v, ws->ce + 8ull * 2 * MK_FUSED_ARRIVE_SLOTS);
    MK_CUDA_CHECK(cudaGetLastError());
    MK_CHECK(mk_fused_ar_ce_pull(f, a, (mk_stream_t)stream));
  }
  return mk_fused_ce_join(f, (mk_stream_t)stream);
}

/* MK_FUSED_CE_OVERLAP: the reduce kernel's `nred` CTAs on the handle's reduce stream (forked
 * by mk_fused_rs_ce_begin), launched before the GEMM; each piece is split over all of them. */
static mk_status mk_ce_overlap_launch(mk_fused_t *f, mk_fused_op op, const mk_fused_args *a, const mk_fused_view &v,
                                      int nred) {
  const mk_fused_ws *ws = &f->ws[op];
  const int W = f->world;
  const int64_t ms = a->m / W, R = mk_fused_ce_rows(), np = (ms + R - 1) / R;
  const bool ar = op == MK_FUSED_GEMM_AR;
  uint16_t *dst = ar ? (uint16_t *)(f->w.heap + ws->cey) + (int64_t)f->me * ms * a->n : a->C;
  mk_ce_overlap_reduce_kernel<<<nred, 512, 0, f->ce_red>>>(
      f->w, v, f->ce_p[op], ws->cex, ws->ce, ws->ce + mk_fused_ce_cnt_off(), ws->ce + mk_fused_ce_piece_off(W, np),
      ar ? ws->ce + mk_fused_ce_sum_off(W, np) : 0, dst, ms, a->n, R, (int)np, nred,
      ar ? MK_OP_GEMM_AR : MK_OP_GEMM_RS);
  MK_CUDA_CHECK(cudaGetLastError());
  return MK_STATUS_OK;
}

/* MK_FUSED_REDUCE_TMA: the device maps of the local ranks' partials P[0], P[1] of op for an
 * M x N call, box 64 columns x R rows (no swizzle; rows and columns past the tensor read as
 * zeros), from the handle's ring (encoded and copied in stream order on a miss). NULL = use the
 * register loads: while the stream is captured a miss cannot copy, and any failure falls back. */
static const CUtensorMap *mk_fused_rmaps(mk_fused_t *f, mk_fused_op op, int64_t m, int64_t n, int R,
                                         cudaStream_t stream) {
  for (int k = 0; k < MK_FUSED_RMAP_SLOTS && f->rmaps[op]; k++)
    if (f->rmap_key[op][k][0] == m && f->rmap_key[op][k][1] == n && f->rmap_key[op][k][2] == R)
      return (const CUtensorMap *)f->rmaps[op] + (size_t)k * 2 * MK_MAX_LOCAL;
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &cs) != cudaSuccess || cs != cudaStreamCaptureStatusNone) return NULL;
  const PFN_cuTensorMapEncodeTiled_v12000 encode = mk_gemm_tensor_map_encoder();
  if (!encode) return NULL;
  if (!f->rmaps[op] &&
      cudaMalloc(&f->rmaps[op], sizeof(CUtensorMap) * 2 * MK_MAX_LOCAL * MK_FUSED_RMAP_SLOTS) != cudaSuccess) {
    f->rmaps[op] = NULL;
    return NULL;
  }
  CUtensorMap maps[2 * MK_MAX_LOCAL];
  memset(maps, 0, sizeof maps);
  const cuuint64_t dims[2] = {(cuuint64_t)n, (cuuint64_t)m}, strides[1] = {(cuuint64_t)n * 2};
  const cuuint32_t box[2] = {64, (cuuint32_t)R}, estr[2] = {1, 1};
  for (int b = 0; b < 2; b++)
    for (int p = 0; p < f->local_size; p++)
      if (encode(&maps[b * MK_MAX_LOCAL + p], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2,
                 f->w.peer_heap[p] + f->ws[op].buf + (uint64_t)b * f->ws[op].pbytes, dims, strides, box, estr,
                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
        return NULL;
  const int k = f->rmap_next[op];
  CUtensorMap *dst = (CUtensorMap *)f->rmaps[op] + (size_t)k * 2 * MK_MAX_LOCAL;
  /* Stream-ordered: kernels queued before this call that read slot k (its old maps) are done first. */
  if (cudaMemcpyAsync(dst, maps, sizeof maps, cudaMemcpyHostToDevice, stream) != cudaSuccess) return NULL;
  f->rmap_key[op][k][0] = m, f->rmap_key[op][k][1] = n, f->rmap_key[op][k][2] = R;
  f->rmap_next[op] = (k + 1) % MK_FUSED_RMAP_SLOTS;
  return dst;
}

/* Fills and launches the policy: this rank reduces the rows it reads (rows_of) into out. */
/* Beside mode (beside.cuh) for an M x N call of op: 1 and its pieces in *g where MK_FUSED_BESIDE asks for it and
 * it applies (one node group, the copy-engine staging and reduce stream, whole 128-row tile-rows per owner, W
 * dividing the GEMM's group of tile-rows, its flags within the op's flag area and its progress counters). */
static int mk_fused_beside(const mk_fused_t *f, mk_fused_op op, int64_t m, int64_t n, mk_beside_geom *g) {
  const int W = f->world, group_m = mk_gemm_config::kGroupM;
  const mk_fused_ws *ws = &f->ws[op];
  if (!mk_param_fused_beside() || op == MK_FUSED_AG_GEMM || f->nnodes != 1 || W < 2 || group_m % W || !ws->cex ||
      !f->ce_p[op] || !f->ce_red || m % W || (m / W) % 128)
    return 0;
  const int cw = (int)((mk_param_fused_beside_cols() + 255) / 256 * 256);
  *g = mk_beside_make_geom(W, m, n, group_m, cw);
  return g->flags() <= f->bs_nprog[op] && 2 * g->flags() <= ws->ncnt;
}

/* Beside mode, before the GEMM: prog := 0, the reduce stream forked from the caller's, the comm kernel on it (its
 * CTAs one an SM: the dynamic shared memory keeps GEMM CTAs and each other off); *b for the tail launch. */
static mk_status mk_beside_begin(mk_fused_t *f, mk_fused_op op, const mk_beside_geom &g, const mk_fused_view &v,
                                 uint16_t *out, mk_beside *b, cudaStream_t stream) {
  const mk_fused_ws *ws = &f->ws[op];
  b->w = f->w, b->v = v, b->g = g;
  b->P = f->ce_p[op], b->C = out;
  b->x = ws->cex, b->y = ws->cey;
  b->prog = f->bs_prog[op], b->pf = ws->cnt, b->sf = ws->cnt + 8 * g.flags();
  b->claims = f->claims + 2 * (int)op;
  b->ar = op == MK_FUSED_GEMM_AR, b->op = b->ar ? MK_OP_GEMM_AR : MK_OP_GEMM_RS;
  MK_CUDA_CHECK(cudaMemsetAsync(f->bs_prog[op], 0, 8 * g.flags(), stream));
  MK_CUDA_CHECK(cudaEventRecord(f->ce_fork, stream));
  MK_CUDA_CHECK(cudaStreamWaitEvent(f->ce_red, f->ce_fork, 0));
  mk_beside_kernel<<<(int)mk_param_fused_beside_sms(), 512, MK_FUSED_BESIDE_SMEM, f->ce_red>>>(*b, 1);
  MK_CUDA_CHECK(cudaGetLastError());
  return MK_STATUS_OK;
}

/* Beside mode, after the GEMM: the tail launch on every SM (MK_FUSED_BESIDE_TAIL CTAs each), then the join. */
static mk_status mk_beside_end(mk_fused_t *f, const mk_beside &b, cudaStream_t stream) {
  const int per = (int)mk_param_fused_beside_tail();
  if (per) {
    mk_beside_kernel<<<per * f->sms, 512, 0, stream>>>(b, 0);
    MK_CUDA_CHECK(cudaGetLastError());
  }
  MK_CUDA_CHECK(cudaEventRecord(f->ce_red_join, f->ce_red));
  MK_CUDA_CHECK(cudaStreamWaitEvent(stream, f->ce_red_join, 0));
  return MK_STATUS_OK;
}

template <int kOp>
static mk_status mk_reduce_launch(mk_fused_t *f, const mk_fused_args *a, uint16_t *out, cudaStream_t stream) {
  const mk_fused_op fop = (mk_fused_op)kOp;
  mk_beside_geom bg;
  const int fold = mk_fused_fold(f, fop, a->m, a->n);
  const int beside = !fold && mk_fused_beside(f, fop, a->m, a->n, &bg);
  const int two = !fold && !beside && kOp == MK_FUSED_GEMM_AR && mk_fused_ar_two_shot(f, a->m, a->n);
  const int all_read = kOp == MK_FUSED_GEMM_AR && !two && !beside && !fold;
  const mk_fused_ws *ws = &f->ws[fop];
  mk_reduce_policy<kOp> p;
  p.w = f->w;
  p.v = mk_fused_make_view(f, fop);
  p.out = two ? out + (int64_t)f->me * (a->m / f->world) * a->n : out;
  p.c_all = out;
  p.rmap = NULL;
  p.m = a->m;
  p.n = a->n;
  p.ms = a->m / f->world;
  p.ncb = (int)((a->n + 127) / 128);
  p.tiles_m = (int)((a->m + 127) / 128);
  p.op = fop == MK_FUSED_GEMM_RS ? MK_OP_GEMM_RS : MK_OP_GEMM_AR;
  p.all_read = all_read;
  p.ce = !fold && (beside || mk_fused_rs_ce_mode(f, fop, a->m, a->n));
  p.fold = fold;
  p.bs = beside, p.bsg = bg, p.bs_prog = f->bs_prog[fop];
  p.ce_cnt = ws->ce + mk_fused_ce_cnt_off();
  p.ce_own = 0;
  p.push = fold || (!p.ce && !all_read && ws->px && mk_param_fused_push()); /* px: one node group only */
  f->push_calls[fop] += p.push && !fold;
  f->beside_calls[fop] += beside;
  f->fold_calls[fop] += fold;
  p.px = ws->px, p.pxbytes = ws->pxbytes;
  p.reducers = p.ce || fold ? 0 : mk_fused_ctas(f, fop, a);
  if (two && p.reducers < 2) p.reducers = 2;
  p.two = two ? p.reducers / 2 : 0; /* as many gather CTAs as reduce CTAs: each moves (W - 1) blocks per own block */
  p.role_ctas = p.reducers + (f->nnodes > 1 ? 1 : 0);
  if (mk_param_fused_reduce_tma() && p.reducers && f->nnodes == 1 && f->world <= MK_MAX_LOCAL && !two && !p.push)
    p.rmap = mk_fused_rmaps(f, fop, a->m, a->n, std::max(8, 128 / f->world), stream);
  p.claims = mk_param_fused_tail() && !p.ce && !p.rmap && p.reducers ? f->claims + 2 * kOp : NULL;
  p.fold_dbg = fold ? (int)mk_param_fused_fold_debug() : 0;
  if (fold) p.claims = kOp == MK_FUSED_GEMM_AR && !(p.fold_dbg & 5) ? f->claims + 2 * kOp : NULL; /* AR: the gather */
  p.pbytes = ws->pbytes;
  p.perm_q = (!all_read || p.ce) && p.ms % 128 == 0 && p.tiles_m % f->world == 0 && p.group_m % f->world == 0 &&
                     !(p.fold_dbg & 32)
                 ? p.tiles_m / f->world : 0;
  mk_gemm_args g = {p.ce ? f->ce_p[fop] : (uint16_t *)mk_comm_heap_ptr(f->comm, ws->buf), a->m, a->n, a->k, 1, NULL};
  MK_CHECK(mk_fused_trace_begin(f, (mk_stream_t)stream, &p.tr.buf));
  p.tr.cap = MK_TRACE_CAP;
  int grid = mk_fused_compute_ctas(f, p.role_ctas);
  mk_beside b;
  if (beside) {
    MK_CHECK(mk_beside_begin(f, fop, bg, p.v, out, &b, stream));
    grid = f->sms - (int)mk_param_fused_beside_sms();
  } else if (p.ce) {
    MK_CHECK(mk_fused_rs_ce_begin(f, fop, a, (mk_stream_t)stream));
  }
  if (p.ce && !beside && f->ce_red_used) { /* the overlapped reduce: resident first, the GEMM on the other SMs */
    const int nred = mk_fused_ce_overlap(f);
    MK_CHECK(mk_ce_overlap_launch(f, fop, a, p.v, nred));
    p.ce_own = 1;
    grid = f->sms - nred;
  }
  p.ce_seq = p.perm_q && (fold || (p.ce && !beside && mk_fused_ce_seq(f))); /* fold: own rows last */
  if (p.ce_seq && p.perm_q < p.group_m) p.group_m = p.perm_q; /* a group per owner: owners finish one by one */
  p.ce_fold = p.ce && p.ce_seq && !beside && !f->ce_red_used && f->world <= 4 &&
              (mk_param_fused_ce_fold() > 0 || mk_fused_ce_fold_auto(f, fop, a->m, a->n));
  if (p.ce_fold && kOp == MK_FUSED_GEMM_AR) p.claims = f->claims + 2 * kOp; /* the gather, as in fold mode */
  if (p.ce_fold && p.group_m > MK_FUSED_CE_FOLD_GROUP) p.group_m = MK_FUSED_CE_FOLD_GROUP; /* the pieces' groups */
  const int seq = p.ce_seq ? (p.ce_fold ? 2 : 1) : 0; /* the pushes (mk_fused_rs_ce_push) count the same pieces */
  p.ce_rows = mk_fused_rs_ce_rows(p.ms, seq);
  p.ce_np = (int)((p.ms + p.ce_rows - 1) / p.ce_rows);
  p.ce_piece = ws->ce + mk_fused_ce_piece_off(f->world, p.ce_np), p.ce_arrive = ws->ce;
  if (p.ce_fold) p.px = ws->cex, p.pxbytes = 0; /* fold_sum reads the peers' partials from X */
  f->ce_fold_calls[fop] += p.ce_fold;
  /* Split-K of the last wave (256-wide tiles) where the core's model says it pays (not in
   * copy-engine mode: its progress counters count each tile once; not in fold mode: an own
   * tile's epilogue sums its partial, whole). */
  g.split_tiles = p.ce || fold ? 0 : (int)mk_gemm_split_plan(g, grid, (int)mk_param_fused_split_k(), 0, &g.splits);
  const size_t parts = g.split_tiles ? (size_t)(g.splits - 1) * g.split_tiles : 0;
  if (g.split_tiles && f->split_ws[fop] && parts * 2 * 4 <= MK_FUSED_SPLIT_FLAG_BYTES &&
      parts * mk_gemm_config::kBM * 256 * 4 <= f->split_bytes) {
    g.flags = (uint32_t *)f->split_ws[fop];
    g.ws = (float *)((char *)f->split_ws[fop] + MK_FUSED_SPLIT_FLAG_BYTES);
    const int units = (int)(mk_gemm_tiles_bound(g, 256) - g.split_tiles) + g.split_tiles * g.splits;
    grid = std::min(grid, units);
    const mk_status st = mk_gemm_core_launch_bn<mk_reduce_policy<kOp>, 256, true>(a->A, a->B, g, a->b_layout, p, grid,
                                                                                  stream);
    if (st != MK_STATUS_OK) return st;
  } else if (p.fold_dbg & 16) { /* timing only: the plain GEMM (its own split plan, MK_GEMM_*) into P */
    MK_CHECK(mk_gemm_bf16(a->A, a->B, g.C, a->m, a->n, a->k, a->b_layout, (mk_stream_t)stream));
  } else {
    g.split_tiles = g.splits = 0;
    MK_CHECK(mk_fused_launch(a->A, a->B, g, a->b_layout, p, grid, stream));
  }
  if (beside) {
    MK_CHECK(mk_beside_end(f, b, stream));
  } else if (p.ce) { /* the pushes beside the GEMM, the owner's sum after it (AR: the second shot), the join */
    MK_CHECK(mk_fused_rs_ce_push(f, fop, a, seq));
    MK_CHECK(p.ce_fold ? mk_fused_ce_join(f, (mk_stream_t)stream) : mk_rs_ce_finish(f, fop, a, p.v, stream));
  }
  MK_CHECK(mk_fused_epoch_advance(f, fop, (mk_stream_t)stream));
  return mk_fused_trace_end(f, fop, p.tr.buf, (mk_stream_t)stream);
}

/* Loads every instantiation a launch may pick, split-K ones included (lazy loading). */
template <int kOp>
static mk_status mk_reduce_preload() {
  using P = mk_reduce_policy<kOp>;
  MK_CHECK(mk_gemm_core_preload<P>());
  cudaFuncAttributes fa;
  auto k0 = mk_gemm_core_kernel<P, 0, 256, true>;
  auto k1 = mk_gemm_core_kernel<P, 1, 256, true>;
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)k0));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)k1));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_rs_ce_reduce_kernel));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_ar_ce_wait_kernel));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_ce_overlap_reduce_kernel));
  MK_CUDA_CHECK(cudaFuncSetAttribute((const void *)mk_beside_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     MK_FUSED_BESIDE_SMEM));
  return MK_STATUS_OK;
}
