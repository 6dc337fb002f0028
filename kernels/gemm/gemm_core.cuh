/* gemm_core.cuh — the Hopper (sm_90a) GEMM core every GEMM-based op instantiates:
 *   C[M, N] (bf16) = A[M, K] (bf16, row-major) @ B (bf16; [N, K] or [K, N]), fp32 accumulate,
 * and its grouped form (MoE): group g multiplies rows [off_g, off_g + rows_g) of A by its own
 * B_g and writes the same rows of C, off_g = rows_0 + ... + rows_{g-1}, the rows read from
 * device memory by the kernel itself (no host synchronisation).
 *
 * Kernel shape. Persistent (one CTA per SM), 384 threads, warp-specialized:
 *   warpgroup 0   producer: one thread issues TMA loads of A (128x64, two 64-row boxes) and B
 *                 (256x64) tiles into a kStages-deep shared-memory ring (full/empty mbarriers);
 *                 registers reduced to 40 (setmaxnreg).
 *   warpgroups 1,2 consumers: each owns 64 rows x 256 columns of the 128x256 output tile
 *                 (m64n256k16 wgmma, 128 fp32 accumulators a thread; 232 registers), releases a
 *                 stage as soon as the wgmma that read it is done, and stores bf16 to global
 *                 memory, masked to the valid rows and columns: through a 2 KB shared-memory
 *                 buffer per warp in 16-byte stores (every width, and the SwiGLU epilogue at
 *                 widths 128 and 256; MK_GEMM_EPI=1), else straight from the registers.
 *   (with kAfterStore) thread 32 of warpgroup 0, the signaller: after_store of each stored tile.
 * Tails: TMA zero-fills what lies outside A and B (M, N and K tails); stores are masked. A
 * consumer warpgroup none of whose 64 rows is valid (t.m0 + 64 * cw >= t.m_end: an M tail or a
 * MoE expert of <= 64 rows) issues no wgmma and stores nothing for the tile; it still waits
 * for and frees every stage (args.wg_skip, MK_GEMM_WG_SKIP; hooks see no difference).
 *
 * Hooks (the contract fused ops rely on). A Policy is passed by value to the kernel as a read-only
 * __grid_constant__ parameter: its hooks are const and read its members from the parameter space (or,
 * with kSmemPolicy, from one copy in the CTA's shared memory), so no thread copies it. Before, a hook
 * that wrote a member made every thread copy the whole policy into local memory (the GEMM+RS/AR policy's
 * ~470 bytes stored by all 384 threads of every CTA, then read back from L2 in every tile's order and
 * epilogue; NOTES fused "Session 34"). What a hook changes per thread lives in the policy's State, one
 * a thread, passed to the hooks by reference:
 *   struct Policy : mk_gemm_hooks_default {
 *     struct State;                                       // optional: default mk_gemm_hooks_default::State {}
 *     static constexpr bool kAfterStore;                  // false: after_store never called
 *     __device__ void tile_order(int idx, int tiles_m, int tiles_n, int *tm, int *tn) const;
 *     __device__ void before_load(State &st, const mk_gemm_tile &t) const;
 *     __device__ void after_store(State &st, const mk_gemm_tile &t) const;
 *     // optional (defaults in mk_gemm_hooks_default):
 *     __device__ uint16_t *out_row(State &st, const mk_gemm_args &a, int64_t row) const;  // where row of C goes
 *     static constexpr bool kOutAlso;  template <class V> __device__ void out_also(a, row, p, v) const;
 *     static constexpr bool kWarpDone;  __device__ void warp_done(State &st, a, t, rb, lane) const;
 *     static constexpr bool kRoles;  int role_ctas, compute_ctas;
 *     __device__ void run_role(State &st, int i, uint8_t *smem, int smem_bytes) const;
 *     static constexpr bool kTail;   __device__ void tail(State &st, uint8_t *smem, int smem_bytes) const;
 *     __device__ bool join() const;  // dynamic claims (args.claim): false = this CTA takes no tile
 *     static constexpr bool kTrigger;  // every CTA lets a dependent launch (args.pdl) start at once
 *   };
 * - tile_order: a bijection of [0, tiles_m*tiles_n) onto (tm, tn); CTA b walks idx = b,
 *   b + ncta, ... (ncta = the GEMM CTAs), or, with args.claim, the CTAs claim idx in increasing
 *   order from a counter (mk_gemm_units). Every thread of the CTA calls it, so it must be pure. tm counts
 *   128-row tiles over all groups in order (group 0's tiles first).
 * - before_load(t): called by the single producer thread before it issues the first load of
 *   tile t (it may spin, e.g. until the rows the tile reads have arrived; make the data it
 *   waits for visible with acquire semantics before returning). Loads go through TMA (async
 *   proxy): data written by ordinary stores of another kernel or peer is visible once the
 *   hook has observed its release.
 * - after_store(t): called by one thread of the producer warpgroup (thread 32, the signaller; 40
 *   registers) once every consumer thread has stored its part of tile t and arrived on an mbarrier
 *   (release, CTA scope) that the signaller waited on (acquire): the stores happen before the call,
 *   so a release at the scope the readers need (a release-add, or __threadfence_system() and a flag)
 *   publishes them (cumulativity; CUTLASS's semaphore relies on the same). The consumers do not wait
 *   for it: they go on with the next tile (two hand-over slots; they wait only when the signaller is
 *   two tiles behind), so a slow publish (system fences, flags on peers) costs the mainloop nothing.
 *   Called in the order the CTA stores its tiles, possibly after the consumers have started later
 *   tiles (or the tail); before_load must not wait for what after_store publishes in the same kernel.
 * - out_row(st, a, row): the address of row `row` of C (default a.C + row * a.n); lets a fused op
 *   store rows straight into a peer's buffer. Called for rows past m_end too (not written).
 * - out_also(a, row, p, v) (kOutAlso): called by the storing thread right after each store of the
 *   epilogue, v (a 16-byte uint4 staged, a 4-byte __nv_bfloat162 direct) just stored at p in row `row`
 *   (< m_end); lets a fused op store the same bytes elsewhere too (the MoE's rows to every rank).
 * - warp_done(st, a, t, rb, lane) (kWarpDone): called by every lane of a consumer warp that stored rows
 *   [rb, rb + 16) of tile t (not an idle warpgroup), after those stores and before the tile's hand-over
 *   to after_store; its accumulators are dead there. The warp's own stores are visible to it after a
 *   __syncwarp (the staged store ends with one). Lets a fused op rework the rows it just stored (GEMM+RS /
 *   GEMM+AR's fold: the peers' partials added, fused_reduce.cuh); what it stores is published by
 *   after_store like the tile's own stores.
 * - Roles (kRoles): the launch adds role_ctas CTAs after the compute_ctas GEMM CTAs (the launch
 *   sets compute_ctas); CTA compute_ctas + i calls run_role(st, i, smem, bytes) with the whole
 *   dynamic shared memory and no GEMM work, then exits. All CTAs are co-resident (the total
 *   never exceeds the SM count when the caller sizes grid + role_ctas <= SMs), so roles may
 *   wait on compute CTAs and the other way round.
 * - tail(st, smem, bytes) (kTail): called by the 256 consumer threads (threadIdx.x 128..383) of every
 *   GEMM CTA once it has stored its last tile (after its after_store), with the ring's shared
 *   memory (free by then: every stage loaded was consumed) and named barrier 1 for the 256; the
 *   producer warpgroup has left. Lets a fused op put the SMs that finished the GEMM to its
 *   communication (fused_reduce.cuh: they join the reducers).
 * - kTrigger / args.pdl: a kernel whose Policy has kTrigger executes griddepcontrol.launch_dependents
 *   first thing in every CTA, so the stream's next kernel, if launched with args.pdl (programmatic
 *   stream serialization), may place its CTAs on the SMs this one leaves free, and the rest as its
 *   CTAs exit. Every CTA of the first kernel has started by then (no deadlock if the dependent spins
 *   on it), but nothing of it is complete or visible: the dependent's hooks wait for what they read
 *   (before_load on a counter the first kernel's after_store releases), and a dependent that must not
 *   finish before the first kernel (stream order for what follows) executes griddepcontrol.wait
 *   before its end (the MoE's GEMM2 in its tail).
 * Shared-memory stages continue across tiles, so tile t+1's loads overlap tile t's epilogue.
 *
 * Optional epilogue: a Policy with kGluPairs = true stores silu(gate) * up of interleaved
 * gate/up column blocks instead of the product (mk_gemm_glu_pairs below; MoE gate/up GEMM).
 *
 * Tile width kBN (template parameter): 128 x 256 (m64n256k16) by default; 128 x 224, 128 x
 * 160 and 128 x 128 (deeper rings) where they fill the last wave of SMs better, chosen by a
 * wave model (mk_gemm_pick_width; 160 and 224 for the plain GEMM only). The text below says
 * 256 for kBN.
 *
 * Split-K of the last wave (opt-in, template parameter kSplitK: mk_gemm_bf16 plans it per shape
 * on the host with mk_gemm_split_plan; grouped GEMMs may have it planned on the device from the
 * tile count, mk_gemm_dev_split / gemm_split.cuh): the tiles of the last, partly filled wave are
 * computed in k-slices side by side on the SMs the wave would leave idle; slices meet in an
 * fp32 workspace and are summed in a fixed order (mk_gemm_units), so results are the same on
 * every run on the same GPU model. Hooks keep their meaning: before_load before the first
 * load of each slice a CTA loads, after_store once per tile, by the CTA that stores it.
 *
 * Host side: mk_gemm_core_launch<Policy>() encodes the tensor maps (cuTensorMapEncodeTiled
 * through cudaGetDriverEntryPointByVersion; libcuda is never linked) and launches. */
