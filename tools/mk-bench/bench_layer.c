/* bench_layer.c — `mk-bench layer`, under mk-launch (e.g. `mk-launch -n 4 -- mk-bench layer
 * --preset mixtral`): one decoder layer (attention block + MoE block) of the GPU model
 * (layers/mk_layers.h) at full layer size with random weights drawn on the GPU, fused against
 * unfused over the same weights and layout:
 *   prefill  T tokens at position 0 (--tokens, default 8192)
 *   decode   --decode one (default): B tokens at position C (--batch, default 64; --context,
 *            default 4096) of one sequence of the GPU model (the GEMMs, MoE and communication
 *            of a batch of B; the attention reads one KV cache, not B of them).
 *            --decode batch: B sequences of the serving model
 *            (mk_model_batch_t, paged KV cache of 16-token pages filled with random K/V, the
 *            pages of the sequences interleaved as a server allocates them), each with C cached
 *            positions and one new token: the attention block runs paged decode over B x C.
 * Rows per phase and path: `layer_attn` and `layer_moe` (each block, with its overlap bound:
 * compute_ms = the block without its communication, comm_ms = the communication alone (NCCL:
 * the O projection's all-reduce; the MoE all-to-allv + the TP all-gather of its output; sequence
 * parallel, extra field sp > 0 (mk_model_gpu_sp_mode: the prefill by default): the all-gather of
 * the normed rows + the O projection's reduce-scatter; the MoE all-to-allv alone),
 * bound_ms = their maximum) and `layer` (both blocks back to back;
 * bound = the sum of the block bounds; extra JSON fields attn_ms, moe_ms, tokens_per_s, sp).
 * Times are the maximum over ranks of each rank's median; before each timed call (outside its events) the
 * residual stream's rows go back to their random values at create, so that every call routes its tokens as
 * random hidden states do, and a one-element NCCL all-reduce over every rank lines the ranks up, so no
 * rank's time holds a wait for a peer that the previous call left behind. Only the config is read from
 * --config FILE / --model DIR (its config.json): weights are random, the vocabulary is cut
 * to 256 (the layer does not use it), and the layer is the first MoE layer's shape. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/mk_comm.h"
#include "core/check.h"
#include "kernels/mk_kernels.h"
#include "layers/mk_layers.h"
#include "mk_bench.h"

/* One layer of either model: g (one sequence, contiguous KV cache) or b (serving model, a
 * prepared step of n sequences). */
typedef struct layer_model {
  mk_model_gpu_t *g;
  mk_model_batch_t *b;
} layer_model;

static mk_status model_part(const layer_model *m, mk_layer_part part, int n, int pos) {
  return m->b ? mk_model_batch_run_part(m->b, 0, part) : mk_model_gpu_run_part(m->g, 0, part, n, pos);
}
static mk_status model_set_path(const layer_model *m, mk_path p) {
  return m->b ? mk_model_batch_set_path(m->b, p) : mk_model_gpu_set_path(m->g, p);
}
static void *model_stream(const layer_model *m) { return m->b ? mk_model_batch_stream(m->b) : mk_model_gpu_stream(m->g); }

typedef struct part_ctx {
  const layer_model *m;
  int n, pos, both; /* both: ATTN then FFN */
  mk_layer_part part;
  mk_path path;     /* set before each call (--interleave alternates the paths) */
} part_ctx;

static mk_status run_part(void *user, int iter, void *stream) {
  part_ctx *c = user;
  (void)iter, (void)stream;
  MK_CHECK(model_set_path(c->m, c->path));
  MK_CHECK(model_part(c->m, c->both ? MK_PART_ATTN : c->part, c->n, c->pos));
  return c->both ? model_part(c->m, MK_PART_FFN, c->n, c->pos) : MK_STATUS_OK;
}

/* mk_bench_opts.pre: a one-element NCCL all-reduce over every rank on the timed stream, so that each
 * timed call starts on all ranks together. Without it a call that ends unevenly across ranks (the MoE
 * block's combine, or the unfused path's host-synchronised all-to-all) leaves the ranks' next call
 * starting apart, and the early ranks' times include the wait for the late one (run 57bc3c2's
 * --samples: one iteration of the sequence-parallel fused layer at 5.8, 9.3, 9.3, 9.4 ms on the 4 ranks). */
