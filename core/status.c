/* status.c — names and explanations of mk_status values. */
#include "core/mk_core.h"

static const char *const k_names[MK_STATUS_COUNT_] = {
    [MK_STATUS_OK] = "MK_STATUS_OK",
    [MK_STATUS_CUDA_ERROR] = "MK_STATUS_CUDA_ERROR",
    [MK_STATUS_CUBLAS_ERROR] = "MK_STATUS_CUBLAS_ERROR",
    [MK_STATUS_NCCL_ERROR] = "MK_STATUS_NCCL_ERROR",
    [MK_STATUS_NET_ERROR] = "MK_STATUS_NET_ERROR",
    [MK_STATUS_SYSTEM_ERROR] = "MK_STATUS_SYSTEM_ERROR",
    [MK_STATUS_INTERNAL] = "MK_STATUS_INTERNAL",
    [MK_STATUS_INVALID_ARGUMENT] = "MK_STATUS_INVALID_ARGUMENT",
    [MK_STATUS_INVALID_USAGE] = "MK_STATUS_INVALID_USAGE",
    [MK_STATUS_REMOTE_ERROR] = "MK_STATUS_REMOTE_ERROR",
    [MK_STATUS_TIMEOUT] = "MK_STATUS_TIMEOUT",
    [MK_STATUS_UNSUPPORTED] = "MK_STATUS_UNSUPPORTED",
    [MK_STATUS_NO_DEVICE] = "MK_STATUS_NO_DEVICE",
    [MK_STATUS_OUT_OF_MEMORY] = "MK_STATUS_OUT_OF_MEMORY",
    [MK_STATUS_FORMAT_ERROR] = "MK_STATUS_FORMAT_ERROR",
};

static const char *const k_text[MK_STATUS_COUNT_] = {
    [MK_STATUS_OK] = "success",
    [MK_STATUS_CUDA_ERROR] = "a CUDA call failed (the log names the call and the device)",
    [MK_STATUS_CUBLAS_ERROR] = "a cuBLAS/cuBLASLt call failed",
    [MK_STATUS_NCCL_ERROR] = "an NCCL call failed",
    [MK_STATUS_NET_ERROR] = "a network or RDMA transport call failed",
    [MK_STATUS_SYSTEM_ERROR] = "an operating-system call failed",
    [MK_STATUS_INTERNAL] = "internal error in mkernel (please report it)",
    [MK_STATUS_INVALID_ARGUMENT] = "invalid argument (the log says which and why)",
    [MK_STATUS_INVALID_USAGE] = "invalid usage: the call is not allowed in this state",
    [MK_STATUS_REMOTE_ERROR] = "another rank reported an error",
    [MK_STATUS_TIMEOUT] = "a bounded wait timed out (see MK_TIMEOUT_MS)",
    [MK_STATUS_UNSUPPORTED] = "not supported by this build or this hardware",
    [MK_STATUS_NO_DEVICE] = "no usable GPU (no driver or no device)",
    [MK_STATUS_OUT_OF_MEMORY] = "out of memory",
    [MK_STATUS_FORMAT_ERROR] = "malformed file or message",
};

const char *mk_status_name(mk_status st) {
  if ((unsigned)st >= MK_STATUS_COUNT_) return "MK_STATUS_UNKNOWN";
  return k_names[st];
}

const char *mk_status_str(mk_status st) {
  if ((unsigned)st >= MK_STATUS_COUNT_) return "unknown status code";
  return k_text[st];
}
