/* bench_comm.h — kernels of `mk-bench comm` (bench_comm_kernels.cu), C launchers. */
#ifndef MK_BENCH_COMM_H
#define MK_BENCH_COMM_H
#include "comm/mk_dev_world.h"
#include "core/mk_core.h"
#ifdef __cplusplus
extern "C" {
#endif
enum { MK_BENCH_PUT_SM = 0, MK_BENCH_PUT_TMA = 1 };
/* Copy bytes from this rank's heap (src_off) to local peer lp's heap (dst_off) with all SMs. */
mk_status mk_bench_comm_put(const mk_dev_world *w, int method, int lp, uint64_t src_off, uint64_t dst_off,
                            uint64_t bytes, void *stream);
/* --per-cta --smem-kb / --ldcg, set once before the per-CTA kernels run: their dynamic shared memory (bytes; the
 * kernels' attribute is raised to it here) and L1-bypassing loads in mk_bench_comm_xfer. */
mk_status mk_bench_comm_per_cta_opts(int smem_bytes, int ldcg);
/* bytes (a multiple of 16) between this rank's heap and local peer lp's with `ctas` CTAs of 512
 * threads, 8 16-byte loads in flight per thread: pull = 1 reads the peer's src_off into this
 * rank's dst_off, pull = 0 writes this rank's src_off into the peer's dst_off (the per-SM rate
 * of the fused reducers' pulls against stores). */
mk_status mk_bench_comm_xfer(const mk_dev_world *w, int lp, int pull, int ctas, uint64_t src_off, uint64_t dst_off,
                             uint64_t bytes, void *stream);
/* Local rank 0 only (4+ ranks a node group): the fused reducers' inner loop alone with `ctas` CTAs
 * of 384 threads: rows x n (multiples of 128) bf16 at src_off of local ranks 0..3 summed into
 * this rank's dst_off, 128 x 128 blocks. */
mk_status mk_bench_comm_reduce4(const mk_dev_world *w, int ctas, uint64_t src_off, uint64_t dst_off, int64_t rows,
                                int64_t n, void *stream);
/* n ping-pongs of signals with `peer` (initiator sends first): through NVLink atomics when
 * via_proxy = 0, through the FIFO + proxy (SIGNAL commands) when 1. Counters sig[rank]. */
mk_status mk_bench_comm_pingpong(const mk_dev_world *w, uint64_t sig, int peer, int initiator, uint64_t base, int n,
                                 int via_proxy, int *fail, void *stream);
/* Proxied put: the initiator posts PUT_SIGNAL(bytes) to peer and waits for peer's SIGNAL back;
 * the responder waits for the put's signal and answers. */
mk_status mk_bench_comm_proxy_put(const mk_dev_world *w, uint64_t sig, uint64_t src_off, uint64_t dst_off,
                                  uint64_t bytes, int peer, int initiator, uint64_t base, int *fail, void *stream);
#ifdef __cplusplus
}
#endif
#endif