#ifndef MK_KERNELS_GEMM_CORE_CUH
#define MK_KERNELS_GEMM_CORE_CUH

#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>

#include <algorithm>

#include "core/check.h"
#include "kernels/gemm/mk_gemm.h"
#include "kernels/gemm/sm90_ptx.cuh"
#include "kernels/gemm/tma_map.cuh"

struct mk_gemm_config {
  static constexpr int kBM = 128, kBK = 64;
  static constexpr int kThreads = 384;
  static constexpr int kMaxGroups = 512;
  static constexpr int kGroupM = 16; /* default tile order: 16 tile-rows share each B column panel */
  static constexpr int kQueue = 4;   /* dynamic claims: slots of the units' hand-over queue (mk_gemm_units) */
};

/* The tile widths the core is instantiated for (wgmma n; mk_gemm_pick_width chooses). Widths
 * other than 128 and 256 exist to fit the tile count to the SM count (wave quantisation). */
static constexpr int mk_gemm_widths[] = {128, 160, 224, 256};
static constexpr int mk_gemm_nwidths = 4;

/* Per tile width kBN and B layout (kBNMajor: B is [K, N], loaded as 64-column chunks, so the
 * B stage holds kBN rounded up to 64 columns): stage sizes, the ring depth and the total shared
 * memory. The staged epilogue's buffer (16 KB) is kept wherever the ring still gets 4 stages
 * beside it (every width: 256 -> 4, 224 -> 4, 160 -> 5, 128 -> 6 stages), else the deepest ring
 * (at most 6 stages) and the direct epilogue. Widths 160 and 224 gave up a stage for the buffer
 * in session 12 (they had 6 and 5 and stored directly). */
template <int BN, int kBNMajor = 0>
struct mk_gemm_tile_config : mk_gemm_config {
  static constexpr int kBN = BN;
  static constexpr int kBChunks = (BN + 63) / 64; /* [K, N] B: 64-column TMA boxes */
  static constexpr int kABytes = kBM * kBK * 2, kBBytes = (kBNMajor ? kBChunks * 64 : kBN) * kBK * 2;
  static constexpr int kStageBytes = kABytes + kBBytes; /* also the TMA bytes of one stage */
  /* mbarriers: the ring's full and empty (kStages each) and the after_store hand-over's 2 full + 2 empty */
  static constexpr int kQueueBytes = kQueue * (4 + 2 * 8); /* dynamic claims' queue: kQueue units, 2 x kQueue mbarriers */
  static constexpr int kFixedBytes = 1024 /* alignment slack */ + (2 * 6 + 4) * 8 + 2 * (kMaxGroups + 1) * 4 + kQueueBytes;
  static constexpr int kEpiBytes = 8 * 16 * 64 * 2;
  static constexpr bool kEpiStage = (227 * 1024 - kFixedBytes - kEpiBytes - 128) / kStageBytes >= 4;
  static constexpr int kStages =
      std::min(6, (227 * 1024 - kFixedBytes - (kEpiStage ? kEpiBytes + 128 : 0)) / kStageBytes);
  /* The ring, its mbarriers, the group arrays and the claims' queue; then the staged epilogue's (mk_gemm_store_staged) 16 x 64
   * bf16 buffer (2 KB) per consumer warp. */
  static constexpr int kBaseBytes = kStages * kStageBytes + (2 * kStages + 4) * 8 + 2 * (kMaxGroups + 1) * 4 + kQueueBytes;
  static constexpr int kEpiOff = (kBaseBytes + 127) / 128 * 128;
  static constexpr int kSmemBytes = 1024 + (kEpiStage ? kEpiOff + kEpiBytes : kBaseBytes);
  static_assert(BN % 32 == 0 && BN >= 128 && BN <= 256 && kStages >= 4, "tile width");
  static_assert(!kEpiStage || kSmemBytes <= 227 * 1024, "staged epilogue buffer");
};

/* One output tile: rows [m0, m_end) (m_end - m0 <= 128) and columns [n0, min(n0 + kBN, N)). */
struct mk_gemm_tile {
  int idx;   /* linear index handed to tile_order */
  int group; /* 0 for a plain GEMM */
  int m0, m_end, n0, n_end;
  int k0; /* before_load: the first k-iteration the producer loads next (a split-K slice's); else 0 */
  int k1; /* before_load: the k-iteration it stops before (a split-K slice's end); else the k-iterations */
};

/* Kernel arguments other than the tensor maps. */
struct mk_gemm_args {
  uint16_t *C;          /* [m_cap, N] row-major */
  int64_t m_cap, n, k;  /* m_cap: rows of A and C (plain GEMM: M) */
  int groups;           /* 1 for a plain GEMM */
  const int32_t *rows;  /* device [groups] row counts; NULL: one group of m_cap rows */
  /* Split-K of the last wave (kernels instantiated with kSplitK only; see mk_gemm_units): */
  int split_tiles;      /* the last split_tiles tile indices are computed in `splits` k-slices */
  int splits;           /* 2 <= splits <= k-iterations; < 0: planned on the device (mk_gemm_dev_split) */
  float *ws;            /* [splits - 1][split_tiles][2 warpgroups][kBN/8][128 threads] float4 */
  uint32_t *flags;      /* [splits - 1][split_tiles][2]: 1 once written; 0 between launches */
  int split_mode;       /* splits < 0 (device plan, mk_gemm_dev_split): 0 = cost model, 1 = always */
  int epi_direct;       /* 1: store C straight from the accumulators (set by the launch from MK_GEMM_EPI) */
  int wg_skip;          /* 1 = a consumer warpgroup none of whose 64 rows is valid issues no wgmma for the
                           tile; the caller's choice, overridden by MK_GEMM_WG_SKIP = 0 or 1 */
  uint32_t *claim;      /* dynamic claims (see mk_gemm_units): device [2] = {next unit, CTAs out}, 0 between
                           launches (the last CTA out re-arms them); NULL: static (CTA b: b, b + ncta, ...) */
  int pdl;              /* 1: launched as a programmatic dependent of the stream's previous kernel (its CTAs may
                           start once every CTA of that kernel has started, if it triggers: Policy::kTrigger); the
                           policy's hooks then wait for whatever of that kernel they read (no griddepcontrol.wait) */
};

int64_t mk_param_gemm_wg_skip(void); /* gemm.cu: MK_GEMM_WG_SKIP */

