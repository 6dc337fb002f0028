/* gather_rows.cu — in-place all-gather of equal slices over a group of ranks inside one node
 * group, on the SMs: each rank stores its slice straight into every peer's copy of the buffer
 * (NVLink, the IPC-mapped symmetric heap) and signals; one thread waits for the others' slices.
 * Used by the GPU model after the MoE block (layers/model_gpu.c: the TP group's split of the
 * tokens), where NCCL's all-gather of 64-128 KB a rank cost ~15-25 us (docs/perf/NOTES.md, layer).
 *
 * Layout (group of n ranks first .. first + n - 1, i = rank - first):
 *   buf [n][slice] in the heap, the same offset on every rank; slice i is rank i's on entry and
 *   every slice is every rank's on return.
 *   sig [n] u64 in the heap of each rank: sig[s] counts CTAs of source s that have stored their
 *   chunk here (+1 per CTA per call; B CTAs per destination, B from the slice size: the same on
 *   every rank of a call).
 * Protocol: CTA (j, b) (j < n - 1: destination (i + 1 + j) % n, b < B: chunk b of the slice)
 * copies, __syncthreads, thread 0 adds 1 to sig[i] at the destination (release, system scope,
 * after a system fence: mk_signal_add). CTA 0's thread 0 then waits (bounded, mk_wait_ge) until
 * sig[s] >= want + B for every s != i, where want (device memory of this handle, read and written
 * only by that thread; launches are stream-ordered) is the sum of B over the earlier calls, and
 * adds B to want. mk_gather_rows_add: every CTA's thread 0 waits so, then the CTA adds its share of the
 * gathered rows to x (the residual stream, fp32), and the last CTA out (a ticket counter beside want)
 * adds B to want. The kernel's end orders the
 * rows before any later kernel of the stream. Counters only grow; nothing is reset; graph
 * replays keep working.
 * Reuse of buf: a peer can store into this rank's buf for the next call only after its own
 * next call's inputs exist; the caller must make sure that needs this rank's progress (the
 * model: the MoE op's count exchange, a barrier, lies between two gathers of one buffer). */
#include <cuda_runtime.h>
#include <stdlib.h>

#include "comm/mk_device.cuh"
#include "core/check.h"
#include "kernels/fused/mk_fused.h"

namespace {
constexpr int kThreads = 512;

/* x (NULL: none): also x[i] += y[i] for the first `elems` bf16 elements y of buf, once every slice is in. */
__global__ void __launch_bounds__(kThreads) gather_rows_kernel(mk_dev_world w, uint64_t buf_off, uint64_t slice,
                                                               int first, int n, int me, int B, uint64_t sig_off,
                                                               unsigned long long *want, float *x, int64_t elems) {
  const int j = blockIdx.x / B, b = blockIdx.x % B;
  const int dst = (me + 1 + j) % n, dst_local = (first + dst) % w.local_size;
  const uint64_t chunk = ((slice + B - 1) / B + 15) / 16 * 16, lo = (uint64_t)b * chunk;
  const uint64_t hi = lo + chunk < slice ? lo + chunk : slice;
  const uint64_t at = buf_off + (uint64_t)me * slice + lo;
  const uint64_t target = (uint64_t)*want + (uint64_t)B; /* read before this CTA's ticket below */
  if (hi > lo) mk_copy_cta(w.peer_heap[dst_local] + at, w.heap + at, hi - lo);
  __syncthreads();
  if (threadIdx.x == 0) mk_signal_add(w, dst_local, sig_off + 8 * (uint64_t)me, 1);
  if (!x) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      for (int s = 0; s < n; s++)
        if (s != me && !mk_wait_ge(w, sig_off + 8 * (uint64_t)s, target, MK_OP_GATHER, first + s, -1)) return;
      *want = target;
    }
    return;
  }
  int ok = 1;
  if (threadIdx.x == 0)
    for (int s = 0; s < n && ok; s++)
      if (s != me) ok = mk_wait_ge(w, sig_off + 8 * (uint64_t)s, target, MK_OP_GATHER, first + s, -1);
  if (!__syncthreads_and(ok)) return;
  /* 8 elements a thread a step (16 bytes of y, 32 of x; where elems % 8 == 0 and x is 16-byte aligned, else the
     scalar loop below takes them all), every load of two steps in flight: a scalar loop's dependent loads took 21 us for 64 x 2048 on 16 CTAs
     (run 6df28f0-x2) */
  const uint16_t *y = (const uint16_t *)(w.heap + buf_off);
  const int64_t nthr = (int64_t)gridDim.x * blockDim.x, tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t nv = elems % 8 == 0 && ((uintptr_t)x & 15) == 0 ? elems / 8 : 0;
  for (int64_t v = tid; v < nv; v += 2 * nthr) {
    uint4 ya[2];
    float4 xa[2][2];
#pragma unroll
    for (int u = 0; u < 2; u++)
      if (v + u * nthr < nv) {
        ya[u] = ((const uint4 *)y)[v + u * nthr];
        xa[u][0] = ((const float4 *)x)[2 * (v + u * nthr)], xa[u][1] = ((const float4 *)x)[2 * (v + u * nthr) + 1];
      }
#pragma unroll
    for (int u = 0; u < 2; u++)
      if (v + u * nthr < nv) {
        const uint32_t q[4] = {ya[u].x, ya[u].y, ya[u].z, ya[u].w};
        float *f = (float *)xa[u];
#pragma unroll
        for (int e = 0; e < 8; e++) f[e] += __uint_as_float(e & 1 ? q[e / 2] & 0xffff0000u : q[e / 2] << 16);
        ((float4 *)x)[2 * (v + u * nthr)] = xa[u][0], ((float4 *)x)[2 * (v + u * nthr) + 1] = xa[u][1];
      }
  }
  for (int64_t i = nv * 8 + tid; i < elems; i += nthr) x[i] += __uint_as_float((uint32_t)y[i] << 16);
  /* the last CTA out advances want: every CTA has read it by then (its ticket follows its read) */
  if (threadIdx.x == 0) {
    unsigned *done = (unsigned *)(want + 1);
    if (atomicAdd(done, 1u) == gridDim.x - 1) *want = target, *done = 0;
  }
}
}  // namespace

