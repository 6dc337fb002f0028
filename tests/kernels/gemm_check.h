/* gemm_check.h — helpers shared by the GEMM tests: random device inputs, the fp32 reference
 * (GPU kernel, itself checked against a CPU fp32 reference on sampled rows), and the
 * element-by-element comparison of a bf16 result. */
#ifndef MK_TESTS_GEMM_CHECK_H
#define MK_TESTS_GEMM_CHECK_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/mk_kernels.h"
#include "tests/mk_test.h"

/* Device bf16 buffer of n elements, uniform in [-1, 1) from (seed). */
uint16_t *gemm_check_random(size_t n, uint64_t seed);

/* ref[M, N] (device fp32) = A @ B by mk_gemm_ref_f32; rows sampled across [0, M) (all when
 * M*N*K is small) are recomputed on the CPU and must agree to 1e-5. */
float *gemm_check_reference(const uint16_t *A, const uint16_t *B, int64_t M, int64_t N, int64_t K,
                            mk_gemm_b_layout layout);

/* Compares C (device bf16, M x N) with ref (device fp32) element by element: an element is
 * wrong when non-finite or off by more than 2e-2 |ref| + 1e-2 rms(ref). Prints one line with
 * `what`, returns the number of wrong elements and the relative Frobenius error in *rel. */
size_t gemm_check_compare(const char *what, const uint16_t *C, const float *ref, int64_t M, int64_t N, double *rel);

/* Number of elements of the device bf16 range [p, p + n) that are not 0xffff (the poison). */
size_t gemm_check_count_touched(const uint16_t *p, size_t n);

/* Runs mk_gemm_bf16 on one shape (fresh random A, B from seed) with the current environment
 * into a poisoned C with 3 extra rows; checks every element against the fp32 reference and
 * that the extra rows are untouched. With twice set, runs it again into a second poisoned
 * buffer and requires bit-identical results. Returns 1 when wrong. `mode` names the run. */
int gemm_check_run(int64_t m, int64_t n, int64_t k, mk_gemm_b_layout b, uint64_t seed, const char *mode, int twice);

#endif /* MK_TESTS_GEMM_CHECK_H */