/* Work units of a CTA, in order: f(idx, k0, k1, s) computes k-iterations [k0, k1) of tile
 * idx; s = -1 for a whole tile, else the k-slice. Without kSplitK: every tile whole, CTA b
 * taking idx = b, b + ncta, ... (ncta: the GEMM CTAs, gridDim.x less any role CTAs). With
 * kSplitK: the same over units = the first total -
 * split_tiles tiles whole (full waves: the data-parallel part), then split_tiles * splits
 * slices of the last tiles, slice-major (unit dp + s * split_tiles + r is slice s of tile dp
 * + r), so the slices of the last wave run side by side on otherwise idle SMs, all CTAs at
 * the same k-offsets of A and B (L2 reuse; an earlier stream-K version with staggered
 * offsets ran 1.3-1.7x slower per iteration, docs/perf/NOTES.md). Slice s < splits - 1 goes
 * to the fp32 workspace; slice splits - 1 waits for the others and adds them in order s = 0,
 * 1, ... (deterministic: the split depends on the shape and the grid only). Waits go only to
 * lower unit indices, which every CTA walks in increasing order, so with every CTA resident
 * (grid <= SMs, one CTA per SM) the fix-up cannot deadlock.
 *
 * Dynamic claims (args.claim != NULL): the producer thread takes the next unit from a global
 * counter (atomicAdd) instead, and hands it to the consumers and the signaller through a
 * kQueue-slot queue in shared memory (mbarriers: full, 1 arrive; empty, one per consumer warp
 * and the signaller), so units start in increasing order over the GPU whatever each tile
 * costs and however late a CTA starts: a CTA that starts late (its SM was busy) or runs
 * faster tiles takes more of them, and tiles that share a B panel keep running side by side
 * (L2). Units are still claimed in increasing order, and a unit is claimed only by a
 * running CTA, so the fix-up waits above still go only to running CTAs. A CTA whose
 * policy.join() is false claims nothing. Each producer, after its last claim (a unit >= units,
 * handed on as the end mark), counts its CTA out; the last of ncta re-arms both counters to 0
 * for the next launch (stream order). The result does not depend on which CTA ran a unit. */
constexpr int kGemmQueue = mk_gemm_config::kQueue;
/* The queue in shared memory at qb: kGemmQueue int units, then kGemmQueue full and kGemmQueue
 * empty mbarriers (one pointer: less live state beside the consumers' accumulators). */
__device__ __forceinline__ int *mk_gemm_q_slot(uint8_t *qb) { return (int *)qb; }
__device__ __forceinline__ uint64_t *mk_gemm_q_full(uint8_t *qb) { return (uint64_t *)(qb + 4 * kGemmQueue); }
__device__ __forceinline__ uint64_t *mk_gemm_q_empty(uint8_t *qb) { return mk_gemm_q_full(qb) + kGemmQueue; }

template <bool kSplitK, class F>
__device__ __forceinline__ void mk_gemm_unit(const mk_gemm_args &args, int dp, int u, int k_iters, F &f) {
  if (!kSplitK || u < dp) {
    f(u, 0, k_iters, -1);
  } else {
    const int v = u - dp, sl = v / args.split_tiles, r = v - sl * args.split_tiles;
    f(dp + r, (int)((int64_t)k_iters * sl / args.splits), (int)((int64_t)k_iters * (sl + 1) / args.splits), sl);
  }
}

/* kRole: 0 the producer thread (claims; join: claim at all), 1 a whole consumer warp, 2 one
 * thread alone (the signaller). */
enum { kGemmProducer = 0, kGemmWarp = 1, kGemmSingle = 2 };
template <bool kSplitK, int kRole, class F>
__device__ __forceinline__ void mk_gemm_units(const mk_gemm_args &args, uint8_t *qb, int total,
                                              int k_iters, int ncta, bool join, F &&f) {
  const int dp = kSplitK ? total - args.split_tiles : total;
  const int units = kSplitK ? dp + args.split_tiles * args.splits : total;
  for (int j = 0;; j++) {
    const int i = j % kGemmQueue;
    const uint32_t ph = (uint32_t)(j / kGemmQueue) & 1;
    int u;
    if (!args.claim) {
      u = (int)blockIdx.x + j * ncta;
    } else if (kRole == kGemmProducer) {
      u = join ? (int)min(atomicAdd(args.claim, 1u), (uint32_t)units) : units;
      mk_sm90::mbar_wait(mk_gemm_q_empty(qb) + i, ph ^ 1);
      mk_gemm_q_slot(qb)[i] = u;
      mk_sm90::mbar_arrive(mk_gemm_q_full(qb) + i); /* release: the slot */
    } else {
      mk_sm90::mbar_wait(mk_gemm_q_full(qb) + i, ph);
      u = mk_gemm_q_slot(qb)[i];
      if (kRole == kGemmWarp) __syncwarp();
      if (kRole == kGemmSingle || (threadIdx.x & 31) == 0) mk_sm90::mbar_arrive(mk_gemm_q_empty(qb) + i);
    }
    if (u >= units) break;
    mk_gemm_unit<kSplitK>(args, dp, u, k_iters, f);
  }
  if (kRole == kGemmProducer && args.claim) { /* count the CTA out; the last one re-arms the counters */
    __threadfence();
    if (atomicAdd(args.claim + 1, 1u) == (uint32_t)ncta - 1) {
      __threadfence();
      atomicExch(args.claim, 0u);
      atomicExch(args.claim + 1, 0u);
    }
  }
}

/* Consumer side of the TMA ring. mk_gemm_ring_free: stage prev (if >= 0) is free once the
 * wgmma group that read it is done (the caller waited): one arrive per warp. mk_gemm_ring_step,
 * right after committing the group that reads stage s: wait for the previous group, free its
 * stage, step to the next stage (phase flips at the wrap). Shared with gemm_skinny.cuh. */
__device__ __forceinline__ void mk_gemm_ring_free(uint64_t *empty, int lane, int prev) {
  if (prev >= 0) {
    __syncwarp();
    if (lane == 0) mk_sm90::mbar_arrive(&empty[prev]);
  }
}
template <int kStages>
__device__ __forceinline__ void mk_gemm_ring_step(uint64_t *empty, int lane, int &s, uint32_t &phase, int &prev) {
  mk_sm90::wgmma_wait<1>(); /* the group that read stage `prev` is done */
  mk_gemm_ring_free(empty, lane, prev);
  prev = s;
  if (++s == kStages) {
    s = 0;
    phase ^= 1;
  }
}

/* Split-K fix-up of one warpgroup's accumulators d (kR floats a thread) of slice sl of split tile
 * r (of ntiles), warpgroup cw, thread l < 128 of it. Slices < splits - 1 write their partial sums
 * to ws (thread-major float4s: a warpgroup writes / reads runs of 2 KB), meet at named barrier
 * 2 + cw (128 threads), and thread 0 of the warpgroup release-adds 1 to their flag (1 once the
 * warpgroup is done), returning false: the caller stores nothing. The last slice's thread 0
 * waits for the flags (acquire) and re-arms them to 0, the warpgroup meets at the barrier, and
 * every thread adds the partials in order 0, 1, ... (deterministic), returning true. One
 * release and one poller per warpgroup and slice (CUTLASS's generic barrier pattern: the
 * barrier orders the other threads' stores before thread 0's release, and thread 0's acquire
 * before their loads): an earlier version had all 128 threads red.release-add and spin on the
 * same word, 256 atomics and pollers per slice on a few L2 lines (docs/perf/NOTES.md, gemm
 * version 8). Slot of (q, r, cw): (q * ntiles + r) * 2 + cw. Shared by the core and the skinny
 * GEMM (gemm_skinny.cuh). */
