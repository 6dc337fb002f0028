/* flash_fwd_ws.cu — the warp-specialised Hopper (sm_90a) flash attention forward kernel, FlashAttention-3's
 * schedule; the same contract as the other two kernels (flash_fwd.cu holds the public launcher).
 *
 * A work item = 128 query rows of one (sequence, q head[, split of the keys]). Persistent (MK_ATTN_WS_PERSISTENT; by
 * default for short causal calls): one CTA an SM takes the items heaviest first in rounds (ws_item), and the producer
 * loads the next item's Q and first K tiles while the consumers finish the last one; else one CTA an item.
 * 384 threads:
 *   warpgroup 0, the producer (registers cut to 56): its first warp loads the Q tile and then the K and V
 *     tiles of 128 keys into a 2-stage ring by TMA (2-D maps [tokens][heads x d], 64-column boxes with the
 *     128-byte swizzle that wgmma reads), in the order they are consumed: K0, K1, V0, K2, V1, ... A key tile that
 *     runs past its sequence in a varlen batch is copied by the warp's cp.async instead, rows past the sequence
 *     zero-filled (the rows after it belong to the next sequence or lie past the buffer); in a one-sequence call
 *     the map ends at the last key and TMA zero-fills.
 *   warpgroups 1 and 2, the consumers (registers raised to 224), 64 query rows each. Per key tile t:
 *       issue S_t = Q K_t^T; rescale O by alpha_{t-1}; issue O += P_{t-1} V_{t-1}
 *       wait S_t; release K_t; mask, online softmax of S_t (alpha_t, P_t in fp32) while P V runs
 *       wait P V; release V_{t-1}; P_t to bf16 register fragments
 *     and the two consumers take turns issuing their wgmmas (named barriers 1 and 2, FA3's warp scheduler
 *     barrier), so one's softmax overlaps the other's tensor-core work.
 * Barriers (shared memory): q_full, k_full[s], v_full[s] (1 arrival: the producer's expect_tx, or its plain arrive
 * after the cp.async of a tail tile) and q_empty, k_empty[s], v_empty[s] (8 arrivals: lane 0 of each consumer warp
 * once its wgmma has read the buffer; Q after the item's last S). The ring's stages and phases count tiles over
 * the CTA's items. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "core/check.h"
#include "kernels/attention/flash_fwd.cuh"
#include "kernels/attention/wgmma.cuh"
#include "kernels/gemm/sm90_ptx.cuh"
#include "kernels/gemm/tma_map.cuh"

namespace mk_attn {
namespace {

struct ws_config {
  static constexpr int kConsumers = 2; /* consumer warpgroups, 64 query rows each */
  static constexpr int kThreads = 128 * (kConsumers + 1);
  static constexpr int kBM = 64 * kConsumers, kBN = 128;
  static constexpr int kStages = 2;
  static constexpr int kProducerRegs = 56, kConsumerRegs = 224; /* 56: the producer without spills */
  static constexpr int kBarSched = 1; /* named barriers kBarSched + consumer: that consumer may issue */
  template <int D>
  static constexpr size_t smem_bytes() { /* tiles, then the barriers; + 1 KiB to align the tiles to 1024 bytes */
    return (size_t)(kBM + 2 * kStages * kBN) * D * sizeof(uint16_t) + 1024 + 256;
  }
};

struct ws_bars {
  uint64_t q_full, q_empty;
  uint64_t k_full[ws_config::kStages], v_full[ws_config::kStages];
  uint64_t k_empty[ws_config::kStages], v_empty[ws_config::kStages];
};

/* Work item r of this CTA: false when it has none. One item a CTA (blockIdx: query block from the last, head,
 * sequence x splits), or persistent (kPersist): the items in order heaviest first (query block from the last, then
 * head, then sequence x splits), dealt to the CTAs in rounds, each round in the other direction (CTA c takes item
 * r G + c in even rounds, r G + G - 1 - c in odd ones). any is false where round r has none for this CTA. */
template <bool kPersist>
__device__ __forceinline__ bool ws_item(const fwd_params &p, int r, int &z, int &m_block, int &h, bool &any) {
  if (!kPersist) {
    z = blockIdx.z, m_block = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, any = true;
    return r == 0;
  }
  const int G = gridDim.x, zs = p.batch * (p.splits > 1 ? p.splits : 1);
  const int blocks = (p.seqlen_q + ws_config::kBM - 1) / ws_config::kBM;
  const long long n = (long long)blocks * p.hq * zs, base = (long long)r * G;
  if (base >= n) return false;
  const long long item = base + ((r & 1) ? G - 1 - (int)blockIdx.x : (int)blockIdx.x);
  any = item < n;
  if (any) {
    const long long per_block = (long long)p.hq * zs;
    m_block = blocks - 1 - (int)(item / per_block);
    h = (int)(item % per_block % p.hq);
    z = (int)(item % per_block / p.hq);
  }
  return true;
}

