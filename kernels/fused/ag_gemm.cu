/* ag_gemm.cu — fused AllGather + GEMM: C[M, N] = AllGather_rows(A_r[M/W, K]) @ B_r, one launch.
 *
 * Buffer layout (heap workspace of the op, same offsets on every rank):
 *   G       [M, K] bf16   the gathered A; rows [p Ms, (p+1) Ms) come from rank p (Ms = M/W).
 *                         A caller may write its shard straight into its rows of G
 *                         (mk_ag_gemm_shard): then nothing is copied locally.
 *   ready   u64 [W][cps]  ready[p][i] = epoch + 1 when chunk i (rows [128 i, 128 i + 128) of
 *                         shard p) has landed in G (p in this node group); cps = ceil(Ms / 128)
 *   arrive  u64 [16]      entry handshake inside the node group (fused_common.cuh)
 *   xsig    u64 [3][16]   proxied counters (+1 per call): arrive_x, xdata (shard p landed), ack
 * Flag ownership: every flag lives in the heap of the rank that waits on it (the consumer);
 * its one producer sets it over NVLink (st.release.sys after the data) or adds to it through
 * the proxy (remote node groups).
 *
 * Roles (CTAs of one launch): compute CTAs [0, C) run the GEMM core on G. Pusher CTAs copy
 * this rank's shard into G of every rank of the node group, itself first:
 *   task (j, i): destination d = (me - j) mod W, chunk i; TMA bulk copy of the shard's rows
 *   to d's G, then ready[me][i] = epoch + 1 on d. Tasks run in order j = 0 (the local copy,
 *   skipped when the shard is in place), 1, ..., so d gets this shard at the point of its
 *   tile order where it needs it. With several node groups one more CTA (inter) posts one
 *   PUT_SIGNAL of the whole shard (from G) to each rank of other node groups once it has
 *   arrived (and the local copy is done), then exchanges acknowledgements.
 * Tile order: the GEMM walks tile-rows starting at the first one wholly inside the local
 *   shard, then the shards of me + 1, me + 2, ... (the order pushers deliver them), wrapping
 *   around; within that, the core's grouped order (L2 reuse of B panels).
 * Barrier points: (1) a pusher waits until d entered this call before its first write into
 *   d's G; (2) before_load of a tile waits for every chunk its rows touch (ready[p][i], or
 *   xdata[p] for a remote shard); (3) the inter CTA: mk_fused_inter_finish.
 *
 * Copy-engine mode (MK_FUSED_AG_COPY=1, one node group; protocol in copy_engine.c): no pusher
 * CTAs, the GEMM takes every SM; the shards arrive by peer copies on a side stream and the
 * GEMM waits on the mode's own flags ce_ready[p][piece] >= 1 (pieces of MK_FUSED_CE_ROWS
 * rows, reset to 0 by the host before each call), the local shard being in G before launch.
 * If a wait gives up (abort), the kernel sets its own ce_arrive flags to 1 so that the side
 * stream, which waits on them, drains. */
#include "kernels/fused/fused_common.cuh"

/* kCE: copy-engine mode (its own instantiation, so the SM-pusher kernel stays as it was). */
template <bool kCE>
struct mk_ag_policy : mk_gemm_order_grouped, mk_gemm_hooks_default {
  static constexpr bool kAfterStore = false;
  static constexpr bool kRoles = true;
  static constexpr bool kSmemPolicy = true; /* read from shared memory (gemm_core.cuh) */
  mk_dev_world w;
  mk_fused_view v;
  const uint16_t *shard; /* this rank's A_r [Ms, K] */
  int64_t ms, k;         /* rows per rank, K */
  int cps, tm0;          /* chunks per shard; first tile-row of the walk */
  uint64_t flags;        /* heap offset of ready[W][nflag]: v.cnt, or ce_ready in copy-engine mode */
  int cshift, nflag;     /* copy-engine mode: 128-row chunks per flag = 1 << cshift; flags per shard */
  uint64_t ce_arrive;    /* copy-engine mode: heap offset of ce_arrive[16] (released on abort) */
  int inplace;           /* the shard already is in G */
  int pushers;           /* role CTAs [0, pushers) push; role CTA `pushers` is the inter CTA */
  mk_fused_trace tr;     /* MK_TRACE */
  /* Per thread (gemm_core.cuh: the policy is read-only in the kernel). */
  struct State {
    int last_m0 = -1;   /* the tile-row whose chunks were last seen ready */
    uint32_t full = 0;  /* copy-engine mode: shards seen whole (their last flag set) */
    int tn = 0;         /* MK_TRACE events recorded */
    uint64_t tprev = 0; /* producer: when the previous tile's loads started */
  };