struct mk_gather {
  mk_comm_t *comm;
  mk_dev_world w;
  int first, n, me;
  uint64_t sig_off;
  unsigned long long *want; /* [0] sum of B over the calls so far; [1] (as unsigned) CTAs out of a
                               mk_gather_rows_add call, 0 between calls */
  char *heap;
};

extern "C" mk_status mk_gather_create(mk_comm_t *comm, int first, int n, mk_gather_t **out) {
  if (!out) return MK_STATUS_INVALID_ARGUMENT;
  *out = NULL;
  if (!comm) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "gather: comm is NULL");
  const mk_world *wd = mk_comm_world(comm);
  if (n < 2 || n > MK_MAX_LOCAL || first < 0 || first + n > wd->size || wd->rank < first || wd->rank >= first + n ||
      first / wd->local_size != (first + n - 1) / wd->local_size)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "gather: group of %d ranks from %d does not hold rank %d or leaves its node group (%d ranks per "
                  "node group; 2 <= n <= %d)",
                  n, first, wd->rank, wd->local_size, MK_MAX_LOCAL);
  mk_gather_t *h = (mk_gather_t *)calloc(1, sizeof *h);
  if (!h) return MK_STATUS_OUT_OF_MEMORY;
  mk_status st = MK_STATUS_OK;
  cudaFuncAttributes fa;
  h->comm = comm, h->first = first, h->n = n, h->me = wd->rank - first;
  MK_CHECK_GOTO(mk_comm_dev_world(comm, &h->w), st, fail);
  h->heap = (char *)mk_comm_heap_ptr(comm, 0);
  MK_CHECK_GOTO(mk_comm_heap_alloc(comm, 8 * (uint64_t)n, &h->sig_off), st, fail); /* collective, zeroed */
  MK_CUDA_CHECK_GOTO(cudaMalloc((void **)&h->want, 2 * sizeof *h->want), st, fail);
  MK_CUDA_CHECK_GOTO(cudaMemset(h->want, 0, 2 * sizeof *h->want), st, fail);
  /* lazy loading: load the kernel now, not at a first launch beside a peer's spinning one */
  MK_CUDA_CHECK_GOTO(cudaFuncGetAttributes(&fa, (const void *)gather_rows_kernel), st, fail);
  MK_CUDA_CHECK_GOTO(cudaDeviceSynchronize(), st, fail);
  *out = h;
  return MK_STATUS_OK;
fail:
  mk_gather_destroy(h);
  return st;
}

extern "C" void mk_gather_destroy(mk_gather_t *h) {
  if (!h) return;
  cudaFree(h->want);
  free(h);
}

static mk_status gather_launch(mk_gather_t *h, void *buf, uint64_t slice_bytes, float *x, int64_t elems,
                               mk_stream_t stream) {
  if (!h || !buf) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL, "gather_rows: handle and buf must be set");
  const char *p = (const char *)buf;
  const uint64_t off = (uint64_t)(p - h->heap), need = (uint64_t)h->n * slice_bytes;
  if (p < h->heap + MK_HEAP_CTRL_BYTES || off >= h->w.heap_bytes || need > h->w.heap_bytes - off || (off | slice_bytes) % 16)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "gather_rows: buf [%d x %llu bytes] is not 16-byte aligned inside this rank's symmetric heap", h->n,
                  (unsigned long long)slice_bytes);
  /* CTAs per destination: a 16 KiB chunk each, 8 to 32 (the same on every rank: the slice is) */
  const uint64_t b = slice_bytes / (16u << 10);
  const int B = b < 8 ? 8 : b > 32 ? 32 : (int)b;
  gather_rows_kernel<<<(unsigned)((h->n - 1) * B), kThreads, 0, (cudaStream_t)stream>>>(
      h->w, off, slice_bytes, h->first, h->n, h->me, B, h->sig_off, h->want, x, elems);
  MK_CUDA_LAUNCH_CHECK();
  return MK_STATUS_OK;
}

extern "C" mk_status mk_gather_rows(mk_gather_t *h, void *buf, uint64_t slice_bytes, mk_stream_t stream) {
  return gather_launch(h, buf, slice_bytes, NULL, 0, stream);
}

extern "C" mk_status mk_gather_rows_add(mk_gather_t *h, void *buf, uint64_t slice_bytes, float *x, int dim, int rows,
                                        mk_stream_t stream) {
  if (!x || dim < 1 || rows < 0 || (uint64_t)rows * (uint64_t)dim * 2 > (h ? (uint64_t)h->n * slice_bytes : 0))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_KERNEL,
                  "gather_rows_add: x [%d x %d] (x set, rows of bf16 within the gathered buffer's %d x %llu bytes)",
                  rows, dim, h ? h->n : 0, (unsigned long long)slice_bytes);
  return gather_launch(h, buf, slice_bytes, x, (int64_t)rows * dim, stream);
}
