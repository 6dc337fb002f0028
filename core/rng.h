/* rng.h — counter-based random numbers, identical bit for bit on host and device:
 * value i of stream `seed` depends only on (seed, i), so a GPU fill can be checked
 * element by element against the host, and benchmarks make fresh inputs without copies. */
#ifndef MK_CORE_RNG_H
#define MK_CORE_RNG_H

#include <stdint.h>

#if defined(__CUDACC__)
#define MK_HD __host__ __device__ __forceinline__
#else
#define MK_HD static inline
#endif

/* splitmix64 finaliser over (seed, index). */
MK_HD uint64_t mk_rng_hash(uint64_t seed, uint64_t i) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + i * 0xbf58476d1ce4e5b9ull + 0x94d049bb133111ebull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [lo, lo + scale): u has 24 random bits, so u is exact in fp32; the multiply
 * and add are rounded separately on both sides (no fused multiply-add on the device). */
MK_HD float mk_rng_uniform(uint64_t seed, uint64_t i, float lo, float scale) {
  float u = (float)(uint32_t)(mk_rng_hash(seed, i) >> 40) * (1.0f / 16777216.0f);
#if defined(__CUDA_ARCH__)
  return __fadd_rn(lo, __fmul_rn(scale, u));
#else
  return lo + scale * u;
#endif
}

/* float -> bf16 bits, round to nearest even (same rule as mk_bf16_from_float). */
MK_HD uint16_t mk_rng_bf16_bits(float f) {
  union {
    float f;
    uint32_t u;
  } c;
  c.f = f;
  uint32_t u = c.u;
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return (uint16_t)((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

#undef MK_HD
#endif /* MK_CORE_RNG_H */
