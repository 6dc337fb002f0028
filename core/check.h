/* check.h — internal check macros: each logs the failing statement with file:line (and the
 * device for CUDA) and returns, or jumps to a cleanup label with, the matching mk_status.
 *
 *   MK_CHECK(call)                       propagate a non-OK mk_status
 *   MK_CHECK_GOTO(call, st, fail)        same, but st = status; goto fail
 *   MK_CUDA_CHECK(stmt)                  cudaError_t       -> MK_STATUS_CUDA_ERROR
 *   MK_CUBLAS_CHECK(stmt)                cublasStatus_t    -> MK_STATUS_CUBLAS_ERROR
 *   MK_CUBLASLT_CHECK(stmt)              same, for code that links cuBLASLt alone
 *   MK_NCCL_CHECK(stmt)                  ncclResult_t      -> MK_STATUS_NCCL_ERROR
 *   MK_VERBS_CHECK(stmt)                 int (0 = ok; else errno value) -> MK_STATUS_NET_ERROR
 *   MK_SYS_CHECK(stmt)                   int (-1 = error, errno set)    -> MK_STATUS_SYSTEM_ERROR
 * and *_GOTO forms of each. The CUDA/cuBLAS/NCCL/verbs forms expand to calls of those
 * libraries' error-string functions, so a file using one includes that library's header. */
#ifndef MK_CORE_CHECK_H
#define MK_CORE_CHECK_H

#include <errno.h>
#include <string.h>

#include "core/mk_core.h"

#ifdef __cplusplus
extern "C" {
#endif
int mk_check_current_device(void); /* the current CUDA device, or -1 */
#ifdef __cplusplus
}
#endif

#define MK_FAIL_LOG_(kind, stmt, code, text)                                              \
  mk_log_write(MK_LOG_WARN, MK_SUBSYS_ALL, __FILE__, __LINE__, "%s error %d '%s' in %s", \
               (kind), (int)(code), (text), (stmt))

#define MK_CHECK(call)                  \
  do {                                  \
    mk_status mk_st_ = (call);          \
    if (mk_st_ != MK_STATUS_OK) return mk_st_; \
  } while (0)

#define MK_CHECK_GOTO(call, st, label)  \
  do {                                  \
    (st) = (call);                      \
    if ((st) != MK_STATUS_OK) goto label; \
  } while (0)

#define MK_CUDA_FAIL_(stmt, err)                                                          \
  mk_log_write(MK_LOG_WARN, MK_SUBSYS_ALL, __FILE__, __LINE__,                            \
               "CUDA error %d '%s' on device %d in %s", (int)(err), cudaGetErrorString(err), \
               mk_check_current_device(), (stmt))

