/* moe_skinny.cu — fused MoE at decode, both grouped GEMMs on the swap-AB skinny scheme
 * (kernels/gemm/gemm_skinny_grouped.cuh), opt-in with MK_MOE_SKINNY=1 (moe.c: overlapped
 * schedule, SwiGLU in the epilogue, decode-sized handles). They replace gemm1 and gemm2 of
 * dispatch_gemm.cu / gemm_combine.cu with the same protocol:
 *   gemm1  (s)  act = SwiGLU(A1 @ w1g^T) per local expert on SMs - C CTAs; a unit (expert g,
 *               64 rows of w1g = 32 gate/up pairs) streams the first ring's worth of weights,
 *               then waits until every tile-row of g has its rows (ready[tile_base[g] + i] >=
 *               rows of tile-row i, paced polls: the core's before_load wait, for all tile-rows
 *               of the expert at once), then loads the tokens. Epilogue: w1g rows 16i + j and
 *               16i + 8 + j (j < 8) are gate and up row 8i + j (moe.c interleaves them; the
 *               pairs of mk_gemm_skinny_pairs_f32 are exactly (ne, ne + 8)), act[row][8i + j] =
 *               silu(gate) * up in fp32, one bf16 rounding (as the core's kGluPairs).
 *   gemm2  (s)  C2 = act @ w2^T per local expert; after all chunks of a unit (expert g, 64
 *               columns of C2) are stored and fenced, done2[tile-row] += 1 (release) for every
 *               tile-row of g: a tile-row is complete at ceil(H / 64) units, the handle's
 *               tiles_n2 under this path (moe.c), which is what the combine waits for. */
#include "kernels/gemm/gemm_skinny_grouped.cuh"
#include "kernels/moe/moe_common.cuh"

namespace {

struct moe_skinny_gate_up {
  static constexpr bool kAfterUnit = false;
  mk_dev_world w;
  uint64_t o_ready;
  const int32_t *tile_base;
  uint64_t *prof;
  uint16_t *act;
  int I;
  __device__ __forceinline__ void wait_rows(int g, int rows) {
    for (int i = 0; i * 128 < rows; i++) {
      const int tile = tile_base[g] + i;
      mk_wait_ge_paced(w, o_ready + (uint64_t)tile * 8, (uint64_t)min(128, rows - 128 * i), MK_OP_MOE, -1, tile,
                       kMoePollNs);
    }
    if (prof) {
      moe_stamp(prof, MK_MOE_PH_G1_FIRST);
      moe_stamp(prof, MK_MOE_PH_G1_LAST);
    }
  }
  template <int T>
  __device__ __forceinline__ void store(int, int row0, int n_rows, int tile, const float (&d)[T / 2], int cw, int warp,
                                        int lane) const {
    mk_gemm_skinny_pairs_f32<T, 64>(d, tile, cw, warp, lane, [&](int t, int ne, float2 gt, float2 up) {
      if (t < n_rows && ne < 2 * I) {
        const int col = (ne >> 4) * 8 + (ne & 15);
        *(__nv_bfloat162 *)(act + (int64_t)(row0 + t) * I + col) =
            __floats2bfloat162_rn(mk_gemm_silu(gt.x) * up.x, mk_gemm_silu(gt.y) * up.y);
      }
    });
  }
};

struct moe_skinny_down {
  static constexpr bool kAfterUnit = true;
  uint64_t *done2;
  const int32_t *tile_base;
  uint64_t *prof;
  uint16_t *C2;
  int H;
  __device__ __forceinline__ void wait_rows(int, int) { moe_stamp(prof, MK_MOE_PH_G2_FIRST); }
  template <int T>
  __device__ __forceinline__ void store(int, int row0, int n_rows, int tile, const float (&d)[T / 2], int cw, int warp,
                                        int lane) const {
    mk_gemm_skinny_pairs<T, 64>(d, tile, cw, warp, lane, [&](int t, int n, __nv_bfloat162 v) {
      if (t < n_rows && n < H) *(__nv_bfloat162 *)(C2 + (int64_t)(row0 + t) * H + n) = v;
    });
  }
  __device__ __forceinline__ void after_unit(int g, int rows) {
    for (int i = 0; i * 128 < rows; i++) moe_red_add_gpu(done2 + tile_base[g] + i, 1);
    moe_stamp(prof, MK_MOE_PH_G2_DONE);
  }
};

}  // namespace

extern "C" mk_status mk_moe_launch_gemm1_skinny(const mk_moe_dev *d, int grid, void *stream) {
  moe_skinny_gate_up p;
  p.w = d->w;
  p.o_ready = d->o_ready;
  p.tile_base = d->tile_base;
  p.prof = d->prof;
  p.act = d->act;
  p.I = d->I;
  const mk_gemm_skinny_grouped_args a = {2 * d->I, d->H, d->El, (2 * d->I + 63) / 64, d->rows, d->exp_off};
  return mk_gemm_skinny_grouped_launch(d->skinny, d->A1, d->m_cap, d->w1g, a, p, grid, (cudaStream_t)stream);
}

extern "C" mk_status mk_moe_launch_gemm2_skinny(const mk_moe_dev *d, int grid, void *stream) {
  moe_skinny_down p;
  p.done2 = (uint64_t *)(d->w.heap + d->o_done2);
  p.tile_base = d->tile_base;
  p.prof = d->prof;
  p.C2 = d->C2;
  p.H = d->H;
  const mk_gemm_skinny_grouped_args a = {d->H, d->I, d->El, (d->H + 63) / 64, d->rows, d->exp_off};
  return mk_gemm_skinny_grouped_launch(d->skinny, d->act, d->m_cap, d->w2, a, p, grid, (cudaStream_t)stream);
}

extern "C" mk_status mk_moe_preload_skinny(void) {
  MK_CHECK(mk_gemm_skinny_grouped_preload<moe_skinny_gate_up>());
  return mk_gemm_skinny_grouped_preload<moe_skinny_down>();
}
