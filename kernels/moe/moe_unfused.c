/* moe_unfused.c — the unfused MoE path, the stack users would otherwise pick: permute rows
 * into expert order (one per (token, expert) pair), NCCL all-to-all of the counts and
 * all-to-allv of the rows (the host reads the counts), regroup by local expert, cuBLASLt GEMM
 * per expert (gate/up), SwiGLU, cuBLASLt GEMM per expert (down), the inverse regroup, NCCL
 * all-to-allv back, weighted sum per token in top-k order. Also the parts alone, for the
 * benchmark's overlap bound. */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "kernels/moe/moe_internal.h"

mk_status mk_moe_forward_unfused(mk_moe_t *m, const uint16_t *x, int64_t T, const int32_t *ids, const float *w,
                                 uint16_t *out, void *stream) {
  if (!m->nccl)
    MK_ERR_RETURN(MK_STATUS_UNSUPPORTED, MK_SUBSYS_KERNEL,
                  "moe: the unfused path needs NCCL (not in this build, or refused at create: ranks share a GPU)");
  mk_moe_dev *d = &m->d;
  cudaStream_t s = (cudaStream_t)stream;
  const int W = d->W, El = d->El, E = d->E, H = d->H, I = d->I;
  int32_t *h_off = m->h_counts + E, *h_rows = m->h_table + 8 * W * El;
  size_t *sc = m->h_a2a, *sd = sc + W, *rc = sd + W, *rd = rc + W;
  /* counts per global expert, to the host */
  MK_CHECK(mk_moe_launch_count(ids, T * d->K, E, m->u_counts, s));
  MK_CHECK(mk_nccl_all_to_all(m->nccl, m->u_counts, m->u_rc, (size_t)El, MK_DTYPE_I32, s));
  MK_CUDA_CHECK(cudaMemcpyAsync(m->h_counts, m->u_counts, sizeof(int32_t) * (size_t)E, cudaMemcpyDeviceToHost, s));
  MK_CUDA_CHECK(cudaMemcpyAsync(m->h_rc, m->u_rc, sizeof(int32_t) * (size_t)(W * El), cudaMemcpyDeviceToHost, s));
  MK_CUDA_CHECK(cudaStreamSynchronize(s));
  /* send layout: by global expert (so by destination rank, then local expert) */
  int64_t o = 0;
  for (int e = 0; e < E; e++) h_off[e] = (int32_t)o, o += m->h_counts[e];
  size_t so = 0, ro = 0;
  for (int r = 0; r < W; r++) {
    size_t n = 0, q = 0;
    for (int e = 0; e < El; e++) n += (size_t)m->h_counts[r * El + e], q += (size_t)m->h_rc[r * El + e];
    sc[r] = n * H, sd[r] = so, so += sc[r];
    rc[r] = q * H, rd[r] = ro, ro += rc[r];
  }
  const int64_t M = (int64_t)(ro / (size_t)H);
  if (M > d->m_cap) MK_ERR_RETURN(MK_STATUS_INTERNAL, MK_SUBSYS_KERNEL, "moe: %lld rows > capacity", (long long)M);
  /* regroup tables: (s, e) block of the received rows <-> its place in expert order */
  int32_t *fwd = m->h_table, *inv = m->h_table + 4 * W * El;
  for (int e = 0; e < El; e++) {
    h_rows[e] = 0;
    for (int r = 0; r < W; r++) h_rows[e] += m->h_rc[r * El + e];
  }
  int64_t src = 0;
  for (int r = 0; r < W; r++)
    for (int e = 0; e < El; e++) {
      int64_t dst = 0;
      for (int q = 0; q < e; q++) dst += h_rows[q];
      for (int q = 0; q < r; q++) dst += m->h_rc[q * El + e];
      const int32_t n = m->h_rc[r * El + e], b = r * El + e;
      fwd[4 * b] = (int32_t)src, fwd[4 * b + 1] = (int32_t)dst, fwd[4 * b + 2] = n, fwd[4 * b + 3] = (int32_t)src;
      inv[4 * b] = (int32_t)dst, inv[4 * b + 1] = (int32_t)src, inv[4 * b + 2] = n, inv[4 * b + 3] = (int32_t)src;
      src += n;
    }
  MK_CUDA_CHECK(cudaMemcpyAsync(m->u_off, h_off, sizeof(int32_t) * (size_t)E, cudaMemcpyHostToDevice, s));
  MK_CUDA_CHECK(cudaMemcpyAsync(m->u_table, m->h_table, sizeof(int32_t) * (size_t)(8 * W * El),
                                cudaMemcpyHostToDevice, s));
  MK_CUDA_CHECK(cudaMemcpyAsync(m->u_rows, h_rows, sizeof(int32_t) * (size_t)El, cudaMemcpyHostToDevice, s));
  MK_CUDA_CHECK(cudaMemsetAsync(m->u_fill, 0, sizeof(int32_t) * (size_t)E, s));
  MK_CHECK(mk_moe_launch_permute(ids, T, d->K, H, x, m->u_off, m->u_fill, m->sendbuf, m->u_pairpos, s));
  /* dispatch */
  MK_CHECK(mk_nccl_all_to_allv(m->nccl, m->sendbuf, sc, sd, m->recvbuf, rc, rd, MK_DTYPE_BF16, s));
  MK_CHECK(mk_moe_launch_block_copy(m->u_table, W * El, M, H, m->recvbuf, d->A1, s));
  /* experts: one cuBLAS grouped GEMM each (MK_MOE_UNFUSED_GEMM=1), or a cublasLtMatmul per expert */
  if (m->grouped && mk_moe_unfused_grouped(El, h_rows)) {
    MK_CHECK(mk_cublas_gemm_grouped_host_bf16(m->grouped, d->A1, d->w1, d->C1, h_rows, El, 2 * (int64_t)I, H, s));
    MK_CHECK(mk_moe_launch_swiglu(d, M, s));
    MK_CHECK(mk_cublas_gemm_grouped_host_bf16(m->grouped, d->act, d->w2, d->C2, h_rows, El, H, I, s));
  } else {
    int64_t off = 0;
    for (int e = 0; e < El; e++) {
      if (h_rows[e])
        MK_CHECK(mk_cublaslt_gemm_bf16(m->lt, d->A1 + off * H, d->w1 + (size_t)e * 2 * I * H, d->C1 + off * 2 * I,
                                       h_rows[e], 2 * (int64_t)I, H, MK_GEMM_B_NK, s));
      off += h_rows[e];
    }
    MK_CHECK(mk_moe_launch_swiglu(d, M, s));
    off = 0;
    for (int e = 0; e < El; e++) {
      if (h_rows[e])
        MK_CHECK(mk_cublaslt_gemm_bf16(m->lt, d->act + off * I, d->w2 + (size_t)e * H * I, d->C2 + off * H,
                                       h_rows[e], H, I, MK_GEMM_B_NK, s));
      off += h_rows[e];
    }
  }
  /* combine */
  MK_CHECK(mk_moe_launch_block_copy(m->u_table + 4 * W * El, W * El, M, H, d->C2, m->recvbuf, s));
  MK_CHECK(mk_nccl_all_to_allv(m->nccl, m->recvbuf, rc, rd, m->sendbuf, sc, sd, MK_DTYPE_BF16, s));
  MK_CHECK(mk_moe_launch_unpermute(m->sendbuf, m->u_pairpos, w, T, d->K, H, out, s));
  m->h_rows_valid = 1;
  return MK_STATUS_OK;
}

