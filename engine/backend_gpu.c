/* backend_gpu.c — the GPU model as a serving backend (run on 4 x H200: test_serve_gpu_*,
 * docs/perf/serve_qwen3_*.json): one mk_model_batch_t over this rank's shard; the engine's page ids are the KV cache's
 * pages, so a slot holds nothing of its own (open / close only check the slot). forward is
 * collective: under several ranks every rank runs it with the same batch (backend_dist.c). */
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/check.h"
#include "engine/mk_engine.h"
#include "layers/mk_layers.h"

/* The logits buffer handed to the engine: page-locked (cudaHostAlloc), else pageable. */
MK_PARAM_INT(serve_pinned_logits, "SERVE_PINNED_LOGITS", 1, 0, 1)
/* Warm-up passes at create, before the server takes requests. */
MK_PARAM_INT(serve_warmup, "SERVE_WARMUP", 1, 0, 1)

typedef struct gpu_backend {
  mk_model_batch_t *mb;
  mk_model_batch_seq *seqs;
  float *logits; /* [max_slots, vocab], page-locked; NULL: the engine's own, pageable */
  int max_slots, max_seq, dev;
} gpu_backend;

static mk_status gpu_open(void *self, int slot, int max_tokens) {
  gpu_backend *b = self;
  if (slot < 0 || slot >= b->max_slots || max_tokens < 1 || max_tokens > b->max_seq)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_ENGINE, "gpu backend: slot %d of %d, %d tokens of %d", slot,
                  b->max_slots, max_tokens, b->max_seq);
  return MK_STATUS_OK;
}

static void gpu_close(void *self, int slot) { (void)self, (void)slot; }

static mk_status gpu_forward(void *self, const mk_batch_seq *seqs, int n, float *logits) {
  gpu_backend *b = self;
  if (n > b->max_slots)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_ENGINE, "gpu backend: %d sequences (max %d)", n, b->max_slots);
  MK_CUDA_CHECK(cudaSetDevice(b->dev)); /* the engine's thread is not the one that created the comm */
  for (int i = 0; i < n; i++)
    b->seqs[i] = (mk_model_batch_seq){.tokens = seqs[i].tokens, .n_tokens = seqs[i].n_tokens, .pos = seqs[i].pos,
                                      .pages = seqs[i].pages, .n_pages = seqs[i].n_pages};
  return mk_model_batch_forward(b->mb, b->seqs, n, logits);
}

/* Two passes of token 0 through the model at create (MK_SERVE_WARMUP), so that what a path sets up
 * at its first use (NCCL connections, cuBLASLt plans, lazily loaded kernels) is not paid by the
 * first requests (the unfused server at 2 x 4 spent 10-30 s in its first step, docs/perf/NOTES.md
 * session 19): a step of max_tokens new tokens at position 0, cut into sequences of at most
 * max_seq tokens, then a decode-sized step of one token per slot. Pages 0, 1, ... hold their KV:
 * a sequence reads only positions it wrote itself, so nothing of it is ever read later. The same
 * batches on every rank (from the config alone), as a forward requires. */
static mk_status gpu_warmup(gpu_backend *b, const mk_backend_gpu_config *c, int max_tokens, int vocab) {
  const int bs = c->block_size > 0 ? c->block_size : 1;
  int32_t *tok = calloc((size_t)max_tokens, sizeof *tok), *pages = malloc(sizeof *pages * (size_t)c->kv_pages);
  float *logits = b->logits ? b->logits : malloc(sizeof(float) * (size_t)c->max_slots * (size_t)vocab);
  mk_status st = MK_STATUS_OK;
  if (!tok || !pages || !logits) {
    st = MK_STATUS_OUT_OF_MEMORY;
    goto done;
  }
  for (int i = 0; i < c->kv_pages; i++) pages[i] = i;
  for (int decode = 0; decode < 2 && st == MK_STATUS_OK; decode++) {
    int n = 0, used = 0, total = 0;
    while (n < b->max_slots && total < max_tokens) {
      int len = decode ? 1 : b->max_seq < max_tokens - total ? b->max_seq : max_tokens - total;
      if ((len + bs - 1) / bs > c->kv_pages - used) len = (c->kv_pages - used) * bs;
      if (len < 1) break;
      const int np = (len + bs - 1) / bs;
      b->seqs[n++] = (mk_model_batch_seq){.tokens = tok, .n_tokens = len, .pos = 0, .pages = pages + used, .n_pages = np};
      used += np, total += len;
    }
    if (n) st = mk_model_batch_forward(b->mb, b->seqs, n, logits);
  }
done:
  if (logits != b->logits) free(logits);
  free(tok), free(pages);
  return st;
}

static void gpu_destroy(void *self) {
  gpu_backend *b = self;
  if (!b) return;
  mk_model_batch_destroy(b->mb);
  if (b->logits) cudaFreeHost(b->logits);
  free(b->seqs);
  free(b);
}

static const mk_backend_ops k_gpu_ops = {"gpu", gpu_open, gpu_close, gpu_forward, gpu_destroy, NULL};

mk_status mk_backend_gpu_create(const mk_model_t *m, mk_comm_t *comm, const mk_backend_gpu_config *c, mk_backend_t *out) {
  memset(out, 0, sizeof *out);
  if (!m || !comm || !c || c->max_slots < 1 || c->max_seq_len < 1)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_ENGINE, "gpu backend: bad arguments");
  mk_layout_t lay;
  MK_CHECK(mk_layers_layout_choose(mk_model_config(m), mk_comm_world(comm), c->tp, &lay));
  gpu_backend *b = calloc(1, sizeof *b);
  if (!b) return MK_STATUS_OUT_OF_MEMORY;
  b->max_slots = c->max_slots, b->max_seq = c->max_seq_len, b->dev = mk_comm_device(comm);
  mk_status st = MK_STATUS_OK;
  b->seqs = calloc((size_t)c->max_slots, sizeof *b->seqs);
  if (!b->seqs) {
    st = MK_STATUS_OUT_OF_MEMORY;
    goto fail;
  }
  mk_model_batch_config bc = {.max_seqs = c->max_slots, .max_seq_len = c->max_seq_len,
                              .max_tokens = c->max_step_tokens > c->max_seq_len ? c->max_step_tokens : c->max_seq_len,
                              .n_pages = c->kv_pages, .block_size = c->block_size};
  MK_CHECK_GOTO(mk_model_batch_create(m, comm, &lay, &bc, &b->mb), st, fail);
  MK_CHECK_GOTO(mk_model_batch_set_path(b->mb, c->path), st, fail);
  MK_CUDA_CHECK_GOTO(cudaSetDevice(b->dev), st, fail);
  if (mk_param_serve_pinned_logits() &&
      cudaHostAlloc((void **)&b->logits, sizeof(float) * (size_t)c->max_slots * mk_model_config(m)->vocab,
                    cudaHostAllocPortable) != cudaSuccess) {
    (void)cudaGetLastError();
    b->logits = NULL; /* the engine allocates a pageable one */
    MK_WARN(MK_SUBSYS_ENGINE, "gpu backend: cannot page-lock the logits buffer; using pageable memory");
  }
  if (mk_param_serve_warmup())
    MK_CHECK_GOTO(gpu_warmup(b, c, bc.max_tokens, mk_model_config(m)->vocab), st, fail);
  *out = (mk_backend_t){.ops = &k_gpu_ops, .self = b, .vocab = mk_model_config(m)->vocab, .max_slots = c->max_slots,
                        .max_seq_len = c->max_seq_len, .logits = b->logits};
  return MK_STATUS_OK;
fail:
  gpu_destroy(b);
  return st;
}
