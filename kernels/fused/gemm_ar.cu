/* gemm_ar.cu — fused GEMM + AllReduce: C[M, N] = sum_p A_p[M, K] @ B_p on every rank, one
 * launch, bit-identical on all ranks: one-shot, every rank pulls every block of the W partials
 * (over NVLink inside the node group) and sums them in the order 0..W-1 (fused_reduce.cuh has
 * the layout, flags and barrier points). Any M. Traffic: each rank reads (W - 1) M N bf16, the
 * decode (small M) recipe. Two-shot on SM roles (MK_FUSED_AR_TWO_SHOT=1, one node group, M a
 * multiple of 128 W): half of the role CTAs reduce this rank's M/W rows as GEMM+RS does (the
 * owner-interleaved tile order), keep the sums in their own partial's rows and flag each block
 * to every peer; the other half pull the other owners' summed blocks into C as they are flagged
 * (fused_reduce.cuh, gather). Traffic: each rank reads 2 (W - 1) M N / W bf16 instead of
 * (W - 1) M N; one owner computes each sum, so every rank holds the same bits.
 *
 * Small M (1 <= M <= 128, B [N, K], one node group, MK_GEMM_SKINNY != 0, not the copy-engine
 * mode): the skinny GEMM (kernels/gemm/gemm_skinny.cuh) with a pushing epilogue, no role CTAs.
 *   S       [2][W][M, N] bf16   heap (ws->sk): S[e & 1][p] = rank p's partial of the call with
 *                               epoch e, pushed by p
 *   cnt     u64 [W][ceil(N/BN)] cnt[p][j] = e + 1 once p's BN-column slab j is in this S
 * The CTA that finishes slab j (BN = MK_GEMM_SKINNY_BN columns, all of K: after the split-K
 * fix-up) stages its bf16 partial of the slab in shared memory and pushes it into S[e & 1][me]
 * of every rank of the node group (itself included) in coalesced 16-byte stores; after a CTA
 * barrier one thread fences (system scope) and sets cnt[me][j] = e + 1 on every rank (relaxed
 * stores behind the one fence). Once the CTA has pushed all its slabs (finish; one slab a CTA at
 * N = 8192 on 128 SMs, several with MK_FUSED_AR_SKINNY_CTAS), for each slab thread 0 waits
 * (bounded, error record) until cnt[p][j] >= e + 1 for p = 0..W-1 in its own heap, and the 256
 * consumer threads sum the W partials of the slab in the order 0..W-1 in fp32 into C: the same
 * bits on every rank. The epoch is read on the device and advanced by the kernel's last CTA
 * (graph replays work); flags only grow (fused_common.cuh).
 * LL one-shot (MK_FUSED_AR_LL; NCCL's LL protocol): the slab's CTA stores its partial into the LL
 * slot L[e & 1][me] of every rank instead, each 4 bytes (a bf16 pair) beside the 4-byte flag e + 1
 * in one 8-byte word (16-byte volatile stores of two words), with no fence and no flag after them;
 * in finish every consumer thread loads its words of each rank's slot (volatile) until both flags
 * of each 16 bytes read e + 1 (bounded, error record), then sums in rank order as above. A word is
 * written in one piece, so a matching flag means its data is in: no fence, no flag round trip,
 * twice the bytes. Slot reuse as S below: flags of call e - 2 read e - 1, never e + 1.
 * Two-shot from M = MK_FUSED_AR_SKINNY_TWO_M on: rank q owns rows [q c, (q + 1) c) of every slab,
 * c = ceil(M / W); the slab's CTA pushes each chunk of its partial to the chunk's owner only (into
 * S[e & 1][me] there) and sets cnt[me][j] on the owners; in finish, the owner waits for the W
 * flags of its chunk, sums it in rank order into C and into S[e & 1][me] of every peer (those rows
 * of that slot carry nothing in phase 1), fences and sets cnt[W + me][j] = e + 1 on each; then
 * every rank waits for the other owners' cnt[W + q][j] and copies their sums into C. Each rank
 * sends 2 (W - 1) / W of a partial instead of W - 1 partials; every element is summed by one
 * owner, so the bits match on all ranks. Flags of both phases carry e + 1, as the op's other
 * paths (their counters overlap in ws->cnt).
 * The kernel is a programmatic dependent launch (gemm_skinny.cuh, MK_GEMM_SKINNY_PDL): its CTAs
 * may be placed while the previous kernel ends, but every global access, the epoch read
 * included, follows griddepcontrol.wait, so stream order holds for all that follows.
 * Epoch advance in the kernel (no second launch after it): every CTA, at the start of finish,
 * after its last epoch read (its stores into S are issued), meets its 256 consumer threads at named barrier 1,
 * then thread 0 adds 1 to exits (atom.acq_rel.gpu); the CTA that reads gridDim.x - 1 is the last:
 * it stores exits = 0 and epoch += 1, calls += 1 (plain stores). Order: a CTA's epoch reads are
 * before its barrier, so before its thread 0's release add (bar.sync orders the CTA's threads,
 * release is cumulative); the last CTA's acquire add reads the value its release add wrote
 * (an RMW chain on exits: every earlier add is in the release sequence), so each of those reads
 * happens before the last CTA's epoch store and cannot see it (coherence): every CTA of call e
 * reads e. The next call's kernel is stream-ordered after this one, whose writes (epoch, exits
 * = 0) are visible to it at launch, as they were from the old one-thread advance kernel. A CTA
 * whose wait failed (error record) still counts itself and the epoch still advances, as the
 * host-launched advance did. The producer warpgroup never reads the epoch and does not count.
 * Phase stamps (mk_fused_ar_profile, prof != NULL): thread 0 of a CTA atomicMax-es %globaltimer
 * into prof[slot] at the points mk_fused_ar_phase names (ENTRY complemented: the earliest);
 * prof == NULL costs one uniform branch per point and no barrier.
 * Safety of S[e & 1] (no handshake before the stores): rank q's call e writes S[e & 1][q] on
 * peer p, which p last read in its call e - 2. q's call e - 1 ended (stream order) after each of
 * q's CTAs saw p's flags of call e - 1 for its slab, which p set during its call e - 1, i.e.
 * after p's call e - 2 (stream order): those reads are over. The same holds when call e - 1 took
 * the reducer path (its reducers waited for every block's flag of p's call e - 1). */
