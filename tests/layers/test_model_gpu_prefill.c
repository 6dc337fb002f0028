/* test_model_gpu_prefill.c (gpu/multigpu, under mk-launch -n N) — one 40-token prefill of
 * the whole model on the GPUs against the fp32 reference and its bf16-faithful mode
 * (mk_ref_create_bf16), for each family, on models sized as tests/parity/parity_transformers.py's
 * (3 layers, hidden 64, 4 / 2 heads of 16 — the generic KV-cache attention kernel, 40 queries —,
 * 4 experts top-2 (rounded up to a multiple of the ranks), vocab 256, fp32 weights with the
 * parity script's standard deviations; Qwen with layer 1 dense, OLMoE tied embeddings). The GPU
 * records its expert choices (mk_model_gpu_record_routes). Checks:
 *  - the GPU against the bf16-faithful reference that follows the GPU's expert choices
 *    (mk_ref_force_routes; the same roundings and experts, only summation orders differ):
 *    rel. Frobenius error <= 1e-2 over the 40 positions and <= 2e-2 at each;
 *  - every (layer, position) where the GPU picked other experts than fp32 (an expert flip)
 *    is a near tie of fp32's router (mk_ref_route_margin < MK_TEST_ROUTE_TIE, tests/layers/families.h);
 *  - without flips: GPU vs fp32 <= 2e-2 (the model tests' tolerance) over the 40 positions.
 * Prints GPU vs fp32, the flips, GPU vs bf16-faithful on its own routing, and bf16-faithful on
 * fp32's routing vs fp32 (the error bf16 rounding alone gives).
 *   test_model_gpu_prefill [FAMILY[,FAMILY...]|all] [fused|unfused] */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "comm/mk_comm.h"
#include "core/rng.h"
#include "layers/mk_layers.h"
#include "tests/layers/families.h"
#include "tests/mk_test.h"

enum { NT = 40 };

/* rel. Frobenius error of out vs ref over the NT positions (double sums) */
static double rel_rows(const float *out, const float *ref, int V) {
  double num = 0, den = 0;
  for (size_t i = 0; i < (size_t)NT * V; i++) {
    const double d = (double)out[i] - ref[i];
    num += d * d, den += (double)ref[i] * ref[i];
  }
  return den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0);
}