/* It also puts the residual stream's rows back to their random values at create (mk_model_gpu_reset_residual):
 * run_part adds each block's output to them in place, and over hundreds of calls the rows drifted toward one
 * direction shared by every token, until every token was routed to the same top-k experts (up to session 27 the
 * layer's MoE blocks ran so, below the time to stream the experts' weights once: docs/perf/NOTES.md, layer). */
typedef struct layer_barrier {
  mk_nccl_t *nc;
  float *zero; /* device, one 0.0f: the sum stays 0 */
  const layer_model *m; /* the instance timed now (NULL: no reset), n its rows */
  int n;
} layer_barrier;
static mk_status barrier_pre(void *ctx, void *stream) {
  layer_barrier *b = ctx;
  if (b->m) MK_CHECK(b->m->b ? mk_model_batch_reset_residual(b->m->b) : mk_model_gpu_reset_residual(b->m->g, b->n));
  return mk_nccl_all_reduce(b->nc, b->zero, b->zero, 1, MK_DTYPE_F32, stream);
}

static int preset_config(const char *name, mk_model_config_t *c) {
  memset(c, 0, sizeof *c);
  c->n_layers = 1, c->head_dim = 128, c->n_heads = 32, c->norm_topk_prob = 1, c->rope_theta = 1e6;
  c->max_positions = 1 << 20, c->is_moe[0] = 1;
  if (!strcmp(name, "mixtral")) { /* Mixtral-8x7B */
    c->family = MK_FAMILY_MIXTRAL, c->hidden = 4096, c->n_kv_heads = 8, c->n_experts = 8, c->top_k = 2;
    c->moe_inter = 14336, c->rms_eps = 1e-5f;
  } else if (!strcmp(name, "qwen3")) { /* Qwen3-30B-A3B */
    c->family = MK_FAMILY_QWEN3_MOE, c->hidden = 2048, c->n_kv_heads = 4, c->n_experts = 128, c->top_k = 8;
    c->moe_inter = 768, c->rms_eps = 1e-6f, c->qk_norm = MK_QK_NORM_HEAD;
  } else {
    return -1;
  }
  return 0;
}

/* The first MoE layer of a config as a 1-layer model with a small vocabulary. */
static int one_layer(mk_model_config_t *c) {
  int l = 0;
  while (l < c->n_layers && !c->is_moe[l]) l++;
  if (l == c->n_layers) return -1;
  memset(c->is_moe, 0, sizeof c->is_moe);
  c->is_moe[0] = 1, c->n_layers = 1, c->vocab = 256;
  return 0;
}

/* Median/p10/p90 of each timed part, maximum over ranks. */
enum { P_ATTN_U, P_FFN_U, P_LAYER_U, P_ATTN_C, P_ATTN_X, P_FFN_C, P_FFN_X, P_ATTN_F, P_FFN_F, P_LAYER_F, P_N };

/* n new tokens: of one sequence at position pos (seqs 1), or one each of n sequences with pos
 * cached positions (seqs n, the serving model). */