template <int kR>
__device__ __forceinline__ bool mk_gemm_split_fixup(float (&d)[kR], float *ws, uint32_t *flags, int sl, int splits,
                                                    int ntiles, int r, int cw, int l) {
  using namespace mk_sm90;
  const size_t slot_floats = (size_t)128 * kR;
  if (sl < splits - 1) { /* leave the slice for the last one */
    const int slot = (sl * ntiles + r) * 2 + cw;
    float4 *w = (float4 *)(ws + slot * slot_floats) + l;
#pragma unroll
    for (int j = 0; j < kR / 4; j++) __stcg(w + j * 128, make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]));
    named_bar_sync(2 + cw, 128); /* every thread's partial is stored */
    if (l == 0) {
      __threadfence();
      red_release_gpu_add(flags + slot, 1);
    }
    return false;
  }
  if (l == 0) {
    for (int q = 0; q < splits - 1; q++) {
      uint32_t *f = flags + (q * ntiles + r) * 2 + cw;
      while (ld_acquire_gpu(f) < 1) {
      }
      *f = 0; /* re-arm: nobody else reads it in this launch */
    }
  }
  named_bar_sync(2 + cw, 128); /* thread 0 has seen every flag */
  for (int q = 0; q < splits - 1; q++) {
    const int slot = (q * ntiles + r) * 2 + cw;
    const float4 *w = (const float4 *)(ws + slot * slot_floats) + l;
#pragma unroll
    for (int j = 0; j < kR / 4; j++) {
      const float4 v = __ldcg(w + j * 128);
      d[4 * j] += v.x;
      d[4 * j + 1] += v.y;
      d[4 * j + 2] += v.z;
      d[4 * j + 3] += v.w;
    }
  }
  return true;
}

/* Device-side split plan (grouped GEMMs, whose tile count only the kernel knows), for a kSplitK
 * kernel launched with args.splits = -max (gemm_split.cuh). The last wave (`last` tiles: all of
 * them when there are fewer tiles than CTAs, e.g. MoE decode) is split in s k-slices, 2 <= s <=
 * min(max, k-iterations / 2), with at most 2 * ncta partial tiles ((s - 1) * last: the
 * workspace bound). split_mode 0: the s of least modelled time, taken when 5 % below the
 * unsplit wave; in k-iterations of one tile: rounds of slices (ceil(last * s / ncta)) x
 * k_iters / s, plus 3 per partial tile written or read (a 128 x 256 fp32 partial moves ~2.7x
 * the bytes of one k-iteration's A and B stages). split_mode 1: always the largest s (tests).
 * Depends on the row counts and the grid only. A row's sums depend on whether its tile was
 * split, and grouped GEMMs (MoE) fill a group's rows in arrival order, so a split of only part
 * of the tiles (more tiles than CTAs) is taken only where no group spans two tile-rows
 * (tile_off: the groups' tile-row offsets): then which tiles a row's outputs fall in depends on
 * its group alone, and repeated calls are bit-identical (at 8 ranks a split cutting through an
 * expert's tile-rows was not: test_moe_block_ep8, run c27cd12-x8). */
__device__ __forceinline__ void mk_gemm_dev_split(mk_gemm_args &args, int total, int k_iters, int ncta,
                                                  const int *tile_off) {
  if (args.splits >= 0) return;
  const int last = total > 0 ? total - (total - 1) / ncta * ncta : 0;
  bool one_row = true;
  for (int g = 0; last < total && g < args.groups && one_row; g++) one_row = tile_off[g + 1] - tile_off[g] <= 1;
  const int smax = last > 0 && one_row ? min(min(-args.splits, k_iters / 2), 1 + 2 * ncta / last) : 0;
  int best = 1;
  float best_cost = 0.95f * (float)k_iters;
  for (int s = 2; s <= smax; s++) {
    const float cost = (float)((last * s + ncta - 1) / ncta) * (float)k_iters / (float)s + 3.0f * (float)s;
    if (args.split_mode == 1 || cost < best_cost) best = s, best_cost = cost;
  }
  args.split_tiles = best >= 2 ? last : 0;
  args.splits = best >= 2 ? best : 1;
}

/* Default: grouped order for L2 reuse — group_m consecutive tile-rows walk one column of
 * tiles before moving right, so a B panel is read once per group_m tile-rows. */
struct mk_gemm_order_grouped {
  int group_m = mk_gemm_config::kGroupM;
  __device__ __forceinline__ void tile_order(int idx, int tiles_m, int tiles_n, int *tm, int *tn) const {
    const int per_group = group_m * tiles_n;
    const int g = idx / per_group, first = g * group_m;
    const int rows = min(tiles_m - first, group_m);
    const int r = idx - g * per_group;
    *tm = first + r % rows;
    *tn = r / rows;
  }
};

/* Optional epilogue (backward compatible: a Policy without the member keeps the plain one).
 * A Policy with `static constexpr bool kGluPairs = true` gets C[M, N/2] = silu(gate) * up in
 * fp32 from the accumulators, where the N columns of the product come in blocks of 8
 * alternating gate, up: columns 16i..16i+7 are gate 8i..8i+7, 16i+8..16i+15 up 8i..8i+7 (B's
 * rows interleaved that way), N a multiple of 16. Used by the MoE gate/up GEMM. */
template <class P, class = void>
struct mk_gemm_glu_pairs {
  static constexpr bool value = false;
};
template <class P>
struct mk_gemm_glu_pairs<P, decltype((void)P::kGluPairs)> {
  static constexpr bool value = P::kGluPairs;
};
__device__ __forceinline__ float mk_gemm_silu(float x) { return x / (1.0f + __expf(-x)); }

/* Defaults of the optional hooks: C rows at a.C + row * a.n, no role CTAs, no per-thread state. */
struct mk_gemm_hooks_default {
  struct State {}; /* a policy's per-thread mutable state (the policy itself is read-only in the kernel) */
  static constexpr bool kRoles = false;
  static constexpr bool kTail = false;
  static constexpr bool kTrigger = false; /* true: every CTA lets the stream's next kernel, launched with
                                             mk_gemm_args.pdl, start at once (griddepcontrol.launch_dependents) */
  static constexpr bool kOutAlso = false; /* true: out_also after every store of the epilogue */
  static constexpr bool kWarpDone = false; /* true: warp_done after each consumer warp's stores of a tile */
  static constexpr bool kSmemPolicy = false; /* true: the kernel copies the policy to shared memory, the hooks read it
                                                there, after one thread's prepare() of the copy */
  __device__ __forceinline__ void prepare() {}
  int role_ctas = 0, compute_ctas = 0;
  template <class S>
  __device__ __forceinline__ uint16_t *out_row(S &, const mk_gemm_args &a, int64_t row) const {
    return a.C + row * a.n;
  }
  template <class V>
  __device__ __forceinline__ void out_also(const mk_gemm_args &, int64_t, uint16_t *, const V &) const {}
  /* One consumer warp (lane `lane`) has stored its 16 rows [rb, rb + 16) of tile t (before the hand-over to
   * after_store); its accumulators are dead here, so the hook has the registers. */
  template <class S>
  __device__ __forceinline__ void warp_done(S &, const mk_gemm_args &, const mk_gemm_tile &, int64_t, int) const {}
  template <class S>
  __device__ __forceinline__ void run_role(S &, int, uint8_t *, int) const {}
  template <class S>
  __device__ __forceinline__ void tail(S &, uint8_t *, int) const {}
  __device__ __forceinline__ bool join() const { return true; } /* dynamic claims: this CTA claims units */
};

/* No-op hooks: the plain GEMM. */
struct mk_gemm_policy_plain : mk_gemm_order_grouped, mk_gemm_hooks_default {
  static constexpr bool kAfterStore = false;
  __device__ __forceinline__ void before_load(State &, const mk_gemm_tile &) const {}
  __device__ __forceinline__ void after_store(State &, const mk_gemm_tile &) const {}
};

/* Per-CTA view of the groups: prefix sums of rows and of 128-row tiles, in shared memory. */
struct mk_gemm_sched {
  const int *row_off;  /* [groups + 1] */
  const int *tile_off; /* [groups + 1] */
  int groups, tiles_m, tiles_n, bn, n;

  __device__ __forceinline__ int total() const { return tiles_m * tiles_n; }

  template <class Policy>
  __device__ __forceinline__ mk_gemm_tile get(const Policy &p, int idx) const {
    mk_gemm_tile t;
    int tm, tn;
    p.tile_order(idx, tiles_m, tiles_n, &tm, &tn);
    int lo = 0, hi = groups - 1; /* last group g with tile_off[g] <= tm */
    while (lo < hi) {
      int mid = (lo + hi + 1) >> 1;
      if (tile_off[mid] <= tm) lo = mid; else hi = mid - 1;
    }
    t.idx = idx;
    t.group = lo;
    t.m0 = row_off[lo] + (tm - tile_off[lo]) * mk_gemm_config::kBM;
    t.m_end = min(t.m0 + mk_gemm_config::kBM, row_off[lo + 1]);
    t.n0 = tn * bn;
    t.n_end = min(t.n0 + bn, n);
    t.k0 = 0;
    t.k1 = 0; /* set by the producer before before_load */
    return t;
  }
};

