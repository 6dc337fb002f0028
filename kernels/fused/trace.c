/* trace.c — MK_TRACE=FILE for the fused ops: a device buffer of per-CTA events (recorded by
 * the kernels with %globaltimer, fused_common.cuh) written after the op as a Chrome trace
 * (chrome://tracing, Perfetto): one process per rank, one track per CTA named by its role,
 * events compute / wait / send / reduce. Tracing synchronises the stream after each traced
 * op (a debugging mode); it is skipped while a stream is being captured into a graph. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "kernels/fused/fused_internal.h"

/* Chrome trace JSON of the fused ops' CTA roles over time (FILE.rankN.json with several ranks). */
MK_PARAM_STR(trace, "TRACE", "")

static const char *const k_kind[5] = {"?", "compute", "wait", "send", "reduce"};
static const char *const k_op[3] = {"ag_gemm", "gemm_rs", "gemm_ar"};

mk_status mk_fused_trace_begin(mk_fused_t *f, mk_stream_t stream, uint64_t **buf) {
  *buf = NULL;
  const char *path = mk_param_trace();
  if (!path || !*path) return MK_STATUS_OK;
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  MK_CUDA_CHECK(cudaStreamIsCapturing((cudaStream_t)stream, &cs));
  if (cs != cudaStreamCaptureStatusNone) return MK_STATUS_OK;
  const size_t bytes = (size_t)f->sms * MK_TRACE_CAP * 16;
  if (!f->trace) MK_CUDA_CHECK(cudaMalloc((void **)&f->trace, bytes));
  MK_CUDA_CHECK(cudaMemsetAsync(f->trace, 0, bytes, (cudaStream_t)stream));
  *buf = f->trace;
  return MK_STATUS_OK;
}

mk_status mk_fused_trace_end(mk_fused_t *f, mk_fused_op op, uint64_t *buf, mk_stream_t stream) {
  if (!buf) return MK_STATUS_OK;
  const int ctas = f->sms;
  const size_t n = (size_t)ctas * MK_TRACE_CAP * 2;
  uint64_t *h = malloc(n * 8);
  if (!h) return MK_STATUS_OUT_OF_MEMORY;
  mk_status st = MK_STATUS_OK;
  MK_CUDA_CHECK_GOTO(cudaStreamSynchronize((cudaStream_t)stream), st, done);
  MK_CUDA_CHECK_GOTO(cudaMemcpy(h, buf, n * 8, cudaMemcpyDeviceToHost), st, done);
  char path[1024];
  const char *base = mk_param_trace();
  if (f->world > 1) snprintf(path, sizeof path, "%s.rank%d.json", base, f->wrank);
  else snprintf(path, sizeof path, "%s", base);
  FILE *fp = fopen(path, "w");
  if (!fp) {
    MK_WARN(MK_SUBSYS_KERNEL, "MK_TRACE: cannot write '%s'", path);
    st = MK_STATUS_SYSTEM_ERROR;
    goto done;
  }
  uint64_t t0 = UINT64_MAX;
  for (size_t i = 0; i < n; i += 2)
    if ((h[i + 1] & 0xff) && h[i] < t0) t0 = h[i];
  fprintf(fp, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"op\":\"%s\",\"rank\":%d,\"call\":%d},\"traceEvents\":[\n",
          k_op[op], f->wrank, f->trace_calls);
  fprintf(fp, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"rank %d %s\"}}", f->wrank, f->wrank,
          k_op[op]);
  for (int c = 0; c < ctas; c++) { /* a track's name: the kinds it recorded */
    unsigned kinds = 0;
    for (int e = 0; e < MK_TRACE_CAP; e++) kinds |= 1u << (h[((size_t)c * MK_TRACE_CAP + e) * 2 + 1] & 7);
    const char *role = kinds & (1u << MK_TRACE_COMPUTE) ? "compute"
                       : kinds & (1u << MK_TRACE_REDUCE) ? "reduce"
                       : kinds & (1u << MK_TRACE_SEND)   ? "send"
                                                          : "idle";
    fprintf(fp, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"CTA %03d %s\"}}",
            f->wrank, c, c, role);
  }
  for (int c = 0; c < ctas; c++)
    for (int e = 0; e < MK_TRACE_CAP; e++) {
      const uint64_t *ev = h + ((size_t)c * MK_TRACE_CAP + e) * 2;
      const int kind = (int)(ev[1] & 0xff);
      if (kind < 1 || kind > 4) continue;
      fprintf(fp, ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f}", k_kind[kind], f->wrank,
              c, (double)(ev[0] - t0) / 1e3, (double)(ev[1] >> 8) / 1e3);
    }
  fprintf(fp, "\n]}\n");
  fclose(fp);
  f->trace_calls++;
done:
  free(h);
  return st;
}
