/* gemm_ar.cu — fused GEMM + AllReduce: C[M, N] = sum_p A_p[M, K] @ B_p on every rank, one
 * launch, bit-identical on all ranks (one-shot: every rank sums all partials in the order
 * 0..W-1). Any M.
 *
 * Buffer layout (heap workspace of the op, same offsets on every rank):
 *   P       [M, N] bf16          this rank's partial product A_r @ B_r (the GEMM's C)
 *   cnt     u64 [W][tiles_m][ncb] cnt[p][tm][cb] = epoch + 1 once rank p's partial of
 *                                (128-row tile-row tm, 128-column block cb) is in its P
 *   arrive  u64 [16]             entry handshake (fused_common.cuh)
 * Flag ownership: every rank's cnt[] is set by its producers (each rank sets cnt[me][.][.] on
 * every rank after storing the tile locally); only the owner of the heap reads them.
 *
 * Roles: compute CTAs run the GEMM core into the local P; after_store sets the tile's flags on
 * every rank. Reducer CTAs of every rank walk all blocks in the order the GEMM finishes them
 * (all ranks use the same grouped order), wait for the W flags of a block, pull the block from
 * every rank's P over NVLink (ranks in order 0..W-1), sum in fp32 and write C.
 * Barrier points: (1) before its first store into P, each compute CTA waits until every peer
 * has entered this call (peers read P of the previous call until their kernel ends);
 * (2) reducers wait per block. Traffic: each rank reads (W - 1) M N bf16 over NVLink: the
 * decode (small M) path; a two-shot path (reduce-scatter + all-gather) for large M is not
 * built yet. */
#include "kernels/fused/fused_common.cuh"

struct mk_ar_policy : mk_gemm_order_grouped, mk_gemm_hooks_default {
  static constexpr bool kAfterStore = true;
  static constexpr bool kRoles = true;
  mk_dev_world w;
  mk_fused_view v;
  uint16_t *out; /* C [M, N] */
  int64_t m, n;
  int ncb, tiles_m;
  bool entered = false;

  __device__ __forceinline__ void before_load(const mk_gemm_tile &) {
    if (entered) return;
    const uint64_t epoch = mk_epoch(w, v.slot);
    for (int p = 0; p < v.W; p++)
      if (!mk_fused_wait_arrived(w, v, p, epoch, MK_OP_GEMM_AR)) break;
    entered = true;
  }
  __device__ __forceinline__ void after_store(const mk_gemm_tile &t) {
    const int tm = t.m0 / 128;
    const uint64_t epoch = mk_epoch(w, v.slot), per = (uint64_t)tiles_m * ncb;
    for (int p = 0; p < v.W; p++)
      for (int cb = t.n0 / 128; cb * 128 < t.n_end; cb++)
        mk_fused_flag_set(w, p, v.cnt + 8ull * (v.me * per + (uint64_t)tm * ncb + cb), epoch + 1);
  }

  __device__ void run_role(int i, uint8_t *, int) {
    const uint64_t epoch = mk_epoch(w, v.slot), per = (uint64_t)tiles_m * ncb;
    if (i == 0 && threadIdx.x == 0) mk_fused_arrive(w, v, epoch);
    const uint16_t *src[MK_MAX_LOCAL];
    for (int t = i; t < tiles_m * ncb; t += role_ctas) {
      int tm, cb;
      mk_fused_task_block(t, 0, tiles_m, ncb, group_m, &tm, &cb);
      if (!mk_fused_wait_flags_cta(w, v.cnt + 8ull * ((uint64_t)tm * ncb + cb), 8 * per, v.W, epoch + 1, MK_OP_GEMM_AR,
                                   tm * ncb + cb))
        return;
      const int64_t r0 = (int64_t)tm * 128, r1 = min(r0 + 128, m), c0 = (int64_t)cb * 128;
      const int cols = (int)min((int64_t)128, n - c0);
      for (int p = 0; p < v.W; p++) src[p] = mk_peer_ptr<uint16_t>(w, p, v.buf) + r0 * n + c0;
      mk_fused_reduce_block(out + r0 * n + c0, src, v.W, (int)(r1 - r0), cols, n);
    }
  }
};

extern "C" mk_status mk_fused_preload_ar(void) { return mk_gemm_core_preload<mk_ar_policy>(); }

extern "C" mk_status mk_gemm_ar(mk_fused_t *f, const mk_fused_args *a, mk_stream_t stream) {
  MK_CHECK(mk_fused_check(f, MK_FUSED_GEMM_AR, a));
  const mk_fused_ws *ws = &f->ws[MK_FUSED_GEMM_AR];
  mk_ar_policy p;
  p.w = f->w;
  p.v = {f->world, f->me, MK_FUSED_EPOCH_SLOT0 + MK_FUSED_GEMM_AR, ws->arrive, ws->cnt, ws->buf};
  p.out = a->C;
  p.m = a->m;
  p.n = a->n;
  p.ncb = (int)((a->n + 127) / 128);
  p.tiles_m = (int)((a->m + 127) / 128);
  p.role_ctas = mk_fused_ctas(f, MK_FUSED_GEMM_AR, a);
  mk_gemm_args g = {(uint16_t *)mk_comm_heap_ptr(f->comm, ws->buf), a->m, a->n, a->k, 1, NULL};
  MK_CHECK(mk_fused_launch(a->A, a->B, g, a->b_layout, p, f->sms - p.role_ctas, (cudaStream_t)stream));
  return mk_fused_epoch_advance(f, MK_FUSED_GEMM_AR, stream);
}
