/* cpu_demo.c — mk-bench's default job on a machine with no GPU: for each model family, write
 * a tiny random model (mk_model_gen), load it (every check of the loader), and generate
 * greedily with the fp32 reference, printing what it did. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mk_bench.h"
#include "models/mk_models.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char path[512];
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
  closedir(d);
  rmdir(dir);
}

static int demo_family(mk_model_family f, uint64_t seed) {
  char dir[] = "/tmp/mk_demo_XXXXXX";
  if (!mkdtemp(dir)) {
    fprintf(stderr, "mk-bench: cannot create a temporary directory\n");
    return 1;
  }
  mk_gen_params p;
  mk_gen_params_default(f, &p);
  p.seed = seed;
  mk_model_t *m = NULL;
  mk_ref_t *ref = NULL;
  enum { n_prompt = 5, n_new = 16 };
  int32_t prompt[n_prompt], out[n_new];
  int rc = 1;
  double t0 = now_ms();
  if (mk_model_gen(&p, dir) != MK_STATUS_OK || mk_model_open(dir, &m) != MK_STATUS_OK) goto done;
  const mk_model_config_t *c = mk_model_config(m);
  for (int i = 0; i < n_prompt; i++) prompt[i] = (int32_t)((seed >> (8 * i)) % (uint64_t)c->vocab);
  double t1 = now_ms();
  if (mk_ref_create(m, n_prompt + n_new, &ref) != MK_STATUS_OK) goto done;
  if (mk_ref_generate(ref, prompt, n_prompt, n_new, out, NULL) != MK_STATUS_OK) goto done;
  double t2 = now_ms();
  printf("%-10s %d layers, hidden %d, %d experts top-%d, vocab %d: wrote+loaded in %.0f ms, generated %d tokens in "
         "%.0f ms:",
         mk_model_family_name(f), c->n_layers, c->hidden, c->n_experts, c->top_k, c->vocab, t1 - t0, n_new, t2 - t1);
  for (int i = 0; i < n_new; i++) printf(" %d", out[i]);
  printf("\n");
  rc = 0;
done:
  if (rc) fprintf(stderr, "mk-bench: CPU demo failed for %s (see the log above)\n", mk_model_family_name(f));
  mk_ref_destroy(ref);
  mk_model_close(m);
  remove_dir(dir);
  return rc;
}

int mk_bench_cpu_demo(uint64_t seed) {
  printf("\n== CPU reference demo (no GPU): a tiny random model per family, seed %llu, greedy generation\n",
         (unsigned long long)seed);
  int rc = 0;
  for (int f = 0; f < MK_FAMILY_COUNT_; f++) rc |= demo_family((mk_model_family)f, seed + (uint64_t)f);
  return rc;
}
