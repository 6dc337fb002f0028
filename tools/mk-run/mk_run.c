/* mk_run.c — mk-run: load a model and generate greedily with the fp32 CPU reference, or with
 * the GPU engine (--gpus; the default under mk-launch, which sets WORLD_SIZE).
 *   mk-run --model DIR --prompt-ids 1,2,3 [--max-tokens N] [--logits-out FILE] [--gpus] [--tp N]
 *          [--path fused|unfused] [--bf16]
 * Prints the generated ids and a summary of the last logits (GPU: rank 0 prints and writes).
 * --logits-out writes the logits of every position that was run ((prompt + max_tokens - 1) x
 * vocab, raw little-endian fp32). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/mk_comm.h"
#include "layers/mk_layers.h"
#include "models/mk_models.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void usage(FILE *o) {
  fprintf(o, "usage: mk-run --model DIR --prompt-ids 1,2,3 [--max-tokens N (16)] [--logits-out FILE]\n"
             "              [--gpus] [--cpu] [--tp N (0: largest that fits a node)] [--path fused|unfused]\n"
             "  --gpus: the GPU engine on every rank of the launch (default under mk-launch / torchrun);\n"
             "  attention tensor-parallel over --tp ranks of a node, experts over all ranks.\n"
             "  --path: the GPU engine's path (default: MK_PATH, else unfused).\n"
             "  --bf16: (CPU) the reference in its bf16-faithful mode: rounded as the GPU engine rounds.\n");
}

int main(int argc, char **argv) {
  const char *dir = NULL, *ids_s = NULL, *lout = NULL;
  int64_t max_new = 16, tp = 0;
  int gpus = getenv("WORLD_SIZE") != NULL; /* under mk-launch or torchrun */
  int have_path = 0, bf16 = 0;
  mk_path path = MK_PATH_FUSED;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(stdout), 0;
    if (!strcmp(a, "--gpus") || !strcmp(a, "--cpu")) {
      gpus = !strcmp(a, "--gpus");
      continue;
    }
    if (!strcmp(a, "--bf16")) {
      bf16 = 1;
      continue;
    }
    if (!v) {
      fprintf(stderr, "mk-run: '%s' needs a value\n", a);
      return 2;
    }
    i++;
    if (!strcmp(a, "--model")) dir = v;
    else if (!strcmp(a, "--prompt-ids")) ids_s = v;
    else if (!strcmp(a, "--logits-out")) lout = v;
    else if (!strcmp(a, "--path")) {
      if (mk_path_parse(v, &path)) {
        fprintf(stderr, "mk-run: --path wants fused or unfused, got '%s'\n", v);
        return 2;
      }
      have_path = 1;
    } else if (!strcmp(a, "--tp")) {
      if (mk_param_parse_int("--tp", v, 0, 1024, &tp)) return 2;
    } else if (!strcmp(a, "--max-tokens")) {
      if (mk_param_parse_int("--max-tokens", v, 1, 1 << 20, &max_new)) return 2;
    } else {
      fprintf(stderr, "mk-run: unknown flag '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (!dir || !ids_s) {
    usage(stderr);
    return 2;
  }
  if (gpus && bf16) {
    fprintf(stderr, "mk-run: --bf16 is the CPU reference's mode; the GPU engine is bf16 already\n");
    return 2;
  }
  int n = 1;
  for (const char *p = ids_s; *p; p++) n += *p == ',';
  int32_t *prompt = malloc(sizeof(int32_t) * (size_t)n);
  char *copy = strdup(ids_s), *save = NULL;
  int k = 0;
  for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int64_t v;
    if (mk_param_parse_int("--prompt-ids", t, 0, INT32_MAX, &v)) return 2;
    prompt[k++] = (int32_t)v;
  }
  free(copy);
  if (k != n) {
    fprintf(stderr, "mk-run: --prompt-ids must be a comma list of token ids\n");
    return 2;
  }
  mk_model_t *m = NULL;
  mk_ref_t *ref = NULL;
  double t0 = now_ms();
  mk_status st = mk_model_open(dir, &m);
  if (st) {
    fprintf(stderr, "mk-run: cannot load %s: %s\n", dir, mk_status_str(st));
    return 1;
  }
  const mk_model_config_t *c = mk_model_config(m);
  int total = n + (int)max_new - 1;
  mk_comm_t *comm = NULL;
  mk_model_gpu_t *gm = NULL;
  mk_layout_t lay = {0};
  int rank = 0;
  if (gpus) {
    if ((st = mk_comm_create(&comm))) {
      fprintf(stderr, "mk-run: cannot set up the GPUs: %s\n", mk_status_str(st));
      return 1;
    }
    rank = mk_comm_world(comm)->rank;
    if ((st = mk_layers_layout_choose(c, mk_comm_world(comm), (int)tp, &lay)) ||
        (st = mk_model_gpu_create(m, comm, &lay, total, &gm)) ||
        (have_path && (st = mk_model_gpu_set_path(gm, path)))) {
      fprintf(stderr, "mk-run: cannot load %s on the GPUs: %s\n", dir, mk_status_str(st));
      return 1;
    }
  } else if ((st = bf16 ? mk_ref_create_bf16(m, total, &ref) : mk_ref_create(m, total, &ref))) {
    fprintf(stderr, "mk-run: %s\n", mk_status_str(st));
    return 1;
  }
  double t1 = now_ms();
  if (rank == 0) {
    printf("mk-run: %s: %s, %d layers, hidden %d, %d/%d heads x %d, %d experts top-%d, vocab %d (loaded in %.0f ms)\n",
           dir, mk_model_family_name(c->family), c->n_layers, c->hidden, c->n_heads, c->n_kv_heads, c->head_dim,
           c->n_experts, c->top_k, c->vocab, t1 - t0);
    if (gpus)
      printf("engine: GPU, %s path, %d ranks, tp %d, ep %d\n", mk_path_name(mk_model_gpu_path(gm)), lay.world, lay.tp,
             lay.ep);
    else printf("engine: %s CPU reference\n", bf16 ? "bf16-faithful" : "fp32");
  }
  int32_t *out = malloc(sizeof(int32_t) * (size_t)max_new);
  float *lg = malloc(sizeof(float) * (size_t)total * c->vocab);
  if (!out || !lg) {
    fprintf(stderr, "mk-run: out of memory\n");
    return 1;
  }
  st = gpus ? mk_model_gpu_generate(gm, prompt, n, (int)max_new, out, lg) : mk_ref_generate(ref, prompt, n, (int)max_new, out, lg);
  if (st) {
    fprintf(stderr, "mk-run: generation failed: %s\n", mk_status_str(st));
    return 1;
  }
  double t2 = now_ms();
  if (rank != 0) goto done;
  printf("prompt ids:");
  for (int i = 0; i < n; i++) printf(" %d", prompt[i]);
  printf("\ngenerated ids:");
  for (int i = 0; i < max_new; i++) printf(" %d", out[i]);
  const float *last = lg + (size_t)(total - 1) * c->vocab;
  double sum = 0, sq = 0, mx = -INFINITY, mn = INFINITY;
  for (int i = 0; i < c->vocab; i++) sum += last[i], sq += (double)last[i] * last[i], mx = fmax(mx, last[i]), mn = fmin(mn, last[i]);
  double mean = sum / c->vocab;
  printf("\nlast logits: argmax %d, max %.6f, min %.6f, mean %.6f, std %.6f\n", out[max_new - 1], mx, mn, mean,
         sqrt(fmax(0, sq / c->vocab - mean * mean)));
  printf("time: %.1f ms for %d prompt + %lld generated tokens (%.2f ms/token)\n", t2 - t1, n, (long long)max_new,
         (t2 - t1) / (n + max_new - 1));
  if (lout) {
    FILE *f = fopen(lout, "wb");
    if (!f || fwrite(lg, sizeof(float), (size_t)total * c->vocab, f) != (size_t)total * c->vocab || fclose(f)) {
      fprintf(stderr, "mk-run: cannot write %s\n", lout);
      return 1;
    }
    printf("logits: %d x %d fp32 written to %s\n", total, c->vocab, lout);
  }
done:
  mk_model_gpu_destroy(gm);
  mk_comm_destroy(comm);
  free(out), free(lg), free(prompt);
  mk_ref_destroy(ref);
  mk_model_close(m);
  return 0;
}
