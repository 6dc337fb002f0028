/* group_rows.cu — how fast can the MoE dispatch group (token, expert) rows by expert? (docs/perf/NOTES.md, moe,
 * session 40.) The E = 128 prefill on 2 ranks writes 32768 rows of 4 KiB (128 MiB) into A1 from two 16 MiB sources
 * (this rank's x, the peer's landed x), each token row once per local expert of it (k = 8 of E = 128, 64 local: ~4).
 *   nvcc -std=c++17 -arch=sm_90a -O3 -I. tools/bench/group_rows.cu -o group_rows && ./group_rows
 * On 128 CTAs (the serial schedule's SMs - 4), rows of a CTA's chunk of each source:
 *   warp:      the dispatch's copy: one row a warp at a time, 16 warps, 8 16-byte loads a lane, then the n stores
 *              (moe_copy_row_multi, included); with ready: a __threadfence and an add to the row's counter after
 *              each row.
 *   bulk S/L/W: W warps, each a ring of S 4 KiB slots in shared memory: lane 0 loads rows into slots with
 *              cp.async.bulk (global -> shared, mbarrier), stores each row to its n places with cp.async.bulk
 *              (shared -> global, one bulk group a row), and reloads a slot once the stores of the row L rows back
 *              have read it (wait_group.read L); with ready: wait_group L (the writes complete), a proxy fence, then
 *              the add of that row.
 *   ceilings:  cudaMemsetAsync of 128 MiB (writes only), cudaMemcpyAsync of 128 MiB device to device.
 * Every variant's A1 is checked against the sources row by row. Median of 30 event-timed calls after 5 warm-up
 * calls; the rate is the bytes written into A1 over the time. */
#include <cstring>
#include <random>

#include "kernels/moe/moe_common.cuh" /* moe_copy_row_multi: the dispatch's copy */
#include "tools/bench/bench_cuda.cuh"

using namespace mk_sm90;

constexpr int kT = 4096, kH = 2048, kRowBytes = kH * 2, kE = 128, kK = 8, kEl = 64, kCtas = 128;

struct meta { /* one source row: where it comes from and its n places in A1 */
  int src, n, pos[kK];
};

/* Rows [j0, j1) of source s for CTA c (as moe_chunk). */
__device__ __forceinline__ void chunk(int c, int *j0, int *j1) {
  *j0 = (int)((int64_t)kT * c / kCtas), *j1 = (int)((int64_t)kT * (c + 1) / kCtas);
}

__global__ void __launch_bounds__(512) warp_kernel(const char *x, const char *land, const meta *m, char *A1,
                                                   unsigned *ready) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  int j0, j1;
  chunk(blockIdx.x, &j0, &j1);
  for (int s = 0; s < 2; s++)
    for (int j = j0 + warp; j < j1; j += 16) {
      const meta &mt = m[s * kT + j];
      const int n = mt.n;
      int pos[kK];
#pragma unroll
      for (int q = 0; q < kK; q++) pos[q] = mt.pos[q];
      moe_copy_row_multi(A1, pos, n, (s ? land : x) + (int64_t)mt.src * kRowBytes, kRowBytes);
      if (ready && lane < n) {
        __threadfence();
        atomicAdd(ready + pos[lane] / 128, 1u);
      }
    }
}

__device__ __forceinline__ void bulk_load(void *dst, const void *src, uint32_t bytes, uint64_t *bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_u32(dst)),
               "l"(src), "r"(bytes), "r"(smem_u32(bar))
               : "memory");
}
__device__ __forceinline__ void bulk_store(void *dst, const void *src, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(smem_u32(src)),
               "r"(bytes)
               : "memory");
}