/* Staged epilogue of one consumer warp (lane `lane`): its 16 rows (from row rb) x kW columns (from
 * n0) of accumulators d (the m64nkW fragment layout) go to C as bf16 in 64-column slabs through the
 * warp's 2 KB buffer stg (shared-memory address): stmatrix writes the 16 x 64 slab from the fragment
 * layout (16-byte chunk c of row r at chunk c ^ (r % 8): the 8 rows of each 8 x 8 matrix in 8
 * different bank groups), then each lane reads 16 contiguous bytes of a row and stores them, 8 lanes
 * per 128-byte row segment, 4 rows per instruction: 16 16-byte stores a thread per 256 columns
 * instead of 64 4-byte ones, every 32-byte sector written whole (the direct store writes 16 bytes of
 * 8 rows per instruction). A width of 64 s + 32 (160, 224) ends with a half slab (lanes 0-3 of each
 * row). Row r of C starts at row_ptr(r); masked to rows < m_end and columns < ncols (a multiple of 8:
 * a chunk is all in or all out). */
struct mk_gemm_no_also {
  __device__ __forceinline__ void operator()(int64_t, uint16_t *, const uint4 &) const {}
};
template <int kW, class RowPtr, class Also = mk_gemm_no_also>
__device__ __forceinline__ void mk_gemm_store_staged(const float (&d)[kW / 2], uint32_t stg, int lane, int64_t rb,
                                                     int m_end, int64_t n0, int64_t ncols, RowPtr row_ptr,
                                                     Also also = Also()) {
  using namespace mk_sm90;
  static_assert(kW % 32 == 0, "staged width");
  const int mi = lane >> 3, srow = (mi & 1) * 8 + (lane & 7), rc = lane & 7;
  const uint32_t st_row = stg + srow * 128;
  /* The lane's 4 rows' addresses once, not once a slab: row_ptr may read a fused op's state from memory that every
   * generic store below may alias (fold's GEMM alone at RS 8192 took 1.536 ms through its out_row, 1.426 through the
   * plain one: runs f9ef394-x2, 7df6626-x2; 1.475 after this change, run 5c64781-x2, when the policy was in local
   * memory). */
  uint16_t *rp[4];
#pragma unroll
  for (int it = 0; it < 4; it++) rp[it] = rb + it * 4 + mi < m_end ? row_ptr(rb + it * 4 + mi) : nullptr;
#pragma unroll
  for (int slab = 0; slab < (kW + 63) / 64; slab++) {
    constexpr int kFull = kW / 64;
    const int pairs = slab < kFull ? 4 : 2; /* 16-column pairs of 8 x 8 matrices in this slab */
#pragma unroll
    for (int jp = 0; jp < 4; jp++) {
      if (jp < pairs) {
        const int j = slab * 8 + 2 * jp;
        stmatrix_x4(st_row + (((2 * jp + (mi >> 1)) ^ (srow & 7)) << 4), pack_bf16x2(d[4 * j], d[4 * j + 1]),
                    pack_bf16x2(d[4 * j + 2], d[4 * j + 3]), pack_bf16x2(d[4 * j + 4], d[4 * j + 5]),
                    pack_bf16x2(d[4 * j + 6], d[4 * j + 7]));
      }
    }
    __syncwarp();
    const int64_t col = n0 + slab * 64 + rc * 8;
#pragma unroll
    for (int it = 0; it < 4; it++) {
      const int row = it * 4 + mi;
      if (rc < 2 * pairs) {
        const uint4 v = lds128(stg + row * 128 + ((rc ^ (row & 7)) << 4));
        if (rp[it] && col < ncols) {
          uint16_t *p = rp[it] + col;
          *(uint4 *)p = v;
          also(rb + row, p, v);
        }
      }
    }
    __syncwarp(); /* the slab is read before the next one overwrites it */
  }
}