static void check_family(mk_comm_t *comm, mk_model_family fam, const char *name, mk_path path, uint64_t seed) {
  const mk_world *w = mk_comm_world(comm);
  mk_gen_params p;
  mk_gen_params_default(fam, &p);
  p.seed = seed, p.layers = 3, p.dtype = MK_DTYPE_F32, p.init_scale = sqrtf(3.0f);
  if (p.experts % w->size) p.experts = w->size * ((p.experts + w->size - 1) / w->size); /* EP spans every rank */
  if (fam == MK_FAMILY_QWEN2_MOE) p.mlp_only_layer = 1;
  if (fam == MK_FAMILY_OLMOE) p.tie_embeddings = 1;
  char dir[256];
  snprintf(dir, sizeof dir, "/tmp/mk_test_prefill_%d_%d_%s", (int)getpid(), w->rank, name);
  ASSERT_OK(mk_model_gen(&p, dir));
  mk_model_t *m = NULL;
  ASSERT_OK(mk_model_open(dir, &m));
  const int V = mk_model_config(m)->vocab;
  int32_t ids[NT];
  for (int t = 0; t < NT; t++) ids[t] = (int32_t)(mk_rng_hash(seed ^ 0x40, (uint64_t)t) % (uint64_t)V);
  const size_t n = (size_t)NT * V;
  float *lf = malloc(sizeof(float) * n), *lb = malloc(sizeof(float) * n), *lgr = malloc(sizeof(float) * n);
  float *lg = malloc(sizeof(float) * n);
  ASSERT_TRUE(lf && lb && lgr && lg);
  const mk_model_config_t *c = mk_model_config(m);
  const int K = c->top_k;
  int32_t *routes = malloc(sizeof(int32_t) * (size_t)c->n_layers * NT * K);
  ASSERT_TRUE(routes != NULL);
  memset(routes, 0xff, sizeof(int32_t) * (size_t)c->n_layers * NT * K);
  mk_layout_t lay;
  ASSERT_OK(mk_layers_layout_choose(c, w, 0, &lay));
  mk_model_gpu_t *g = NULL;
  ASSERT_OK(mk_model_gpu_create(m, comm, &lay, NT, &g));
  ASSERT_OK(mk_model_gpu_set_path(g, path));
  mk_model_gpu_record_routes(g, routes);
  for (size_t i = 0; i < n; i++) lg[i] = NAN; /* poison */
  ASSERT_OK(mk_model_gpu_forward(g, ids, NT, lg));
  mk_ref_t *rf = NULL, *rb = NULL, *rg = NULL, *rr = NULL; /* fp32; bf16 own, on the GPU's, on fp32's routes */
  float *lr = malloc(sizeof(float) * n);
  ASSERT_TRUE(lr != NULL);
  ASSERT_OK(mk_ref_create(m, NT, &rf));
  ASSERT_OK(mk_ref_create_bf16(m, NT, &rb));
  ASSERT_OK(mk_ref_create_bf16(m, NT, &rg));
  ASSERT_OK(mk_ref_create_bf16(m, NT, &rr));
  ASSERT_OK(mk_ref_forward(rf, ids, NT, lf));
  ASSERT_OK(mk_ref_forward(rb, ids, NT, lb));
  mk_ref_force_routes(rg, routes);
  ASSERT_OK(mk_ref_forward(rg, ids, NT, lgr)); /* fails (bad expert id) if the GPU left a route unwritten */
  mk_ref_force_routes(rr, mk_ref_routes(rf));
  ASSERT_OK(mk_ref_forward(rr, ids, NT, lr));
  int flips = 0;
  const int32_t *fr = mk_ref_routes(rf);
  for (int l = 0; l < c->n_layers; l++)
    for (int t = 0; c->is_moe[l] && t < NT; t++) {
      if (!mk_ref_route_differs(routes + ((size_t)l * NT + t) * K, fr + ((size_t)l * NT + t) * K, K)) continue;
      flips++;
      const double mg = mk_ref_route_margin(rf, t);
      printf("rank %d: %s layer %d position %d: GPU experts differ from fp32's, fp32 routing margin %.3g\n", w->rank,
             name, l, t, mg);
      if (!(mg < MK_TEST_ROUTE_TIE)) MK_TEST_FAIL_("%s layer %d position %d: an expert flip away from a near tie", name, l, t);
    }
  double worst = 0;
  for (int t = 0; t < NT; t++) {
    const double e = mk_test_rel_err_f32(lg + (size_t)t * V, lgr + (size_t)t * V, (size_t)V);
    worst = isnan(e) || e > worst ? e : worst;
  }
  const double g_f = rel_rows(lg, lf, V), g_b = rel_rows(lg, lb, V), g_g = rel_rows(lg, lgr, V), r_f = rel_rows(lr, lf, V);
  printf("rank %d: %s, world %d, tp %d, %s, %d tokens: GPU vs fp32 %.3e (%d expert flip%s); GPU vs bf16-faithful: "
         "own routing %.3e, on the GPU's routing %.3e (worst position %.3e); bf16-faithful on fp32's routing vs fp32 "
         "%.3e\n",
         w->rank, name, w->size, lay.tp, mk_path_name(path), NT, g_f, flips, flips == 1 ? "" : "s", g_b, g_g, worst, r_f);
  ASSERT_DBL_LE(g_g, 1e-2);
  ASSERT_DBL_LE(worst, 2e-2);
  if (!flips) ASSERT_DBL_LE(g_f, 2e-2);
  free(routes), free(lr);
  mk_ref_destroy(rg);
  mk_model_gpu_destroy(g);
  mk_ref_destroy(rf), mk_ref_destroy(rb), mk_ref_destroy(rr);
  mk_model_close(m);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd)) printf("could not remove %s\n", dir);
  ASSERT_OK(mk_comm_barrier(comm));
  free(lf), free(lb), free(lgr), free(lg);
}

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 300);
  mk_path path = MK_PATH_UNFUSED;
  if (argc > 2 && mk_path_parse(argv[2], &path)) MK_TEST_FAIL_("bad path '%s'", argv[2]);
  char list[256];
  const char *names[8];
  mk_model_family fams[8];
  const int nf = test_families(argc > 1 ? argv[1] : NULL, list, sizeof list, names, fams);
  mk_test_require_gpus(1);
  mk_comm_t *comm = NULL;
  ASSERT_OK(mk_comm_create(&comm));
  uint64_t seed = mk_test_seed();
  ASSERT_OK(mk_comm_bcast(comm, &seed, sizeof seed, 0)); /* one model and prompt for every rank */
  for (int f = 0; f < nf; f++) check_family(comm, fams[f], names[f], path, seed + (uint64_t)f);
  mk_comm_destroy(comm);
  printf("ok\n");
  return 0;
}