/* W warps, S slots each; lane 0 streams the warp's rows (the CTA's rows of both sources, every W-th). */
template <int S, int L>
__global__ void __launch_bounds__(512) bulk_kernel(const char *x, const char *land, const meta *m, char *A1,
                                                   unsigned *ready, int W) {
  extern __shared__ __align__(128) uint8_t smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  __shared__ meta cm[2 * (kT / kCtas + 1)]; /* the CTA's metas: source 0's chunk, then source 1's */
  int j0, j1;
  chunk(blockIdx.x, &j0, &j1);
  const int per = j1 - j0, rows = 2 * per;
  for (int u = threadIdx.x; u < rows; u += blockDim.x) cm[u] = m[(u < per ? 0 : kT) + j0 + (u < per ? u : u - per)];
  __syncthreads();
  if (warp >= W) return;
  uint8_t *slots = smem + (size_t)warp * S * kRowBytes;
  uint64_t *bar = (uint64_t *)(smem + (size_t)W * S * kRowBytes) + warp * S;
  auto row_meta = [&](int i) -> const meta & { return cm[warp + i * W]; }; /* the warp's i-th row */
  const int mine = rows > warp ? (rows - warp + W - 1) / W : 0;
  if (lane == 0) {
    for (int i = 0; i < S; i++) mbar_init(&bar[i], 1);
    mbar_fence_init();
  }
  __syncwarp();
  if (lane != 0) return;
  auto issue = [&](int i) { /* row i into slot i % S */
    const meta &mt = row_meta(i);
    const int u = warp + i * W;
    mbar_expect_tx(&bar[i % S], kRowBytes);
    bulk_load(slots + (size_t)(i % S) * kRowBytes, (u < per ? x : land) + (int64_t)mt.src * kRowBytes, kRowBytes,
              &bar[i % S]);
  };
  for (int i = 0; i < S && i < mine; i++) issue(i);
  for (int i = 0; i < mine; i++) {
    mbar_wait(&bar[i % S], (uint32_t)(i / S) & 1);
    const meta &mt = row_meta(i);
    for (int k = 0; k < mt.n; k++)
      bulk_store(A1 + (int64_t)mt.pos[k] * kRowBytes, slots + (size_t)(i % S) * kRowBytes, kRowBytes);
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    const int done = i - L; /* its stores have read its slot (ready: and written A1) */
    if (done >= 0) {
      if (ready) {
        asm volatile("cp.async.bulk.wait_group %0;" ::"n"(L) : "memory");
        asm volatile("fence.proxy.async.global;" ::: "memory");
        const meta &md = row_meta(done);
        __threadfence();
        for (int k = 0; k < md.n; k++) atomicAdd(ready + md.pos[k] / 128, 1u);
      } else {
        asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(L) : "memory");
      }
      if (done + S < mine) issue(done + S);
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  if (ready) /* the last L rows */
    for (int i = mine - L > 0 ? mine - L : 0; i < mine; i++) {
      const meta &md = row_meta(i);
      for (int k = 0; k < md.n; k++) atomicAdd(ready + md.pos[k] / 128, 1u);
    }
}

int main() {
  std::mt19937 rng(40);
  std::vector<meta> hm(2 * kT);
  std::vector<int> cnt(kEl, 0);
  for (auto &mt : hm) { /* k distinct experts of E; the local ones (e < El) in order */
    int e[kK], n = 0;
    for (int q = 0; q < kK; q++) {
      int v;
      do v = (int)(rng() % kE); while (std::find(e, e + q, v) != e + q);
      e[q] = v;
      if (v < kEl) mt.pos[n++] = v;
    }
    mt.n = n;
    for (int q = 0; q < n; q++) cnt[mt.pos[q]]++;
  }
  std::vector<int> off(kEl + 1, 0), fill(kEl, 0);
  for (int e = 0; e < kEl; e++) off[e + 1] = off[e] + (cnt[e] + 127) / 128 * 128; /* tile-rows of 128 */
  for (int i = 0; i < 2 * kT; i++) {
    hm[i].src = i % kT;
    for (int q = 0; q < hm[i].n; q++) {
      const int e = hm[i].pos[q];
      hm[i].pos[q] = off[e] + fill[e]++;
    }
  }
  int pairs = 0;
  for (auto &mt : hm) pairs += mt.n;
  const size_t a1_bytes = (size_t)off[kEl] * kRowBytes, src_bytes = (size_t)kT * kRowBytes;
  std::vector<uint16_t> hx(2 * (size_t)kT * kH);
  for (auto &v : hx) v = (uint16_t)rng();
  char *x, *land, *A1, *scratch;
  meta *m;
  unsigned *ready;
  CK(cudaMalloc(&x, src_bytes));
  CK(cudaMalloc(&land, src_bytes));
  CK(cudaMalloc(&A1, a1_bytes));
  CK(cudaMalloc(&scratch, (size_t)pairs * kRowBytes));
  CK(cudaMalloc(&m, sizeof(meta) * hm.size()));
  CK(cudaMalloc(&ready, sizeof(unsigned) * (off[kEl] / 128)));
  CK(cudaMemcpy(x, hx.data(), src_bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(land, (char *)hx.data() + src_bytes, src_bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(m, hm.data(), sizeof(meta) * hm.size(), cudaMemcpyHostToDevice));
  const double wbytes = (double)pairs * kRowBytes;
  printf("pairs %d (%.1f MiB written), A1 %.1f MiB, sources 2 x %.0f MiB\n", pairs, wbytes / 1048576.0,
         a1_bytes / 1048576.0, src_bytes / 1048576.0);
  std::vector<char> got(a1_bytes);
  auto check = [&](const char *name) {
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(got.data(), A1, a1_bytes, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (int i = 0; i < 2 * kT; i++)
      for (int q = 0; q < hm[i].n; q++)
        bad += memcmp(got.data() + (size_t)hm[i].pos[q] * kRowBytes,
                      (const char *)hx.data() + (size_t)(i / kT) * src_bytes + (size_t)hm[i].src * kRowBytes,
                      kRowBytes) != 0;
    if (bad) printf("%s: %zu rows wrong\n", name, bad);
    return bad == 0;
  };
  auto report = [&](const char *name, float ms) {
    printf("%-28s %8.4f ms  %6.2f TB/s written\n", name, ms, wbytes / (ms * 1e-3) / 1e12);
  };
  bool ok = true;
  for (int rd = 0; rd < 2; rd++) {
    unsigned *rp = rd ? ready : nullptr;
    CK(cudaMemset(A1, 0, a1_bytes));
    warp_kernel<<<kCtas, 512>>>(x, land, m, A1, rp);
    ok &= check("warp");
    report(rd ? "warp, ready" : "warp", median_ms([&] { warp_kernel<<<kCtas, 512>>>(x, land, m, A1, rp); }));
  }
  auto bulk = [&](auto kern, int S, int L, int W) {
    const int smem = W * S * (kRowBytes + 8);
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    for (int rd = 0; rd < 2; rd++) {
      unsigned *rp = rd ? ready : nullptr;
      char name[64];
      snprintf(name, sizeof name, "bulk S %d L %d W %d%s", S, L, W, rd ? ", ready" : "");
      CK(cudaMemset(A1, 0, a1_bytes));
      kern<<<kCtas, 512, smem>>>(x, land, m, A1, rp, W);
      ok &= check(name);
      report(name, median_ms([&] { kern<<<kCtas, 512, smem>>>(x, land, m, A1, rp, W); }));
    }
  };
  bulk(bulk_kernel<12, 4>, 12, 4, 4);
  bulk(bulk_kernel<6, 2>, 6, 2, 8);
  bulk(bulk_kernel<3, 1>, 3, 1, 16);
  bulk(bulk_kernel<24, 8>, 24, 8, 2);
  report("memset 128 MiB (ceiling)", median_ms([&] { CK(cudaMemsetAsync(scratch, 1, (size_t)pairs * kRowBytes)); }));
  report("memcpy d2d (ceiling)", median_ms([&] {
           CK(cudaMemcpyAsync(scratch, A1, (size_t)pairs * kRowBytes < a1_bytes ? (size_t)pairs * kRowBytes : a1_bytes,
                              cudaMemcpyDeviceToDevice));
         }));
  printf("%s\n", ok ? "all variants correct" : "FAILED");
  return ok ? 0 : 1;
}
