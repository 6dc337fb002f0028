/* bench_comm.c — `mk-bench comm`, run under mk-launch (e.g. `mk-launch -n 4 --nodes 2 --
 * mk-bench comm`): rank 0 measures, the others serve as peers.
 *   nvlink_sm / nvlink_tma / nvlink_ce   one-way put bandwidth from rank 0 to each peer of its
 *                                        node group (all SMs copying, TMA bulk copies, the copy
 *                                        engine via cudaMemcpyAsync), across message sizes
 *   nvlink_{push,pull}_cN (--per-cta)    instead of the three above: 64 MiB rank 0 -> rank 1 (push,
 *                                        16-byte stores to the peer) and rank 1 -> rank 0 (pull,
 *                                        16-byte loads from the peer), N = 1 .. 132 CTAs of 512
 *                                        threads with 8 loads in flight each: the per-SM rate
 *   reduce4_cN (--per-cta, 4+ ranks)     the fused reducers' inner loop alone (mk_fused_reduce_block
 *                                        over 128 x 128 blocks of 4 sources: rank 0's and peers
 *                                        1..3's 2048 x 8192 bf16), N CTAs of 384 threads; GB/s of
 *                                        the 4 sources read
 *   sig_nvlink                           signal round trip rank 0 <-> rank 1 (NVLink atomics)
 *   proxy_put / sig_proxy                (with --nodes >= 2) rank 0 -> first rank of node group 1
 *                                        through the FIFO + loopback proxy: PUT_SIGNAL then a
 *                                        SIGNAL back (time = put + round trip); signal round trip
 * Columns as nccl-tests: size, time, algbw (= busbw for point-to-point); JSON/CSV via --json/--csv. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#include "bench_comm.h"
#include "comm/mk_comm.h"
#include "core/check.h"
#include "mk_bench.h"

typedef struct ctx {
  mk_comm_t *c;
  mk_dev_world w;
  int method, lp, peer, initiator, via_proxy, n, pull, ctas;
  uint64_t src, dst, sig, bytes, calls;
  int *fail;
} ctx;

static mk_status run_put(void *user, int iter, void *stream) {
  ctx *x = user;
  (void)iter;
  if (x->method == 2) {
    MK_CUDA_CHECK(cudaMemcpyAsync(x->w.peer_heap[x->lp] + x->dst, x->w.heap + x->src, x->bytes, cudaMemcpyDeviceToDevice,
                                  (cudaStream_t)stream));
    return MK_STATUS_OK;
  }
  return mk_bench_comm_put(&x->w, x->method, x->lp, x->src, x->dst, x->bytes, stream);
}

static mk_status run_xfer(void *user, int iter, void *stream) {
  ctx *x = user;
  (void)iter;
  return mk_bench_comm_xfer(&x->w, x->lp, x->pull, x->ctas, x->src, x->dst, x->bytes, stream);
}

static mk_status run_reduce4(void *user, int iter, void *stream) {
  ctx *x = user;
  (void)iter;
  return mk_bench_comm_reduce4(&x->w, x->ctas, x->src, x->dst, 2048, 8192, stream);
}

static mk_status run_pingpong(void *user, int iter, void *stream) {
  ctx *x = user;
  (void)iter;
  mk_status st = mk_bench_comm_pingpong(&x->w, x->sig, x->peer, x->initiator, x->calls * (uint64_t)x->n, x->n,
                                        x->via_proxy, x->fail, stream);
  x->calls++;
  return st;
}

static mk_status run_proxy_put(void *user, int iter, void *stream) {
  ctx *x = user;
  (void)iter;
  mk_status st = mk_bench_comm_proxy_put(&x->w, x->sig, x->src, x->dst, x->bytes, x->peer, x->initiator, x->calls,
                                         x->fail, stream);
  x->calls++;
  return st;
}

static void add_row(mk_bench_report *r, const ctx *x, const char *path, const mk_bench_stats *t, int n_per_call,
                    int nodes) {
  mk_bench_row row;
  mk_bench_row_init(&row, "comm", path);
  snprintf(row.shape, sizeof row.shape, "{\"bytes\":%llu,\"peer\":%d}", (unsigned long long)x->bytes, x->peer);
  row.ranks = 2;
  row.nodes = nodes;
  row.t = *t;
  if (n_per_call > 1) { /* per round trip */
    row.t.median_ms /= n_per_call;
    row.t.p10_ms /= n_per_call;
    row.t.p90_ms /= n_per_call;
  }
  if (x->bytes) row.gbps = (double)x->bytes / (row.t.median_ms * 1e6);
  mk_bench_report_add(r, &row);
  printf("  %-11s peer %d %12llu B %10.2f us  algbw %8.2f GB/s  busbw %8.2f GB/s\n", path, x->peer,
         (unsigned long long)x->bytes, row.t.median_ms * 1e3, x->bytes ? row.gbps : 0.0, x->bytes ? row.gbps : 0.0);
}

