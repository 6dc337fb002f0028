/* fused.c — the fused ops' handle: workspace in the symmetric heap, argument checks shared by
 * the three launchers, role-split defaults, epochs. The kernels are in ag_gemm.cu,
 * gemm_rs.cu and gemm_ar.cu. */
#include <cuda_runtime_api.h>
#include <stdlib.h>

#include "core/check.h"
#include "kernels/fused/fused_internal.h"

static const char *const k_names[3] = {"ag_gemm", "gemm_rs", "gemm_ar"};

/* GEMM+RS / GEMM+AR: split the GEMM's last wave along K (fused_reduce.cuh): -1 where the
 * core's wave model says it pays, 0 never, 2..16 always in that many slices. */
MK_PARAM_INT(fused_split_k, "FUSED_SPLIT_K", -1, -1, 16)
/* RS/AR reducer CTAs on SM roles, one node group: 1 = 2-D TMA loads of the peers' partial
 * sub-blocks into shared memory (fused_reduce.cuh, reduce_tma), 0 = 16-byte register loads. */
MK_PARAM_INT(fused_reduce_tma, "FUSED_REDUCE_TMA", 0, 0, 1)
/* RS/AR on SM roles (register loads): 1 = the GEMM CTAs join the reducers after their last tile,
 * every reducer taking the next block from a per-call counter (fused_reduce.cuh, tail); 0 = only
 * the role CTAs reduce, each a fixed stride of the blocks. */
MK_PARAM_INT(fused_tail, "FUSED_TAIL", 1, 0, 1)
/* RS / AR two-shot on SM roles, one node group: 1 = push mode (fused_reduce.cuh): the GEMM's epilogue
 * stores the rows of other owners straight into their PX over NVLink as tiles are produced, and the
 * owners' reducers read every partial locally; 0 = the partials stay in P and the reducers pull them
 * from the peers. Needs 2 max_m max_n bf16 more of heap, allocated at create where the heap has room
 * (the same answer on every rank), and read again by each call; without PX, 0. */
MK_PARAM_INT(fused_push, "FUSED_PUSH", 1, 0, 1)

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Counters an op needs for shapes up to the maxima. */
static uint64_t ncounters(mk_fused_op op, int world, int64_t m, int64_t n) {
  if (op == MK_FUSED_AG_GEMM) return (uint64_t)world * (uint64_t)cdiv(cdiv(m, world), 128);
  const uint64_t blocks = (uint64_t)world * (uint64_t)cdiv(m, 128) * (uint64_t)cdiv(n, 128);
  /* AR's small-M path (gemm_ar.cu) flags W x ceil(n / 64) slabs of MK_GEMM_SKINNY_BN = 64, twice
   * (its two-shot's second phase). */
  const uint64_t slabs = op == MK_FUSED_GEMM_AR ? 2ull * (uint64_t)world * (uint64_t)cdiv(n, 64) : 0;
  return blocks > slabs ? blocks : slabs;
}

mk_status mk_fused_create(mk_comm_t *comm, unsigned ops, int64_t max_m, int64_t max_n, int64_t max_k,
                          mk_fused_t **out) {
  if (!comm) {
    if (out) *out = NULL;
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "fused: create needs a comm");
  }
  return mk_fused_create_group(comm, 0, mk_comm_world(comm)->size, ops, max_m, max_n, max_k, out);
}