/* The producer warp: per item, Q (once the consumers are done with the previous item's), then K0, K1, V0, K2, V1,
 * ... into the ring; kt counts the ring's tiles over the items. */
template <int D, bool kPersist>
__device__ __forceinline__ void ws_produce(const CUtensorMap *tq, const CUtensorMap *tk, const CUtensorMap *tv,
                                           const fwd_params &p, uint16_t *sQ, uint16_t *sK, uint16_t *sV,
                                           ws_bars &bar) {
  using C = ws_config;
  constexpr int BM = C::kBM, BN = C::kBN, S = C::kStages, CB = D / 64;
  const int lane = threadIdx.x % 32;
  const bool varlen = p.cu_k != nullptr;
  if (lane == 0) {
    mk_sm90::tma_prefetch_desc(tq);
    mk_sm90::tma_prefetch_desc(tk);
    mk_sm90::tma_prefetch_desc(tv);
  }
  int kt = 0, qi = 0, z, m_block, h;
  bool any;
  for (int r = 0; ws_item<kPersist>(p, r, z, m_block, h, any); r++) {
    fwd_block blk;
    if (!any || !fwd_block_setup<D, BM, BN>(p, z, m_block, h, blk)) continue;
    const int tiles = blk.n_blocks - blk.n_begin, col = (h / p.group) * D;
    if (tiles == 0) continue;
    mk_sm90::mbar_wait(&bar.q_empty, (qi & 1) ^ 1);
    if (lane == 0) {
      mk_sm90::mbar_expect_tx(&bar.q_full, BM * D * 2);
#pragma unroll
      for (int cb = 0; cb < CB; cb++)
        mk_sm90::tma_load_3d(sQ + cb * BM * 64, tq, &bar.q_full, h * D + cb * 64, blk.q0 + blk.m_start, 0);
    }
    auto load = [&](const CUtensorMap *map, const uint16_t *g, uint16_t *ring, uint64_t *full, uint64_t *empty,
                    int t) {
      const int s = (kt + t) % S, nb = blk.n_begin + t, valid = blk.seqlen_k - nb * BN;
      uint16_t *dst = ring + s * BN * D;
      mk_sm90::mbar_wait(&empty[s], (((kt + t) / S) & 1) ^ 1); /* a fresh barrier's previous phase is complete */
      if (!varlen || valid >= BN) {
        if (lane == 0) {
          mk_sm90::mbar_expect_tx(&full[s], BN * D * 2);
#pragma unroll
          for (int cb = 0; cb < CB; cb++)
            mk_sm90::tma_load_3d(dst + cb * BN * 64, map, &full[s], col + cb * 64, blk.k0 + nb * BN, 0);
        }
        return;
      }
      load_rows<BN, D / 8, 32>(dst, g + (long long)nb * BN * blk.kv_stride, blk.kv_stride, valid,
                               [](int r, int c) { return sw128(BN, r, c); });
      cp_async_commit();
      cp_async_wait<0>();
      fence_proxy_async(); /* read by wgmma (async proxy) once the consumers see the barrier */
      __syncwarp();
      if (lane == 0) mk_sm90::mbar_arrive(&full[s]);
    };
    load(tk, blk.gk, sK, bar.k_full, bar.k_empty, 0);
    for (int t = 0; t < tiles; t++) {
      if (t + 1 < tiles) load(tk, blk.gk, sK, bar.k_full, bar.k_empty, t + 1);
      load(tv, blk.gv, sV, bar.v_full, bar.v_empty, t);
    }
    kt += tiles, qi++;
  }
}

template <int D, bool kPersist>
__global__ void __launch_bounds__(ws_config::kThreads, 1)
    flash_fwd_ws_kernel(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
                        const __grid_constant__ CUtensorMap tv, const fwd_params p) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __trap(); /* built for a GPU without wgmma: the launcher never starts this kernel there */
