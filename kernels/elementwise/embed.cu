/* embed.cu — embedding gather: out[t, :] = fp32(table[ids[t], :]). An id outside the
 * vocabulary gives a NaN row (callers check ids on the host; a NaN never passes a test). */
#include <cuda_runtime.h>

#include "core/check.h"
#include "kernels/elementwise/ew_common.cuh"
#include "kernels/mk_kernels.h"

__global__ void mk_embed_kernel(const int32_t *__restrict__ ids, int64_t n, const uint16_t *__restrict__ table,
                                int64_t vocab, int64_t dim, float *__restrict__ out) {
  for (int64_t t = blockIdx.x; t < n; t += gridDim.x) {
    int32_t id = ids[t];
    const bool ok = id >= 0 && id < vocab;
    const uint16_t *row = table + (ok ? (int64_t)id * dim : 0);
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) out[t * dim + i] = ok ? mk_ew_bf16_f(row[i]) : __int_as_float(0x7fc00000);
  }
}

extern "C" mk_status mk_embed_gather(const int32_t *ids, int64_t n, const uint16_t *table, int64_t vocab, int64_t dim,
                                     float *out, mk_stream_t stream) {
  if (n == 0) return MK_STATUS_OK;
  if (!ids || !table || !out || n < 0 || vocab < 1 || dim < 1)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "embed: bad arguments (n=%lld vocab=%lld dim=%lld)",
                  (long long)n, (long long)vocab, (long long)dim);
  mk_embed_kernel<<<mk_ew_blocks((size_t)n, 1), 256, 0, (cudaStream_t)stream>>>(ids, n, table, vocab, dim, out);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}