#include "kernels/fused/fused_reduce.cuh"
#include "kernels/gemm/gemm_skinny.cuh"

/* The one-shot all-reduce epilogue of the skinny GEMM (see above). Push: the 256 consumer
 * threads stage the tile's bf16 partial [M][cols] in shared memory (rows of BN + 8), meet at
 * named barrier 1, then walk it in 16-byte vectors, consecutive threads along a row (a 64- or
 * 128-column tile row is 128 / 256 contiguous bytes of S), each vector stored to the W ranks'
 * S[e & 1][me]: coalesced 16-byte NVLink stores instead of scattered 4-byte ones.
 * Publication: named barrier 1 after the stores, then thread ct == 0 alone runs one
 * __threadfence_system() (fence.sc.sys) and release-stores the W flags. A peer that acquires a
 * flag (mk_wait_ge) sees every store of the tile: bar.sync makes each thread's stores performed
 * relative to thread 0, and fences are cumulative in the PTX memory model, so thread 0's
 * system-scope fence orders them before its flag stores (the pattern NCCL's and DeepEP's
 * senders use: barrier, one fence, one flag). Run 5f41751 had every one of the 256 threads fence
 * (32 K system fences at once over 128 CTAs) and the W flags each behind its own fence; the op
 * took 25 us beyond its GEMM at M = 16 against NCCL's 15. */
/* kMode (MK_AR_SK_*): the exchange, fixed at compile time so that each kernel holds the code of its own path only
 * (run bdfd069-x2, against one kernel for all three: the LL kernels 0.3 us shorter, the two-shot level). */
