/* mk_baseline.h — the unfused baselines the fused ops are compared against. Included by
 * kernels/mk_kernels.h.
 *
 * cuBLASLt GEMM (bf16 in, fp32 accumulate, bf16 out), same shapes and layouts as mk_gemm.h:
 *   mk_cublaslt_t *lt; mk_cublaslt_create(&lt);
 *   mk_cublaslt_gemm_bf16(lt, A, B, C, M, N, K, MK_GEMM_B_NK, stream);
 *   mk_cublaslt_destroy(lt);
 * The handle owns a 32 MiB workspace and keeps the heuristic's algorithm per shape (per bucket of M,
 * MK_LT_M_BUCKETS), so repeated calls cost one cublasLtMatmul each. One handle per stream at a time
 * (the workspace is shared by its calls).
 *
 * cuBLAS's grouped GEMM (cublasGemmGroupedBatchedEx), one call for all groups whose row counts the
 * host holds (the unfused MoE, MK_MOE_UNFUSED_GEMM=1):
 *   mk_cublas_grouped_t *g; mk_cublas_grouped_create(max_groups, &g);
 *   mk_cublas_gemm_grouped_host_bf16(g, A, B, C, rows_host, groups, N, K, stream);
 *
 * NCCL collectives over all ranks of an mk_comm_t (the communicator is created through
 * mkernel's bootstrap; collective call):
 *   mk_nccl_t *nc; mk_nccl_create(comm, &nc);
 *   mk_nccl_all_gather(nc, send, recv, count_per_rank, MK_DTYPE_BF16, stream);
 *   mk_nccl_destroy(nc);
 * Reductions are sums. Counts are elements. Without NCCL in the build: MK_STATUS_UNSUPPORTED. */
#ifndef MK_KERNELS_BASELINE_MK_BASELINE_H
#define MK_KERNELS_BASELINE_MK_BASELINE_H

#include <stdint.h>

#include <stddef.h>

#include "comm/mk_comm.h"
#include "core/mk_core.h"
#include "kernels/gemm/mk_gemm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mk_cublaslt mk_cublaslt_t;

mk_status mk_cublaslt_create(mk_cublaslt_t **out);
void mk_cublaslt_destroy(mk_cublaslt_t *lt); /* NULL: no-op */

/* C[M, N] = A[M, K] @ B through cublasLtMatmul (heuristic algorithm, the handle's workspace).
 * M >= 0 (0 is a no-op), N, K > 0 and multiples of 8. */
mk_status mk_cublaslt_gemm_bf16(mk_cublaslt_t *lt, const uint16_t *A, const uint16_t *B, uint16_t *C, int64_t M,
                                int64_t N, int64_t K, mk_gemm_b_layout b_layout, mk_stream_t stream);

/* Grouped GEMM with mk_gemm_grouped_bf16's meaning: reads rows[] (device) to the host
 * (synchronising the stream), then one cublasLtMatmul per non-empty group. */
mk_status mk_cublaslt_gemm_grouped_bf16(mk_cublaslt_t *lt, const uint16_t *A, const uint16_t *B, uint16_t *C,
                                        const int32_t *rows, int groups, int64_t m_cap, int64_t N, int64_t K,
                                        mk_gemm_b_layout b_layout, mk_stream_t stream);

typedef struct mk_cublas_grouped mk_cublas_grouped_t;
mk_status mk_cublas_grouped_create(int max_groups, mk_cublas_grouped_t **out); /* 1..4096 groups */
void mk_cublas_grouped_destroy(mk_cublas_grouped_t *g);                         /* NULL: no-op */
/* For each group e with rows[e] > 0 (host array), C[off_e.., N] = A[off_e.., K] @ B_e^T, B_e = B + e N K
 * stored [N, K], off_e the sum of the rows before it: one cublasGemmGroupedBatchedEx on stream (bf16,
 * fp32 accumulate). N, K > 0 and multiples of 8. */
mk_status mk_cublas_gemm_grouped_host_bf16(mk_cublas_grouped_t *g, const uint16_t *A, const uint16_t *B,
                                           uint16_t *C, const int32_t *rows, int groups, int64_t N, int64_t K,
                                           mk_stream_t stream);

typedef struct mk_nccl mk_nccl_t;
mk_status mk_nccl_create(mk_comm_t *comm, mk_nccl_t **out);
/* The world communicator of comm shared by every caller with the same comm (the MoE handles: two
 * per layer of the GPU model, where one communicator each set up its own NCCL connections at its
 * first all-to-all); collective the first time only, so every rank must make the same calls.
 * mk_nccl_destroy drops one use; the last one destroys it. Issue its operations in the same order
 * on every rank, as for any NCCL communicator. */
mk_status mk_nccl_shared(mk_comm_t *comm, mk_nccl_t **out);
/* Collective over all ranks of comm: a communicator of the ranks that pass the same color
 * (ranks ordered by their global rank), e.g. the tensor-parallel group of a node. */
mk_status mk_nccl_create_group(mk_comm_t *comm, int color, mk_nccl_t **out);
void mk_nccl_destroy(mk_nccl_t *n); /* NULL: no-op */
int mk_nccl_size(const mk_nccl_t *n);
/* recv[size * count] = every rank's send[count], in rank order. */
mk_status mk_nccl_all_gather(mk_nccl_t *n, const void *send, void *recv, size_t count, mk_dtype t,
                             mk_stream_t stream);
/* recv[recv_count] = rank r's block of sum over ranks of send[size * recv_count]. */
mk_status mk_nccl_reduce_scatter(mk_nccl_t *n, const void *send, void *recv, size_t recv_count, mk_dtype t,
                                 mk_stream_t stream);
mk_status mk_nccl_all_reduce(mk_nccl_t *n, const void *send, void *recv, size_t count, mk_dtype t,
                             mk_stream_t stream);
/* Block p of send (count_per_peer elements) goes to rank p; block p of recv comes from rank p. */
mk_status mk_nccl_all_to_all(mk_nccl_t *n, const void *send, void *recv, size_t count_per_peer, mk_dtype t,
                             mk_stream_t stream);
/* Host arrays of size() entries, in elements: send_counts[p] elements at send + send_displs[p]
 * go to rank p; recv_counts[p] elements from rank p land at recv + recv_displs[p]. */
mk_status mk_nccl_all_to_allv(mk_nccl_t *n, const void *send, const size_t *send_counts, const size_t *send_displs,
                              void *recv, const size_t *recv_counts, const size_t *recv_displs, mk_dtype t,
                              mk_stream_t stream);

#ifdef __cplusplus
}
#endif
#endif /* MK_KERNELS_BASELINE_MK_BASELINE_H */