mk_status mk_fused_create_group(mk_comm_t *comm, int first, int n, unsigned ops, int64_t max_m, int64_t max_n,
                                int64_t max_k, mk_fused_t **out) {
  if (!out) return MK_STATUS_INVALID_ARGUMENT;
  *out = NULL;
  if (!comm || max_m < 1 || max_n < 8 || max_k < 8 || max_n % 8 || max_k % 8 || max_m > (1ll << 30) ||
      max_n > (1ll << 30) || max_k > (1ll << 30) || ops > 7u)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "fused: create needs a comm, max_m >= 1, max_n and max_k multiples of 8 (got %lld x %lld x %lld, "
                  "ops mask 0x%x)",
                  (long long)max_m, (long long)max_n, (long long)max_k, ops);
  if (!ops) ops = 7u;
  mk_status st = MK_STATUS_OK;
  mk_fused_t *f = calloc(1, sizeof *f);
  if (!f) return MK_STATUS_OUT_OF_MEMORY;
  f->comm = comm;
  const mk_world *w = mk_comm_world(comm);
  const int whole = first == 0 && n == w->size;
  if (!whole && (n < 2 || first < 0 || first + n > w->size || w->rank < first || w->rank >= first + n ||
                 first / w->local_size != (first + n - 1) / w->local_size)) {
    free(f);
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "fused: group of ranks %d .. %d for rank %d: want 2 or more consecutive ranks of one node group "
                  "(%d ranks per node group, %d in all) that include this one, or the whole comm",
                  first, first + n - 1, w->rank, w->local_size, w->size);
  }
  f->wrank = w->rank;
  f->world = whole ? w->size : n;
  f->me = w->rank - (whole ? 0 : first);
  f->local_size = whole ? w->local_size : n;
  f->node = whole ? w->node : 0;
  f->nnodes = whole ? w->nnodes : 1;
  f->gpu_shared = mk_comm_gpu_shared(comm);
  f->max_m = max_m;
  f->max_n = max_n;
  f->max_k = max_k;
  MK_CHECK_GOTO(mk_comm_dev_world(comm, &f->w), st, fail);
  if (!whole) { /* the group's view: peer i is rank first + i (every transfer is over NVLink / IPC) */
    char *peers[MK_MAX_LOCAL];
    for (int i = 0; i < n; i++) peers[i] = f->w.peer_heap[(first + i) % w->local_size];
    for (int i = 0; i < MK_MAX_LOCAL; i++) f->w.peer_heap[i] = i < n ? peers[i] : NULL;
  }
  int dev = mk_comm_device(comm);
  MK_CUDA_CHECK_GOTO(cudaDeviceGetAttribute(&f->sms, cudaDevAttrMultiProcessorCount, dev), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&f->calls, 3 * sizeof(uint64_t)), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMemset(f->calls, 0, 3 * sizeof(uint64_t)), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&f->exits, 3 * sizeof(uint32_t)), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMemset(f->exits, 0, 3 * sizeof(uint32_t)), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&f->claims, 6 * sizeof(uint32_t)), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMemset(f->claims, 0, 6 * sizeof(uint32_t)), st, fail);
  MK_CUDA_CHECK_GOTO(cudaDeviceSynchronize(), st, fail);
  MK_CHECK_GOTO(mk_fused_preload_advance(), st, fail);
  for (int op = 0; op < 3; op++) {
    if (!(ops & (1u << op))) continue;
    mk_fused_ws *ws = &f->ws[op];
    uint64_t bytes;
    if (op == MK_FUSED_AG_GEMM) bytes = (uint64_t)max_m * (uint64_t)max_k * 2;
    else { /* RS, AR: this rank's partial product, twice (calls alternate by epoch parity) */
      ws->pbytes = ((uint64_t)max_m * (uint64_t)max_n * 2 + 255) & ~(uint64_t)255;
      bytes = 2 * ws->pbytes;
      /* Split-K of the GEMM's last wave: at most one fp32 128 x 256 partial per SM. */
      f->split_bytes = (size_t)f->sms * 128 * 256 * 4;
      MK_CUDA_CHECK_GOTO(cudaMalloc(&f->split_ws[op], MK_FUSED_SPLIT_FLAG_BYTES + f->split_bytes), st, fail);
      MK_CUDA_CHECK_GOTO(cudaMemset(f->split_ws[op], 0, MK_FUSED_SPLIT_FLAG_BYTES), st, fail);
      MK_CUDA_CHECK_GOTO(cudaDeviceSynchronize(), st, fail); /* the ops run on non-blocking streams */
    }
    ws->ncnt = ncounters((mk_fused_op)op, f->world, max_m, max_n);
    MK_CHECK_GOTO(mk_comm_heap_alloc(comm, bytes, &ws->buf), st, fail);
    MK_CHECK_GOTO(mk_comm_heap_alloc(comm, 8ull * MK_FUSED_ARRIVE_SLOTS, &ws->arrive), st, fail);
    MK_CHECK_GOTO(mk_comm_heap_alloc(comm, 8ull * ws->ncnt, &ws->cnt), st, fail);
    MK_CHECK_GOTO(mk_comm_heap_alloc(comm, 8ull * 3 * MK_FUSED_ARRIVE_SLOTS, &ws->xsig), st, fail);
    /* Copy-engine modes (copy_engine.c): their own flags, side streams and events; RS/AR
     * also the staging (mk_fused_ce_stage), where their mode can run at these maxima. */
    const uint64_t pieces = ncounters(MK_FUSED_AG_GEMM, f->world, max_m, max_n); /* W x pieces of >= 128 rows */
    const uint64_t nce = op == MK_FUSED_AG_GEMM ? MK_FUSED_ARRIVE_SLOTS + pieces
                                                : 3 * MK_FUSED_ARRIVE_SLOTS + 3 * pieces; /* cnt, piece, sum */
    MK_CHECK_GOTO(mk_comm_heap_alloc(comm, 8ull * nce, &ws->ce), st, fail);
    if (!f->ce_fork) {
      MK_CUDA_CHECK_GOTO(cudaEventCreateWithFlags(&f->ce_fork, cudaEventDisableTiming), st, fail);
      for (; f->ce_nside < (f->local_size > 2 ? f->local_size - 1 : 1); f->ce_nside++) {
        MK_CUDA_CHECK_GOTO(cudaStreamCreateWithFlags(&f->ce_side[f->ce_nside], cudaStreamNonBlocking), st, fail);
        MK_CUDA_CHECK_GOTO(cudaEventCreateWithFlags(&f->ce_join[f->ce_nside], cudaEventDisableTiming), st, fail);
      }
    }
    if (op != MK_FUSED_AG_GEMM) MK_CHECK_GOTO(mk_fused_ce_stage(f, (mk_fused_op)op), st, fail);
    if (op != MK_FUSED_AG_GEMM && f->ce_p[op]) { /* beside mode's progress counters (beside.cuh), local */
      const uint64_t rows = (uint64_t)cdiv(cdiv(max_m, f->world), 128) + 16; /* + a group (kGroupM = 16 tile-rows) */
      f->bs_nprog[op] = (uint64_t)f->world * rows * (uint64_t)cdiv(max_n, 256);
      MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&f->bs_prog[op], 8 * f->bs_nprog[op]), st, fail);
    }
    if (op != MK_FUSED_AG_GEMM && f->ce_p[op] && !f->ce_red) { /* MK_FUSED_CE_OVERLAP's reduce stream */
      MK_CUDA_CHECK_GOTO(cudaStreamCreateWithFlags(&f->ce_red, cudaStreamNonBlocking), st, fail);
      MK_CUDA_CHECK_GOTO(cudaEventCreateWithFlags(&f->ce_red_join, cudaEventDisableTiming), st, fail);
    }
    if (op == MK_FUSED_GEMM_AR && f->nnodes == 1) { /* small-M one-shot slots (gemm_ar.cu) */
      const uint64_t rows = (uint64_t)(max_m < 128 ? max_m : 128); /* M <= 128 (kMaxM, gemm_skinny.cuh) */
      MK_CHECK_GOTO(mk_comm_heap_alloc(comm, 2ull * (uint64_t)f->world * rows * (uint64_t)max_n * 2, &ws->sk), st, fail);
      /* its LL slots (MK_FUSED_AR_LL): partials of up to 1 MiB, each 4 bytes beside a 4-byte flag */
      const uint64_t part = rows * (uint64_t)max_n * 2;
      ws->llbytes = 2 * (part < (1u << 20) ? part : (1u << 20));
      MK_CHECK_GOTO(mk_comm_heap_alloc(comm, 2ull * (uint64_t)f->world * ws->llbytes, &ws->ll), st, fail);
    }
    if (f->nnodes == 1 && op != MK_FUSED_AG_GEMM && mk_param_fused_push()) { /* push mode's PX, where it fits */
      ws->pxbytes = ((uint64_t)f->world * (uint64_t)cdiv(max_m, f->world) * (uint64_t)max_n * 2 + 255) & ~(uint64_t)255;
      if (mk_comm_heap_left(comm) >= 2 * ws->pxbytes)
        MK_CHECK_GOTO(mk_comm_heap_alloc(comm, 2 * ws->pxbytes, &ws->px), st, fail);
    }
    if (f->nnodes > 1 && op != MK_FUSED_AG_GEMM) {
      const uint64_t rows = op == MK_FUSED_GEMM_RS ? (uint64_t)cdiv(max_m, f->world) : (uint64_t)max_m;
      MK_CHECK_GOTO(mk_comm_heap_alloc(comm, (uint64_t)f->world * rows * (uint64_t)max_n * 2, &ws->xbuf), st, fail);
    }
    ws->ready = 1;
  }
  if (ops & 1u) MK_CHECK_GOTO(mk_fused_preload_ag(), st, fail);
  if (ops & 2u) MK_CHECK_GOTO(mk_fused_preload_rs(), st, fail);
  if (ops & 4u) MK_CHECK_GOTO(mk_fused_preload_ar(), st, fail);
  *out = f;
  return MK_STATUS_OK;
