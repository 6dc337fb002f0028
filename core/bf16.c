/* bf16.c — host conversions between float and bfloat16 (round to nearest even). */
#include <string.h>

#include "core/mk_core.h"

float mk_bf16_to_float(mk_bf16 h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

mk_bf16 mk_bf16_from_float(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return (mk_bf16)((u >> 16) | 0x0040u); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (mk_bf16)(u >> 16);
}