template <class Policy, int kBNMajor, int kBN, bool kSplitK = false>
__global__ void __launch_bounds__(mk_gemm_config::kThreads, 1)
    mk_gemm_core_kernel(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
                        mk_gemm_args args, const __grid_constant__ Policy policy_p) {
  using Cfg = mk_gemm_tile_config<kBN, kBNMajor>;
  using namespace mk_sm90;
  extern __shared__ uint8_t smem_raw[];
  uint8_t *smem = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
  uint64_t *full = (uint64_t *)(smem + Cfg::kStages * Cfg::kStageBytes);
  uint64_t *empty = full + Cfg::kStages;
  uint64_t *pub_full = empty + Cfg::kStages, *pub_empty = pub_full + 2; /* after_store hand-over, 2 slots */
  int *row_off = (int *)(pub_empty + 2);
  int *tile_off = row_off + Cfg::kMaxGroups + 1;
  uint8_t *qb = (uint8_t *)(tile_off + Cfg::kMaxGroups + 1); /* dynamic claims' queue (args.claim) */
  const int tid = threadIdx.x, wg = tid / 128;
  if constexpr (Policy::kTrigger) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  /* kSmemPolicy: the hooks read the policy from one copy in the CTA's shared memory, which one thread's prepare()
   * completes with per-call values first (the RS/AR policy: the call's epoch, read once a CTA instead of once a
   * thread); the parameter space is read-only. */
  __shared__ __align__(16) uint32_t policy_sm[Policy::kSmemPolicy ? (sizeof(Policy) + 3) / 4 : 1];
  if constexpr (Policy::kSmemPolicy) {
    static_assert(sizeof(Policy) % 4 == 0 && alignof(Policy) <= 16, "policy copy");
    for (int i = tid; i < (int)(sizeof(Policy) / 4); i += (int)blockDim.x)
      policy_sm[i] = reinterpret_cast<const uint32_t *>(&policy_p)[i];
    __syncthreads();
    if (tid == 0) reinterpret_cast<Policy *>(policy_sm)->prepare(); /* per-call values the hooks read */
    __syncthreads();
  }
  const Policy &policy = *[&]() -> const Policy * {
    if constexpr (Policy::kSmemPolicy) return reinterpret_cast<const Policy *>(policy_sm);
    else return &policy_p;
  }();
  typename Policy::State st{}; /* this thread's hook state */
  if constexpr (Policy::kRoles) {
    if ((int)blockIdx.x >= policy.compute_ctas) {
      policy.run_role(st, (int)blockIdx.x - policy.compute_ctas, smem, Cfg::kSmemBytes - 1024);
      return;
    }
  }
  const int ncta = Policy::kRoles ? policy.compute_ctas : (int)gridDim.x;

  if (tid == 0) {
    for (int s = 0; s < Cfg::kStages; s++) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 8); /* one arrive per consumer warp */
    }
    for (int s = 0; s < 2; s++) {
      mbar_init(&pub_full[s], 256); /* every consumer thread, after its stores of the tile */
      mbar_init(&pub_empty[s], 1);  /* the signaller, after after_store */
    }
    for (int i = 0; i < kGemmQueue; i++) {
      mbar_init(mk_gemm_q_full(qb) + i, 1);
      mbar_init(mk_gemm_q_empty(qb) + i, 8 + (Policy::kAfterStore ? 1 : 0)); /* each consumer warp, the signaller */
    }
    mbar_fence_init();
    /* Group prefix sums; a count < 0 is taken as 0, the total is clipped to m_cap. */
    int64_t r = 0;
    int t = 0;
    row_off[0] = 0;
    tile_off[0] = 0;
    for (int g = 0; g < args.groups; g++) {
      int64_t n = args.rows ? (int64_t)max(args.rows[g], 0) : args.m_cap;
      n = min(n, args.m_cap - r);
      r += n;
      t += (int)((n + Cfg::kBM - 1) / Cfg::kBM);
      row_off[g + 1] = (int)r;
      tile_off[g + 1] = t;
    }
  }
  __syncthreads();
  mk_gemm_sched sched;
  sched.row_off = row_off;
  sched.tile_off = tile_off;
  sched.groups = args.groups;
  sched.tiles_m = tile_off[args.groups];
  sched.tiles_n = (int)((args.n + Cfg::kBN - 1) / Cfg::kBN);
  sched.bn = Cfg::kBN;
  sched.n = (int)args.n;
  const int k_iters = (int)((args.k + Cfg::kBK - 1) / Cfg::kBK);
  if constexpr (kSplitK) mk_gemm_dev_split(args, sched.total(), k_iters, ncta, tile_off);

  if (wg == 0) {
    /* ---- producer ---- */
    setmaxnreg_dec<40>();
    if (tid == 0) {
      tma_prefetch_desc(&tma_a);
      tma_prefetch_desc(&tma_b);
      int s = 0;
      uint32_t phase = 0;
      mk_gemm_units<kSplitK, kGemmProducer>(args, qb, sched.total(), k_iters, ncta, policy.join(), [&](int idx, int k0, int k1, int) {
        mk_gemm_tile t = sched.get(policy, idx);
        t.k0 = k0, t.k1 = k1;
        policy.before_load(st, t);
        /* A in two 64-row boxes; the second one not loaded where the second consumer warpgroup
         * is idle (no valid row) or lies wholly past A (no box wholly out of bounds is issued;
         * with wg_skip 0 that warpgroup then computes on stale shared memory, rows never stored). */
        const bool a_half = (args.wg_skip && t.m0 + 64 >= t.m_end) || t.m0 + 64 >= args.m_cap;
        for (int kb = k0; kb < k1; kb++) {
          mbar_wait(&empty[s], phase ^ 1);
          uint8_t *sa = smem + s * Cfg::kStageBytes, *sb = sa + Cfg::kABytes;
          mbar_expect_tx(&full[s], Cfg::kStageBytes - (a_half ? Cfg::kABytes / 2 : 0));
          tma_load_3d(sa, &tma_a, &full[s], kb * Cfg::kBK, t.m0, 0);
          if (!a_half) tma_load_3d(sa + Cfg::kABytes / 2, &tma_a, &full[s], kb * Cfg::kBK, t.m0 + 64, 0);
          if (kBNMajor) {
#pragma unroll
            for (int c = 0; c < Cfg::kBChunks; c++)
              tma_load_3d(sb + c * 64 * Cfg::kBK * 2, &tma_b, &full[s], t.n0 + 64 * c, kb * Cfg::kBK, t.group);
          } else {
            tma_load_3d(sb, &tma_b, &full[s], kb * Cfg::kBK, t.n0, t.group);
          }
          if (++s == Cfg::kStages) {
            s = 0;
            phase ^= 1;
          }
        }
      });
    } else if (Policy::kAfterStore && tid == 32) {
      /* ---- signaller: after_store of each stored tile, beside the consumers' next mainloop ---- */
      int j = 0;
      mk_gemm_units<kSplitK, kGemmSingle>(args, qb, sched.total(), k_iters, ncta, true, [&](int idx, int, int, int sl) {
        if (kSplitK && sl >= 0 && sl < args.splits - 1) return; /* a slice left in the workspace: no store */
        const mk_gemm_tile t = sched.get(policy, idx);
        mbar_wait(&pub_full[j & 1], (j >> 1) & 1); /* every consumer thread stored its part (acquire) */
        policy.after_store(st, t);
        mbar_arrive(&pub_empty[j & 1]);
        j++;
      });
    }
  } else {
    /* ---- consumers ---- */
    setmaxnreg_inc<232>();
    const int cw = wg - 1, warp = (tid / 32) % 4, lane = tid % 32;
    int s = 0, pj = 0; /* pj: tiles stored (after_store hand-over) */
    uint32_t phase = 0;
    float d[kBN / 2];
    mk_gemm_units<kSplitK, kGemmWarp>(args, qb, sched.total(), k_iters, ncta, true, [&](int idx, int k0, int k1, int sl) {
      const mk_gemm_tile t = sched.get(policy, idx);
      /* Idle warpgroup (args.wg_skip): none of its 64 rows is valid (a tail tile-row of <= 64
       * rows: a plain GEMM's M tail, a MoE expert's few decode rows), so it computes nothing. */
      const bool idle = args.wg_skip && t.m0 + 64 * cw >= t.m_end;
#pragma unroll
      for (int i = 0; i < kBN / 2; i++) d[i] = 0.f;
      if (idle) {
        /* Keeps the ring in step with the other warpgroup: waits for each stage to fill and
         * frees it at once (its 4 of the 8 arrives a phase of empty[s] needs; waiting for the
         * fill keeps its arrives from running a phase ahead of the other warpgroup's). */
        for (int kb = k0; kb < k1; kb++) {
          mbar_wait(&full[s], phase);
          mk_gemm_ring_free(empty, lane, s);
          if (++s == Cfg::kStages) {
            s = 0;
            phase ^= 1;
          }
        }
      } else {
        int prev = -1;
        for (int kb = k0; kb < k1; kb++) {
          mbar_wait(&full[s], phase);
          const uint8_t *sa = smem + s * Cfg::kStageBytes + cw * 64 * Cfg::kBK * 2, *sb = smem + s * Cfg::kStageBytes + Cfg::kABytes;
          wgmma_fence();
#pragma unroll
          for (int kk = 0; kk < Cfg::kBK / 16; kk++) {
            const uint64_t da = desc_sw128(sa + kk * 32, 16, 1024);
            const uint64_t db = kBNMajor ? desc_sw128(sb + kk * 16 * 128, 64 * Cfg::kBK * 2, 1024)
                                         : desc_sw128(sb + kk * 32, 16, 1024);
            wgmma_m64nk16_bf16<kBN, kBNMajor>(d, da, db);
          }
          wgmma_commit();
          mk_gemm_ring_step<Cfg::kStages>(empty, lane, s, phase, prev);
        }
        wgmma_wait<0>();
#pragma unroll
        for (int i = 0; i < kBN / 2; i++) fence_operand(d[i]);
        mk_gemm_ring_free(empty, lane, prev);
      }
      if constexpr (kSplitK) {
        if (sl >= 0) {
          /* An idle warpgroup is idle in every slice of the tile (the rows are the tile's):
           * it neither writes nor reads partials, and its flags stay 0 (never set, never
           * waited for). Its other slices return here like mk_gemm_split_fixup's. */
          const int r = idx - (sched.total() - args.split_tiles);
          if (idle ? sl < args.splits - 1
                   : !mk_gemm_split_fixup(d, args.ws, args.flags, sl, args.splits, args.split_tiles, r, cw, tid % 128))
            return;
        }
      }
      /* Epilogue: accumulator (row r, cols 8j + 2q, +1) pairs -> bf16x2 stores. */
      const int r0 = t.m0 + cw * 64 + warp * 16 + lane / 4;
      const bool ok_lo = r0 < t.m_end, ok_hi = r0 + 8 < t.m_end;
      const uint32_t stg = smem_u32(smem + Cfg::kEpiOff) + (cw * 4 + warp) * 2048;
      bool glu_staged = false;
      if constexpr (mk_gemm_glu_pairs<Policy>::value && Cfg::kEpiStage && kBN % 64 == 0) {
        if (!args.epi_direct && !idle) {
          /* SwiGLU pairs, staged: output block jo (8 columns) of this warp's fragment is
           * silu(block 2 jo) * block 2 jo + 1, in the same fragment layout, width kBN / 2. */
          const int64_t nh = args.n / 2;
          float o[kBN / 4];
#pragma unroll
          for (int jo = 0; jo < kBN / 16; jo++)
#pragma unroll
            for (int q = 0; q < 4; q++) o[4 * jo + q] = mk_gemm_silu(d[8 * jo + q]) * d[8 * jo + 4 + q];
          mk_gemm_store_staged<kBN / 2>(o, stg, lane, t.m0 + cw * 64 + warp * 16, t.m_end, t.n0 / 2, nh,
                                        [&](int64_t r) { return args.C + r * nh; });
          glu_staged = true;
        }
      }
      if (idle || glu_staged) {
        /* idle: nothing to store, every row it owns is at or past m_end */
      } else if constexpr (mk_gemm_glu_pairs<Policy>::value) {
        /* SwiGLU pairs: column blocks 2i (gate) and 2i+1 (up) of 8 -> C[r, 8i + c] =
         * silu(gate) * up, C of width N / 2 (see mk_gemm_glu_pairs). */
        const int64_t nh = args.n / 2;
        uint16_t *g_lo = args.C + (size_t)r0 * nh, *g_hi = g_lo + 8 * (size_t)nh;
#pragma unroll
        for (int j = 0; j < kBN / 8; j += 2) {
          const int64_t col = t.n0 + 8 * j + 2 * (lane % 4), oc = (t.n0 + 8 * j) / 2 + 2 * (lane % 4);
          if (col < args.n) {
            if (ok_lo)
              *(__nv_bfloat162 *)(g_lo + oc) = __floats2bfloat162_rn(mk_gemm_silu(d[4 * j]) * d[4 * j + 4],
                                                                     mk_gemm_silu(d[4 * j + 1]) * d[4 * j + 5]);
            if (ok_hi)
              *(__nv_bfloat162 *)(g_hi + oc) = __floats2bfloat162_rn(mk_gemm_silu(d[4 * j + 2]) * d[4 * j + 6],
                                                                     mk_gemm_silu(d[4 * j + 3]) * d[4 * j + 7]);
          }
        }
      } else if (Cfg::kEpiStage && !args.epi_direct) {
        mk_gemm_store_staged<kBN>(
            d, stg, lane, t.m0 + cw * 64 + warp * 16, t.m_end, t.n0, args.n,
            [&](int64_t r) { return policy.out_row(st, args, r); },
            [&](int64_t r, uint16_t *p, const uint4 &v) {
              if constexpr (Policy::kOutAlso) policy.out_also(args, r, p, v);
            });
      } else {
      uint16_t *c_lo = policy.out_row(st, args, r0), *c_hi = policy.out_row(st, args, r0 + 8);
#pragma unroll
      for (int j = 0; j < kBN / 8; j++) {
        const int64_t col = t.n0 + 8 * j + 2 * (lane % 4);
        if (col < args.n) {
          if (ok_lo) {
            __nv_bfloat162 v = __floats2bfloat162_rn(d[4 * j], d[4 * j + 1]);
            *(__nv_bfloat162 *)(c_lo + col) = v;
            if constexpr (Policy::kOutAlso) policy.out_also(args, r0, c_lo + col, v);
          }
          if (ok_hi) {
            __nv_bfloat162 v = __floats2bfloat162_rn(d[4 * j + 2], d[4 * j + 3]);
            *(__nv_bfloat162 *)(c_hi + col) = v;
            if constexpr (Policy::kOutAlso) policy.out_also(args, r0 + 8, c_hi + col, v);
          }
        }
      }
      }
      if constexpr (Policy::kWarpDone) {
        if (!idle) policy.warp_done(st, args, t, t.m0 + cw * 64 + warp * 16, lane);
      }
      if (Policy::kAfterStore) { /* hand the tile to the signaller; wait only if it is two tiles behind */
        mbar_wait(&pub_empty[pj & 1], ((pj >> 1) & 1) ^ 1);
        mbar_arrive(&pub_full[pj & 1]); /* release: this thread's stores of the tile */
        pj++;
      }
    });
    if constexpr (Policy::kTail) policy.tail(st, smem, Cfg::kStages * Cfg::kStageBytes);
  }
}