#define MK_CUDA_CHECK(stmt)                  \
  do {                                       \
    cudaError_t mk_e_ = (stmt);              \
    if (mk_e_ != cudaSuccess) {              \
      MK_CUDA_FAIL_(#stmt, mk_e_);           \
      return MK_STATUS_CUDA_ERROR;           \
    }                                        \
  } while (0)

#define MK_CUDA_CHECK_GOTO(stmt, st, label)  \
  do {                                       \
    cudaError_t mk_e_ = (stmt);              \
    if (mk_e_ != cudaSuccess) {              \
      MK_CUDA_FAIL_(#stmt, mk_e_);           \
      (st) = MK_STATUS_CUDA_ERROR;           \
      goto label;                            \
    }                                        \
  } while (0)

/* After a kernel launch: the launch error, if any. */
#define MK_CUDA_LAUNCH_CHECK() MK_CUDA_CHECK(cudaGetLastError())

#define MK_LIB_CHECK_(stmt, T, ok, kind, strfn, status)   \
  do {                                                    \
    T mk_r_ = (stmt);                                     \
    if (mk_r_ != (ok)) {                                  \
      MK_FAIL_LOG_(kind, #stmt, mk_r_, strfn(mk_r_));     \
      return (status);                                    \
    }                                                     \
  } while (0)

#define MK_LIB_CHECK_GOTO_(stmt, T, ok, kind, strfn, status, st, label) \
  do {                                                    \
    T mk_r_ = (stmt);                                     \
    if (mk_r_ != (ok)) {                                  \
      MK_FAIL_LOG_(kind, #stmt, mk_r_, strfn(mk_r_));     \
      (st) = (status);                                    \
      goto label;                                         \
    }                                                     \
  } while (0)

#define MK_CUBLAS_CHECK(stmt) \
  MK_LIB_CHECK_(stmt, cublasStatus_t, CUBLAS_STATUS_SUCCESS, "cuBLAS", cublasGetStatusString, MK_STATUS_CUBLAS_ERROR)
#define MK_CUBLAS_CHECK_GOTO(stmt, st, label)                                                  \
  MK_LIB_CHECK_GOTO_(stmt, cublasStatus_t, CUBLAS_STATUS_SUCCESS, "cuBLAS", cublasGetStatusString, \
                     MK_STATUS_CUBLAS_ERROR, st, label)
#define MK_CUBLASLT_CHECK(stmt) \
  MK_LIB_CHECK_(stmt, cublasStatus_t, CUBLAS_STATUS_SUCCESS, "cuBLASLt", cublasLtGetStatusString, MK_STATUS_CUBLAS_ERROR)
#define MK_CUBLASLT_CHECK_GOTO(stmt, st, label)                                                     \
  MK_LIB_CHECK_GOTO_(stmt, cublasStatus_t, CUBLAS_STATUS_SUCCESS, "cuBLASLt", cublasLtGetStatusString, \
                     MK_STATUS_CUBLAS_ERROR, st, label)
#define MK_NCCL_CHECK(stmt) \
  MK_LIB_CHECK_(stmt, ncclResult_t, ncclSuccess, "NCCL", ncclGetErrorString, MK_STATUS_NCCL_ERROR)
#define MK_NCCL_CHECK_GOTO(stmt, st, label) \
  MK_LIB_CHECK_GOTO_(stmt, ncclResult_t, ncclSuccess, "NCCL", ncclGetErrorString, MK_STATUS_NCCL_ERROR, st, label)
/* Verbs calls return 0 or an errno value (some return -1 and set errno). */
#define MK_VERBS_ERRNO_(r) ((r) > 0 ? (r) : errno)
#define MK_VERBS_CHECK(stmt)                                                  \
  do {                                                                        \
    int mk_r_ = (stmt);                                                       \
    if (mk_r_ != 0) {                                                         \
      MK_FAIL_LOG_("verbs", #stmt, MK_VERBS_ERRNO_(mk_r_), strerror(MK_VERBS_ERRNO_(mk_r_))); \
      return MK_STATUS_NET_ERROR;                                             \
    }                                                                         \
  } while (0)
#define MK_VERBS_CHECK_GOTO(stmt, st, label)                                  \
  do {                                                                        \
    int mk_r_ = (stmt);                                                       \
    if (mk_r_ != 0) {                                                         \
      MK_FAIL_LOG_("verbs", #stmt, MK_VERBS_ERRNO_(mk_r_), strerror(MK_VERBS_ERRNO_(mk_r_))); \
      (st) = MK_STATUS_NET_ERROR;                                             \
      goto label;                                                             \
    }                                                                         \
  } while (0)
#define MK_SYS_CHECK(stmt)                                   \
  do {                                                       \
    if ((stmt) == -1) {                                      \
      int mk_errno_ = errno;                                 \
      MK_FAIL_LOG_("system", #stmt, mk_errno_, strerror(mk_errno_)); \
      return MK_STATUS_SYSTEM_ERROR;                         \
    }                                                        \
  } while (0)
#define MK_SYS_CHECK_GOTO(stmt, st, label)                   \
  do {                                                       \
    if ((stmt) == -1) {                                      \
      int mk_errno_ = errno;                                 \
      MK_FAIL_LOG_("system", #stmt, mk_errno_, strerror(mk_errno_)); \
      (st) = MK_STATUS_SYSTEM_ERROR;                         \
      goto label;                                            \
    }                                                        \
  } while (0)

/* Bad input from a user/file/peer: log what was wrong and return the status. */
#define MK_ERR_RETURN(status, subsys, ...)  \
  do {                                      \
    MK_WARN((subsys), __VA_ARGS__);         \
    return (status);                        \
  } while (0)

#endif /* MK_CORE_CHECK_H */
