/* bench_mem.h — memory-bandwidth yardsticks of mk-bench (bench_mem_kernels.cu). */
#ifndef MK_BENCH_MEM_H
#define MK_BENCH_MEM_H
#include <stddef.h>

#include "core/mk_core.h"
#ifdef __cplusplus
extern "C" {
#endif
/* Reads a_bytes at a and b_bytes at b once with every SM (16-byte aligned and sized); sink: a
 * device word that is never written in practice. The read bandwidth = bytes / time. */
mk_status mk_bench_hbm_read(const void *a, size_t a_bytes, const void *b, size_t b_bytes, void *sink, void *stream);
#ifdef __cplusplus
}
#endif
#endif
