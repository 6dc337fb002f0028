/* advance.cu — the end of a fused call in a one-thread kernel after the op's kernels (stream-ordered,
 * graph-capturable; mk_fused_end in fused_internal.h): a copy-engine call's own flags back to 0 and
 * its arrivals on the peers, then the comm's epoch slot of the op (targets of the flags set over
 * NVLink) and the handle's call count of the op (targets of the proxied counters) both advance by
 * one, and the op's two task claims (MK_FUSED_TAIL) go back to 0 for the next call. */
#include "core/check.h"
#include "kernels/fused/fused_internal.h"

static __global__ void mk_fused_advance_kernel(mk_fused_end e) { mk_fused_end_run(e); }

extern "C" mk_status mk_fused_launch_end(const mk_fused_end *e, mk_stream_t stream) {
  mk_fused_advance_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(*e);
  MK_CUDA_CHECK(cudaGetLastError());
  return MK_STATUS_OK;
}

/* Lazy loading: load it at mk_fused_create, not at a first launch behind a running op. */
extern "C" mk_status mk_fused_preload_advance(void) {
  cudaFuncAttributes fa;
  MK_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)mk_fused_advance_kernel));
  return MK_STATUS_OK;
}
