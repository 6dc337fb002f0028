/* mk_serve.c — mk-serve: an OpenAI-compatible completion server over a model directory.
 *   mk-serve --model DIR [--port P] [--host A] [--tokenizer FILE|none] [--served-model-name N]
 *            [--kv-pages N] [--block-size N] [--max-batch N] [--max-waiting N]
 *            [--max-model-len N] [--request-timeout-ms N] [--debug-step-delay-ms N]
 *            [--gpus [--path fused|unfused] [--tp N] [--max-step-tokens N]]
 * Backend: the fp32 CPU reference, or with --gpus the GPU model (mk_backend_gpu_create over
 * mk_comm_create). Several ranks (mk-launch -n N, torchrun, Slurm, Open MPI
 * environments): rank 0 serves and broadcasts each step's plan, the others follow
 * (mk_backend_dist_create / mk_backend_follow); every rank computes the same, rank 0's logits
 * are used. Prints "mk-serve: listening on http://A:P" once it accepts requests; SIGINT/SIGTERM
 * (to rank 0; followers ignore them and stop when rank 0 does) end the running requests and
 * stop. Exit 1 when the other ranks are lost (a follower died or stalled, or rank 0 did). */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm/mk_comm.h"
#include "engine/mk_engine.h"
#include "layers/mk_layers.h"
#include "models/mk_models.h"

static void usage(FILE *o) {
  fprintf(o,
          "usage: mk-serve --model DIR [flags]\n"
          "  --port P                 listen port (8000; 0 = any free port, printed)\n"
          "  --host A                 IPv4 listen address (127.0.0.1)\n"
          "  --tokenizer FILE|none    tokenizer.json (default DIR/tokenizer.json when present);\n"
          "                           without one, prompts are token ids\n"
          "  --served-model-name N    name in /v1/models and responses (the directory's name)\n"
          "  --kv-pages N             KV cache budget in pages (4096)\n"
          "  --block-size N           tokens per KV page (16)\n"
          "  --max-batch N            sequences running at once (16)\n"
          "  --max-waiting N          queued requests before HTTP 429 (256)\n"
          "  --max-model-len N        prompt + max_tokens bound (min(max_position_embeddings, 2048))\n"
          "  --request-timeout-ms N   end a request this long after it arrived (0 = never; 600000)\n"
          "  --debug-step-delay-ms N  sleep before every engine step (tests)\n"
          "  --gpus                   the GPU backend (needs a launcher: mk-launch -n N [--nodes K]);\n"
          "                           default: the CPU reference on every rank\n"
          "  --path fused|unfused     GPU backend path (MK_PATH, default unfused)\n"
          "  --tp N                   GPU backend tensor-parallel size (0 = the default layout)\n"
          "  --max-step-tokens N      GPU backend: new tokens per GPU pass (default max(max-model-len, 4096))\n");
}

/* eos_token_id of config.json (an id or a list); none is fine. */
static int read_eos(const char *dir, int32_t *eos, int max) {
  char path[4096];
  snprintf(path, sizeof path, "%s/config.json", dir);
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  char *buf = malloc(1 << 20);
  size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
  fclose(f);
  int k = 0;
  cJSON *root = buf ? cJSON_ParseWithLength(buf, n) : NULL;
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "eos_token_id"), *it;
  if (cJSON_IsNumber(e)) eos[k++] = (int32_t)e->valuedouble;
  else if (cJSON_IsArray(e))
    cJSON_ArrayForEach(it, e) if (cJSON_IsNumber(it) && k < max) eos[k++] = (int32_t)it->valuedouble;
  cJSON_Delete(root);
  free(buf);
  return k;
}