int mk_bench_comm(int argc, char **argv) {
  mk_bench_opts o;
  mk_bench_opts_default(&o);
  int64_t max_bytes = 256ll << 20;
  int per_cta = 0, ldcg = 0;
  int64_t smem_kb = 0;
  for (int i = 1; i < argc; i++) {
    int used = mk_bench_parse_common(&o, argc, argv, i);
    if (used < 0) return 2;
    if (used) {
      i += used - 1;
      continue;
    }
    if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc) {
      if (mk_bench_parse_i64("--max-bytes", argv[++i], 4096, 1ll << 32, &max_bytes)) return 2;
    } else if (!strcmp(argv[i], "--per-cta")) {
      per_cta = 1;
    } else if (!strcmp(argv[i], "--smem-kb") && i + 1 < argc) {
      if (mk_bench_parse_i64("--smem-kb", argv[++i], 0, 227, &smem_kb)) return 2;
    } else if (!strcmp(argv[i], "--ldcg")) {
      ldcg = 1;
    } else if (!strcmp(argv[i], "--help")) {
      printf("usage: mk-launch -n N [--nodes K] -- mk-bench comm [--max-bytes B] [--per-cta [--smem-kb K] [--ldcg]] [common flags]\n"
             "  --per-cta  NVLink push and pull rates by CTA count (1 .. SMs), 64 MiB, instead of the puts\n"
             "  --smem-kb K  with --per-cta: each CTA also holds K KiB of dynamic shared memory (0..227; a fused\n"
             "             kernel's CTAs hold ~200, which leaves the L1 cache the rest)\n"
             "  --ldcg     with --per-cta: the copies load with ld.global.cg (L1 bypassed)\n");
      mk_bench_print_common_help(stdout);
      return 0;
    } else {
      fprintf(stderr, "mk-bench comm: unknown flag '%s'\n", argv[i]);
      return 2;
    }
  }
  if (!per_cta && (smem_kb || ldcg)) {
    fprintf(stderr, "mk-bench comm: --smem-kb and --ldcg apply to --per-cta only\n");
    return 2;
  }
  mk_world wd;
  const int early = mk_bench_multi_rank("comm", argc, 2, &wd);
  if (early >= 0) return early;
  ctx x;
  memset(&x, 0, sizeof x);
  mk_bench_report *r = NULL;
  cudaStream_t s = NULL;
  int rc = 1;
  mk_status st;
  MK_CHECK_GOTO(mk_comm_create(&x.c), st, fail);
  o.rank = wd.rank, o.nranks = wd.size;
  MK_CHECK_GOTO(mk_comm_dev_world(x.c, &x.w), st, fail);
  MK_CHECK_GOTO(mk_comm_heap_alloc(x.c, (uint64_t)max_bytes, &x.src), st, fail);
  MK_CHECK_GOTO(mk_comm_heap_alloc(x.c, (uint64_t)max_bytes, &x.dst), st, fail);
  MK_CHECK_GOTO(mk_comm_heap_alloc(x.c, 8ull * wd.size, &x.sig), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&x.fail, sizeof(int)), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMemset(x.fail, 0, sizeof(int)), st, fail);
  MK_CUDA_CHECK_GOTO(cudaDeviceSynchronize(), st, fail); /* the memset (legacy stream) before s's work */
  MK_CUDA_CHECK_GOTO(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), st, fail);
  MK_CHECK_GOTO(mk_bench_report_create(&o, &r), st, fail);
  const int me = wd.rank, L = wd.local_size;
  /* 1. NVLink one-way put bandwidth, rank 0 to each peer of its node group. */
  if (me == 0) printf("NVLink put (rank 0 -> peer), %d ranks per node group\n", L);
  static const char *const names[3] = {"nvlink_sm", "nvlink_tma", "nvlink_ce"};
  if (per_cta && L >= 2 && me == 0) {
    MK_CHECK_GOTO(mk_bench_comm_per_cta_opts((int)smem_kb << 10, ldcg), st, fail);
    static const int cand[] = {1, 2, 4, 8, 16, 32, 64, 132};
    static char paths[2][8][32]; /* rows keep a pointer to their path until the report is written */
    int sms = 132, dev = 0;
    if (cudaGetDevice(&dev) == cudaSuccess) cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    for (int pull = 0; pull < 2; pull++)
      for (size_t c = 0; c < sizeof cand / sizeof cand[0] && cand[c] <= sms; c++) {
        mk_bench_stats t;
        char *path = paths[pull][c];
        x.lp = 1, x.peer = 1, x.pull = pull, x.ctas = cand[c];
        x.bytes = (uint64_t)(max_bytes < (64ll << 20) ? max_bytes : 64ll << 20) & ~(uint64_t)15;
        MK_CHECK_GOTO(mk_bench_time(&o, run_xfer, &x, s, &t), st, fail);
        snprintf(path, sizeof paths[0][0], "nvlink_%s_c%d", pull ? "pull" : "push", cand[c]);
        add_row(r, &x, path, &t, 1, 1);
      }
    static char rpaths[6][32];
    for (int c = 0; c < 6 && L >= 4 && max_bytes >= (32ll << 20); c++) {
      mk_bench_stats t;
      x.ctas = 1 << c;
      x.bytes = 4ull * 2048 * 8192 * 2; /* the four sources read */
      MK_CHECK_GOTO(mk_bench_time(&o, run_reduce4, &x, s, &t), st, fail);
      snprintf(rpaths[c], sizeof rpaths[c], "reduce4_c%d", x.ctas);
      add_row(r, &x, rpaths[c], &t, 1, 1);
    }
  }
  for (int lp = 1; lp < L && !per_cta; lp++)
    for (int m = 0; m < 3; m++)
      for (uint64_t b = 64 << 10; b <= (uint64_t)max_bytes; b *= 4) {
        if (me == 0) {
          mk_bench_stats t;
          x.method = m;
          x.lp = lp;
          x.peer = lp;
          x.bytes = b;
          MK_CHECK_GOTO(mk_bench_time(&o, run_put, &x, s, &t), st, fail);
          add_row(r, &x, names[m], &t, 1, 1);
        }
      }
  MK_CHECK_GOTO(mk_comm_barrier(x.c), st, fail);
  /* 2. Signal round trip over NVLink: rank 0 <-> rank 1. */
  if (L >= 2 && me < 2) {
    mk_bench_stats t;
    x.peer = 1 - me;
    x.initiator = me == 0;
    x.via_proxy = 0;
    x.n = 1000;
    x.bytes = 0;
    x.calls = 0;
    MK_CHECK_GOTO(mk_bench_time(&o, run_pingpong, &x, s, &t), st, fail);
    if (me == 0) add_row(r, &x, "sig_nvlink", &t, x.n, 1);
  }
  MK_CHECK_GOTO(mk_comm_barrier(x.c), st, fail);
  /* 3. Through the proxy: rank 0 <-> rank L (first rank of node group 1). */
  if (wd.nnodes >= 2 && (me == 0 || me == L)) {
    mk_bench_stats t;
    x.peer = me == 0 ? L : 0;
    x.initiator = me == 0;
    x.via_proxy = 1;
    x.n = 100;
    x.bytes = 0;
    x.calls = 0;
    if (me == 0) printf("through the loopback proxy (rank 0 <-> rank %d)\n", L);
    MK_CHECK_GOTO(mk_bench_time(&o, run_pingpong, &x, s, &t), st, fail);
    if (me == 0) add_row(r, &x, "sig_proxy", &t, x.n, 2);
    uint64_t base = x.calls * (uint64_t)x.n; /* the counters so far */
    for (uint64_t b = 64 << 10; b <= (uint64_t)max_bytes; b *= 4) {
      x.bytes = b;
      x.calls = base;
      MK_CHECK_GOTO(mk_bench_time(&o, run_proxy_put, &x, s, &t), st, fail);
      base = x.calls;
      if (me == 0) add_row(r, &x, "proxy_put", &t, 1, 2);
    }
  }
  MK_CUDA_CHECK_GOTO(cudaStreamSynchronize(s), st, fail);
  int h_fail = 0;
  MK_CUDA_CHECK_GOTO(cudaMemcpy(&h_fail, x.fail, sizeof h_fail, cudaMemcpyDeviceToHost), st, fail);
  st = mk_comm_check(x.c);
  if (h_fail || st != MK_STATUS_OK) mk_bench_report_fail(r, "rank %d: %d failed waits/posts, comm %s", me, h_fail, mk_status_name(st));
  MK_CHECK_GOTO(mk_comm_barrier(x.c), st, fail);
  rc = mk_bench_report_finish(r);
  r = NULL;
fail:
  if (r) {
    mk_bench_report_fail(r, "rank %d: setup or timing failed", wd.rank);
    mk_bench_report_finish(r);
    rc = 1;
  }
  if (x.fail) cudaFree(x.fail);
  if (s) cudaStreamDestroy(s);
  mk_comm_destroy(x.c);
  return rc;
}
