/* ktrace.c — libmk_ktrace.so, a kernel timeline of any CUDA program through CUPTI's activity API,
 * for the GPUs here, where Nsight Systems makes no report (docs/perf/NOTES.md, layer, session 28).
 * Loaded by the CUDA driver at its initialisation through the injection hook:
 *   CUDA_INJECTION64_PATH=/path/libmk_ktrace.so KTRACE_DIR=/tmp/kt mk-launch -n 2 -- mk-bench layer ...
 * Every process writes $KTRACE_DIR/ktrace.<pid>.csv (default /tmp), one line a record:
 *   K,start_ns,end_ns,device,stream,graph_id,grid_x*y*z,block_x*y*z,mangled_name   (kernels)
 *   C,start_ns,end_ns,device,stream,bytes,copy_kind                                 (memcpy, peer memcpy)
 *   S,start_ns,end_ns,device,stream,bytes                                           (memset)
 * Times are CUPTI's GPU timestamps (ns, one clock for every device of the process). Kernels are
 * recorded as CONCURRENT_KERNEL, which does not serialise them. tools/bench/ktrace_report.py reads the files.
 * Not part of the library; built only where CUPTI is found (CMake target mk_ktrace). */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KT_BUF (8u << 20)

static FILE *kt_out;

static void kt_check(CUptiResult r, const char *what) {
  if (r == CUPTI_SUCCESS) return;
  const char *s = NULL;
  cuptiGetResultString(r, &s);
  fprintf(stderr, "mk_ktrace: %s: %s\n", what, s ? s : "?");
}

static void CUPTIAPI kt_buffer_requested(uint8_t **buf, size_t *size, size_t *max_records) {
  *buf = aligned_alloc(8, KT_BUF);
  *size = *buf ? KT_BUF : 0;
  *max_records = 0;
}

static void CUPTIAPI kt_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid) {
  (void)ctx, (void)stream, (void)size;
  CUpti_Activity *rec = NULL;
  while (kt_out && cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
      fprintf(kt_out, "K,%llu,%llu,%u,%u,%u,%dx%dx%d,%dx%dx%d,%s\n", (unsigned long long)k->start,
              (unsigned long long)k->end, k->deviceId, k->streamId, k->graphId, k->gridX, k->gridY, k->gridZ,
              k->blockX, k->blockY, k->blockZ, k->name ? k->name : "?");
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const CUpti_ActivityMemcpy6 *c = (const CUpti_ActivityMemcpy6 *)rec;
      fprintf(kt_out, "C,%llu,%llu,%u,%u,%llu,%u\n", (unsigned long long)c->start, (unsigned long long)c->end,
              c->deviceId, c->streamId, (unsigned long long)c->bytes, (unsigned)c->copyKind);
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY2) { /* peer to peer (cudaMemcpyPeerAsync, P2P-mapped copies) */
      const CUpti_ActivityMemcpyPtoP4 *c = (const CUpti_ActivityMemcpyPtoP4 *)rec;
      fprintf(kt_out, "C,%llu,%llu,%u,%u,%llu,%u\n", (unsigned long long)c->start, (unsigned long long)c->end,
              c->deviceId, c->streamId, (unsigned long long)c->bytes, (unsigned)c->copyKind);
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const CUpti_ActivityMemset4 *s = (const CUpti_ActivityMemset4 *)rec;
      fprintf(kt_out, "S,%llu,%llu,%u,%u,%llu\n", (unsigned long long)s->start, (unsigned long long)s->end,
              s->deviceId, s->streamId, (unsigned long long)s->bytes);
    }
  }
  free(buf);
}

static void kt_finish(void) {
  kt_check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "flush");
  if (kt_out) fclose(kt_out);
  kt_out = NULL;
}

/* The CUDA driver calls this once, at its initialisation, in every process that names the library in
 * CUDA_INJECTION64_PATH. */
int InitializeInjection(void) {
  const char *dir = getenv("KTRACE_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/ktrace.%d.csv", dir && *dir ? dir : "/tmp", (int)getpid());
  if (!(kt_out = fopen(path, "w"))) {
    fprintf(stderr, "mk_ktrace: cannot write %s\n", path);
    return 0;
  }
  kt_check(cuptiActivityRegisterCallbacks(kt_buffer_requested, kt_buffer_completed), "callbacks");
  kt_check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "kernels");
  kt_check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "memcpy");
  kt_check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY2), "peer memcpy");
  kt_check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET), "memset");
  atexit(kt_finish);
  return 1;
}