enum { MK_AR_SK_ONE = 0, MK_AR_SK_TWO = 1, MK_AR_SK_LL = 2 };
template <int kMode>
struct mk_ar_skinny_epi {
  static constexpr bool kStage = true;
  mk_dev_world w;
  int W, me, slot;  /* ranks (one node group: local ranks = global ranks), epoch slot */
  int bn;           /* slab width, the kernel's BN */
  /* two-shot (MK_FUSED_AR_SKINNY_TWO_M): rows split in W chunks, owner q sums chunk q; LL one-shot (MK_FUSED_AR_LL):
     partials with their flags in L, not S and cnt */
  static constexpr int two = kMode == MK_AR_SK_TWO, ll = kMode == MK_AR_SK_LL;
  uint64_t llb, llbytes; /* heap offset of L [2][W][llbytes] */
  uint64_t sk, cnt; /* heap offsets: S, cnt */
  uint16_t *C;
  uint64_t *calls;  /* this handle's call count of the op (advanced with the epoch) */
  uint32_t *exits;  /* CTAs of this call past their last store; reset by the last */
  uint64_t *prof;   /* phase stamps [MK_FUSED_AR_PHASES], NULL = off */

  __device__ __forceinline__ void stamp(int slot) const {
    const uint64_t t = mk_globaltimer();
    atomicMax((unsigned long long *)prof + slot, (unsigned long long)(slot == MK_FUSED_AR_PH_ENTRY ? ~t : t));
  }
  __device__ __forceinline__ void enter() const {
    if (prof) stamp(MK_FUSED_AR_PH_ENTRY), stamp(MK_FUSED_AR_PH_ENTRY_LAST);
  }
  __device__ __forceinline__ uint64_t sbuf(uint64_t e, int p, const mk_gemm_skinny_args &a) const {
    return sk + (((e & 1) * W + p) * (uint64_t)a.m * a.n) * 2;
  }
  /* L[e & 1][p]: word (r N + n) / 2 holds the bf16 pair (n, n + 1) of row r in its low 4 bytes, the flag in the high */
  __device__ __forceinline__ uint64_t lbuf(uint64_t e, int p) const { return llb + ((e & 1) * W + p) * llbytes; }
  /* Every consumer thread: the 16 bytes at p (two LL words) once both flags read f; false on abort or timeout (the
     error recorded; from rank `peer`, slab `tile`). */
  __device__ __forceinline__ bool ll_load(const char *p, uint32_t f, int peer, int tile, uint4 *out) const {
    uint64_t t0 = 0;
    for (uint32_t it = 0;; it++) {
      uint4 v;
      asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                   : "l"(p)
                   : "memory");
      if (v.y == f && v.w == f) {
        *out = v;
        return true;
      }
      if (it == 0) {
        t0 = mk_globaltimer();
      } else if ((it & 63) == 0) {
        if (mk_aborted(w)) return false;
        if (mk_globaltimer() - t0 > w.timeout_ns) {
          mk_raise_timeout(w, MK_OP_GEMM_AR, peer, tile, f, v.y);
          return false;
        }
      }
    }
  }
  /* Two-shot: rank q owns rows [q c, (q + 1) c) of every slab, c = ceil(M / W). */
  __device__ __forceinline__ int chunk(const mk_gemm_skinny_args &a) const { return (a.m + W - 1) / W; }
  /* Flags (value e + 1 in call e, as every path of the op): cnt[p][j], p's partial of slab j here
   * (one-shot: all of it; two-shot phase 1: the rows of this rank's chunk); cnt[W + p][j], owner
   * p's sums of its chunk of slab j here (two-shot phase 2). */
  __device__ __forceinline__ uint64_t flag(const mk_gemm_skinny_args &a, int area, int p, int tile) const {
    return cnt + 8ull * (((uint64_t)area * W + p) * a.tiles + tile);
  }
  template <int T, int BN>
  __device__ __forceinline__ void store(const mk_gemm_skinny_args &a, int tile, const float (&d)[T / 2], int cw,
                                        int warp, int lane, uint8_t *stage) const {
    constexpr int kRow = BN + 8; /* staged row, bf16 */
    const uint64_t e = mk_epoch(w, slot);
    const int ct = cw * 128 + warp * 32 + lane; /* 0..255 */
    const uint64_t mine = sbuf(e, me, a);
    const int n0 = tile * BN, cols = min(BN, a.n - n0), vec = cols / 8, total = a.m * vec;
    uint16_t *sl = (uint16_t *)stage;
    if (prof && ct == 0) stamp(MK_FUSED_AR_PH_GEMM);
    mk_gemm_skinny_pairs<T, BN>(d, tile, cw, warp, lane, [&](int t, int n, __nv_bfloat162 v) {
      if (t < a.m && n < a.n) *(__nv_bfloat162 *)(sl + t * kRow + (n - n0)) = v;
    });
    mk_sm90::named_bar_sync(1, 256);
    if (ll) { /* 4 bf16 a thread and step: two LL words (data, flag) in one 16-byte store to every rank */
      const uint32_t f = (uint32_t)(e + 1);
      const uint64_t lm = lbuf(e, me);
      const int v4 = cols / 4;
      for (int i = ct; i < a.m * v4; i += 256) {
        const int r = i / v4, c = i - r * v4;
        const uint2 d = *reinterpret_cast<const uint2 *>(sl + r * kRow + c * 4);
        const uint64_t off = lm + ((uint64_t)r * a.n + n0 + c * 4) * 4;
        for (int p = 0; p < W; p++)
          asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(w.peer_heap[p] + off), "r"(d.x),
                       "r"(f), "r"(d.y), "r"(f)
                       : "memory");
      }
      mk_sm90::named_bar_sync(1, 256); /* `stage` is free */
      if (prof && ct == 0) stamp(MK_FUSED_AR_PH_PUSHED);
      return;
    }
    const int ch = chunk(a);
    for (int i = ct; i < total; i += 256) {
      const int r = i / vec, c = i - r * vec;
      const uint4 v = *reinterpret_cast<const uint4 *>(sl + r * kRow + c * 8);
      const uint64_t off = mine + ((uint64_t)r * a.n + n0 + c * 8) * 2;
      if (two) *reinterpret_cast<uint4 *>(w.peer_heap[r / ch] + off) = v; /* to the row's owner only */
      else
        for (int p = 0; p < W; p++) *reinterpret_cast<uint4 *>(w.peer_heap[p] + off) = v;
    }
    mk_sm90::named_bar_sync(1, 256); /* the stores are performed for thread 0; `stage` is free */
    if (ct == 0) {
      const uint64_t f = flag(a, 0, me, tile);
      if (prof) stamp(MK_FUSED_AR_PH_PUSHED);
      /* One system fence, then relaxed flag stores (a release pattern): a release store per
       * flag would wait for the previous remote flag's acknowledgement, one NVLink round trip
       * each (W - 1 of them in a row before session 11). */
      __threadfence_system();
      for (int p = 0; p < W; p++)
        if (!two || p * ch < a.m) mk_st_relaxed_sys(reinterpret_cast<uint64_t *>(w.peer_heap[p] + f), e + 1);
    }
  }

  /* Thread 0: wait until the slab's area flags of the senders p < W with p != skip (-1: none)
   * and p < np reach e + 1; every thread learns the outcome (named barrier 1). */
  __device__ __forceinline__ bool wait_flags(const mk_gemm_skinny_args &a, int area, int tile, uint64_t e, int skip,
                                             int np, int ct, int *ok) const {
    if (ct == 0) {
      int good = 1;
      for (int p = 0; p < np && good; p++)
        if (p != skip) good = mk_wait_ge(w, flag(a, area, p, tile), e + 1, MK_OP_GEMM_AR, p, tile);
      *ok = good;
    }
    mk_sm90::named_bar_sync(1, 256);
    return *ok;
  }

  /* Every consumer thread once, after the CTA's last unit: the CTA counts itself out (the last
   * one advances the epoch; see the top of the file), then, for each slab this CTA pushed, thread
   * 0 waits for the W flags and the 256 sum the W partials in rank order into C. Waiting here,
   * not in store, lets a CTA with several slabs push them all before it waits for the first. */
  __device__ __forceinline__ void finish(const mk_gemm_skinny_args &a, int ct) const {
    __shared__ int ok;
    const uint64_t e = mk_epoch(w, slot);
    mk_sm90::named_bar_sync(1, 256); /* every thread's epoch reads are before thread 0's add */
    if (ct == 0) {
      uint32_t prev;
      asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(prev) : "l"(exits) : "memory");
      if (prev + 1 == gridDim.x) {
        *exits = 0;
        w.ctrl->epoch[slot] += 1;
        *calls += 1;
      }
    }
    /* The slabs this CTA stored: units blockIdx.x, + gridDim.x, ... unsplit; split, one unit a
     * CTA, stored by the last k-slice (a failed fix-up has raised the abort, and the waits below
     * then return at once). */
    const int first = a.splits == 1 ? (int)blockIdx.x : (int)blockIdx.x - (a.splits - 1) * a.tiles;
    const int step = a.splits == 1 ? (int)gridDim.x : a.tiles;
    const int ch = chunk(a), r0 = min(a.m, me * ch), r1 = min(a.m, r0 + ch);
    bool good = true;
    for (int tile = first; ll && tile >= 0 && tile < a.tiles; tile += step) { /* LL one-shot */
      const uint32_t f = (uint32_t)(e + 1);
      const int n0 = tile * bn, vec = min(bn, a.n - n0) / 8;
      int mine = 1;
      for (int i = ct; mine && i < a.m * vec; i += 256) {
        const int r = i / vec;
        const uint64_t off = (uint64_t)r * a.n + n0 + (i - r * vec) * 8;
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int p = 0; p < W && mine; p++) {
          const char *q = mk_local_ptr<char>(w, lbuf(e, p)) + off * 4;
          uint4 lo, hi;
          mine = ll_load(q, f, p, tile, &lo) && ll_load(q + 16, f, p, tile, &hi);
          if (mine) mk_fused_acc8(acc, make_uint4(lo.x, lo.z, hi.x, hi.z));
        }
        if (mine) *reinterpret_cast<uint4 *>(C + off) = mk_fused_pack8(acc);
      }
      if (ct == 0) ok = 1;
      mk_sm90::named_bar_sync(1, 256);
      if (!mine) ok = 0; /* a benign race: every writer writes 0 */
      mk_sm90::named_bar_sync(1, 256);
      if (!ok) break; /* the error is recorded */
      if (prof && ct == 0) stamp(MK_FUSED_AR_PH_WAITED);
    }
    for (int tile = first; !ll && good && (!two || r0 < r1) && tile >= 0 && tile < a.tiles; tile += step) {
      /* one-shot: every row; two-shot phase 2: this rank's chunk, its sums also to every peer */
      good = wait_flags(a, 0, tile, e, -1, W, ct, &ok);
      if (!good) break; /* the error is recorded */
      if (prof && ct == 0) stamp(MK_FUSED_AR_PH_WAITED);
      const int n0 = tile * bn, vec = min(bn, a.n - n0) / 8, lo = two ? r0 : 0, hi = two ? r1 : a.m;
      for (int i = ct; i < (hi - lo) * vec; i += 256) {
        const int r = lo + i / vec;
        const uint64_t off = (uint64_t)r * a.n + n0 + (i - (r - lo) * vec) * 8;
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int p = 0; p < W; p++)
          mk_fused_acc8(acc, *reinterpret_cast<const uint4 *>(mk_local_ptr<uint16_t>(w, sbuf(e, p, a)) + off));
        const uint4 v = mk_fused_pack8(acc);
        *reinterpret_cast<uint4 *>(C + off) = v;
        if (two) /* into S[e & 1][me] of every peer: rows of my chunk, unused there by phase 1 */
          for (int q = 0; q < W; q++)
            if (q != me) *reinterpret_cast<uint4 *>(w.peer_heap[q] + sbuf(e, me, a) + off * 2) = v;
      }
      mk_sm90::named_bar_sync(1, 256); /* the sums are performed for thread 0; `ok` read by all */
      if (two && ct == 0) {
        const uint64_t f = flag(a, 1, me, tile);
        __threadfence_system();
        for (int q = 0; q < W; q++)
          if (q != me) mk_st_relaxed_sys(reinterpret_cast<uint64_t *>(w.peer_heap[q] + f), e + 1);
      }
    }
    /* two-shot phase 3: the other owners' sums, from S[e & 1][q] rows of chunk q, into C */
    for (int tile = first; two && good && tile >= 0 && tile < a.tiles; tile += step) {
      if (!(good = wait_flags(a, 1, tile, e, me, min(W, (a.m + ch - 1) / ch), ct, &ok))) break;
      if (prof && ct == 0) stamp(MK_FUSED_AR_PH_WAITED);
      const int n0 = tile * bn, vec = min(bn, a.n - n0) / 8, rows = a.m - (r1 - r0);
      for (int i = ct; i < rows * vec; i += 256) {
        int r = i / vec;
        const int c = i - r * vec;
        if (r >= r0) r += r1 - r0; /* skip my chunk */
        const uint64_t off = (uint64_t)r * a.n + n0 + c * 8;
        *reinterpret_cast<uint4 *>(C + off) =
            *reinterpret_cast<const uint4 *>(mk_local_ptr<uint16_t>(w, sbuf(e, r / ch, a)) + off);
      }
      mk_sm90::named_bar_sync(1, 256); /* `ok` read by all before thread 0 rewrites it */
    }
    if (prof && ct == 0) stamp(MK_FUSED_AR_PH_REDUCED), stamp(MK_FUSED_AR_PH_EXIT);
  }
};

