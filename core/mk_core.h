/* mk_core.h — the public foundation every mkernel module stands on: the status enum,
 * logging (MK_DEBUG / MK_DEBUG_SUBSYS, a callback hook), the MK_* parameter loader,
 * bf16 helpers and the GPU presence query.
 *
 * Usage:
 *   mk_status st = mk_device_count(&n);          // MK_STATUS_NO_DEVICE on a machine with no GPU
 *   if (st) fprintf(stderr, "%s\n", mk_status_str(st));
 *   MK_INFO(MK_SUBSYS_INIT, "found %d GPUs", n);
 *
 * Every library call returns mk_status; the library never calls exit(). */
#ifndef MK_CORE_H
#define MK_CORE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status ------------------------------------------------------------------------- */
typedef enum mk_status {
  MK_STATUS_OK = 0,
  MK_STATUS_CUDA_ERROR,       /* a CUDA runtime/driver call failed */
  MK_STATUS_CUBLAS_ERROR,     /* a cuBLAS/cuBLASLt call failed */
  MK_STATUS_NCCL_ERROR,       /* an NCCL call failed */
  MK_STATUS_NET_ERROR,        /* a verbs/socket/transport call failed */
  MK_STATUS_SYSTEM_ERROR,     /* an OS call failed (errno) */
  MK_STATUS_INTERNAL,         /* a bug in mkernel */
  MK_STATUS_INVALID_ARGUMENT, /* a bad value from the caller, a flag, a file or a peer */
  MK_STATUS_INVALID_USAGE,    /* a call that is not allowed in this state */
  MK_STATUS_REMOTE_ERROR,     /* another rank failed */
  MK_STATUS_TIMEOUT,          /* a bounded wait ran out */
  MK_STATUS_UNSUPPORTED,      /* not built, or not possible on this hardware */
  MK_STATUS_NO_DEVICE,        /* no usable GPU (no driver, no device) */
  MK_STATUS_OUT_OF_MEMORY,    /* host or device allocation failed */
  MK_STATUS_FORMAT_ERROR,     /* a malformed file or message */
  MK_STATUS_COUNT_
} mk_status;

const char *mk_status_str(mk_status st);  /* never NULL */
const char *mk_status_name(mk_status st); /* "MK_STATUS_TIMEOUT" */

/* ---- logging ------------------------------------------------------------------------ */
typedef enum mk_log_level {
  MK_LOG_NONE = 0,
  MK_LOG_WARN = 1, /* default: warnings and errors */
  MK_LOG_INFO = 2,
  MK_LOG_TRACE = 3,
} mk_log_level;

/* Subsystems for MK_DEBUG_SUBSYS (comma list, "ALL", a leading ^ excludes). */
enum {
  MK_SUBSYS_INIT = 1u << 0,
  MK_SUBSYS_BOOTSTRAP = 1u << 1,
  MK_SUBSYS_NET = 1u << 2,
  MK_SUBSYS_PROXY = 1u << 3,
  MK_SUBSYS_COMM = 1u << 4,
  MK_SUBSYS_KERNEL = 1u << 5,
  MK_SUBSYS_BENCH = 1u << 6,
  MK_SUBSYS_MODEL = 1u << 7,
  MK_SUBSYS_ENGINE = 1u << 8,
  MK_SUBSYS_SERVE = 1u << 9,
  MK_SUBSYS_ALL = 0xffffffffu,
};

/* Called with the whole formatted line (no trailing newline) instead of writing stderr. */
typedef void (*mk_log_callback)(mk_log_level level, unsigned subsys, const char *line, void *user);

