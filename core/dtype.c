/* dtype.c — element types (the safetensors set): names, sizes, conversion to fp32. */
#include <math.h>
#include <string.h>

#include "core/mk_core.h"

static const struct {
  const char *name;
  size_t size;
  int is_float;
} k_dtypes[MK_DTYPE_COUNT_] = {
    [MK_DTYPE_BOOL] = {"BOOL", 1, 0},    [MK_DTYPE_U8] = {"U8", 1, 0},
    [MK_DTYPE_I8] = {"I8", 1, 0},        [MK_DTYPE_I16] = {"I16", 2, 0},
    [MK_DTYPE_U16] = {"U16", 2, 0},      [MK_DTYPE_I32] = {"I32", 4, 0},
    [MK_DTYPE_U32] = {"U32", 4, 0},      [MK_DTYPE_I64] = {"I64", 8, 0},
    [MK_DTYPE_U64] = {"U64", 8, 0},      [MK_DTYPE_F8_E4M3] = {"F8_E4M3", 1, 1},
    [MK_DTYPE_F8_E5M2] = {"F8_E5M2", 1, 1}, [MK_DTYPE_F16] = {"F16", 2, 1},
    [MK_DTYPE_BF16] = {"BF16", 2, 1},    [MK_DTYPE_F32] = {"F32", 4, 1},
    [MK_DTYPE_F64] = {"F64", 8, 1},
};

size_t mk_dtype_size(mk_dtype t) { return (unsigned)t < MK_DTYPE_COUNT_ ? k_dtypes[t].size : 0; }
const char *mk_dtype_name(mk_dtype t) { return (unsigned)t < MK_DTYPE_COUNT_ ? k_dtypes[t].name : "?"; }
int mk_dtype_is_float(mk_dtype t) { return (unsigned)t < MK_DTYPE_COUNT_ && k_dtypes[t].is_float; }

int mk_dtype_from_name(const char *name, mk_dtype *out) {
  for (int i = 0; i < MK_DTYPE_COUNT_; i++)
    if (name && !strcmp(name, k_dtypes[i].name)) {
      *out = (mk_dtype)i;
      return 0;
    }
  return -1;
}

static float half_to_f32(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  float v;
  if (e == 0) v = ldexpf((float)m, -24);
  else if (e == 31) v = m ? NAN : INFINITY;
  else v = ldexpf((float)(m | 1024), e - 25);
  return (h & 0x8000) ? -v : v;
}

static float e4m3_to_f32(uint8_t b) { /* OCP FN variant: no inf, S.1111.111 = NaN */
  int e = (b >> 3) & 15, m = b & 7;
  float v;
  if (e == 15 && m == 7) v = NAN;
  else if (e == 0) v = ldexpf((float)m, -9);
  else v = ldexpf((float)(m | 8), e - 10);
  return (b & 0x80) ? -v : v;
}

void mk_dtype_to_f32(mk_dtype t, const void *src, float *dst, size_t n) {
  const uint8_t *s = (const uint8_t *)src;
  for (size_t i = 0; i < n; i++) {
    switch (t) {
      case MK_DTYPE_F32: memcpy(&dst[i], s + 4 * i, 4); break;
      case MK_DTYPE_F64: { double d; memcpy(&d, s + 8 * i, 8); dst[i] = (float)d; break; }
      case MK_DTYPE_BF16: { uint16_t h; memcpy(&h, s + 2 * i, 2); dst[i] = mk_bf16_to_float(h); break; }
      case MK_DTYPE_F16: { uint16_t h; memcpy(&h, s + 2 * i, 2); dst[i] = half_to_f32(h); break; }
      case MK_DTYPE_F8_E5M2: dst[i] = half_to_f32((uint16_t)(s[i] << 8)); break;
      case MK_DTYPE_F8_E4M3: dst[i] = e4m3_to_f32(s[i]); break;
      default: dst[i] = NAN; break;
    }
  }
}