/* GEMM+AR two-shot on SM roles (fused_reduce.cuh): 0 off, 1 where it applies, -1 by shape: where it
 * applies, with the GEMM CTAs joining the reducers (MK_FUSED_TAIL=1), MK_FUSED_AR_COPY not forced
 * to 1 and M x N x 2 below MK_FUSED_AR_TWO_MAX_MB (run ca9b055, N = 8192, K = 7168, 4 ranks: M =
 * 1024 0.300 ms against 0.362 on copy engines; M = 4096 1.111 against 1.079). */
MK_PARAM_INT(fused_ar_two_shot, "FUSED_AR_TWO_SHOT", -1, -1, 1)
MK_PARAM_INT(fused_ar_two_max_mb, "FUSED_AR_TWO_MAX_MB", 32, 0, 1ll << 20)

extern "C" int mk_fused_ar_two_shot(const mk_fused_t *f, int64_t m, int64_t n) {
  const int64_t mode = mk_param_fused_ar_two_shot();
  /* Whole 128-row tile-rows per owner (the flag reuse of the gather needs it), one node group. */
  if (!mode || f->nnodes != 1 || f->world < 2 || m % f->world || (m / f->world) % 128) return 0;
  if (mk_fused_fold(f, MK_FUSED_GEMM_AR, m, n)) return 0; /* fold mode first */
  if (mode < 0 && mk_fused_ce_fold_auto(f, MK_FUSED_GEMM_AR, m, n)) return 0; /* MK_FUSED_CE_FOLD's default */
  if (mode == 1) return 1;
  return mk_param_fused_tail() && mk_param_fused_ar_copy() != 1 && m * n * 2 < (mk_param_fused_ar_two_max_mb() << 20);
}