/* ---- host side ------------------------------------------------------------------------- */
int64_t mk_param_gemm_epi(void); /* gemm.cu: MK_GEMM_EPI (1 staged where the width allows, 0 direct) */

/* Raises a kernel's dynamic shared-memory limit once per device (devices 0..63; others every
 * call), not on every launch. */
struct mk_gemm_smem_attr {
  unsigned long long done = 0; /* bit d: set on device d */
  mk_status set(const void *kern, int bytes) {
    int dev = 0;
    MK_CUDA_CHECK(cudaGetDevice(&dev));
    const unsigned long long bit = dev < 64 ? 1ull << dev : 0;
    if (bit && (__atomic_load_n(&done, __ATOMIC_ACQUIRE) & bit)) return MK_STATUS_OK;
    MK_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    __atomic_fetch_or(&done, bit, __ATOMIC_RELEASE);
    return MK_STATUS_OK;
  }
};

/* Encodes the tensor maps for tile width kBN and launches (kSplitK: args.split_tiles,
 * splits, ws and flags set, grid <= SMs). */
template <class Policy, int kBN, bool kSplitK = false>
static mk_status mk_gemm_core_launch_bn(const uint16_t *A, const uint16_t *B, const mk_gemm_args &args,
                                        mk_gemm_b_layout layout, const Policy &policy, int grid, cudaStream_t stream) {
  using Cfg = mk_gemm_tile_config<kBN, 0>;
  using CfgKN = mk_gemm_tile_config<kBN, 1>;
  mk_gemm_args a = args;
  if (mk_param_gemm_wg_skip() >= 0) a.wg_skip = (int)mk_param_gemm_wg_skip();
  CUtensorMap ma, mb;
  MK_CHECK(mk_gemm_encode_map(&ma, A, (uint64_t)args.k, (uint64_t)args.m_cap, 1, Cfg::kBK, Cfg::kBM / 2));
  if (layout == MK_GEMM_B_NK)
    MK_CHECK(mk_gemm_encode_map(&mb, B, (uint64_t)args.k, (uint64_t)args.n, (uint64_t)args.groups, Cfg::kBK, Cfg::kBN));
  else
    MK_CHECK(mk_gemm_encode_map(&mb, B, (uint64_t)args.n, (uint64_t)args.k, (uint64_t)args.groups, 64, Cfg::kBK));
  a.epi_direct = mk_param_gemm_epi() == 0;
  Policy p = policy;
  int total = grid;
  if constexpr (Policy::kRoles) {
    p.compute_ctas = grid;
    total += p.role_ctas;
  }
  static mk_gemm_smem_attr attr_nk, attr_kn;
  const bool nk = layout == MK_GEMM_B_NK;
  void (*kern)(const CUtensorMap, const CUtensorMap, mk_gemm_args, Policy) =
      nk ? mk_gemm_core_kernel<Policy, 0, kBN, kSplitK> : mk_gemm_core_kernel<Policy, 1, kBN, kSplitK>;
  const int smem = nk ? Cfg::kSmemBytes : CfgKN::kSmemBytes, threads = nk ? Cfg::kThreads : CfgKN::kThreads;
  MK_CHECK((nk ? attr_nk : attr_kn).set((const void *)kern, smem));
  if (a.pdl) { /* a programmatic dependent of the stream's previous kernel */
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)total);
    cfg.blockDim = dim3((unsigned)threads);
    cfg.dynamicSmemBytes = (size_t)smem;
    cfg.stream = stream;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    MK_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kern, ma, mb, a, p));
    return MK_STATUS_OK;
  }
  kern<<<total, threads, smem, stream>>>(ma, mb, a, p);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

/* Upper bound on the tiles of width bn: every group adds at most one partial tile-row. */
static inline int64_t mk_gemm_tiles_bound(const mk_gemm_args &args, int bn) {
  const int64_t tiles_m = (args.m_cap + mk_gemm_config::kBM - 1) / mk_gemm_config::kBM + (args.rows ? args.groups : 0);
  return tiles_m * ((args.n + bn - 1) / bn);
}

static inline bool mk_gemm_is_width(int bn) {
  for (int i = 0; i < mk_gemm_nwidths; i++)
    if (mk_gemm_widths[i] == bn) return true;
  return false;
}