  __device__ __forceinline__ void tile_order(int idx, int tiles_m, int tiles_n, int *tm, int *tn) const {
    int q;
    mk_gemm_order_grouped::tile_order(idx, tiles_m, tiles_n, &q, tn);
    *tm = (tm0 + q) % tiles_m;
  }
  __device__ __forceinline__ uint64_t ready(int p, int64_t i) const {
    return flags + 8ull * ((uint64_t)p * nflag + (uint64_t)(kCE ? i >> cshift : i));
  }
  /* Copy-engine mode, after a failed wait: let this rank's side stream drain. */
  __device__ __forceinline__ void ce_release() const {
    if constexpr (kCE)
      for (int p = 0; p < v.W; p++) mk_st_release_sys(mk_local_ptr<uint64_t>(w, ce_arrive + 8ull * p), 1ull);
  }

  __device__ __forceinline__ void before_load(State &st, const mk_gemm_tile &t) const {
    if (tr.buf) {
      const uint64_t t0 = mk_globaltimer();
      if (st.tprev) mk_trace_ev(tr, 0, &st.tn, MK_TRACE_COMPUTE, st.tprev, t0);
      wait_ready(st, t);
      const uint64_t t1 = mk_globaltimer();
      if (t1 - t0 > 1000) mk_trace_ev(tr, 0, &st.tn, MK_TRACE_WAIT, t0, t1);
      st.tprev = t1;
      return;
    }
    wait_ready(st, t);
  }
  __device__ __forceinline__ void wait_ready(State &st, const mk_gemm_tile &t) const {
    if (t.m0 == st.last_m0) return;
    const uint64_t target = kCE ? 1 : mk_epoch(w, v.slot) + 1;
    bool fresh = !kCE; /* a flag was read in this call: the proxy fence below orders the TMA reads after it */
    for (int64_t s = t.m0 / ms; s < v.W && s * ms < t.m_end; s++) {
      if (s == v.me && inplace) continue;
      if (!v.local((int)s)) {
        if (!mk_wait_ge(w, v.xdata((int)s), v.xtarget(), MK_OP_AG_GEMM, (int)s, t.idx)) return;
        continue;
      }
      if constexpr (kCE) { /* a shard's flags are set in order on one side stream: the last one means all */
        if ((st.full >> s) & 1) continue;
        fresh = true;
        if (mk_ld_acquire_sys(mk_local_ptr<uint64_t>(w, ready((int)s, (int64_t)(nflag - 1) << cshift))) >= target) {
          st.full |= 1u << s;
          continue;
        }
      }
      const int64_t lo = max((int64_t)t.m0, s * ms) - s * ms, hi = min((int64_t)t.m_end, (s + 1) * ms) - s * ms;
      for (int64_t i = lo / 128; i * 128 < hi; i = kCE ? ((i >> cshift) + 1) << cshift : i + 1) /* one wait per flag */
        if (!mk_wait_ge(w, ready((int)s, i), target, MK_OP_AG_GEMM, (int)s, t.idx)) {
          ce_release();
          return;
        }
    }
    if (fresh) mk_fence_proxy_async(); /* else every shard of the tile was seen whole, and fenced, before */
    st.last_m0 = t.m0;
  }
  __device__ __forceinline__ void after_store(State &, const mk_gemm_tile &) const {}