/* CTAs of the small-M path's skinny GEMM (0: one per SM). Fewer CTAs than weight slabs give each
 * several slabs in a row: the first ones' pushes overlap the later ones' weight streaming, and only
 * the last slab's push is left after the GEMM (finish waits for all of them). */
MK_PARAM_INT(fused_ar_skinny_ctas, "FUSED_AR_SKINNY_CTAS", 0, 0, 1024)
/* The small-M path two-shot from this M on (0: one-shot at every M): each rank pushes to the owner
 * of each chunk of ceil(M / W) rows only, the owner sums its chunk and pushes the sums to every
 * peer (2 (W - 1) / W of the partial out of each rank instead of W - 1 times it, one more flag
 * round trip). Run 61bc2f9 (4 x H200, N = 8192, K = 7168, per call / --batch 20, ms): M = 16
 * one-shot 0.0525 / 0.0477, two-shot 0.0560 / 0.0514; M = 64 0.0601 / 0.0559 against 0.0588 /
 * 0.0542; M = 128 0.0750 / 0.0713 against 0.0676 / 0.0639 (unfused 0.0681 / 0.0654). */
MK_PARAM_INT(fused_ar_skinny_two_m, "FUSED_AR_SKINNY_TWO_M", 64, 0, 128)

/* The small-M path's LL one-shot (ll_load above): 1 wherever the LL slot holds the partial (M N 2 <= 1 MiB), 0
 * never, -1 (default) where it also sends at most MK_FUSED_AR_LL_KB KiB over NVLink a rank ((W - 1) 2 M N 2: the
 * LL words double the bytes); it takes the place of the two-shot there. */