/* Checks the shape, the layout, the forced tile width (0 or one of mk_gemm_widths) and the pointers. */
static inline mk_status mk_gemm_core_check(const uint16_t *A, const uint16_t *B, const mk_gemm_args &args,
                                           mk_gemm_b_layout layout, int tile_n) {
  using Cfg = mk_gemm_config;
  if (args.m_cap < 0 || args.n <= 0 || args.k <= 0 || args.n % 8 || args.k % 8 || args.groups < 1 ||
      args.groups > Cfg::kMaxGroups || args.m_cap > INT32_MAX - Cfg::kBM || args.n > INT32_MAX - 256 ||
      args.k > INT32_MAX || (layout != MK_GEMM_B_NK && layout != MK_GEMM_B_KN) ||
      (tile_n != 0 && !mk_gemm_is_width(tile_n)))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "gemm: bad shape M=%lld N=%lld K=%lld groups=%d layout=%d tile_n=%d (need M >= 0, N and K > 0 "
                  "and multiples of 8, 1 <= groups <= %d)",
                  (long long)args.m_cap, (long long)args.n, (long long)args.k, args.groups, (int)layout, tile_n,
                  Cfg::kMaxGroups);
  if (args.m_cap > 0 && (!A || !B || !args.C || ((uintptr_t)A | (uintptr_t)B | (uintptr_t)args.C) % 16))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "gemm: A, B and C must be non-null and 16-byte aligned");
  return MK_STATUS_OK;
}

static inline mk_status mk_gemm_sm_count(int *sms) {
  int dev = 0;
  MK_CUDA_CHECK(cudaGetDevice(&dev));
  MK_CUDA_CHECK(cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev));
  return MK_STATUS_OK;
}

/* Relative time per flop of a tile width, 256 = 1: 0.8 + 51.2 / bn, i.e. proportional to the
 * shared-memory bytes each wgmma reads per flop ((64 + bn) / bn: A's 64 rows and B's bn rows of
 * every k-step), scaled so that 128 costs the 1.2 measured on an H200 (docs/perf/NOTES.md,
 * version 2). */
static inline double mk_gemm_width_cost(int bn) { return 0.8 + 51.2 / bn; }

/* Time of a data-parallel launch of width bn on `grid` CTAs, in k-iterations of a 256-wide
 * tile: waves (the last one counted whole) x tile area x the width's cost per flop. */
static inline double mk_gemm_dp_cost(const mk_gemm_args &args, int grid, int bn) {
  const int64_t tiles = mk_gemm_tiles_bound(args, bn), k_iters = (args.k + mk_gemm_config::kBK - 1) / mk_gemm_config::kBK;
  return (double)((tiles + grid - 1) / grid) * (double)bn / 256.0 * mk_gemm_width_cost(bn) * (double)k_iters;
}

/* Tile width for a data-parallel launch on `grid` CTAs: the cheapest by mk_gemm_dp_cost among
 * mk_gemm_widths (all) or 128 and 256 (!all: the grouped GEMM and the fused ops), ties to the
 * wider tile. The narrower widths win where wider tiles fill the last wave of SMs poorly
 * (2048 x 2560: 160; 2048 x 7168: 224; M <= 128: 128). */
static inline int mk_gemm_pick_width(const mk_gemm_args &args, int grid, bool all) {
  int best = 256;
  double best_cost = mk_gemm_dp_cost(args, grid, 256);
  for (int i = mk_gemm_nwidths - 1; i >= 0; i--) {
    const int bn = mk_gemm_widths[i];
    if (!all && bn != 128) continue;
    const double c = mk_gemm_dp_cost(args, grid, bn);
    if (c < best_cost) {
      best = bn;
      best_cost = c;
    }
  }
  return best;
}

/* Split-K plan for a plain GEMM (groups == 1) of 256-wide tiles (or tile_n when forced to 128
 * or 256; other widths never split) on `grid` resident CTAs. The last wave (tiles - full
 * waves before it) is split in `splits` k-slices; *splits = 0: data-parallel. mode: -1 the
 * model, 0 never, 2..16 that many slices. Model, in k-iterations of a 256-wide tile per CTA:
 * split costs the full waves, one slice, and 4 + 2 (splits - 1) + 12 for the fix-up (write
 * one, read splits - 1 fp32 tiles; the 12 calibrated on the H200 run of version 5, which
 * took 0.1 wave more than the rest of the model at both shapes it split); data-parallel the
 * cheapest width (mk_gemm_pick_width). Slices fill the idle SMs (splits = grid / last-wave
 * tiles, at most 8, each slice >= 8 iterations) and are taken when 5 % cheaper. Returns the
 * split tile count. */
static inline int64_t mk_gemm_split_plan(const mk_gemm_args &args, int grid, int mode, int tile_n, int *splits) {
  *splits = 0;
  if (mode == 0 || args.groups != 1 || args.rows || (tile_n && tile_n != 128 && tile_n != 256)) return 0;
  const int bn = tile_n ? tile_n : 256;
  const int64_t tiles = mk_gemm_tiles_bound(args, bn), k_iters = (args.k + mk_gemm_config::kBK - 1) / mk_gemm_config::kBK;
  const int64_t last = tiles - (tiles - 1) / grid * grid; /* tiles of the last wave, 1..grid */
  int64_t s = mode > 0 ? mode : std::min<int64_t>(std::min<int64_t>(grid / last, k_iters / 8), 8);
  s = std::min(s, k_iters);
  if (s < 2) return 0;
  if (mode < 0) {
    if (tile_n || last == grid) return 0;
    const double dp = mk_gemm_dp_cost(args, grid, mk_gemm_pick_width(args, grid, true));
    const double sk =
        (double)((tiles - 1) / grid * k_iters) + (double)k_iters / (double)s + 16.0 + 2.0 * (double)(s - 1);
    if (!(sk < 0.95 * dp)) return 0;
  }
  *splits = (int)s;
  return last;
}

/* Validates the shape, picks the tile width and launches. A: [m_cap, K]; B: groups x ([N, K]
 * or [K, N]); C: [m_cap, N]. grid = 0: one CTA per SM (capped at the tile count). tile_n =
 * 0 picks the width (mk_gemm_pick_width). kAllWidths: every width of mk_gemm_widths (the
 * plain GEMM); else 128 and 256 only (fewer instantiations for the fused ops and the grouped
 * GEMM), a forced other width counting as 0. */
template <class Policy, bool kAllWidths = false>
static mk_status mk_gemm_core_launch(const uint16_t *A, const uint16_t *B, const mk_gemm_args &args,
                                     mk_gemm_b_layout layout, const Policy &policy, int grid, int tile_n,
                                     cudaStream_t stream) {
  MK_CHECK(mk_gemm_core_check(A, B, args, layout, tile_n));
  if (args.m_cap == 0) return MK_STATUS_OK;
  if (grid <= 0) MK_CHECK(mk_gemm_sm_count(&grid));
  if (!kAllWidths && tile_n != 128 && tile_n != 256) tile_n = 0;
  if (!tile_n) tile_n = mk_gemm_pick_width(args, grid, kAllWidths);
  const int64_t want = mk_gemm_tiles_bound(args, tile_n);
  if (want < grid) grid = (int)want;
  if (tile_n == 256) return mk_gemm_core_launch_bn<Policy, 256>(A, B, args, layout, policy, grid, stream);
  if constexpr (kAllWidths) {
    if (tile_n == 224) return mk_gemm_core_launch_bn<Policy, 224>(A, B, args, layout, policy, grid, stream);
    if (tile_n == 160) return mk_gemm_core_launch_bn<Policy, 160>(A, B, args, layout, policy, grid, stream);
  }
  return mk_gemm_core_launch_bn<Policy, 128>(A, B, args, layout, policy, grid, stream);
}

/* Loads every instantiation a launch of Policy may pick (CUDA lazy loading: a kernel that
 * spins on another must not wait behind a module load; see comm/mk_device.cuh); kAllWidths as
 * in mk_gemm_core_launch. */
template <class Policy, int kBN>
static mk_status mk_gemm_core_preload_bn() {
  cudaFuncAttributes fa;
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_gemm_core_kernel<Policy, 0, kBN>));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_gemm_core_kernel<Policy, 1, kBN>));
  return MK_STATUS_OK;
}
template <class Policy, bool kAllWidths = false>
static mk_status mk_gemm_core_preload() {
  MK_CHECK((mk_gemm_core_preload_bn<Policy, 128>()));
  MK_CHECK((mk_gemm_core_preload_bn<Policy, 256>()));
  if constexpr (kAllWidths) {
    MK_CHECK((mk_gemm_core_preload_bn<Policy, 160>()));
    MK_CHECK((mk_gemm_core_preload_bn<Policy, 224>()));
  }
  return MK_STATUS_OK;
}

#endif /* MK_KERNELS_GEMM_CORE_CUH */