#else
  using C = ws_config;
  constexpr int BM = C::kBM, BN = C::kBN, S = C::kStages, NT = BN / 8, ND = D / 8;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint16_t *sQ = reinterpret_cast<uint16_t *>(smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023));
  uint16_t *sK = sQ + BM * D, *sV = sK + S * BN * D;
  ws_bars &bar = *reinterpret_cast<ws_bars *>(sV + S * BN * D);
  const int tid = threadIdx.x;
  if (tid == 0) {
    mk_sm90::mbar_init(&bar.q_full, 1);
    mk_sm90::mbar_init(&bar.q_empty, 4 * C::kConsumers);
    for (int s = 0; s < S; s++) {
      mk_sm90::mbar_init(&bar.k_full[s], 1);
      mk_sm90::mbar_init(&bar.v_full[s], 1);
      mk_sm90::mbar_init(&bar.k_empty[s], 4 * C::kConsumers);
      mk_sm90::mbar_init(&bar.v_empty[s], 4 * C::kConsumers);
    }
    mk_sm90::mbar_fence_init();
  }
  __syncthreads();

  if (tid < 128) {
    mk_sm90::setmaxnreg_dec<C::kProducerRegs>();
    if (tid < 32) ws_produce<D, kPersist>(&tq, &tk, &tv, p, sQ, sK, sV, bar);
    return;
  }
  mk_sm90::setmaxnreg_inc<C::kConsumerRegs>();
  const int ct = tid - 128, wg = ct / 128, lane = tid % 32, tq4 = lane % 4;
  const uint32_t q_addr = smem_u32(sQ) + (uint32_t)(wg * 64 * 128); /* this consumer's 64 rows */
  auto release = [&](uint64_t *b) {
    __syncwarp();
    if (lane == 0) mk_sm90::mbar_arrive(b);
  };
  auto my_turn = [&] { mk_sm90::named_bar_sync(C::kBarSched + wg, 256); };
  auto their_turn = [&] { mk_sm90::named_bar_arrive(C::kBarSched + (wg ^ 1), 256); };
  if (wg == 1) their_turn(); /* consumer 0 issues first */
  int kt = 0, qi = 0, z, m_block, h;
  bool any;
  for (int r = 0; ws_item<kPersist>(p, r, z, m_block, h, any); r++) {
    fwd_block blk;
    if (!any || !fwd_block_setup<D, BM, BN>(p, z, m_block, h, blk)) continue;
    const int tiles = blk.n_blocks - blk.n_begin;
    const int row0 = blk.m_start + wg * 64 + ((ct % 128) / 32) * 16 + lane / 4; /* and row0 + 8 */
    float o[ND][4], m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.f, 0.f};
#pragma unroll
    for (int j = 0; j < ND; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
    if (tiles > 0) {
      float s[NT][4], alpha[2];
      uint32_t pa[BN / 16][4];
      float(&sf)[NT * 4] = *reinterpret_cast<float(*)[NT * 4]>(&s[0][0]);
      float(&of)[ND * 4] = *reinterpret_cast<float(*)[ND * 4]>(&o[0][0]);
      auto stage = [&](int t) { return (kt + t) % S; };
      auto phase = [&](int t) { return (uint32_t)(((kt + t) / S) & 1); };
      auto issue_s = [&](int t) { /* S = Q K_t^T, 64 rows x 128 keys */
        const uint32_t k_addr = smem_u32(sK + stage(t) * BN * D);
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < D / 16; ks++) {
          const uint32_t cb = (uint32_t)(ks / 4), kofs = (uint32_t)((ks % 4) * 32); /* bytes */
          wgmma_m64n128k16_ss(sf, gmma_desc(q_addr + cb * BM * 128 + kofs, 16, 1024),
                              gmma_desc(k_addr + cb * BN * 128 + kofs, 16, 1024), ks > 0);
        }
        wgmma_commit();
      };
      auto issue_pv = [&](int t) { /* O += P V_t */
        const uint32_t v_addr = smem_u32(sV + stage(t) * BN * D);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BN / 16; kk++) {
          const uint64_t dv = gmma_desc(v_addr + (uint32_t)(kk * 16 * 128), BN * 128, 1024);
          if constexpr (D == 128)
            wgmma_m64n128k16_rs_tb(of, pa[kk], dv, 1);
          else
            wgmma_m64n64k16_rs_tb(of, pa[kk], dv, 1);
        }
        wgmma_commit();
      };
      auto s_done = [&](int t) { /* S_t is in registers: K_t is free, and after the item's last S so is Q */
        fence_regs(sf);
        release(&bar.k_empty[stage(t)]);
        if (t == tiles - 1) release(&bar.q_empty);
        mask_tile<NT>(s, blk, (blk.n_begin + t) * BN, row0, tq4);
        softmax_rows<NT>(s, m_r, l_r, p.scale_log2, alpha);
      };
      auto pv_done = [&](int t) { /* P V_t has completed: V_t is free, and P may be overwritten */
        fence_regs(of);
        fence_u32(pa);
        release(&bar.v_empty[stage(t)]);
      };
      auto to_p = [&] {
#pragma unroll
        for (int kk = 0; kk < BN / 16; kk++) p_fragment<NT>(s, kk, pa[kk]);
      };

      mk_sm90::mbar_wait(&bar.q_full, qi & 1);
      mk_sm90::mbar_wait(&bar.k_full[stage(0)], phase(0));
      my_turn();
      issue_s(0);
      their_turn();
      wgmma_wait<0>();
      s_done(0);
      to_p();
      for (int t = 1; t < tiles; t++) {
        mk_sm90::mbar_wait(&bar.k_full[stage(t)], phase(t));
        my_turn();
        issue_s(t);
        rescale_o<ND>(o, alpha);
        mk_sm90::mbar_wait(&bar.v_full[stage(t - 1)], phase(t - 1));
        issue_pv(t - 1);
        their_turn();
        wgmma_wait<1>();
        s_done(t);
        wgmma_wait<0>();
        pv_done(t - 1);
        to_p();
      }
      rescale_o<ND>(o, alpha);
      mk_sm90::mbar_wait(&bar.v_full[stage(tiles - 1)], phase(tiles - 1));
      my_turn();
      issue_pv(tiles - 1);
      their_turn();
      wgmma_wait<0>();
      pv_done(tiles - 1);
      kt += tiles, qi++;
    }
    store_out<D>(p, blk, h, row0, tq4, o, m_r, l_r);
  }
  if (wg == 0) my_turn(); /* takes consumer 1's last hand-over, so both barriers end balanced */