MK_PARAM_INT(fused_ar_ll, "FUSED_AR_LL", -1, -1, 1)
MK_PARAM_INT(fused_ar_ll_kb, "FUSED_AR_LL_KB", 2048, 0, 1 << 20)

extern "C" int mk_fused_ar_ll(const mk_fused_t *f, int64_t m, int64_t n) {
  const mk_fused_ws *ws = &f->ws[MK_FUSED_GEMM_AR];
  const int64_t mode = mk_param_fused_ar_ll();
  if (!mode || !ws->ll || (uint64_t)(2 * m * n * 2) > ws->llbytes) return 0;
  return mode == 1 || (f->world - 1) * 4 * m * n <= mk_param_fused_ar_ll_kb() << 10;
}

extern "C" int mk_fused_ar_small_m(const mk_fused_t *f, const mk_fused_args *a) {
  const int64_t skinny = mk_param_gemm_skinny();
  /* auto: every M <= 128 (run 5f41751: 64 x 8192 x 1024 0.0375 ms here, 0.049 on the reducer path; at
   * M = 128, 8192 x 7168, the reducer path took 0.1167 ms against 0.0686 unfused) */
  return a->m >= 1 && a->m <= mk_gemm_skinny_config<16, 64>::kMaxM && a->b_layout == MK_GEMM_B_NK &&
         f->nnodes == 1 && f->ws[MK_FUSED_GEMM_AR].sk && skinny != 0 &&
         !mk_fused_rs_ce_mode(f, MK_FUSED_GEMM_AR, a->m, a->n);
}

