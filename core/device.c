/* device.c — is there a usable GPU? Answers on a machine with no driver without crashing:
 * the CUDA runtime is linked statically and loads libcuda itself, on first use. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>

#include "core/check.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_count;
static cudaError_t g_err;
static char g_reason[256];

static void probe(void) {
  g_err = cudaGetDeviceCount(&g_count);
  if (g_err == cudaSuccess && g_count > 0) return;
  if (g_err == cudaSuccess) g_err = cudaErrorNoDevice;
  g_count = 0;
  const char *why = g_err == cudaErrorInsufficientDriver ? "no NVIDIA driver is loaded, or it is older than this CUDA runtime"
                    : g_err == cudaErrorNoDevice         ? "no CUDA-capable GPU is visible"
                                                         : cudaGetErrorString(g_err);
  snprintf(g_reason, sizeof g_reason, "%s (cudaGetDeviceCount: %s)", why, cudaGetErrorName(g_err));
  cudaGetLastError(); /* the probe's error is not sticky; clear it */
}

mk_status mk_device_count(int *n) {
  pthread_once(&g_once, probe);
  *n = g_count;
  if (g_count > 0) return MK_STATUS_OK;
  MK_INFO(MK_SUBSYS_INIT, "no usable GPU: %s", g_reason);
  return MK_STATUS_NO_DEVICE;
}

const char *mk_device_absent_reason(void) {
  pthread_once(&g_once, probe);
  return g_reason;
}

int mk_check_current_device(void) {
  int d = -1;
  if (cudaGetDevice(&d) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return d;
}