#endif
}

/* MK_ATTN_WS_PERSISTENT: 1 one CTA an SM walking the work items heaviest first, 0 one CTA an item, -1 (default)
 * persistent for causal calls of at most 4096 keys. Measured (NOTES, attention session 41): persistent is 12-20 %
 * faster causal at 1024 and 2048 keys, where a CTA's start and end weigh most; level at 8192 with 2 KV heads; 4-9 %
 * slower at 8192 with 8 KV heads and 6-14 % slower non-causal, where its items, heaviest first across all heads,
 * read every KV head at once (one CTA an item runs the query blocks of one head together). */
MK_PARAM_INT(attn_ws_persistent, "ATTN_WS_PERSISTENT", -1, -1, 1)

template <int D>
mk_status ws_launch(const fwd_params &p, int sms, cudaStream_t stream) {
  using C = ws_config;
  CUtensorMap mq, mk, mv;
  /* The maps' rows: one sequence ends at its last key (TMA zero-fills the tail tile); in a varlen batch only key
   * tiles inside their sequence go through TMA, so batch x the longest sequence bounds every row they read. */
  long long k_rows = p.cu_k ? (long long)p.batch * p.seqlen_k : (long long)p.seqlen_k;
  k_rows = k_rows < 1 ? 1 : k_rows > INT32_MAX ? INT32_MAX : k_rows;
  const uint64_t qr = (uint64_t)(p.total_q > 0 ? p.total_q : 1), kr = (uint64_t)k_rows;
  MK_CHECK(mk_gemm_encode_map(&mq, p.q, (uint64_t)p.hq * D, qr, 1, 64, C::kBM));
  MK_CHECK(mk_gemm_encode_map(&mk, p.k, (uint64_t)p.hkv * D, kr, 1, 64, C::kBN));
  MK_CHECK(mk_gemm_encode_map(&mv, p.v, (uint64_t)p.hkv * D, kr, 1, 64, C::kBN));
  const int64_t mode = mk_param_attn_ws_persistent();
  if (mode == 1 || (mode < 0 && p.mask != MK_ATTN_MASK_NONE && p.seqlen_k <= 4096))
    return flash_fwd_start(flash_fwd_ws_kernel<D, true>, C::kThreads, C::kBM, C::smem_bytes<D>(), p, D, sms, stream, mq,
                           mk, mv);
  return flash_fwd_start(flash_fwd_ws_kernel<D, false>, C::kThreads, C::kBM, C::smem_bytes<D>(), p, D, 0, stream, mq,
                         mk, mv);
}

}  // namespace

mk_status flash_fwd_launch_ws(const fwd_params &p, int d, int sms, cudaStream_t stream) {
  static_assert(ws_config::kBN == kSm90TileN && ws_config::kBM == kFwdTileM, "the split's choice assumes these tiles");
  static_assert(sizeof(ws_bars) <= 256, "the barriers' room in smem_bytes");
  if (d == 64) return ws_launch<64>(p, sms, stream);
  return ws_launch<128>(p, sms, stream);
}

}  // namespace mk_attn