static mk_status bench_phase(mk_comm_t *comm, const layer_model *m, const mk_bench_opts *o, mk_bench_report *r,
                             const char *model, const mk_model_config_t *c, const mk_layout_t *lay, const char *phase,
                             int n, int pos, int seqs) {
  const mk_world *wd = mk_comm_world(comm);
  const mk_layer_part parts[P_N] = {MK_PART_ATTN, MK_PART_FFN, MK_PART_ATTN, MK_PART_ATTN_COMPUTE,
                                    MK_PART_ATTN_COMM, MK_PART_FFN_COMPUTE, MK_PART_FFN_COMM, MK_PART_ATTN,
                                    MK_PART_FFN, MK_PART_ATTN};
  double med[3 * P_N], *all = malloc(sizeof med * (size_t)wd->size);
  if (!all) return MK_STATUS_OUT_OF_MEMORY;
  layer_barrier *bar = o->pre_ctx; /* each timed call starts from the residual stream at create */
  bar->m = m, bar->n = n;
  mk_status st = MK_STATUS_OK;
  /* The parts in groups timed together: one by one in P order (the unfused parts first: the MoE bound times the
   * unfused path's last routing), or with --interleave each block's and the layer's fused and unfused calls in
   * turns (same clocks under the power cap), the unfused one last for the same reason, then the compute-alone
   * and communication-alone parts in turns. -1 ends a group. */
  static const int seq[P_N][2] = {{P_ATTN_U, -1}, {P_FFN_U, -1}, {P_LAYER_U, -1}, {P_ATTN_C, -1}, {P_ATTN_X, -1},
                                  {P_FFN_C, -1},  {P_FFN_X, -1}, {P_ATTN_F, -1},  {P_FFN_F, -1},   {P_LAYER_F, -1}};
  static const int turns[5][2] = {{P_ATTN_F, P_ATTN_U}, {P_LAYER_F, P_LAYER_U}, {P_FFN_F, P_FFN_U},
                                  {P_ATTN_C, P_ATTN_X}, {P_FFN_C, P_FFN_X}};
  const int(*groups)[2] = o->interleave ? turns : seq;
  for (int q = 0; q < (o->interleave ? 5 : P_N); q++) {
    const int nf = groups[q][1] < 0 ? 1 : 2;
    part_ctx pc[2];
    void *users[2] = {&pc[0], &pc[1]};
    const mk_bench_fn fns[2] = {run_part, run_part};
    mk_bench_stats t[2];
    /* --graph: the fused blocks and layer from graph replays; the unfused path (its MoE block reads its counts on
       the host) and the compute-alone and communication-alone parts of the bounds eagerly */
    mk_bench_opts oq = *o;
    oq.graph_eager = 0;
    for (int j = 0; j < nf; j++) {
      const int p = groups[q][j];
      pc[j] = (part_ctx){m, n, pos, p == P_LAYER_U || p == P_LAYER_F, parts[p], p < P_ATTN_F ? MK_PATH_UNFUSED : MK_PATH_FUSED};
      if (p < P_ATTN_F) oq.graph_eager |= 1u << j;
    }
    MK_CHECK_GOTO(mk_bench_time_n(&oq, nf, fns, users, model_stream(m), t), st, fail);
    MK_CUDA_CHECK_GOTO(cudaStreamSynchronize((cudaStream_t)model_stream(m)), st, fail);
    MK_CHECK_GOTO(mk_comm_check(comm), st, fail);
    for (int j = 0; j < nf; j++) {
      const int p = groups[q][j];
      med[3 * p] = t[j].median_ms, med[3 * p + 1] = t[j].p10_ms, med[3 * p + 2] = t[j].p90_ms;
    }
  }
  MK_CHECK_GOTO(mk_comm_allgather(comm, med, all, sizeof med), st, fail);
  for (int q = 1; q < wd->size; q++)
    for (int i = 0; i < 3 * P_N; i++) med[i] = fmax(med[i], all[3 * P_N * q + i]);
  /* useful flops of the layer (not the duplicated work), per GPU */
  const double H = c->hidden, qw = (double)c->n_heads * c->head_dim, kw = (double)c->n_kv_heads * c->head_dim;
  const double keys = seqs > 1 ? pos + 1.0 : pos + (n + 1) / 2.0; /* mean keys per query */
  const double f_attn = 2.0 * n * H * (2 * qw + 2 * kw) + 4.0 * qw * n * keys;
  const double f_moe = 6.0 * n * c->top_k * H * c->moe_inter + 2.0 * n * H * c->n_experts;
  const double W = wd->size;
  const double b_attn = fmax(med[3 * P_ATTN_C], med[3 * P_ATTN_X]), b_ffn = fmax(med[3 * P_FFN_C], med[3 * P_FFN_X]);
  for (int path = 0; path < 2; path++) { /* 0 unfused, 1 fused */
    if (!(o->paths & (path ? MK_BENCH_PATH_FUSED : MK_BENCH_PATH_UNFUSED))) continue;
    const int ia = path ? P_ATTN_F : P_ATTN_U, iff = path ? P_FFN_F : P_FFN_U, il = path ? P_LAYER_F : P_LAYER_U;
    int sp = 0; /* mk_model_gpu_sp_mode of this path */
    if (m->g) {
      MK_CHECK_GOTO(mk_model_gpu_set_path(m->g, path ? MK_PATH_FUSED : MK_PATH_UNFUSED), st, fail);
      sp = mk_model_gpu_sp_mode(m->g, n);
    }
    const struct {
      const char *op;
      int i;
      double flops, compute, comm;
    } rows[3] = {{"layer_attn", ia, f_attn, med[3 * P_ATTN_C], med[3 * P_ATTN_X]},
                 {"layer_moe", iff, f_moe, med[3 * P_FFN_C], med[3 * P_FFN_X]},
                 {"layer", il, f_attn + f_moe, med[3 * P_ATTN_C] + med[3 * P_FFN_C],
                  med[3 * P_ATTN_X] + med[3 * P_FFN_X]}};
    for (int k = 0; k < 3; k++) {
      mk_bench_row row;
      mk_bench_row_init(&row, rows[k].op, path ? "fused" : "unfused");
      snprintf(row.shape, sizeof row.shape,
               "{\"model\":\"%s\",\"phase\":\"%s\",\"tokens\":%d,\"seqs\":%d,\"context\":%d,\"h\":%d,\"e\":%d,"
               "\"k\":%d,\"i\":%d,\"tp\":%d,\"ep\":%d}",
               model, phase, n, seqs, pos, c->hidden, c->n_experts, c->top_k, c->moe_inter, lay->tp, lay->ep);
      row.ranks = wd->size, row.nodes = wd->nnodes;
      row.t.median_ms = med[3 * rows[k].i], row.t.p10_ms = med[3 * rows[k].i + 1], row.t.p90_ms = med[3 * rows[k].i + 2];
      row.tflops = rows[k].flops / W / (row.t.median_ms * 1e9);
      row.compute_ms = rows[k].compute, row.comm_ms = rows[k].comm;
      row.bound_ms = k == 0 ? b_attn : k == 1 ? b_ffn : b_attn + b_ffn;
      snprintf(row.extra, sizeof row.extra, "{\"tokens_per_s\":%.6g,\"sp\":%d%s", n / (row.t.median_ms * 1e-3), sp,
               k == 2 ? "" : "}");
      if (k == 2)
        snprintf(row.extra + strlen(row.extra), sizeof row.extra - strlen(row.extra),
                 ",\"attn_ms\":%.6g,\"moe_ms\":%.6g,\"attn_bound_ms\":%.6g,\"moe_bound_ms\":%.6g}", med[3 * ia],
                 med[3 * iff], b_attn, b_ffn);
      if (o->rank == 0) MK_CHECK_GOTO(mk_bench_report_add(r, &row), st, fail);
    }
  }
  if (o->rank == 0)
    printf("  %s %-7s T=%-5d seqs=%-3d ctx=%-5d  layer fused%s %8.3f ms unfused %8.3f ms (%.2fx) | attn %7.3f / %7.3f bound "
           "%7.3f | moe %7.3f / %7.3f bound %7.3f | %.0f tok/s fused\n",
           model, phase, n, seqs, pos, o->graph ? " (graph)" : "", med[3 * P_LAYER_F], med[3 * P_LAYER_U], med[3 * P_LAYER_F] / med[3 * P_LAYER_U],
           med[3 * P_ATTN_F], med[3 * P_ATTN_U], b_attn, med[3 * P_FFN_F], med[3 * P_FFN_U], b_ffn,
           n / (med[3 * P_LAYER_F] * 1e-3));
fail:
  free(all);
  return st;
}

