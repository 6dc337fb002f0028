/* gemm_rs.cu — fused GEMM + ReduceScatter: C_r[Ms, N] = rows [r Ms, (r+1) Ms) of
 * sum_p A_p[M, K] @ B_p, Ms = M/W, one launch, a fixed reduction order (ranks 0..W-1).
 *
 * Buffer layout (heap workspace of the op, same offsets on every rank):
 *   S       [W][Ms][N] bf16  S[p] on rank o = rank p's partial product of o's rows
 *   cnt     u64 [W][tiles_m][ncb] cnt[p][tm][cb] = epoch + 1 once rank p has stored its
 *                            partial of (128-row tile-row tm, 128-column block cb) into S[p]
 *   arrive  u64 [16]         entry handshake (fused_common.cuh)
 * Flag ownership: cnt[] and arrive[] live in the heap of the owner o of the rows (the waiter);
 * each is set by one producer over NVLink (st.release.sys after the tile's stores).
 *
 * Roles: compute CTAs run the GEMM core on the local A_r and B_r; its epilogue stores each
 * row straight into the owner's S[me] over NVLink (out_row hook), and after_store sets
 * cnt[me][tm][cb] of every owner the tile's rows touch, for each 128-column block it covers.
 * Reducer CTAs of rank o walk o's blocks in the order the GEMM finishes them (every rank uses
 * the same grouped tile order, so o's rows are produced by all ranks at the same time), wait
 * for cnt[0..W-1][tm][cb], and sum S[0..W-1] in fp32 into C_r (mk_fused_reduce_block).
 * Barrier points: (1) before its first store, each compute CTA waits until every peer has
 * entered this call (arrive; its S is free again); (2) reducers wait per block. The kernel
 * ends when this rank's rows are reduced; peers' reads of this rank's memory are over then. */
#include "kernels/fused/fused_common.cuh"

struct mk_rs_policy : mk_gemm_order_grouped, mk_gemm_hooks_default {
  static constexpr bool kAfterStore = true;
  static constexpr bool kRoles = true;
  mk_dev_world w;
  mk_fused_view v;
  uint16_t *out;    /* C_r [Ms, N] */
  int64_t ms, n;
  int ncb, tiles_m; /* 128-column blocks, 128-row tile-rows */
  bool entered = false;

  __device__ __forceinline__ uint16_t *out_row(const mk_gemm_args &, int64_t row) const {
    const int o = min((int)(row / ms), v.W - 1);
    return mk_peer_ptr<uint16_t>(w, o, v.buf) + ((int64_t)v.me * ms + row - (int64_t)o * ms) * n;
  }
  __device__ __forceinline__ void before_load(const mk_gemm_tile &) {
    if (entered) return;
    const uint64_t epoch = mk_epoch(w, v.slot);
    for (int p = 0; p < v.W; p++)
      if (!mk_fused_wait_arrived(w, v, p, epoch, MK_OP_GEMM_RS)) break;
    entered = true;
  }
  __device__ __forceinline__ void after_store(const mk_gemm_tile &t) {
    const int tm = t.m0 / 128;
    const uint64_t epoch = mk_epoch(w, v.slot), per = (uint64_t)tiles_m * ncb;
    const int o_lo = (int)(t.m0 / ms), o_hi = (int)((t.m_end - 1) / ms);
    for (int o = o_lo; o <= o_hi; o++)
      for (int cb = t.n0 / 128; cb * 128 < t.n_end; cb++)
        mk_fused_flag_set(w, o, v.cnt + 8ull * (v.me * per + (uint64_t)tm * ncb + cb), epoch + 1);
  }

  __device__ void run_role(int i, uint8_t *, int) {
    const uint64_t epoch = mk_epoch(w, v.slot);
    if (i == 0 && threadIdx.x == 0) mk_fused_arrive(w, v, epoch);
    const uint64_t per = (uint64_t)tiles_m * ncb;
    const int64_t lo = (int64_t)v.me * ms, hi = lo + ms;
    const int tm_lo = (int)(lo / 128), ntm = (int)((hi - 1) / 128) - tm_lo + 1;
    const uint16_t *src[MK_MAX_LOCAL];
    for (int t = i; t < ntm * ncb; t += role_ctas) {
      int tm, cb;
      mk_fused_task_block(t, tm_lo, ntm, ncb, group_m, &tm, &cb);
      if (!mk_fused_wait_flags_cta(w, v.cnt + 8ull * ((uint64_t)tm * ncb + cb), 8 * per, v.W, epoch + 1, MK_OP_GEMM_RS,
                                   tm * ncb + cb))
        return;
      const int64_t r0 = max((int64_t)tm * 128, lo), r1 = min((int64_t)tm * 128 + 128, hi);
      const int64_t c0 = (int64_t)cb * 128;
      const int cols = (int)min((int64_t)128, n - c0);
      for (int p = 0; p < v.W; p++) src[p] = mk_local_ptr<uint16_t>(w, v.buf) + ((int64_t)p * ms + r0 - lo) * n + c0;
      mk_fused_reduce_block(out + (r0 - lo) * n + c0, src, v.W, (int)(r1 - r0), cols, n);
    }
  }
};

extern "C" mk_status mk_fused_preload_rs(void) { return mk_gemm_core_preload<mk_rs_policy>(); }

extern "C" mk_status mk_gemm_rs(mk_fused_t *f, const mk_fused_args *a, mk_stream_t stream) {
  MK_CHECK(mk_fused_check(f, MK_FUSED_GEMM_RS, a));
  const mk_fused_ws *ws = &f->ws[MK_FUSED_GEMM_RS];
  mk_rs_policy p;
  p.w = f->w;
  p.v = {f->world, f->me, MK_FUSED_EPOCH_SLOT0 + MK_FUSED_GEMM_RS, ws->arrive, ws->cnt, ws->buf};
  p.out = a->C;
  p.ms = a->m / f->world;
  p.n = a->n;
  p.ncb = (int)((a->n + 127) / 128);
  p.tiles_m = (int)((a->m + 127) / 128);
  p.role_ctas = mk_fused_ctas(f, MK_FUSED_GEMM_RS, a);
  /* args.C only names this rank's S (checked non-NULL by the core); rows go through out_row. */
  mk_gemm_args g = {(uint16_t *)mk_comm_heap_ptr(f->comm, ws->buf), a->m, a->n, a->k, 1, NULL};
  MK_CHECK(mk_fused_launch(a->A, a->B, g, a->b_layout, p, f->sms - p.role_ctas, (cudaStream_t)stream));
  return mk_fused_epoch_advance(f, MK_FUSED_GEMM_RS, stream);
}