void mk_log_set_callback(mk_log_callback cb, void *user); /* NULL restores stderr */
void mk_log_set_rank(int rank, int device);                /* shown in every line; -1 = unknown */
mk_log_level mk_log_level_get(void);
int mk_log_enabled(mk_log_level level, unsigned subsys);
/* Parse "WARN" / "INFO,NET" style strings; exposed for tests and tools. */
mk_status mk_log_parse_level(const char *text, mk_log_level *out);
mk_status mk_log_parse_subsys(const char *text, unsigned *out_mask);
void mk_log_write(mk_log_level level, unsigned subsys, const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

#define MK_LOG_(lvl, subsys, ...)                                        \
  do {                                                                   \
    if (mk_log_enabled((lvl), (subsys))) mk_log_write((lvl), (subsys), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define MK_WARN(subsys, ...) MK_LOG_(MK_LOG_WARN, (subsys), __VA_ARGS__)
#define MK_INFO(subsys, ...) MK_LOG_(MK_LOG_INFO, (subsys), __VA_ARGS__)
#define MK_TRACE(subsys, ...) MK_LOG_(MK_LOG_TRACE, (subsys), __VA_ARGS__)

/* ---- parameters (MK_* environment variables) ---------------------------------------
 * Declare a parameter next to the code that reads it:
 *   MK_PARAM_INT(timeout_ms, "TIMEOUT_MS", 10000, 1, INT64_MAX)
 * defines  int64_t mk_param_timeout_ms(void)  reading MK_TIMEOUT_MS once. A value that
 * does not parse or is out of range is reported (WARN, naming the variable and the value)
 * and the default is used. Every parameter is listed in the README. */
typedef struct mk_param_int {
  const char *name; /* full env name, "MK_TIMEOUT_MS" */
  int64_t def, lo, hi;
  int64_t value;
  int state; /* 0 unread, 1 read; guarded inside param.c */
} mk_param_int;

typedef struct mk_param_str {
  const char *name;
  const char *def;
  const char *value;
  int state;
} mk_param_str;

int64_t mk_param_load_int(mk_param_int *p);
const char *mk_param_load_str(mk_param_str *p);
/* Strict integer parse with range check (decimal, optional k/m/g binary suffix). */
mk_status mk_param_parse_int(const char *name, const char *text, int64_t lo, int64_t hi, int64_t *out);
/* Forget cached values (tests that change the environment). */
void mk_param_reset_cache(void);

#define MK_PARAM_INT(getter, env, def, lo, hi)                          \
  int64_t mk_param_##getter(void) {                                    \
    static mk_param_int p_ = {"MK_" env, (def), (lo), (hi), 0, 0};     \
    return mk_param_load_int(&p_);                                     \
  }
#define MK_PARAM_STR(getter, env, def)                                  \
  const char *mk_param_##getter(void) {                                \
    static mk_param_str p_ = {"MK_" env, (def), 0, 0};                 \
    return mk_param_load_str(&p_);                                     \
  }

/* ---- dtypes ------------------------------------------------------------------------- */
typedef enum mk_dtype {
  MK_DTYPE_BOOL, MK_DTYPE_U8, MK_DTYPE_I8, MK_DTYPE_I16, MK_DTYPE_U16, MK_DTYPE_I32, MK_DTYPE_U32,
  MK_DTYPE_I64, MK_DTYPE_U64, MK_DTYPE_F8_E4M3, MK_DTYPE_F8_E5M2, MK_DTYPE_F16, MK_DTYPE_BF16,
  MK_DTYPE_F32, MK_DTYPE_F64, MK_DTYPE_COUNT_
} mk_dtype;
size_t mk_dtype_size(mk_dtype t);
const char *mk_dtype_name(mk_dtype t);              /* the safetensors spelling, "BF16" */
int mk_dtype_from_name(const char *name, mk_dtype *out); /* 0 = known */
int mk_dtype_is_float(mk_dtype t);
/* Convert n elements of a floating dtype to fp32. */
void mk_dtype_to_f32(mk_dtype t, const void *src, float *dst, size_t n);

/* ---- bf16 on the host ---------------------------------------------------------------- */
typedef uint16_t mk_bf16;
float mk_bf16_to_float(mk_bf16 h);
mk_bf16 mk_bf16_from_float(float f); /* round to nearest even; NaN stays NaN */

/* ---- devices -------------------------------------------------------------------------- */
/* Number of usable CUDA devices. MK_STATUS_NO_DEVICE (with *n = 0 and a logged reason)
 * when there is no driver or no GPU; never a crash. */
mk_status mk_device_count(int *n);
/* Why no device is usable ("no NVIDIA driver is loaded", ...); "" when one is. */
const char *mk_device_absent_reason(void);

#ifdef __cplusplus
}
#endif
#endif /* MK_CORE_H */
