/* attn_ref.h — CPU reference of attention for the attention tests (double accumulation,
 * threads over (sequence, head)), and helpers to make bf16 inputs on the host. */
#ifndef MK_TEST_ATTN_REF_H
#define MK_TEST_ATTN_REF_H

#include <stddef.h>
#include <stdint.h>

/* Layouts as mk_flash_attn_fwd: q [total_q, hq, d], k/v [total_k, hkv, d], o [total_q, hq, d],
 * lse [hq, total_q] (natural log; -inf for a row that sees no key, whose o is 0).
 * mask: 0 none, 1 causal bottom-right, 2 causal with causal_offset (mk_attn_mask values). */
void attn_ref(const float *q, const float *k, const float *v, const int32_t *cu_q, const int32_t *cu_k, int batch,
              int hq, int hkv, int d, int mask, int causal_offset, float scale, float *o, float *lse);

/* n bf16 values uniform in [lo, hi) from stream seed, as bits (h) and as floats (f). */
void attn_fill_bf16(uint16_t *h, float *f, size_t n, uint64_t seed, float lo, float hi);

/* Checks o (bf16, n_o elements) and lse (n_lse) against the reference: every element finite
 * where the reference is, lse -inf exactly where the reference is, rel Frobenius error of o
 * <= o_tol, max |lse error| <= lse_tol. Prints one line with `what`; returns 0 if it passes. */
int attn_check(const char *what, const uint16_t *o, const float *o_ref, size_t n_o, const float *lse,
               const float *lse_ref, size_t n_lse, double o_tol, double lse_tol);

#endif /* MK_TEST_ATTN_REF_H */
