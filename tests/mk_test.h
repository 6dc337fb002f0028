/* mk_test.h — test helpers: ASSERT_* macros that print both sides and exit 1, the ctest
 * skip code for a machine without the GPUs a test needs, a per-test alarm, and the
 * error measures every numerical test uses (relative Frobenius error, NaN never passes). */
#ifndef MK_TEST_H
#define MK_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/mk_core.h"

#define MK_TEST_SKIP_CODE 77

#define MK_TEST_FAIL_(...)                                      \
  do {                                                          \
    fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);        \
    fprintf(stderr, __VA_ARGS__);                               \
    fprintf(stderr, "\n");                                      \
    exit(1);                                                    \
  } while (0)

/* A CUDA runtime call in a test: fail with the call's text and CUDA's message. */
#define CUDA_OK(x)                                                              \
  do {                                                                          \
    cudaError_t e_ = (x);                                                       \
    if (e_ != cudaSuccess) MK_TEST_FAIL_("%s: %s", #x, cudaGetErrorString(e_)); \
  } while (0)

#define ASSERT_TRUE(c) \
  do { if (!(c)) MK_TEST_FAIL_("expected true: %s", #c); } while (0)
#define ASSERT_FALSE(c) \
  do { if (c) MK_TEST_FAIL_("expected false: %s", #c); } while (0)

#define MK_ASSERT_INT_(a, op, b)                                                              \
  do {                                                                                        \
    intmax_t a_ = (intmax_t)(a), b_ = (intmax_t)(b);                                          \
    if (!(a_ op b_)) MK_TEST_FAIL_("%s %s %s: %jd vs %jd", #a, #op, #b, a_, b_);              \
  } while (0)
#define ASSERT_EQ(a, b) MK_ASSERT_INT_(a, ==, b)
#define ASSERT_NE(a, b) MK_ASSERT_INT_(a, !=, b)
#define ASSERT_LT(a, b) MK_ASSERT_INT_(a, <, b)
#define ASSERT_LE(a, b) MK_ASSERT_INT_(a, <=, b)
#define ASSERT_GT(a, b) MK_ASSERT_INT_(a, >, b)
#define ASSERT_GE(a, b) MK_ASSERT_INT_(a, >=, b)

#define ASSERT_UEQ(a, b)                                                                      \
  do {                                                                                        \
    uintmax_t a_ = (uintmax_t)(a), b_ = (uintmax_t)(b);                                       \
    if (a_ != b_) MK_TEST_FAIL_("%s == %s: %ju (0x%jx) vs %ju (0x%jx)", #a, #b, a_, a_, b_, b_); \
  } while (0)

#define ASSERT_DBL_LE(a, b)                                                                   \
  do {                                                                                        \
    double a_ = (double)(a), b_ = (double)(b);                                                \
    if (!(a_ <= b_)) MK_TEST_FAIL_("%s <= %s: %.6g vs %.6g", #a, #b, a_, b_);                 \
  } while (0)
#define ASSERT_NEAR(a, b, tol)                                                                \
  do {                                                                                        \
    double a_ = (double)(a), b_ = (double)(b);                                                \
    if (!(fabs(a_ - b_) <= (tol))) MK_TEST_FAIL_("|%s - %s| <= %g: %.9g vs %.9g", #a, #b, (double)(tol), a_, b_); \
  } while (0)

#define ASSERT_STREQ(a, b)                                                                    \
  do {                                                                                        \
    const char *a_ = (a), *b_ = (b);                                                          \
    if (!a_ || !b_ || strcmp(a_, b_) != 0) MK_TEST_FAIL_("%s == %s: \"%s\" vs \"%s\"", #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
  } while (0)

#define ASSERT_STATUS(call, want)                                                              \
  do {                                                                                         \
    mk_status got_ = (call), want_ = (want);                                                   \
    if (got_ != want_) MK_TEST_FAIL_("%s: got %s, want %s", #call, mk_status_name(got_), mk_status_name(want_)); \
  } while (0)
#define ASSERT_OK(call) ASSERT_STATUS(call, MK_STATUS_OK)

#ifdef __cplusplus
extern "C" {
#endif
/* Start of every test's main: a watchdog alarm (the ctest timeout is the outer one). */
void mk_test_init(int argc, char **argv, unsigned timeout_s);
/* Exit with the skip code unless at least n GPUs are usable, and the GPU this rank would use
 * (MK_DEVICE, else LOCAL_RANK) exists: under mk-launch -n 8 on a 4-GPU host, ranks 4..7 exit
 * 77 first (the others wait in the bootstrap) and mk-launch passes 77 on: ctest says skipped. */
void mk_test_require_gpus(int n);
/* Fresh seed for this run (time and pid), printed so a failure can be replayed with
 * MK_TEST_SEED=<seed>. */
uint64_t mk_test_seed(void);

/* ||out - ref||_F / ||ref||_F in double; +inf if any out is NaN/inf. */
double mk_test_rel_err_f32(const float *out, const float *ref, size_t n);
double mk_test_rel_err_bf16(const uint16_t *out, const float *ref, size_t n);
#ifdef __cplusplus
}
#endif

#endif /* MK_TEST_H */
