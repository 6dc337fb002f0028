/* mk_engine.h — serving: paged KV bookkeeping, sampler, backends, the continuous-batching
 * scheduler, the HF tokenizer.json byte-level BPE tokenizer and the OpenAI-compatible HTTP
 * server.
 *
 *   kv pages    mk_kv_pages_t: a budget of pages of block_size tokens; admission reserves a
 *               request's worst case (prompt + max_tokens), pages are handed out as its
 *               sequence grows, so an allocation never fails after admission.
 *   sampler     mk_sample(): greedy at temperature 0, else temperature + top_p with a
 *               counter-based generator (deterministic per request seed).
 *   backend     mk_backend_t: a function table (open/close a sequence slot, forward a batch
 *               of sequences: each with its new tokens, position and page table, giving the
 *               logits of its last token). mk_backend_cpu_create: the fp32 reference, one
 *               mk_ref_t (own KV cache) per slot. The GPU engine plugs in the same table.
 *   engine      mk_engine_t: one scheduler thread; requests queue (up to max_waiting), are
 *               admitted while KV pages and batch slots allow, step together (prefill and
 *               decode mixed in one batch), stop on max_tokens / EOS / stop ids / stop strings
 *               / timeout / cancellation.
 *   tokenizer   mk_tokenizer_t: tokenizer.json (BPE model, both merges formats; ByteLevel,
 *               Split (PCRE2) and Sequence pre-tokenizers; added and special tokens).
 *   server      mk_server_t: libmicrohttpd; POST /v1/completions, GET /v1/models, /health,
 *               /metrics (Prometheus).
 *
 * Usage (what mk-serve does):
 *   mk_backend_t be;  mk_engine_t *e;  mk_server_t *s;
 *   MK_CHECK(mk_backend_cpu_create(model, cfg.max_batch, max_len, &be));
 *   MK_CHECK(mk_engine_create(&cfg, &be, tok, &e));          // takes be
 *   MK_CHECK(mk_server_start(&scfg, e, tok, &s));
 *   ... mk_server_stop(s); mk_engine_destroy(e); */
#ifndef MK_ENGINE_H
#define MK_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "comm/mk_comm.h"
#include "core/mk_core.h"
#include "models/mk_models.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- paged KV bookkeeping ------------------------------------------------------------ */
typedef struct mk_kv_pages mk_kv_pages_t;
mk_status mk_kv_pages_create(int n_pages, int block_size, mk_kv_pages_t **out);
void mk_kv_pages_destroy(mk_kv_pages_t *p);
int mk_kv_pages_for(const mk_kv_pages_t *p, int64_t tokens); /* pages that hold `tokens` */
/* Reserve n pages for a request; MK_STATUS_OUT_OF_MEMORY (nothing reserved) if the budget
 * cannot hold them now. */
mk_status mk_kv_pages_reserve(mk_kv_pages_t *p, int n);
void mk_kv_pages_unreserve(mk_kv_pages_t *p, int n);
/* One page out of an earlier reservation (the reservation shrinks by one). */
mk_status mk_kv_pages_alloc(mk_kv_pages_t *p, int32_t *page);
void mk_kv_pages_free(mk_kv_pages_t *p, const int32_t *pages, int n);
typedef struct mk_kv_stats {
  int total, used, reserved, block_size; /* used = handed out; reserved = promised, not yet handed out */
} mk_kv_stats;
void mk_kv_pages_stats(const mk_kv_pages_t *p, mk_kv_stats *out);

/* ---- sampler --------------------------------------------------------------------------- */
typedef struct mk_sampling {
  float temperature; /* 0 = greedy */
  float top_p;       /* (0, 1] */
  uint64_t seed;
} mk_sampling_t;
/* Token for step `step` of a request; scratch holds 2 * vocab floats. */
int32_t mk_sample(const float *logits, int vocab, const mk_sampling_t *s, uint64_t step, float *scratch);

/* ---- backends -------------------------------------------------------------------------- */
typedef struct mk_batch_seq {
  int slot;              /* 0 <= slot < max_slots, opened with seq_open */
  const int32_t *tokens; /* the new tokens (the prompt at prefill, one token at decode) */
  int n_tokens;
  int pos;               /* position of tokens[0] */
  const int32_t *pages;  /* page table: the pages holding positions 0 .. pos + n_tokens - 1 */
  int n_pages;
} mk_batch_seq;

typedef struct mk_backend_ops {
  const char *name;
  mk_status (*seq_open)(void *self, int slot, int max_tokens);
  void (*seq_close)(void *self, int slot);
  /* logits [n, vocab]: row i is the last token of seqs[i]. */
  mk_status (*forward)(void *self, const mk_batch_seq *seqs, int n, float *logits);
  void (*destroy)(void *self);
  /* Optional (NULL: none): called by the engine thread, without its lock, about every 50 ms
   * while no sequence runs. */
  mk_status (*idle)(void *self);
} mk_backend_ops;

