/* tma_stream.cu — how fast TMA boxes of each shape stream a weight matrix from HBM into a shared-memory ring,
 * with no arithmetic: is the decode GEMMs' ~3.6-3.75 TB/s (docs/perf/NOTES.md, moe, session 29) the box shape's
 * DRAM access pattern (128 B of each of 128 rows a k-step) or the consumers?
 *   nvcc -std=c++17 -arch=sm_90a -O3 -I. tools/bench/tma_stream.cu -o tma_stream && ./tma_stream [ROWS [K]]
 * W is [ROWS, K] bf16 (default 114688 x 4096 = 940 MB: a rank's 4 Mixtral gate/up experts at EP = 2). One CTA an
 * SM; a unit is `rows` weight rows walked along K a stage at a time (the GEMM's tile walk); units go round-robin
 * over the CTAs. Thread 0 issues the loads, warp 1 waits for each stage and frees it. Variants: box (rows x cols
 * elements), boxes a stage (consecutive along K), stages. Also a plain 16-byte-load streaming kernel. Times are
 * the median of 30 event-timed calls after 5 warm-up calls. */
#include "tools/bench/bench_cuda.cuh"

using namespace mk_sm90;

struct variant {
  int rows, cols, boxes, stages;
  const char *what;
};

__global__ void __launch_bounds__(64) tma_stream_kernel(const __grid_constant__ CUtensorMap map, int rows_total,
                                                         int k_total, int rows, int cols, int boxes, int stages,
                                                         unsigned *sink) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t *smem = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
  const int box_bytes = rows * cols * 2, stage_bytes = box_bytes * boxes;
  uint64_t *full = (uint64_t *)(smem + stages * stage_bytes), *empty = full + stages;
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; s++) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 1);
    }
    mbar_fence_init();
  }
  __syncthreads();
  const int units = rows_total / rows, ksteps = k_total / (cols * boxes);
  if (threadIdx.x == 0) {
    int s = 0;
    uint32_t ph = 0;
    for (int u = blockIdx.x; u < units; u += gridDim.x)
      for (int k = 0; k < ksteps; k++) {
        mbar_wait(&empty[s], ph ^ 1);
        mbar_expect_tx(&full[s], stage_bytes);
        for (int b = 0; b < boxes; b++)
          tma_load_2d(smem + s * stage_bytes + b * box_bytes, &map, &full[s], (k * boxes + b) * cols, u * rows);
        if (++s == stages) s = 0, ph ^= 1;
      }
  } else if (threadIdx.x == 32) {
    bench_drain_ring(smem, stage_bytes, stages, units, ksteps, full, empty, sink);
  }
}

__global__ void ld_stream_kernel(const uint4 *p, size_t n, unsigned *sink) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p + i));
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

int main(int argc, char **argv) {
  const int rows_total = argc > 1 ? atoi(argv[1]) : 114688, k_total = argc > 2 ? atoi(argv[2]) : 4096;
  const size_t bytes = (size_t)rows_total * k_total * 2;
  int sms;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  uint16_t *w;
  unsigned *sink;
  CK(cudaMalloc(&w, bytes));
  CK(cudaMalloc(&sink, 4));
  CK(cudaMemset(w, 0x3c, bytes));
  const auto encode = tensor_map_encoder();
  printf("W %d x %d bf16 = %.1f MB, %d SMs\n", rows_total, k_total, bytes / 1e6, sms);
  const float ld = median_ms([&] { ld_stream_kernel<<<sms * 4, 512>>>((const uint4 *)w, bytes / 16, sink); });
  printf("%-44s %8.1f us %6.2f TB/s\n", "ld.global.nc v4, 4 x 512 threads an SM", ld * 1e3, bytes / (ld * 1e-3) / 1e12);
  const variant vs[] = {
      {128, 64, 1, 6, "the GEMM's B ring (128 x 128 B), 6 stages"},
      {128, 64, 1, 12, "128 x 128 B, 12 stages"},
      {128, 64, 2, 6, "128 x 128 B x 2 along K, 6 stages"},
      {128, 64, 4, 3, "128 x 128 B x 4 along K, 3 stages"},
      {64, 64, 1, 12, "64 x 128 B, 12 stages"},
      {64, 64, 4, 6, "64 x 128 B x 4 along K, 6 stages"},
      {32, 64, 4, 12, "32 x 128 B x 4 along K, 12 stages"},
      {64, 128, 1, 12, "64 x 256 B (no swizzle), 12 stages"},
      {32, 256, 1, 12, "32 x 512 B (no swizzle), 12 stages"},
      {16, 256, 2, 12, "16 x 512 B x 2 along K, 12 stages"},
      {256, 64, 1, 6, "256 x 128 B, 6 stages"},
  };
  for (const variant &v : vs) {
    if (rows_total % v.rows || k_total % (v.cols * v.boxes)) continue;
    CUtensorMap map;
    cuuint64_t dims[2] = {(cuuint64_t)k_total, (cuuint64_t)rows_total};
    cuuint64_t strides[1] = {(cuuint64_t)k_total * 2};
    cuuint32_t box[2] = {(cuuint32_t)v.cols, (cuuint32_t)v.rows}, es[2] = {1, 1};
    CUtensorMapSwizzle sw = v.cols == 64 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE;
    CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, w, dims, strides, box, es,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
      printf("%-44s encode failed (%d)\n", v.what, (int)r);
      continue;
    }
    const int smem = v.rows * v.cols * 2 * v.boxes * v.stages + 2 * v.stages * 8 + 1024;
    CK(cudaFuncSetAttribute(tma_stream_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const float ms = median_ms([&] {
      tma_stream_kernel<<<sms, 64, smem>>>(map, rows_total, k_total, v.rows, v.cols, v.boxes, v.stages, sink);
    });
    printf("%-44s %8.1f us %6.2f TB/s\n", v.what, ms * 1e3, bytes / (ms * 1e-3) / 1e12);
  }
  return 0;
}