/* One rank (w->size == 1) or rank 0 / a follower of several (boot != NULL). Returns the exit code. */
static int serve(const mk_world *w, mk_bootstrap_t *boot, mk_comm_t *comm, mk_backend_gpu_config *gc, const char *dir,
                 const char *tok_path, const char *name, mk_engine_config *ec, mk_server_config *sc, sigset_t *sigs) {
  mk_model_t *m = NULL;
  mk_tokenizer_t *tok = NULL;
  mk_engine_t *e = NULL;
  mk_server_t *s = NULL;
  mk_status st = mk_model_open(dir, &m);
  if (st) {
    fprintf(stderr, "mk-serve: rank %d: cannot load %s: %s\n", w->rank, dir, mk_status_str(st));
    return 1;
  }
  const mk_model_config_t *c = mk_model_config(m);
  if (!ec->max_model_len) ec->max_model_len = c->max_positions < 2048 ? c->max_positions : 2048;
  mk_backend_t be, dbe = {0};
  if (comm) {
    gc->max_slots = ec->max_batch, gc->max_seq_len = ec->max_model_len, gc->kv_pages = ec->kv_pages;
    gc->block_size = ec->block_size;
    if (!gc->max_step_tokens) gc->max_step_tokens = ec->max_model_len > 4096 ? ec->max_model_len : 4096;
    st = mk_backend_gpu_create(m, comm, gc, &be);
  } else {
    st = mk_backend_cpu_create(m, ec->max_batch, ec->max_model_len, &be);
  }
  if (st) {
    fprintf(stderr, "mk-serve: rank %d: cannot create the backend: %s\n", w->rank, mk_status_str(st));
    mk_model_close(m);
    return 1;
  }
  if (w->rank > 0) { /* follower: rank 0's plans until it stops */
    uint64_t steps = 0;
    st = mk_backend_follow(boot, w->size, &be, &steps);
    be.ops->destroy(be.self);
    mk_model_close(m);
    if (st) fprintf(stderr, "mk-serve: rank %d: lost rank 0 after %llu steps (%s): stopping\n", w->rank,
                    (unsigned long long)steps, mk_status_str(st));
    else printf("mk-serve: rank %d: rank 0 stopped after %llu steps\n", w->rank, (unsigned long long)steps);
    return st ? 1 : 0;
  }
  char tpath[4096];
  if (!tok_path) {
    snprintf(tpath, sizeof tpath, "%s/tokenizer.json", dir);
    if (access(tpath, R_OK) == 0) tok_path = tpath;
  }
  if (tok_path && strcmp(tok_path, "none")) {
    if ((st = mk_tokenizer_load(tok_path, &tok))) {
      fprintf(stderr, "mk-serve: cannot load the tokenizer %s: %s\n", tok_path, mk_status_str(st));
      be.ops->destroy(be.self); /* a follower waits for the hello until its bounded wait runs out */
      mk_model_close(m);
      return 1;
    }
    if (mk_tokenizer_vocab_size(tok) > c->vocab)
      fprintf(stderr, "mk-serve: warning: the tokenizer has ids up to %d, the model's vocabulary is %d\n",
              mk_tokenizer_vocab_size(tok) - 1, c->vocab);
  }
  int32_t eos[16];
  ec->n_eos = read_eos(dir, eos, 16), ec->eos_ids = eos;
  char be_label[64]; /* the backend, and for the GPU one its path: "gpu, path fused" */
  snprintf(be_label, sizeof be_label, "%s%s%s", be.ops->name, comm ? ", path " : "",
           comm ? mk_path_name((mk_path)gc->path) : "");
  if (boot) {
    st = mk_backend_dist_create(boot, w->size, &be, &be);
    dbe = be;
  }
  if (st || (st = mk_engine_create(ec, &be, tok, &e))) {
    fprintf(stderr, "mk-serve: cannot start the engine: %s\n", mk_status_str(st));
    mk_tokenizer_destroy(tok);
    mk_model_close(m);
    return 1;
  }
  if (!name) {
    const char *sl = strrchr(dir, '/');
    name = sl && sl[1] ? sl + 1 : dir;
  }
  sc->model_name = name;
  if ((st = mk_server_start(sc, e, tok, &s))) {
    fprintf(stderr, "mk-serve: %s\n", mk_status_str(st));
    mk_engine_destroy(e);
    mk_tokenizer_destroy(tok);
    mk_model_close(m);
    return 1;
  }
  printf("mk-serve: listening on http://%s:%d (model %s: %s, vocab %d, backend %s, %d rank(s); tokenizer %s; "
         "KV %d pages x %d tokens, batch %d, queue %d, max length %d)\n",
         sc->host, mk_server_port(s), name, mk_model_family_name(c->family), c->vocab, be_label, w->size,
         tok ? tok_path : "none", ec->kv_pages, ec->block_size, ec->max_batch, ec->max_waiting, ec->max_model_len);
  fflush(stdout);
  int rc = 0;
  for (;;) {
    struct timespec tick = {0, 200000000};
    int sig = sigtimedwait(sigs, NULL, &tick);
    if (sig > 0) {
      printf("mk-serve: signal %d: stopping\n", sig);
      break;
    }
    if ((st = mk_backend_dist_error(&dbe))) {
      fprintf(stderr, "mk-serve: rank 0: lost the other ranks (%s; the message above names the rank): stopping\n",
              mk_status_str(st));
      rc = 1;
      break;
    }
  }
  fflush(stdout);
  mk_engine_shutdown(e, 1);
  mk_server_stop(s);
  mk_engine_destroy(e);
  mk_tokenizer_destroy(tok);
  mk_model_close(m);
  return rc;
}