fail:
  mk_fused_destroy(f);
  return st;
}

void mk_fused_destroy(mk_fused_t *f) {
  if (!f) return;
  if (f->trace) cudaFree(f->trace);
  if (f->calls) cudaFree(f->calls);
  if (f->exits) cudaFree(f->exits);
  if (f->claims) cudaFree(f->claims);
  if (f->ar_prof) cudaFree(f->ar_prof);
  for (int op = 0; op < 3; op++)
    if (f->rmaps[op]) cudaFree(f->rmaps[op]);
  for (int i = 0; i < MK_MAX_LOCAL; i++) {
    if (f->ce_side[i]) cudaStreamDestroy(f->ce_side[i]);
    if (f->ce_join[i]) cudaEventDestroy(f->ce_join[i]);
  }
  if (f->ce_fork) cudaEventDestroy(f->ce_fork);
  if (f->ce_red) cudaStreamDestroy(f->ce_red);
  if (f->ce_red_join) cudaEventDestroy(f->ce_red_join);
  for (int op = 0; op < 3; op++) {
    if (f->ce_p[op]) cudaFree(f->ce_p[op]);
    if (f->bs_prog[op]) cudaFree(f->bs_prog[op]);
  }
  for (int op = 0; op < 3; op++)
    if (f->split_ws[op]) cudaFree(f->split_ws[op]);
  free(f);
}