/* The serving model for decode of B sequences with C cached positions each, prepared for
 * run_part: 16-token pages, page j of sequence i is j B + i (interleaved, as a server hands
 * them out one step at a time). */
static mk_status batch_decode_setup(const mk_model_config_t *c, mk_comm_t *comm, const mk_layout_t *lay, int B, int C,
                                    uint64_t seed, mk_model_batch_t **out) {
  enum { BS = 16 };
  const int npp = (C + 1 + BS - 1) / BS;
  *out = NULL;
  if ((int64_t)B * npp * BS > INT32_MAX)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "layer: --batch %d x --context %d: too many KV slots", B, C);
  const mk_model_batch_config bc = {.max_seqs = B, .max_seq_len = C + 1, .max_tokens = C + 1 > B ? C + 1 : B,
                                    .n_pages = B * npp, .block_size = BS};
  int32_t *pages = malloc(sizeof(int32_t) * (size_t)B * npp), *tok = malloc(sizeof(int32_t) * (size_t)B);
  mk_model_batch_seq *seqs = malloc(sizeof *seqs * (size_t)B);
  mk_status st = MK_STATUS_OK;
  if (!pages || !tok || !seqs) {
    st = MK_STATUS_OUT_OF_MEMORY;
    goto fail;
  }
  for (int i = 0; i < B; i++) {
    for (int j = 0; j < npp; j++) pages[(size_t)i * npp + j] = j * B + i;
    tok[i] = i % c->vocab;
    seqs[i] = (mk_model_batch_seq){.tokens = tok + i, .n_tokens = 1, .pos = C, .pages = pages + (size_t)i * npp,
                                   .n_pages = npp};
  }
  MK_CHECK_GOTO(mk_model_batch_create_random(c, comm, lay, &bc, seed, out), st, fail);
  MK_CHECK_GOTO(mk_model_batch_prepare(*out, seqs, B), st, fail);
