/* advance.cu — the small stream-ordered kernels around a fused op (graph-capturable).
 * After each op: the comm's epoch slot of the op (targets of the flags set over NVLink) and the
 * handle's call count of the op (targets of the proxied counters, fused_internal.h) both advance
 * by one, and the op's two task claims (MK_FUSED_TAIL) go back to 0 for the next call, in one
 * one-thread kernel.
 * Before a copy-engine call (copy_engine.c): the call's own flags back to 0, then 1 into this
 * rank's arrival slot on every peer, in one kernel. It replaces a memset and a stream write per
 * peer (cuStreamWriteValue32), whose hand-offs left ~12 us between the previous call's last kernel
 * and the GEMM (run deaaec0-x2, the kernel tracer; NOTES fused "Session 36"). */
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

static __global__ void mk_fused_ce_begin_kernel(unsigned long long *zero, int words, mk_fused_tell t) {
  for (int i = threadIdx.x; i < words; i += blockDim.x) zero[i] = 0;
  __syncthreads(); /* every zero stored before thread 0's fence and the peers' arrivals */
  if (threadIdx.x != 0) return;
  __threadfence_system();
  for (int p = 0; p < t.n; p++) *(volatile uint32_t *)t.flag[p] = 1u; /* as cuStreamWriteValue32's 1 */
}

extern "C" mk_status mk_fused_launch_ce_begin(uint64_t *zero, uint64_t words, const mk_fused_tell *t,
                                              mk_stream_t stream) {
  if (words > (1u << 30)) return MK_STATUS_INVALID_ARGUMENT;
  mk_fused_ce_begin_kernel<<<1, 256, 0, (cudaStream_t)stream>>>((unsigned long long *)zero, (int)words, *t);
  MK_CUDA_CHECK(cudaGetLastError());
  return MK_STATUS_OK;
}

/* Lazy loading: load it at mk_fused_create, not at a first launch behind a running op. */
extern "C" mk_status mk_fused_preload_advance(void) {
  cudaFuncAttributes fa;
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_fused_advance_kernel));
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_fused_ce_begin_kernel));
  return MK_STATUS_OK;
}