  __device__ __noinline__ void run_role(State &st, int i, uint8_t *smem, int smem_bytes) const {
    const uint64_t epoch = mk_epoch(w, v.slot);
    if (i == 0 && threadIdx.x == 0) mk_fused_arrive(w, v, epoch);
    if (i >= pushers) {
      if (threadIdx.x == 0) inter(st, epoch);
      return;
    }
    const uint32_t chunk = 32768;
    const int stages = min(4, (smem_bytes - 64) / (int)chunk);
    uint64_t *bars = reinterpret_cast<uint64_t *>(smem + (size_t)stages * chunk);
    const int j0 = inplace ? 1 : 0, tasks = (v.W - j0) * cps;
    int seen = -1; /* destination whose arrival this CTA has observed */
    for (int t = i; t < tasks; t += pushers) {
      const int j = j0 + t / cps, c = t % cps, d = (v.me - j + v.W) % v.W;
      if (!v.local(d)) continue; /* the inter CTA serves other node groups */
      uint64_t t0 = tr.buf ? mk_globaltimer() : 0;
      if (d != seen) {
        int ok = 1;
        if (threadIdx.x == 0) ok = mk_fused_wait_arrived(w, v, d, epoch, MK_OP_AG_GEMM);
        if (!__syncthreads_and(ok)) return;
        seen = d;
        if (tr.buf && threadIdx.x == 0) {
          const uint64_t t1 = mk_globaltimer();
          mk_trace_ev(tr, 0, &st.tn, MK_TRACE_WAIT, t0, t1);
          t0 = t1;
        }
      }
      const int64_t r0 = (int64_t)c * 128, rows = min((int64_t)128, ms - r0);
      const uint64_t bytes = (uint64_t)rows * (uint64_t)k * 2;
      char *dst = mk_peer_ptr<char>(w, v.lp(d), v.buf) + ((uint64_t)v.me * ms + r0) * (uint64_t)k * 2;
      mk_copy_tma_cta(dst, shard + r0 * k, bytes, reinterpret_cast<char *>(smem), chunk, stages, bars);
      if (threadIdx.x == 0) {
        mk_fused_flag_set(w, v.lp(d), ready(v.me, c), epoch + 1);
        if (tr.buf) mk_trace_ev(tr, 0, &st.tn, MK_TRACE_SEND, t0, mk_globaltimer());
      }
      __syncthreads();
    }
  }

  /* One thread: the whole shard to every rank of other node groups, from this rank's G. */
  __device__ void inter(State &st, uint64_t epoch) const {
    const uint64_t t0 = tr.buf ? mk_globaltimer() : 0;
    if (!inplace)
      for (int c = 0; c < cps; c++)
        if (!mk_wait_ge(w, ready(v.me, c), epoch + 1, MK_OP_AG_GEMM, v.me, c)) return;
    const uint64_t off = v.buf + (uint64_t)v.me * ms * k * 2, bytes = (uint64_t)ms * k * 2;
    for (int q = 0; q < v.W; q++) {
      if (v.local(q)) continue;
      if (!mk_fused_wait_arrived(w, v, q, epoch, MK_OP_AG_GEMM)) return;
      if (!mk_post(w, MK_CMD_PUT_SIGNAL, q, off, off, bytes, v.xdata(v.me), 1)) return;
    }
    const uint64_t t1 = tr.buf ? mk_globaltimer() : 0;
    mk_fused_inter_finish(w, v, epoch, MK_OP_AG_GEMM);
    if (tr.buf) {
      mk_trace_ev(tr, 0, &st.tn, MK_TRACE_SEND, t0, t1);
      mk_trace_ev(tr, 0, &st.tn, MK_TRACE_WAIT, t1, mk_globaltimer());
    }
  }
};

/* MK_FUSED_AG_WIDTHS: 1 the GEMM part picks its tile width among 128, 160, 224 and 256 like the plain
 * GEMM (mk_gemm_pick_width's wave model: 224 at M = 2048, N = 7168 on 132 SMs, where 448 tiles of 256
 * fill 3.4 waves), 0 among 128 and 256 only (the other fused ops). The walk waits on A's rows, so the
 * width changes no flag. */
MK_PARAM_INT(fused_ag_widths, "FUSED_AG_WIDTHS", 1, 0, 1)

extern "C" mk_status mk_fused_preload_ag(void) {
  MK_CHECK((mk_gemm_core_preload<mk_ag_policy<false>, true>()));
  return mk_gemm_core_preload<mk_ag_policy<true>, true>();
}