typedef struct mk_backend {
  const mk_backend_ops *ops;
  void *self;
  int vocab, max_slots, max_seq_len;
  /* Optional (NULL: the engine allocates its own): a host buffer [max_slots, vocab] owned by
   * the backend, which the engine and mk_backend_follow pass to forward (the GPU backend's is
   * page-locked, so the logits copy runs at full PCIe speed). */
  float *logits;
} mk_backend_t;

/* The fp32 CPU reference over `m` (which must outlive the backend): max_slots sequences of
 * up to max_seq_len tokens each. */
mk_status mk_backend_cpu_create(const mk_model_t *m, int max_slots, int max_seq_len, mk_backend_t *out);

/* The GPU model (mk_model_batch_t, layers/mk_layers.h) over this rank's shard: weights loaded
 * once, a paged KV cache whose pages are the engine's page ids (kv_pages x block_size tokens
 * per layer), a step's tokens concatenated for the GEMMs / MoE, attention per sequence (paged
 * decode; flash attention over gathered K/V for prefill). Collective create and forward (wrap
 * with mk_backend_dist_create / run mk_backend_follow under several ranks). Compile-checked
 * only: not yet run on a GPU. */
typedef struct mk_backend_gpu_config {
  int max_slots, max_seq_len;  /* as the engine's max_batch, max_model_len */
  int kv_pages, block_size;    /* as the engine's */
  int max_step_tokens;         /* new tokens per GPU pass (>= max_seq_len; a bigger step runs in several) */
  int tp;                      /* 0: the default layout */
  int path;                    /* mk_path: MK_PATH_FUSED 0, MK_PATH_UNFUSED 1 */
} mk_backend_gpu_config;
mk_status mk_backend_gpu_create(const mk_model_t *m, mk_comm_t *comm, const mk_backend_gpu_config *c, mk_backend_t *out);

/* ---- several ranks (backend_dist.c) ----------------------------------------------------
 * Rank 0 serves; every engine step it broadcasts the step's plan (the slots opened and closed
 * since the last step, then the batch: slots, tokens, positions, page tables) over the host
 * bootstrap, and the other ranks make the same backend calls. While idle, rank 0 sends an
 * empty plan every 250 ms (a follower's wait is bounded by MK_BOOTSTRAP_TIMEOUT_MS). */
/* Rank 0 of `size` ranks: wrap *inner (taken, also on failure) so that every call goes to
 * every rank. Collective with mk_backend_follow (checks that every rank's backend has the
 * same vocab, slots and length). b must outlive the backend; its destroy tells the
 * followers to stop. */
mk_status mk_backend_dist_create(mk_bootstrap_t *b, int size, mk_backend_t *inner, mk_backend_t *out);
/* Rank 0: MK_STATUS_OK, or the status of the broadcast that failed (a follower died or did
 * not answer; the bootstrap's message names it): no step can run any more. */
mk_status mk_backend_dist_error(const mk_backend_t *dist);
/* Ranks > 0: run rank 0's plans on *be (not taken) until rank 0 says stop (MK_STATUS_OK) or
 * a failure (rank 0 died or stalled: the bootstrap's status; a malformed plan or a backend
 * error: that status). steps (NULL ok) counts the forwards run. */
mk_status mk_backend_follow(mk_bootstrap_t *b, int size, mk_backend_t *be, uint64_t *steps);

/* ---- tokenizer -------------------------------------------------------------------------- */
typedef struct mk_tokenizer mk_tokenizer_t;
mk_status mk_tokenizer_load(const char *path, mk_tokenizer_t **out);
mk_status mk_tokenizer_parse(const char *label, const char *json, size_t len, mk_tokenizer_t **out);
void mk_tokenizer_destroy(mk_tokenizer_t *t);
int mk_tokenizer_vocab_size(const mk_tokenizer_t *t); /* largest id + 1 */
/* ids: malloc'd (caller frees), no special tokens added around the text. */
mk_status mk_tokenizer_encode(const mk_tokenizer_t *t, const char *text, size_t len, int32_t **ids, int *n);
/* Append the bytes of ids to *buf (realloc'd; *len and *cap updated); special tokens are
 * left out when skip_special. The bytes may end inside a UTF-8 character. */
mk_status mk_tokenizer_decode(const mk_tokenizer_t *t, const int32_t *ids, int n, int skip_special, char **buf,
                              size_t *len, size_t *cap);
int32_t mk_tokenizer_find(const mk_tokenizer_t *t, const char *token); /* -1 if absent */

