/* kv_pages.c — paged KV bookkeeping: a free list of page ids and a reservation counter.
 * Admission reserves a request's worst case; pages are then handed out one by one as its
 * sequence grows, so an allocation after admission never fails and nothing is ever
 * allocated past the budget. Not thread-safe: the scheduler thread owns it. */
#include <stdlib.h>

#include "core/check.h"
#include "engine/mk_engine.h"

struct mk_kv_pages {
  int total, block_size, n_free, reserved;
  int32_t *free_list; /* [total], the first n_free are free */
};

mk_status mk_kv_pages_create(int n_pages, int block_size, mk_kv_pages_t **out) {
  *out = NULL;
  if (n_pages < 1 || block_size < 1)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_ENGINE, "kv pages: %d pages of %d tokens: both must be >= 1",
                  n_pages, block_size);
  mk_kv_pages_t *p = calloc(1, sizeof *p);
  if (!p || !(p->free_list = malloc(sizeof(int32_t) * (size_t)n_pages))) {
    free(p);
    return MK_STATUS_OUT_OF_MEMORY;
  }
  p->total = p->n_free = n_pages;
  p->block_size = block_size;
  for (int i = 0; i < n_pages; i++) p->free_list[i] = n_pages - 1 - i; /* page 0 handed out first */
  *out = p;
  return MK_STATUS_OK;
}

void mk_kv_pages_destroy(mk_kv_pages_t *p) {
  if (!p) return;
  free(p->free_list);
  free(p);
}

int mk_kv_pages_for(const mk_kv_pages_t *p, int64_t tokens) {
  return tokens <= 0 ? 0 : (int)((tokens + p->block_size - 1) / p->block_size);
}

mk_status mk_kv_pages_reserve(mk_kv_pages_t *p, int n) {
  if (n < 0) return MK_STATUS_INVALID_ARGUMENT;
  if (n > p->n_free - p->reserved) return MK_STATUS_OUT_OF_MEMORY;
  p->reserved += n;
  return MK_STATUS_OK;
}

void mk_kv_pages_unreserve(mk_kv_pages_t *p, int n) {
  p->reserved -= n < p->reserved ? n : p->reserved;
}

mk_status mk_kv_pages_alloc(mk_kv_pages_t *p, int32_t *page) {
  if (p->reserved < 1 || p->n_free < 1)
    MK_ERR_RETURN(MK_STATUS_INTERNAL, MK_SUBSYS_ENGINE, "kv pages: allocation outside a reservation");
  p->reserved--;
  *page = p->free_list[--p->n_free];
  return MK_STATUS_OK;
}

void mk_kv_pages_free(mk_kv_pages_t *p, const int32_t *pages, int n) {
  for (int i = 0; i < n && p->n_free < p->total; i++) p->free_list[p->n_free++] = pages[i];
}

void mk_kv_pages_stats(const mk_kv_pages_t *p, mk_kv_stats *out) {
  *out = (mk_kv_stats){.total = p->total, .used = p->total - p->n_free, .reserved = p->reserved,
                       .block_size = p->block_size};
}