extern "C" uint16_t *mk_ag_gemm_shard(mk_fused_t *f, int64_t m, int64_t k) {
  if (!f || !f->ws[MK_FUSED_AG_GEMM].ready || m < 1 || k < 8 || m % f->world || m > f->max_m || k > f->max_k)
    return NULL;
  return (uint16_t *)mk_comm_heap_ptr(f->comm, f->ws[MK_FUSED_AG_GEMM].buf) + (m / f->world) * f->me * k;
}

template <bool kCE>
static mk_status mk_ag_gemm_launch(mk_fused_t *f, const mk_fused_args *a, mk_stream_t stream) {
  mk_ag_policy<kCE> p;
  p.w = f->w;
  p.v = mk_fused_make_view(f, MK_FUSED_AG_GEMM);
  p.shard = a->A;
  p.ms = a->m / f->world;
  p.k = a->k;
  p.cps = (int)((p.ms + 127) / 128);
  const int tiles_m = (int)((a->m + 127) / 128);
  p.tm0 = (int)(((int64_t)f->me * p.ms + 127) / 128) % tiles_m;
  /* Groups of at most one shard's tile-rows, so the first wave walks the local rows (group 0 starts at
   * tm0) and the next shards' groups follow in arrival order. With the default 16 and cps < 16 (M = 2048
   * on 4 ranks: 4 tile-rows a shard, tiles_m = 16) the first wave spanned every shard and ~3/4 of the
   * CTAs waited for remote chunks from the start (session 6 trace, NOTES). */
  p.group_m = p.cps < mk_gemm_config::kGroupM ? p.cps : mk_gemm_config::kGroupM;
  p.inplace = a->A == mk_ag_gemm_shard(f, a->m, a->k);
  p.flags = kCE ? f->ws[MK_FUSED_AG_GEMM].ce + 8ull * MK_FUSED_ARRIVE_SLOTS : p.v.cnt;
  p.ce_arrive = f->ws[MK_FUSED_AG_GEMM].ce;
  p.cshift = 0;
  while (kCE && (128 << p.cshift) < mk_fused_ce_rows()) p.cshift++;
  p.nflag = (p.cps + (1 << p.cshift) - 1) >> p.cshift;
  const int inplace = p.inplace;
  if (kCE) p.inplace = 1; /* the local shard is in G before the kernel starts */
  p.pushers = kCE ? 0 : mk_fused_ctas(f, MK_FUSED_AG_GEMM, a);
  p.role_ctas = p.pushers + (f->nnodes > 1 ? 1 : 0);
  mk_gemm_args g = {a->C, a->m, a->n, a->k, 1, NULL};
  const uint16_t *gathered = (const uint16_t *)mk_comm_heap_ptr(f->comm, f->ws[MK_FUSED_AG_GEMM].buf);
  MK_CHECK(mk_fused_trace_begin(f, stream, &p.tr.buf));
  p.tr.cap = MK_TRACE_CAP;
  if (kCE) MK_CHECK(mk_fused_ag_ce_begin(f, a, inplace, stream));
  const int compute = mk_fused_compute_ctas(f, p.role_ctas);
  if (mk_param_fused_ag_widths())
    MK_CHECK((mk_fused_launch<mk_ag_policy<kCE>, true>(gathered, a->B, g, a->b_layout, p, compute, (cudaStream_t)stream)));
  else
    MK_CHECK(mk_fused_launch(gathered, a->B, g, a->b_layout, p, compute, (cudaStream_t)stream));
  if (kCE) MK_CHECK(mk_fused_ce_join(f, stream));
  MK_CHECK(mk_fused_epoch_advance(f, MK_FUSED_AG_GEMM, stream));
  return mk_fused_trace_end(f, MK_FUSED_AG_GEMM, p.tr.buf, stream);
}

extern "C" mk_status mk_ag_gemm(mk_fused_t *f, const mk_fused_args *a, mk_stream_t stream) {
  MK_CHECK(mk_fused_check(f, MK_FUSED_AG_GEMM, a));
  return mk_fused_ag_ce_mode(f, a->n) ? mk_ag_gemm_launch<true>(f, a, stream) : mk_ag_gemm_launch<false>(f, a, stream);
}
