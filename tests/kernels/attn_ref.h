/* attn_ref.h — whole-batch CPU attention reference for the attention tests (the library's
 * mk_attn_ref_row over every row, threads over (sequence, head)), bf16 input helpers, and
 * the check every attention test applies. */
#ifndef MK_TEST_ATTN_REF_H
#define MK_TEST_ATTN_REF_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/mk_kernels.h"

/* a: mk_flash_attn_fwd's args with HOST q, k, v, cu_seqlens_*; writes o [total_q, hq, d] and
 * lse [hq, total_q] (natural log; -inf for a row that sees no key, whose o is 0). */
void attn_ref(const mk_attn_fwd_args *a, float *o, float *lse);

/* n bf16 values uniform in [lo, hi) from stream seed, as bits (h) and, if f, as floats. */
void attn_fill_bf16(uint16_t *h, float *f, size_t n, uint64_t seed, float lo, float hi);

/* A device copy of bytes from h, or (h NULL) a buffer poisoned with 0xff (NaN for bf16 and
 * fp32); never NULL (a test failure instead). */
void *attn_dev(const void *h, size_t bytes);

/* Checks o (bf16, n_o elements) and lse (n_lse) against the reference: every element finite
 * where the reference is, lse -inf exactly where the reference is, rel Frobenius error of o
 * <= o_tol, max |lse error| <= lse_tol. Prints one line with `what`; returns 0 if it passes. */
int attn_check(const char *what, const uint16_t *o, const float *o_ref, size_t n_o, const float *lse,
               const float *lse_ref, size_t n_lse, double o_tol, double lse_tol);

#endif /* MK_TEST_ATTN_REF_H */