mk_status mk_fused_check(const mk_fused_t *f, mk_fused_op op, const mk_fused_args *a) {
  const char *name = (unsigned)op < 3 ? k_names[op] : "fused";
  if (!f || !a || (unsigned)op >= 3)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "%s: NULL handle or arguments", name);
  if (!f->ws[op].ready)
    MK_ERR_RETURN(MK_STATUS_INVALID_USAGE, MK_SUBSYS_KERNEL, "%s: the handle was created without this op (ops mask)",
                  name);
  if (f->world > MK_FUSED_ARRIVE_SLOTS || f->local_size > MK_MAX_LOCAL)
    MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_KERNEL, "%s: %d ranks, %d per node group; at most %d and %d", name,
                  f->world, f->local_size, MK_FUSED_ARRIVE_SLOTS, MK_MAX_LOCAL);
  const int W = f->world;
  if (a->m < 1 || a->n < 8 || a->k < 8 || a->n % 8 || a->k % 8)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "%s: bad shape M=%lld N=%lld K=%lld (need M >= 1, N and K multiples of 8)", name, (long long)a->m,
                  (long long)a->n, (long long)a->k);
  if (op != MK_FUSED_GEMM_AR && a->m % W)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "%s: M=%lld is not a multiple of the %d ranks (each rank holds M/W rows)", name, (long long)a->m, W);
  const int64_t kmax = op == MK_FUSED_AG_GEMM ? f->max_k : (int64_t)1 << 30;
  const int64_t nmax = op == MK_FUSED_AG_GEMM ? (int64_t)1 << 30 : f->max_n;
  if (a->m > f->max_m || a->k > kmax || a->n > nmax)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "%s: shape M=%lld N=%lld K=%lld exceeds the workspace of mk_fused_create (%lld x %lld x %lld)", name,
                  (long long)a->m, (long long)a->n, (long long)a->k, (long long)f->max_m, (long long)f->max_n,
                  (long long)f->max_k);
  if (!a->A || !a->B || !a->C || (((uintptr_t)a->A | (uintptr_t)a->B | (uintptr_t)a->C) & 15))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "%s: A, B and C must be non-NULL and 16-byte aligned",
                  name);
  if (a->b_layout != MK_GEMM_B_NK && a->b_layout != MK_GEMM_B_KN)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "%s: bad B layout %d", name, (int)a->b_layout);
  if (a->comm_ctas < 0 || a->comm_ctas > f->sms / 2)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "%s: comm_ctas=%d outside [0, %d]", name, a->comm_ctas,
                  f->sms / 2);
  return MK_STATUS_OK;
}