fail:
  if (st != MK_STATUS_OK) {
    mk_model_batch_destroy(*out);
    *out = NULL;
  }
  free(pages), free(tok), free(seqs);
  return st;
}

static void usage(FILE *f) {
  fprintf(f, "usage: mk-launch -n N [--nodes K] -- mk-bench layer [--preset mixtral|qwen3 | --config FILE | --model DIR]\n"
             "       [--tokens T (8192)] [--batch B (64)] [--context C (4096)] [--tp N (0: largest that fits)]\n"
             "       [--decode one|batch (one)] [common flags but --batch]\n"
             "  One decoder layer (attention + MoE block) at full size, random weights, fused vs unfused:\n"
             "  prefill of T tokens, decode of B tokens against C cached positions: of one sequence\n"
             "  (--decode one), or one token each of B sequences over a paged KV cache of random K/V\n"
             "  (--decode batch: the serving model). Presets: mixtral\n"
             "  (Mixtral-8x7B layer), qwen3 (Qwen3-30B-A3B layer). --config / --model: the first MoE\n"
             "  layer of that config.json (weights are random). Default: both presets.\n"
             "  --graph (common flag): the fused blocks and layer are timed from CUDA-graph replays (the fused\n"
             "  path never synchronises with the host); the unfused path, whose MoE block reads its counts on\n"
             "  the host, and the parts of the bounds are timed eagerly (the JSON's top-level \"graph\" is true).\n");
  mk_bench_print_common_help(f);
}

