/* backend_cpu.c — the fp32 reference as a serving backend: one mk_ref_t per slot, each
 * borrowing the weights of one base handle and holding its own KV cache; a batch runs its
 * sequences one after another (each on the reference's thread pool). Pages are only
 * accounted for here: the reference keeps its cache contiguous per sequence. */
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "engine/mk_engine.h"

typedef struct cpu_backend {
  mk_ref_t *base;
  mk_ref_t **slots;
  int max_slots, max_seq, vocab;
  float *lg;   /* [max_seq, vocab] scratch */
} cpu_backend;

static mk_status cpu_open(void *self, int slot, int max_tokens) {
  cpu_backend *b = self;
  if (slot < 0 || slot >= b->max_slots || max_tokens < 1 || max_tokens > b->max_seq)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_ENGINE, "cpu backend: slot %d of %d, %d tokens of %d", slot,
                  b->max_slots, max_tokens, b->max_seq);
  mk_ref_destroy(b->slots[slot]);
  b->slots[slot] = NULL;
  return mk_ref_create_shared(b->base, max_tokens, &b->slots[slot]);
}

static void cpu_close(void *self, int slot) {
  cpu_backend *b = self;
  if (slot < 0 || slot >= b->max_slots) return;
  mk_ref_destroy(b->slots[slot]);
  b->slots[slot] = NULL;
}

static mk_status cpu_forward(void *self, const mk_batch_seq *seqs, int n, float *logits) {
  cpu_backend *b = self;
  for (int i = 0; i < n; i++) {
    const mk_batch_seq *q = &seqs[i];
    mk_ref_t *r = q->slot >= 0 && q->slot < b->max_slots ? b->slots[q->slot] : NULL;
    if (!r || mk_ref_position(r) != q->pos || q->n_tokens < 1 || q->n_tokens > b->max_seq)
      MK_ERR_RETURN(MK_STATUS_INVALID_USAGE, MK_SUBSYS_ENGINE, "cpu backend: slot %d is not open at position %d",
                    q->slot, q->pos);
    MK_CHECK(mk_ref_forward(r, q->tokens, q->n_tokens, b->lg));
    memcpy(logits + (size_t)i * b->vocab, b->lg + (size_t)(q->n_tokens - 1) * b->vocab, sizeof(float) * b->vocab);
  }
  return MK_STATUS_OK;
}

static void cpu_destroy(void *self) {
  cpu_backend *b = self;
  if (!b) return;
  for (int i = 0; i < b->max_slots; i++) mk_ref_destroy(b->slots[i]);
  free(b->slots);
  free(b->lg);
  mk_ref_destroy(b->base);
  free(b);
}

static const mk_backend_ops k_cpu_ops = {"cpu-reference", cpu_open, cpu_close, cpu_forward, cpu_destroy, NULL};

mk_status mk_backend_cpu_create(const mk_model_t *m, int max_slots, int max_seq_len, mk_backend_t *out) {
  memset(out, 0, sizeof *out);
  if (!m || max_slots < 1 || max_seq_len < 1) return MK_STATUS_INVALID_ARGUMENT;
  cpu_backend *b = calloc(1, sizeof *b);
  if (!b) return MK_STATUS_OUT_OF_MEMORY;
  b->max_slots = max_slots, b->max_seq = max_seq_len, b->vocab = mk_model_config(m)->vocab;
  mk_status st = mk_ref_create(m, 1, &b->base);
  if (st) goto fail;
  b->slots = calloc((size_t)max_slots, sizeof *b->slots);
  b->lg = malloc(sizeof(float) * (size_t)max_seq_len * b->vocab);
  if (!b->slots || !b->lg) {
    st = MK_STATUS_OUT_OF_MEMORY;
    goto fail;
  }
  *out = (mk_backend_t){.ops = &k_cpu_ops, .self = b, .vocab = b->vocab, .max_slots = max_slots,
                        .max_seq_len = max_seq_len};
  return MK_STATUS_OK;
fail:
  cpu_destroy(b);
  return st;
}