mk_status mk_moe_time_parts(mk_moe_t *m, int compute, mk_stream_t stream) {
  if (!m || !m->h_rows_valid)
    MK_ERR_RETURN(MK_STATUS_INVALID_USAGE, MK_SUBSYS_KERNEL, "moe_time_parts: needs an unfused call first");
  mk_moe_dev *d = &m->d;
  const size_t *sc = m->h_a2a, *sd = sc + d->W, *rc = sd + d->W, *rd = rc + d->W;
  if (compute) {
    MK_CHECK(mk_gemm_grouped_bf16(d->A1, d->w1, d->C1, m->u_rows, d->El, d->m_cap, 2 * (int64_t)d->I, d->H,
                                  MK_GEMM_B_NK, stream));
    return mk_gemm_grouped_bf16(d->act, d->w2, d->C2, m->u_rows, d->El, d->m_cap, d->H, d->I, MK_GEMM_B_NK, stream);
  }
  MK_CHECK(mk_nccl_all_to_allv(m->nccl, m->sendbuf, sc, sd, m->recvbuf, rc, rd, MK_DTYPE_BF16, stream));
  return mk_nccl_all_to_allv(m->nccl, m->recvbuf, rc, rd, m->sendbuf, sc, sd, MK_DTYPE_BF16, stream);
}