int mk_fused_default_ctas(mk_fused_op op, int64_t m, int64_t n, int64_t k, int world) {
  (void)k;
  (void)world;
  int dev = 0, sms = 132;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
    sms = 132;
  /* AG: pushers (16 where the SM pushers run by shape, N below MK_FUSED_AG_CE_MIN_N: the op is bound by its
   * transfer; run 22aa710, M = 8192, N = 1024, K = 4096 / 2048: 0.222 / 0.129 ms with 16, 0.226 / 0.126 with 32,
   * 0.284 / 0.162 with 8; 8 otherwise: several node groups); RS/AR: reducers (pulling over NVLink is
   * latency-bound: more CTAs). */
  int c = op == MK_FUSED_AG_GEMM ? (n < mk_fused_ag_ce_min_n() ? 16 : 8) : 16;
  if (op != MK_FUSED_AG_GEMM && mk_param_fused_tail()) {
    /* The GEMM CTAs join the reducers after their last tile, so role CTAs only pull what the GEMM's
     * earlier waves finished: as many as leave the GEMM's wave count (256-wide tiles) as it is with
     * 2, at least 2 (the two-shot's reduce and gather), at most 16. Run ca9b055 (N = 8192, K = 7168,
     * 4 ranks): RS M = 2048 0.462 ms with 4 (128 GEMM CTAs, 4 waves) against 0.477 with 16 and 0.516
     * with 8; AR two-shot M = 1024 0.300 with 4 against 0.303 with 16. */
    const int64_t tiles = cdiv(m, 128) * cdiv(n, 256), waves = cdiv(tiles, sms - 2);
    c = 2;
    while (c < 16 && cdiv(tiles, sms - c - 1) == waves) c++;
    return c;
  }
  if (op != MK_FUSED_AG_GEMM) {
    /* Small M: the GEMM has fewer tiles than SMs; idle SMs reduce (at most 32). */
    const int64_t tiles = cdiv(m, 128) * cdiv(n, 128);
    if (tiles < sms && sms - tiles > c) c = (int)(sms - tiles) < 32 ? (int)(sms - tiles) : 32;
  }
  if (c > sms / 2) c = sms / 2;
  return c;
}

int mk_fused_ctas(const mk_fused_t *f, mk_fused_op op, const mk_fused_args *a) {
  int c = a->comm_ctas ? a->comm_ctas : mk_fused_default_ctas(op, a->m, a->n, a->k, f->world);
  if (c < 1) c = 1;
  if (c > f->sms / 2) c = f->sms / 2;
  return c;
}