int main(int argc, char **argv) {
  const char *dir = NULL, *tok_path = NULL, *name = NULL;
  mk_engine_config ec;
  mk_engine_config_default(&ec);
  ec.kv_pages = 4096, ec.max_model_len = 0, ec.request_timeout_ms = 600000;
  mk_server_config sc;
  mk_server_config_default(&sc);
  mk_backend_gpu_config gc = {.path = (int)mk_path_default()};
  int gpus = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(stdout), 0;
    if (!strcmp(a, "--gpus")) {
      gpus = 1;
      continue;
    }
    if (!v) {
      fprintf(stderr, "mk-serve: '%s' needs a value\n", a);
      return 2;
    }
    i++;
    int64_t x = 0;
    struct {
      const char *flag;
      int64_t lo, hi;
      int *i32;
      int64_t *i64;
    } nums[] = {{"--port", 0, 65535, &sc.port, NULL},          {"--kv-pages", 1, 1 << 30, &ec.kv_pages, NULL},
                {"--block-size", 1, 4096, &ec.block_size, NULL}, {"--max-batch", 1, 4096, &ec.max_batch, NULL},
                {"--max-waiting", 0, 1 << 20, &ec.max_waiting, NULL}, {"--max-model-len", 2, 1 << 24, &ec.max_model_len, NULL},
                {"--request-timeout-ms", 0, INT64_MAX / 1000000, NULL, &ec.request_timeout_ms},
                {"--debug-step-delay-ms", 0, 60000, &ec.step_delay_ms, NULL},
                {"--tp", 0, 4096, &gc.tp, NULL}, {"--max-step-tokens", 1, 1 << 24, &gc.max_step_tokens, NULL}};
    int hit = 0;
    for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
      if (strcmp(a, nums[k].flag)) continue;
      if (mk_param_parse_int(a, v, nums[k].lo, nums[k].hi, &x)) return 2;
      if (nums[k].i32) *nums[k].i32 = (int)x;
      else *nums[k].i64 = x;
      hit = 1;
    }
    if (hit) continue;
    if (!strcmp(a, "--model")) dir = v;
    else if (!strcmp(a, "--host")) sc.host = v;
    else if (!strcmp(a, "--tokenizer")) tok_path = v;
    else if (!strcmp(a, "--served-model-name")) name = v;
    else if (!strcmp(a, "--path")) {
      mk_path p;
      if (mk_path_parse(v, &p)) return 2;
      gc.path = (int)p;
    }
    else {
      fprintf(stderr, "mk-serve: unknown flag '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (!dir) {
    usage(stderr);
    return 2;
  }
  /* signals are taken by sigwait in main; every thread started below inherits the mask */
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);
  mk_world w = {.rank = 0, .size = 1};
  mk_bootstrap_t *boot = NULL;
  mk_comm_t *comm = NULL;
  mk_status st;
  if (gpus) {
    if ((st = mk_comm_create(&comm))) {
      fprintf(stderr, "mk-serve: --gpus: cannot create the comm (start it with mk-launch -n N): %s\n", mk_status_str(st));
      return 1;
    }
    w = *mk_comm_world(comm);
    int rc = serve(&w, w.size > 1 ? mk_comm_bootstrap(comm) : NULL, comm, &gc, dir, tok_path, name, &ec, &sc, &sigs);
    mk_comm_destroy(comm);
    return rc;
  }
  if (getenv("RANK") || getenv("WORLD_SIZE") || getenv("SLURM_PROCID") || getenv("OMPI_COMM_WORLD_RANK")) {
    if ((st = mk_world_from_env(&w))) {
      fprintf(stderr, "mk-serve: cannot read the launcher's environment: %s\n", mk_status_str(st));
      return 1;
    }
  }
  if (w.size > 1 && (st = mk_bootstrap_create(&w, &boot))) {
    fprintf(stderr, "mk-serve: rank %d of %d: cannot join the other ranks: %s\n", w.rank, w.size, mk_status_str(st));
    return 1;
  }
  int rc = serve(&w, boot, NULL, &gc, dir, tok_path, name, &ec, &sc, &sigs);
  mk_bootstrap_destroy(boot);
  return rc;
}
