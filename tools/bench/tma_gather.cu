/* tma_gather.cu — can the GEMM core's A tile (128 rows x 64 bf16, 128-byte swizzle) be gathered from arbitrary
 * rows of a matrix by one TMA load a row (box 64 x 1), and how fast do such loads stream? (The MoE's GEMM1 reads
 * rows grouped by expert; today the dispatch copies every (token, expert) row into that order first: docs/perf/
 * NOTES.md, moe, session 38.)
 *   nvcc -std=c++17 -arch=sm_90a -O3 -I. tools/bench/tma_gather.cu -o tma_gather && ./tma_gather
 * 1. Layout: for random row lists, the 128 one-row loads into a 1024-byte-aligned tile at 128-byte steps give the
 *    same shared-memory bytes as two 64-row box loads of the rows copied out contiguously (the host gathers them):
 *    i.e. TMA applies the swizzle by the shared-memory address, so the wgmma descriptors stay as they are.
 * 2. Rate: CTAs (one an SM) stream units of 128 rows along K through a ring of 16 KB stages, no arithmetic, the
 *    rows gathered (random) or consecutive, issued by one thread (2 boxes, or 128 row loads) or by the 32 lanes of
 *    a warp (4 row loads each), or as 16-byte cp.async copies by 64 threads into the swizzled places. Median of 30
 *    event-timed calls after 5 warm-up calls. */
#include <cstring>
#include <random>

#include "tools/bench/bench_cuda.cuh"

using namespace mk_sm90;

constexpr int kRows = 128, kCols = 64, kTile = kRows * kCols * 2;

/* One tile: mode 0 two 64-row boxes of map_box at rows r0, r0 + 64; mode 1 one row load a row of map_row. */
__global__ void tile_kernel(const __grid_constant__ CUtensorMap map_box, const __grid_constant__ CUtensorMap map_row,
                            int mode, const int *idx, int k0, uint8_t *out) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t *smem = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
  uint64_t *full = (uint64_t *)(smem + kTile);
  if (threadIdx.x == 0) {
    mbar_init(full, 1);
    mbar_fence_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) mbar_expect_tx(full, kTile);
  __syncwarp();
  if (mode == 0) {
    if (threadIdx.x == 0) {
      tma_load_2d(smem, &map_box, full, k0, 0);
      tma_load_2d(smem + kTile / 2, &map_box, full, k0, 64);
    }
  } else {
    for (int r = threadIdx.x; r < kRows; r += 32) tma_load_2d(smem + r * 128, &map_row, full, k0, idx[r]);
  }
  mbar_wait(full, 0);
  for (int i = threadIdx.x; i < kTile / 16; i += 32) ((uint4 *)out)[i] = ((const uint4 *)smem)[i];
}

/* Streaming: unit u = 128 rows (rows[u * 128 + r]), walked along K in 64-column stages. mode 0: thread 0, two
 * 64-row boxes of map_box at row u * 128 (consecutive rows); 1: thread 0, 128 row loads; 2: warp 0's lanes, 4
 * row loads each; 3: warps 0 and 2 (64 threads), 16-byte cp.async copies into the swizzled places, 16 a thread
 * and stage (8 threads a row's 128 bytes), each thread's arrive on the stage's barrier when its copies are in
 * (cp.async.mbarrier.arrive.noinc), the unit's rows from shared memory. Warp 1 waits for each stage and frees it. */