template <int kMode>
static mk_status mk_ar_skinny_mode(mk_fused_t *f, const mk_fused_args *a, cudaStream_t stream) {
  const mk_fused_ws *ws = &f->ws[MK_FUSED_GEMM_AR];
  mk_ar_skinny_epi<kMode> epi;
  epi.w = f->w;
  epi.W = f->world;
  epi.me = f->me;
  epi.slot = MK_FUSED_EPOCH_SLOT0 + (int)MK_FUSED_GEMM_AR;
  epi.sk = ws->sk;
  epi.cnt = ws->cnt;
  epi.C = a->C;
  epi.calls = f->calls + (int)MK_FUSED_GEMM_AR;
  epi.exits = f->exits + (int)MK_FUSED_GEMM_AR;
  epi.prof = f->ar_prof;
  const int bn = mk_gemm_skinny_bn();
  epi.bn = bn;
  epi.llb = ws->ll, epi.llbytes = ws->llbytes;
  if (f->ar_prof) MK_CUDA_CHECK(cudaMemsetAsync(f->ar_prof, 0, sizeof(uint64_t) * MK_FUSED_AR_PHASES, stream));
  const int64_t want = mk_param_fused_ar_skinny_ctas();
  const int ctas = want ? (int)std::min<int64_t>(want, f->sms) : f->sms;
  int splits = mk_gemm_skinny_splits(a->n, a->k, ctas, bn);
  if (splits > 1 && (mk_gemm_skinny_flag_words(a->n, splits, bn) * 4 > MK_FUSED_SPLIT_FLAG_BYTES ||
                     mk_gemm_skinny_ws_bytes(a->m, a->n, splits, bn) > f->split_bytes ||
                     !f->split_ws[MK_FUSED_GEMM_AR]))
    splits = 1;
  char *sws = (char *)f->split_ws[MK_FUSED_GEMM_AR];
  MK_CHECK(mk_gemm_skinny_launch(a->A, a->B, a->C, a->m, a->n, a->k, bn, splits,
                                 splits > 1 ? (float *)(sws + MK_FUSED_SPLIT_FLAG_BYTES) : NULL,
                                 splits > 1 ? (uint32_t *)sws : NULL, ctas, stream, epi));
  return MK_STATUS_OK; /* the kernel's last CTA advanced the epoch and the call count */
}