int mk_fused_compute_ctas(const mk_fused_t *f, int roles) { return f->sms - roles - (f->nnodes > 1 ? 1 : 0); }

int mk_fused_reduce_tma_shapes(const mk_fused_t *f, mk_fused_op op) {
  if (!f || (unsigned)op > MK_FUSED_GEMM_AR || !f->rmaps[op]) return 0;
  int k = 0;
  for (int i = 0; i < MK_FUSED_RMAP_SLOTS; i++) k += f->rmap_key[op][i][0] != 0;
  return k;
}

int mk_fused_push_calls(const mk_fused_t *f, mk_fused_op op) {
  return f && (unsigned)op <= MK_FUSED_GEMM_AR ? f->push_calls[op] : 0;
}

int mk_fused_beside_calls(const mk_fused_t *f, mk_fused_op op) {
  return f && (unsigned)op <= MK_FUSED_GEMM_AR ? f->beside_calls[op] : 0;
}

int mk_fused_fold_calls(const mk_fused_t *f, mk_fused_op op) {
  return f && (unsigned)op <= MK_FUSED_GEMM_AR ? f->fold_calls[op] : 0;
}

int mk_fused_ce_fold_calls(const mk_fused_t *f, mk_fused_op op) {
  return f && (unsigned)op <= MK_FUSED_GEMM_AR ? f->ce_fold_calls[op] : 0;
}

mk_status mk_fused_epoch_advance(mk_fused_t *f, mk_fused_op op, mk_stream_t stream) {
  return mk_fused_launch_advance(&f->w.ctrl->epoch[MK_FUSED_EPOCH_SLOT0 + (int)op], f->calls + (int)op,
                                 f->claims + 2 * (int)op, stream);
}

static const char *const ar_phase_names[MK_FUSED_AR_PHASES] = {"entry", "entry_last", "gemm", "pushed",
                                                              "waited", "reduced", "exit"};

const char *mk_fused_ar_phase_name(int phase) {
  return phase >= 0 && phase < MK_FUSED_AR_PHASES ? ar_phase_names[phase] : "?";
}

mk_status mk_fused_ar_profile(mk_fused_t *f, int on) {
  if (!f) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "gemm_ar: profile needs a handle");
  if (!on) {
    if (f->ar_prof) {
      MK_CUDA_CHECK(cudaDeviceSynchronize()); /* no call in flight still stamps into it */
      MK_CUDA_CHECK(cudaFree(f->ar_prof));
    }
    f->ar_prof = NULL;
    return MK_STATUS_OK;
  }
  if (!f->ar_prof) {
    MK_CUDA_CHECK(cudaMalloc((void **)&f->ar_prof, sizeof(uint64_t) * MK_FUSED_AR_PHASES));
    MK_CUDA_CHECK(cudaMemset(f->ar_prof, 0, sizeof(uint64_t) * MK_FUSED_AR_PHASES));
    MK_CUDA_CHECK(cudaDeviceSynchronize()); /* the ops run on non-blocking streams */
  }
  return MK_STATUS_OK;
}

mk_status mk_fused_ar_phases(mk_fused_t *f, uint64_t ns[MK_FUSED_AR_PHASES]) {
  if (!f || !ns) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "gemm_ar: phases need a handle and ns");
  if (!f->ar_prof)
    MK_ERR_RETURN(MK_STATUS_INVALID_USAGE, MK_SUBSYS_KERNEL, "gemm_ar: phases without mk_fused_ar_profile(f, 1)");
  MK_CUDA_CHECK(cudaDeviceSynchronize());
  MK_CUDA_CHECK(cudaMemcpy(ns, f->ar_prof, sizeof(uint64_t) * MK_FUSED_AR_PHASES, cudaMemcpyDeviceToHost));
  ns[MK_FUSED_AR_PH_ENTRY] = ns[MK_FUSED_AR_PH_ENTRY] ? ~ns[MK_FUSED_AR_PH_ENTRY] : 0; /* stored complemented */
  return MK_STATUS_OK;
}