__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_arrive_noinc(uint64_t *bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_u32(bar)) : "memory");
}
__global__ void __launch_bounds__(96) stream_kernel(const __grid_constant__ CUtensorMap map_box,
                                                     const __grid_constant__ CUtensorMap map_row, int mode,
                                                     const int *rows, int units, int ksteps, int stages,
                                                     const uint16_t *gx, int kx, unsigned *sink) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t *smem = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
  uint64_t *full = (uint64_t *)(smem + stages * kTile), *empty = full + stages;
  const int lane = threadIdx.x & 31;
  __shared__ int s_rows[kRows];
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; s++) {
      mbar_init(&full[s], mode == 3 ? 64 : 1);
      mbar_init(&empty[s], 1);
    }
    mbar_fence_init();
  }
  __syncthreads();
  if (mode == 3 && threadIdx.x / 32 != 1) {
    const int g = threadIdx.x < 32 ? threadIdx.x : threadIdx.x - 32; /* 0..63 */
    const int c = g & 7, r0 = g >> 3;                                  /* chunk, first row (rows r0 + 8 j) */
    int s = 0, n = 0;
    uint32_t ph = 0;
    for (int u = blockIdx.x; u < units; u += gridDim.x, n++) {
      /* the unit's rows into shared memory (both warps; the previous unit's are dead once every thread
         has issued its last copies: named barrier 1 of the 64) */
      asm volatile("bar.sync 1, 64;" ::: "memory");
      for (int r = g; r < kRows; r += 64) s_rows[r] = rows[u * kRows + r];
      asm volatile("bar.sync 1, 64;" ::: "memory");
      for (int k = 0; k < ksteps; k++) {
        mbar_wait(&empty[s], ph ^ 1);
        const uint32_t st = smem_u32(smem + s * kTile);
#pragma unroll
        for (int j = 0; j < 16; j++) {
          const int r = r0 + 8 * j;
          const char *src = (const char *)gx + ((size_t)s_rows[r] * kx + k * kCols) * 2 + c * 16;
          cp_async16(st + r * 128 + ((c ^ (r & 7)) << 4), src);
        }
        cp_async_arrive_noinc(&full[s]);
        if (++s == stages) s = 0, ph ^= 1;
      }
    }
    return;
  }
  if (threadIdx.x < 32) {
    if (mode != 2 && lane != 0) return;
    int s = 0;
    uint32_t ph = 0;
    for (int u = blockIdx.x; u < units; u += gridDim.x) {
      int my[4];
      for (int i = 0; i < 4; i++) my[i] = rows[u * kRows + lane + 32 * i];
      for (int k = 0; k < ksteps; k++) {
        mbar_wait(&empty[s], ph ^ 1);
        uint8_t *st = smem + s * kTile;
        if (mode == 0) {
          mbar_expect_tx(&full[s], kTile);
          tma_load_2d(st, &map_box, &full[s], k * kCols, u * kRows);
          tma_load_2d(st + kTile / 2, &map_box, &full[s], k * kCols, u * kRows + 64);
        } else if (mode == 1) {
          mbar_expect_tx(&full[s], kTile);
          for (int r = 0; r < kRows; r++) tma_load_2d(st + r * 128, &map_row, &full[s], k * kCols, rows[u * kRows + r]);
        } else {
          if (lane == 0) mbar_expect_tx(&full[s], kTile);
          __syncwarp();
#pragma unroll
          for (int i = 0; i < 4; i++) tma_load_2d(st + (lane + 32 * i) * 128, &map_row, &full[s], k * kCols, my[i]);
        }
        if (++s == stages) s = 0, ph ^= 1;
      }
    }
  } else if (threadIdx.x == 32) {
    bench_drain_ring(smem, kTile, stages, units, ksteps, full, empty, sink);
  }
}

static CUtensorMap make_map(const void *p, int rows, int k, int box_rows) {
  CUtensorMap map;
  cuuint64_t dims[2] = {(cuuint64_t)k, (cuuint64_t)rows};
  cuuint64_t strides[1] = {(cuuint64_t)k * 2};
  cuuint32_t box[2] = {(cuuint32_t)kCols, (cuuint32_t)box_rows}, es[2] = {1, 1};
  CUresult r = tensor_map_encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(p), dims, strides, box, es,
                           CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                           CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "cuTensorMapEncodeTiled failed (%d)\n", (int)r);
    exit(1);
  }
  return map;
}