int mk_bench_layer(int argc, char **argv) {
  mk_bench_opts o;
  mk_bench_opts_default(&o);
  mk_model_config_t cfgs[2];
  const char *names[2];
  int nc = 0;
  int64_t T = 8192, B = 64, C = 4096, tp = 0;
  int batch = 0; /* --decode batch */
  for (int i = 1; i < argc; i++) {
    /* --batch is the decode batch here, not the common flag of back-to-back calls (which it shadowed up to
       session 27: `--batch 8` ran 8 calls a sample at a batch of 64) */
    int used = strcmp(argv[i], "--batch") ? mk_bench_parse_common(&o, argc, argv, i) : 0;
    if (used < 0) return 2;
    if (used) {
      i += used - 1;
      continue;
    }
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(stdout), 0;
    if (!v) {
      fprintf(stderr, "mk-bench layer: '%s' needs a value (or is unknown)\n", a);
      return 2;
    }
    i++;
    if (!strcmp(a, "--preset") || !strcmp(a, "--config") || !strcmp(a, "--model")) {
      if (nc) {
        fprintf(stderr, "mk-bench layer: give one of --preset, --config, --model\n");
        return 2;
      }
      if (!strcmp(a, "--preset")) {
        if (preset_config(v, &cfgs[0])) {
          fprintf(stderr, "mk-bench layer: --preset wants mixtral or qwen3, got '%s'\n", v);
          return 2;
        }
        names[0] = v;
      } else {
        char path[4096];
        snprintf(path, sizeof path, "%s%s", v, strcmp(a, "--model") ? "" : "/config.json");
        if (mk_model_config_load(path, &cfgs[0]) || one_layer(&cfgs[0])) {
          fprintf(stderr, "mk-bench layer: %s: cannot read a MoE model config from %s\n", a, path);
          return 2;
        }
        names[0] = mk_model_family_name(cfgs[0].family);
      }
      nc = 1;
    } else if (!strcmp(a, "--tokens")) {
      if (mk_bench_parse_i64("--tokens", v, 1, 1 << 20, &T)) return 2;
    } else if (!strcmp(a, "--batch")) {
      if (mk_bench_parse_i64("--batch", v, 1, 1 << 16, &B)) return 2;
    } else if (!strcmp(a, "--context")) {
      if (mk_bench_parse_i64("--context", v, 0, 1 << 20, &C)) return 2;
    } else if (!strcmp(a, "--decode")) {
      if (strcmp(v, "one") && strcmp(v, "batch")) {
        fprintf(stderr, "mk-bench layer: --decode wants one or batch, got '%s'\n", v);
        return 2;
      }
      batch = !strcmp(v, "batch");
    } else if (!strcmp(a, "--tp")) {
      if (mk_bench_parse_i64("--tp", v, 0, 64, &tp)) return 2;
    } else {
      fprintf(stderr, "mk-bench layer: unknown flag '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (!nc) {
    preset_config("mixtral", &cfgs[0]), names[0] = "mixtral";
    preset_config("qwen3", &cfgs[1]), names[1] = "qwen3";
    nc = 2;
  }
  for (int q = 0; q < nc; q++) cfgs[q].vocab = 256;
  mk_world wd;
  const int early = mk_bench_multi_rank("layer", argc, 2, &wd);
  if (early >= 0) return early;
  /* MoE landing areas at T tokens (and at B for the serving model: heap allocations are never returned) */
  setenv("MK_HEAP_BYTES", batch ? "24g" : "16g", 0 /* keep the user's value */);
  mk_comm_t *comm = NULL;
  mk_bench_report *r = NULL;
  mk_model_gpu_t *g = NULL;
  mk_model_batch_t *mb = NULL;
  mk_status st;
  int rc = 1;
  layer_barrier bar = {0};
  MK_CHECK_GOTO(mk_comm_create(&comm), st, fail);
  MK_CHECK_GOTO(mk_nccl_create(comm, &bar.nc), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&bar.zero, sizeof(float)), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMemset(bar.zero, 0, sizeof(float)), st, fail);
  o.pre = barrier_pre, o.pre_ctx = &bar;
  o.rank = wd.rank, o.nranks = wd.size;
  MK_CHECK_GOTO(mk_comm_bcast(comm, &o.seed, sizeof o.seed, 0), st, fail);
  MK_CHECK_GOTO(mk_bench_report_create(&o, &r), st, fail);
  for (int q = 0; q < nc; q++) {
    mk_layout_t lay;
    if ((st = mk_layers_layout_choose(&cfgs[q], mk_comm_world(comm), (int)tp, &lay)) ||
        (st = mk_model_gpu_create_random(&cfgs[q], comm, &lay, (int)(batch || T > C + B ? T : C + B), o.seed + q, &g))) {
      if (o.rank == 0) mk_bench_report_fail(r, "layer %s: cannot set up: %s", names[q], mk_status_str(st));
      goto done;
    }
    if (o.rank == 0)
      printf("%s layer: H %d, %d/%d heads x %d, %d experts top-%d, I %d; %d ranks (%d node group(s)), tp %d, ep %d\n",
             names[q], cfgs[q].hidden, cfgs[q].n_heads, cfgs[q].n_kv_heads, cfgs[q].head_dim, cfgs[q].n_experts,
             cfgs[q].top_k, cfgs[q].moe_inter, wd.size, wd.nnodes, lay.tp, lay.ep);
    const layer_model one = {g, NULL};
    if ((st = bench_phase(comm, &one, &o, r, names[q], &cfgs[q], &lay, "prefill", (int)T, 0, 1)) ||
        (!batch && (st = bench_phase(comm, &one, &o, r, names[q], &cfgs[q], &lay, "decode", (int)B, (int)C, 1)))) {
      if (o.rank == 0) mk_bench_report_fail(r, "layer %s: %s", names[q], mk_status_str(st));
      goto done;
    }
    mk_model_gpu_destroy(g);
    g = NULL;
    if (!batch) continue;
    if ((st = batch_decode_setup(&cfgs[q], comm, &lay, (int)B, (int)C, o.seed + q, &mb))) {
      if (o.rank == 0) mk_bench_report_fail(r, "layer %s: cannot set up batch decode: %s", names[q], mk_status_str(st));
      goto done;
    }
    const layer_model many = {NULL, mb};
    if ((st = bench_phase(comm, &many, &o, r, names[q], &cfgs[q], &lay, "decode", (int)B, (int)C, (int)B))) {
      if (o.rank == 0) mk_bench_report_fail(r, "layer %s: %s", names[q], mk_status_str(st));
      goto done;
    }
    mk_model_batch_destroy(mb);
    mb = NULL;
  }
done:
  mk_model_gpu_destroy(g);
  mk_model_batch_destroy(mb);
  rc = mk_bench_report_finish(r);
  r = NULL;
  if (st != MK_STATUS_OK) rc = 1;
fail:
  if (r) mk_bench_report_finish(r);
  if (bar.zero) cudaFree(bar.zero);
  mk_nccl_destroy(bar.nc);
  mk_comm_destroy(comm);
  return rc;
}