static mk_status mk_ar_skinny(mk_fused_t *f, const mk_fused_args *a, cudaStream_t stream) {
  if (mk_fused_ar_ll(f, a->m, a->n)) return mk_ar_skinny_mode<MK_AR_SK_LL>(f, a, stream);
  if (mk_param_fused_ar_skinny_two_m() && a->m >= mk_param_fused_ar_skinny_two_m())
    return mk_ar_skinny_mode<MK_AR_SK_TWO>(f, a, stream);
  return mk_ar_skinny_mode<MK_AR_SK_ONE>(f, a, stream);
}

/* Loads every kernel of one exchange mode (each token width and slab height). */
template <int kMode>
static mk_status mk_ar_skinny_preload(void) {
  cudaFuncAttributes fa;
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_gemm_skinny_kernel<16, 64, mk_ar_skinny_epi<kMode>>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_gemm_skinny_kernel<32, 64, mk_ar_skinny_epi<kMode>>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_gemm_skinny_kernel<64, 64, mk_ar_skinny_epi<kMode>>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_gemm_skinny_kernel<128, 64, mk_ar_skinny_epi<kMode>>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_gemm_skinny_kernel<16, 128, mk_ar_skinny_epi<kMode>>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_gemm_skinny_kernel<32, 128, mk_ar_skinny_epi<kMode>>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_gemm_skinny_kernel<64, 128, mk_ar_skinny_epi<kMode>>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_gemm_skinny_kernel<128, 128, mk_ar_skinny_epi<kMode>>));
  return MK_STATUS_OK;
}

extern "C" mk_status mk_fused_preload_ar(void) {
  MK_CHECK(mk_reduce_preload<MK_FUSED_GEMM_AR>());
  MK_CHECK(mk_ar_skinny_preload<MK_AR_SK_ONE>());
  MK_CHECK(mk_ar_skinny_preload<MK_AR_SK_TWO>());
  return mk_ar_skinny_preload<MK_AR_SK_LL>();
}

extern "C" mk_status mk_gemm_ar(mk_fused_t *f, const mk_fused_args *a, mk_stream_t stream) {
  MK_CHECK(mk_fused_check(f, MK_FUSED_GEMM_AR, a));
  if (mk_fused_ar_small_m(f, a)) return mk_ar_skinny(f, a, (cudaStream_t)stream);
  return mk_reduce_launch<MK_FUSED_GEMM_AR>(f, a, a->C, (cudaStream_t)stream);
}