/* ---- engine ------------------------------------------------------------------------------ */
typedef struct mk_engine_config {
  int kv_pages, block_size;    /* KV budget: pages of block_size tokens */
  int max_batch;               /* sequences running at once (<= backend max_slots) */
  int max_waiting;             /* queued requests before MK_ADMIT_QUEUE_FULL */
  int max_model_len;           /* prompt + max_tokens bound (<= backend max_seq_len) */
  int64_t request_timeout_ms;  /* 0 = none: from submission to the last token */
  int step_delay_ms;           /* tests: sleep before each step (slows generation) */
  const int32_t *eos_ids;      /* copied */
  int n_eos;
} mk_engine_config;
void mk_engine_config_default(mk_engine_config *c);

typedef struct mk_engine mk_engine_t;
/* Takes ownership of *be (destroyed with the engine, or on failure). tok may be NULL. */
mk_status mk_engine_create(const mk_engine_config *c, mk_backend_t *be, const mk_tokenizer_t *tok, mk_engine_t **out);
/* Refuse new requests (MK_ADMIT_SHUTTING_DOWN); with abort, end every queued and running
 * request now (finish_reason "abort"), else let them finish. */
void mk_engine_shutdown(mk_engine_t *e, int abort);
/* Stops the thread (requests still running end with "abort"). Call it after every consumer
 * has released its requests (after mk_server_stop). */
void mk_engine_destroy(mk_engine_t *e);
const mk_engine_config *mk_engine_get_config(const mk_engine_t *e);
int mk_engine_vocab(const mk_engine_t *e);

typedef struct mk_request_params {
  const int32_t *prompt; /* copied */
  int n_prompt;
  int max_tokens;
  mk_sampling_t sampling;
  const int32_t *stop_ids; /* copied */
  int n_stop_ids;
  const char *const *stop; /* stop strings on the detokenised text (needs a tokenizer); copied */
  int n_stop;
  int ignore_eos;
} mk_request_params;

typedef enum mk_admit {
  MK_ADMIT_OK = 0,
  MK_ADMIT_INVALID,       /* bad parameters: err says what (HTTP 400) */
  MK_ADMIT_QUEUE_FULL,    /* max_waiting requests already queued (HTTP 429) */
  MK_ADMIT_SHUTTING_DOWN, /* HTTP 503 */
} mk_admit;

typedef struct mk_request mk_request_t;
mk_admit mk_engine_submit(mk_engine_t *e, const mk_request_params *p, mk_request_t **out, char *err, size_t errlen);

/* What arrived since the last call (one consumer per request). Pointers stay valid until the
 * next call or mk_request_release. */
typedef struct mk_request_update {
  const int32_t *ids;  /* new token ids */
  int n_ids;
  const char *text;    /* new text (complete UTF-8, stop strings cut) */
  size_t text_len;
  int done;
  const char *finish_reason; /* when done: "length", "stop", "timeout", "abort", "error" */
  int prompt_tokens, completion_tokens;
  double first_token_s;      /* seconds from submission to the first token (-1 before) */
} mk_request_update;
/* Waits up to wait_ms for something new (0: no wait). */
void mk_request_next(mk_request_t *r, int wait_ms, mk_request_update *u);
/* The consumer is done; a request that is still running is cancelled (client gone). */
void mk_request_release(mk_request_t *r);

typedef struct mk_engine_stats {
  int running, waiting, shutting_down;
  mk_kv_stats kv;
  uint64_t prompt_tokens, generation_tokens, steps;
  uint64_t finished[6]; /* by finish reason: length, stop, timeout, abort, error, rejected */
  /* histograms: cumulative counts per bucket bound (mk_engine_hist_bounds), sum, count */
  uint64_t ttft_count[16], itl_count[16], ttft_n, itl_n;
  double ttft_sum, itl_sum;
  /* engine steps: the backend's forward (for several ranks: the plan broadcast, every rank's
   * pass, the logits to the host) as a histogram, and the host sampling of the step's tokens */
  uint64_t forward_count[16], forward_n;
  double forward_sum, sample_sum;
} mk_engine_stats;
/* Bucket upper bounds in seconds (n = 15; the 16th count is +Inf). */
const double *mk_engine_hist_bounds(int *n);
void mk_engine_get_stats(mk_engine_t *e, mk_engine_stats *out);

/* ---- HTTP server --------------------------------------------------------------------------- */
typedef struct mk_server_config {
  const char *host;       /* listen address, "127.0.0.1" */
  int port;               /* 0 = ephemeral (see mk_server_port) */
  const char *model_name; /* served name (/v1/models, "model" in responses) */
  int threads_max;        /* connections served at once */
  int64_t max_body;       /* bytes of a request body */
} mk_server_config;
void mk_server_config_default(mk_server_config *c);
typedef struct mk_server mk_server_t;
mk_status mk_server_start(const mk_server_config *c, mk_engine_t *e, const mk_tokenizer_t *tok, mk_server_t **out);
int mk_server_port(const mk_server_t *s);
void mk_server_stop(mk_server_t *s); /* NULL ok */

#ifdef __cplusplus
}
#endif
#endif /* MK_ENGINE_H */