int main(int argc, char **argv) {
  /* X: [R, K] bf16, R = 2 x 2 x 4096 rows of 2048 (the MoE's land area at (4096, 2048, 128) on 2 ranks, both
   * parities: 64 MiB) */
  const int R = argc > 1 ? atoi(argv[1]) : 16384, K = argc > 2 ? atoi(argv[2]) : 2048;
  int sms;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::mt19937 rng(1234);
  std::vector<uint16_t> hx((size_t)R * K);
  for (auto &v : hx) v = (uint16_t)rng();
  uint16_t *x, *y;
  uint8_t *out;
  int *idx;
  unsigned *sink;
  CK(cudaMalloc(&x, hx.size() * 2));
  CK(cudaMalloc(&y, (size_t)kRows * K * 2));
  CK(cudaMalloc(&out, 2 * kTile));
  CK(cudaMalloc(&idx, sizeof(int) * (size_t)R * 8));
  CK(cudaMalloc(&sink, 4));
  CK(cudaMemcpy(x, hx.data(), hx.size() * 2, cudaMemcpyHostToDevice));
  const CUtensorMap mx_box = make_map(x, R, K, 64), mx_row = make_map(x, R, K, 1), my_box = make_map(y, kRows, K, 64);
  CK(cudaFuncSetAttribute(tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kTile + 2048));

  /* 1. layout */
  int bad = 0, checked = 0;
  for (int trial = 0; trial < 20; trial++) {
    std::vector<int> hi(kRows);
    for (int r = 0; r < kRows; r++) hi[r] = (int)(rng() % (unsigned)R);
    std::vector<uint16_t> hy((size_t)kRows * K);
    for (int r = 0; r < kRows; r++) memcpy(&hy[(size_t)r * K], &hx[(size_t)hi[r] * K], (size_t)K * 2);
    CK(cudaMemcpy(y, hy.data(), hy.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(idx, hi.data(), sizeof(int) * kRows, cudaMemcpyHostToDevice));
    const int k0 = (int)(rng() % (unsigned)(K / kCols)) * kCols;
    CK(cudaMemset(out, 0xff, 2 * kTile));
    tile_kernel<<<1, 32, kTile + 2048>>>(my_box, mx_row, 0, idx, k0, out);
    tile_kernel<<<1, 32, kTile + 2048>>>(mx_box, mx_row, 1, idx, k0, out + kTile);
    CK(cudaDeviceSynchronize());
    std::vector<uint8_t> h(2 * kTile);
    CK(cudaMemcpy(h.data(), out, h.size(), cudaMemcpyDeviceToHost));
    bad += memcmp(h.data(), h.data() + kTile, kTile) != 0;
    checked++;
    /* the box load itself against the 128-byte swizzle (16-byte chunk c of row r at c ^ (r & 7)) */
    for (int r = 0; r < kRows && trial == 0; r++)
      for (int c = 0; c < 8; c++)
        if (memcmp(&h[r * 128 + ((c ^ (r & 7)) * 16)], &hy[(size_t)r * K + k0 + c * 8], 16)) bad += 1000;
  }
  printf("layout: %d of %d gathered tiles equal to the box loads of the same rows%s\n", checked - bad, checked,
         bad ? "  ** MISMATCH **" : "");

  /* 2. rate: units of 128 rows over X (R rows) repeated 8 times (the (token, expert) pairs: each row read ~8 times
   * at k = 8, W = 2 it is 4) */
  const int units = R * 4 / kRows, ksteps = K / kCols, stages = 8;
  std::vector<int> cons((size_t)units * kRows), rnd((size_t)units * kRows);
  for (size_t i = 0; i < cons.size(); i++) cons[i] = (int)(i % (size_t)R), rnd[i] = (int)(rng() % (unsigned)R);
  const int smem = stages * kTile + 2 * stages * 8 + 1024;
  CK(cudaFuncSetAttribute(stream_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const double bytes = (double)units * kRows * K * 2;
  struct { int mode; const std::vector<int> *rows; const char *what; } vs[] = {
      {0, &cons, "2 boxes of 64 rows, one thread (consecutive)"},
      {1, &cons, "128 row loads, one thread (consecutive)"},
      {2, &cons, "128 row loads, 32 lanes (consecutive)"},
      {1, &rnd, "128 row loads, one thread (random rows)"},
      {2, &rnd, "128 row loads, 32 lanes (random rows)"},
      {3, &cons, "cp.async 16 B, 64 threads (consecutive)"},
      {3, &rnd, "cp.async 16 B, 64 threads (random rows)"},
  };
  printf("rate: %d units of 128 rows x %d (%.0f MB read; X %.0f MB), %d SMs, %d stages of 16 KB\n", units, K,
         bytes / 1e6, (double)R * K * 2 / 1e6, sms, stages);
  for (auto &v : vs) {
    CK(cudaMemcpy(idx, v.rows->data(), sizeof(int) * v.rows->size(), cudaMemcpyHostToDevice));
    const float ms = median_ms([&] {
      stream_kernel<<<sms, 96, smem>>>(mx_box, mx_row, v.mode, idx, units, ksteps, stages, x, K, sink);
    });
    printf("  %-48s %8.1f us %6.2f TB/s  %5.1f GB/s an SM\n", v.what, ms * 1e3, bytes / (ms * 1e-3) / 1e12,
           bytes / (ms * 1e-3) / 1e9 / sms);
  }
  return bad ? 1 : 0;
}
