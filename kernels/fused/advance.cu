/* advance.cu — after each fused op (stream-ordered, graph-capturable): the comm's epoch slot of
 * the op (targets of the flags set over NVLink) and the handle's call count of the op (targets
 * of the proxied counters, fused_internal.h) both advance by one, and the op's two task claims
 * (MK_FUSED_TAIL) go back to 0 for the next call, in one one-thread kernel. */
#include "core/check.h"
#include "kernels/fused/fused_internal.h"

static __global__ void mk_fused_advance_kernel(unsigned long long *epoch, unsigned long long *calls, uint32_t *claims) {
  *epoch += 1;
  *calls += 1;
  claims[0] = claims[1] = 0;
}

extern "C" mk_status mk_fused_launch_advance(uint64_t *epoch, uint64_t *calls, uint32_t *claims, mk_stream_t stream) {
  mk_fused_advance_kernel<<<1, 1, 0, (cudaStream_t)stream>>>((unsigned long long *)epoch, (unsigned long long *)calls,
                                                              claims);
  MK_CUDA_CHECK(cudaGetLastError());
  return MK_STATUS_OK;
}

/* Lazy loading: load it at mk_fused_create, not at a first launch behind a running op. */
extern "C" mk_status mk_fused_preload_advance(void) {
  cudaFuncAttributes fa;
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_fused_advance_kernel));
  return MK_STATUS_OK;
}
