/* safetensors.c — the safetensors reader: header checks, mmap of single files, lookup and
 * slice reads. The format: 8-byte little-endian header length N, N bytes of UTF-8 JSON
 * ({name: {dtype, shape, data_offsets}, "__metadata__": {str: str}}), then the data area,
 * which the tensors must tile exactly. Nothing in a file is trusted before it is checked.
 * Sharded checkpoints (the index) are in safetensors_index.c. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"
#include "models/st_internal.h"

#define ST_ERR(label, ...)                                         \
  do {                                                             \
    char m_[512];                                                  \
    snprintf(m_, sizeof m_, __VA_ARGS__);                          \
    MK_WARN(MK_SUBSYS_MODEL, "safetensors %s: %s", (label), m_);   \
    st = MK_STATUS_FORMAT_ERROR;                                   \
    goto fail;                                                     \
  } while (0)

static const double k_max_int = 9007199254740992.0; /* 2^53 */

/* Index of the first byte that is not valid UTF-8, or len. */
static size_t utf8_check(const uint8_t *s, size_t len) {
  size_t i = 0;
  while (i < len) {
    uint8_t c = s[i];
    if (c < 0x80) { i++; continue; }
    int n;
    uint32_t cp;
    if ((c & 0xe0) == 0xc0) n = 1, cp = c & 0x1f;
    else if ((c & 0xf0) == 0xe0) n = 2, cp = c & 0x0f;
    else if ((c & 0xf8) == 0xf0) n = 3, cp = c & 0x07;
    else return i;
    for (int k = 1; k <= n; k++) {
      if (i + k >= len || (s[i + k] & 0xc0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return i;
    i += n + 1;
  }
  return len;
}

/* A JSON number that is an integer in [0, 2^53]; -1 otherwise. */
static int json_uint(const cJSON *v, uint64_t *out, const char **why) {
  if (!cJSON_IsNumber(v)) return *why = "not a number", -1;
  double d = v->valuedouble;
  if (!isfinite(d) || d != floor(d)) return *why = "not an integer", -1;
  if (d < 0) return *why = "negative", -1;
  if (d > k_max_int) return *why = "above 2^53", -1;
  *out = (uint64_t)d;
  return 0;
}

static int cmp_name(const void *a, const void *b) {
  const mk_st_tensor *x = *(const mk_st_tensor *const *)a, *y = *(const mk_st_tensor *const *)b;
  return strcmp(x->name, y->name);
}

typedef struct {
  uint64_t begin, end;
  int idx;
} span;
static int cmp_span(const void *a, const void *b) {
  const span *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return x->idx - y->idx;
}

mk_status mk_st_add_tensor_(mk_st_t *st_, mk_st_tensor *t) {
  if (st_->ntensors == st_->cap) {
    int cap = st_->cap ? st_->cap * 2 : 64;
    mk_st_tensor *n = realloc(st_->tensors, (size_t)cap * sizeof *n);
    if (!n) return MK_STATUS_OUT_OF_MEMORY;
    st_->tensors = n;
    st_->cap = cap;
  }
  st_->tensors[st_->ntensors++] = *t;
  return MK_STATUS_OK;
}

/* Parse and check one file image; appends its tensors with file index `fi`. */
mk_status mk_st_parse_file_(mk_st_t *S, int fi, const char *label, const uint8_t *data, size_t size) {
  mk_status st = MK_STATUS_OK;
  char *hdr = NULL;
  cJSON *root = NULL;
  span *spans = NULL;
  int first = S->ntensors;
  if (size < 8) ST_ERR(label, "file is %zu bytes, shorter than the 8-byte header length", size);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | data[i];
  if (hlen > MK_ST_MAX_HEADER)
    ST_ERR(label, "header length %llu is over the %llu-byte limit (100 MB)", (unsigned long long)hlen,
           (unsigned long long)MK_ST_MAX_HEADER);
  if (hlen > size - 8)
    ST_ERR(label, "header length %llu runs past the end of the file (%zu bytes)", (unsigned long long)hlen, size);
  const uint8_t *h = data + 8;
  size_t bad = utf8_check(h, (size_t)hlen);
  if (bad < hlen) ST_ERR(label, "header is not valid UTF-8 (byte %zu of the header)", bad);
  if (memchr(h, 0, (size_t)hlen)) ST_ERR(label, "header is not JSON: it holds a NUL byte");
  hdr = malloc((size_t)hlen + 1);
  if (!hdr) { st = MK_STATUS_OUT_OF_MEMORY; goto fail; }
  memcpy(hdr, h, (size_t)hlen);
  hdr[hlen] = 0;
  const char *end = NULL;
  root = cJSON_ParseWithLengthOpts(hdr, (size_t)hlen, &end, 0);
  if (!root) {
    const char *e = cJSON_GetErrorPtr();
    size_t at = (e >= hdr && e <= hdr + hlen) ? (size_t)(e - hdr) : 0;
    ST_ERR(label, "header is not JSON (parse error near byte %zu)", at);
  }
  for (const char *p = end; p && p < hdr + hlen; p++)
    if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
      ST_ERR(label, "header is not JSON: bytes after the object (at byte %zu)", (size_t)(p - hdr));
  if (!cJSON_IsObject(root)) ST_ERR(label, "header is not a JSON object");
  uint64_t data_size = size - 8 - hlen, data_start = 8 + hlen;
  int seen_meta = 0;
  for (cJSON *e = root->child; e; e = e->next) {
    const char *name = e->string ? e->string : "";
    if (!strcmp(name, "__metadata__")) {
      if (seen_meta) ST_ERR(label, "duplicate tensor name '__metadata__'");
      seen_meta = 1;
      if (!cJSON_IsObject(e)) ST_ERR(label, "__metadata__ is not a string-to-string map (not an object)");
      for (cJSON *kv = e->child; kv; kv = kv->next) {
        if (!cJSON_IsString(kv))
          ST_ERR(label, "__metadata__ is not a string-to-string map (value of '%s' is not a string)",
                 kv->string ? kv->string : "");
        MK_CHECK_GOTO(mk_st_add_meta_(S, kv->string ? kv->string : "", kv->valuestring), st, fail);
      }
      continue;
    }
    if (!*name) ST_ERR(label, "a tensor has an empty name");
    if (!cJSON_IsObject(e)) ST_ERR(label, "tensor '%s': entry is not an object", name);
    mk_st_tensor t;
    memset(&t, 0, sizeof t);
    t.file = fi;
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!dt) ST_ERR(label, "tensor '%s': missing dtype", name);
    if (!cJSON_IsString(dt)) ST_ERR(label, "tensor '%s': malformed dtype (not a string)", name);
    if (mk_dtype_from_name(dt->valuestring, &t.dtype))
      ST_ERR(label, "tensor '%s': unknown dtype '%.32s'", name, dt->valuestring);
    if (!sh) ST_ERR(label, "tensor '%s': missing shape", name);
    if (!cJSON_IsArray(sh)) ST_ERR(label, "tensor '%s': malformed shape (not an array)", name);
    uint64_t numel = 1;
    int nonzero_overflow = 0, has_zero = 0;
    for (const cJSON *d = sh->child; d; d = d->next) {
      if (t.ndim == MK_ST_MAX_DIMS) ST_ERR(label, "tensor '%s': shape has more than %d dimensions", name, MK_ST_MAX_DIMS);
      const char *why = "";
      uint64_t v;
      if (cJSON_IsNumber(d) && d->valuedouble < 0) ST_ERR(label, "tensor '%s': shape entry %d is negative", name, t.ndim);
      if (json_uint(d, &v, &why)) ST_ERR(label, "tensor '%s': malformed shape entry %d (%s)", name, t.ndim, why);
      t.shape[t.ndim++] = (int64_t)v;
      if (v == 0) has_zero = 1;
      else if (__builtin_mul_overflow(numel, v, &numel)) nonzero_overflow = 1;
    }
    if (nonzero_overflow) ST_ERR(label, "tensor '%s': shape product overflows 64 bits", name);
    if (has_zero) numel = 0;
    uint64_t bytes;
    if (__builtin_mul_overflow(numel, (uint64_t)mk_dtype_size(t.dtype), &bytes))
      ST_ERR(label, "tensor '%s': byte size (shape product x dtype size) overflows 64 bits", name);
    if (!off) ST_ERR(label, "tensor '%s': missing data_offsets", name);
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2)
      ST_ERR(label, "tensor '%s': malformed data_offsets (not an array of 2)", name);
    uint64_t ob, oe;
    const char *why = "";
    if (json_uint(off->child, &ob, &why) || json_uint(off->child->next, &oe, &why))
      ST_ERR(label, "tensor '%s': data_offsets %s", name, why);
    if (ob > oe) ST_ERR(label, "tensor '%s': data_offsets begin %llu > end %llu", name, (unsigned long long)ob,
                        (unsigned long long)oe);
    if (oe > data_size)
      ST_ERR(label, "tensor '%s': data_offsets end %llu is out of bounds (data area is %llu bytes)", name,
             (unsigned long long)oe, (unsigned long long)data_size);
    if (oe - ob != bytes)
      ST_ERR(label, "tensor '%s': byte size %llu != numel %llu x %zu (%s)", name, (unsigned long long)(oe - ob),
             (unsigned long long)numel, mk_dtype_size(t.dtype), mk_dtype_name(t.dtype));
    t.numel = numel;
    t.nbytes = bytes;
    t.offset = data_start + ob;
    t.name = strdup(name);
    if (!t.name) { st = MK_STATUS_OUT_OF_MEMORY; goto fail; }
    st = mk_st_add_tensor_(S, &t);
    if (st) { free((char *)t.name); goto fail; }
  }
  int n = S->ntensors - first;
  spans = malloc((size_t)(n ? n : 1) * (sizeof *spans > sizeof(void *) ? sizeof *spans : sizeof(void *)));
  if (!spans) { st = MK_STATUS_OUT_OF_MEMORY; goto fail; }
  const mk_st_tensor **byname = (const mk_st_tensor **)spans; /* reused below */
  for (int i = 0; i < n; i++) byname[i] = &S->tensors[first + i];
  qsort(byname, (size_t)n, sizeof *byname, cmp_name);
  for (int i = 1; i < n; i++)
    if (!strcmp(byname[i - 1]->name, byname[i]->name)) ST_ERR(label, "duplicate tensor name '%s'", byname[i]->name);
  /* The tensors must tile the data area exactly. */
  for (int i = 0; i < n; i++) {
    const mk_st_tensor *t = &S->tensors[first + i];
    spans[i] = (span){t->offset - data_start, t->offset - data_start + t->nbytes, first + i};
  }
  qsort(spans, (size_t)n, sizeof *spans, cmp_span);
  uint64_t at = 0;
  for (int i = 0; i < n; i++) {
    const char *nm = S->tensors[spans[i].idx].name;
    if (spans[i].begin < at)
      ST_ERR(label, "tensor '%s': data overlaps tensor '%s' (bytes %llu..%llu)", nm, S->tensors[spans[i - 1].idx].name,
             (unsigned long long)spans[i].begin, (unsigned long long)at);
    if (spans[i].begin > at)
      ST_ERR(label, "tensor '%s': gap of %llu bytes before its data (the tensors must tile the data area)", nm,
             (unsigned long long)(spans[i].begin - at));
    at = spans[i].end;
  }
  if (at != data_size)
    ST_ERR(label, "%llu trailing bytes after the last tensor's data", (unsigned long long)(data_size - at));
fail:
  free(spans);
  cJSON_Delete(root);
  free(hdr);
  return st;
}

/* After every file is parsed: names sorted for lookup, duplicates refused. */
mk_status mk_st_finish_(mk_st_t *S) {
  mk_status st = MK_STATUS_OK;
  free(S->sorted);
  S->sorted = malloc((size_t)(S->ntensors ? S->ntensors : 1) * sizeof *S->sorted);
  if (!S->sorted) return MK_STATUS_OUT_OF_MEMORY;
  for (int i = 0; i < S->ntensors; i++) S->sorted[i] = &S->tensors[i];
  qsort(S->sorted, (size_t)S->ntensors, sizeof *S->sorted, cmp_name);
  for (int i = 1; i < S->ntensors; i++) {
    const mk_st_tensor *a = S->sorted[i - 1], *b = S->sorted[i];
    if (strcmp(a->name, b->name)) continue;
    if (a->file == b->file) ST_ERR(S->files[a->file].label, "duplicate tensor name '%s'", a->name);
    ST_ERR(S->files[a->file].label, "tensor '%s' is in two shards: %s and %s", a->name, S->files[a->file].label,
           S->files[b->file].label);
  }
fail:
  return st;
}

mk_status mk_st_add_meta_(mk_st_t *S, const char *k, const char *v) {
  char **n = realloc(S->meta, (size_t)(S->nmeta + 1) * 2 * sizeof *n);
  if (!n) return MK_STATUS_OUT_OF_MEMORY;
  S->meta = n;
  n[2 * S->nmeta] = strdup(k);
  n[2 * S->nmeta + 1] = strdup(v);
  S->nmeta++;
  return n[2 * S->nmeta - 2] && n[2 * S->nmeta - 1] ? MK_STATUS_OK : MK_STATUS_OUT_OF_MEMORY;
}

mk_status mk_st_add_file_(mk_st_t *S, const char *label, int *fi) {
  mk_st_file *n = realloc(S->files, (size_t)(S->nfiles + 1) * sizeof *n);
  if (!n) return MK_STATUS_OUT_OF_MEMORY;
  S->files = n;
  memset(&n[S->nfiles], 0, sizeof n[0]);
  n[S->nfiles].label = strdup(label);
  if (!n[S->nfiles].label) return MK_STATUS_OUT_OF_MEMORY;
  *fi = S->nfiles++;
  return MK_STATUS_OK;
}

/* mmap one file and parse it into S. */
mk_status mk_st_map_file_(mk_st_t *S, const char *path, const char *label) {
  mk_status st;
  int fi;
  MK_CHECK(mk_st_add_file_(S, label, &fi));
  mk_st_file *f = &S->files[fi];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "safetensors %s: cannot open: %s", label, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
    close(fd);
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "safetensors %s: not a regular file", label);
  }
  f->size = (size_t)sb.st_size;
  if (f->size >= 8) {
    void *p = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      close(fd);
      MK_ERR_RETURN(MK_STATUS_SYSTEM_ERROR, MK_SUBSYS_MODEL, "safetensors %s: mmap: %s", label, strerror(errno));
    }
    f->map = p;
    f->mapped = 1;
  }
  close(fd);
  static const uint8_t none[1];
  st = mk_st_parse_file_(S, fi, label, f->map ? f->map : none, f->size);
  return st;
}

mk_status mk_st_parse(const char *label, const void *data, size_t size, mk_st_t **out) {
  *out = NULL;
  mk_st_t *S = calloc(1, sizeof *S);
  if (!S) return MK_STATUS_OUT_OF_MEMORY;
  mk_status st;
  int fi;
  static const uint8_t none[1];
  MK_CHECK_GOTO(mk_st_add_file_(S, label ? label : "(buffer)", &fi), st, fail);
  S->files[fi].map = data ? data : none;
  S->files[fi].size = data ? size : 0;
  MK_CHECK_GOTO(mk_st_parse_file_(S, fi, S->files[fi].label, S->files[fi].map, S->files[fi].size), st, fail);
  MK_CHECK_GOTO(mk_st_finish_(S), st, fail);
  *out = S;
  return MK_STATUS_OK;
fail:
  mk_st_close(S);
  return st;
}

void mk_st_close(mk_st_t *S) {
  if (!S) return;
  for (int i = 0; i < S->nfiles; i++) {
    if (S->files[i].mapped) munmap((void *)S->files[i].map, S->files[i].size);
    free(S->files[i].label);
  }
  for (int i = 0; i < S->ntensors; i++) free((char *)S->tensors[i].name);
  for (int i = 0; i < 2 * S->nmeta; i++) free(S->meta[i]);
  free(S->meta);
  free(S->files);
  free(S->tensors);
  free(S->sorted);
  free(S);
}

int mk_st_count(const mk_st_t *S) { return S ? S->ntensors : 0; }
const mk_st_tensor *mk_st_get(const mk_st_t *S, int i) { return S && i >= 0 && i < S->ntensors ? &S->tensors[i] : NULL; }
const char *mk_st_file_name(const mk_st_t *S, int f) { return S && f >= 0 && f < S->nfiles ? S->files[f].label : NULL; }
const void *mk_st_data(const mk_st_t *S, const mk_st_tensor *t) { return S->files[t->file].map + t->offset; }

const mk_st_tensor *mk_st_find(const mk_st_t *S, const char *name) {
  int lo = 0, hi = S ? S->ntensors - 1 : -1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2, c = strcmp(S->sorted[mid]->name, name);
    if (!c) return S->sorted[mid];
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return NULL;
}

const char *mk_st_metadata(const mk_st_t *S, const char *key) {
  for (int i = 0; S && i < S->nmeta; i++)
    if (!strcmp(S->meta[2 * i], key)) return S->meta[2 * i + 1];
  return NULL;
}

/* Box copy: for every index of the outer dims, one contiguous run of the last dim. */
static mk_status read_box(const mk_st_t *S, const mk_st_tensor *t, const int64_t *begin, const int64_t *end, void *dst,
                          int to_f32) {
  int64_t b[MK_ST_MAX_DIMS], e[MK_ST_MAX_DIMS], idx[MK_ST_MAX_DIMS];
  int nd = t->ndim;
  for (int d = 0; d < nd; d++) {
    b[d] = begin ? begin[d] : 0;
    e[d] = end ? end[d] : t->shape[d];
    if (b[d] < 0 || b[d] > e[d] || e[d] > t->shape[d])
      MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "tensor '%s': slice [%lld, %lld) of dim %d is outside %lld",
                    t->name, (long long)b[d], (long long)e[d], d, (long long)t->shape[d]);
    if (e[d] == b[d]) return MK_STATUS_OK;
  }
  if (to_f32 && !mk_dtype_is_float(t->dtype))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "tensor '%s': dtype %s is not floating", t->name,
                  mk_dtype_name(t->dtype));
  size_t es = mk_dtype_size(t->dtype);
  const uint8_t *base = (const uint8_t *)mk_st_data(S, t);
  int64_t run = nd ? e[nd - 1] - b[nd - 1] : 1;
  size_t out_es = to_f32 ? sizeof(float) : es;
  uint8_t *o = (uint8_t *)dst;
  for (int d = 0; d < nd; d++) idx[d] = b[d];
  for (;;) {
    uint64_t lin = 0;
    for (int d = 0; d < nd; d++) lin = lin * (uint64_t)t->shape[d] + (uint64_t)idx[d];
    if (to_f32) mk_dtype_to_f32(t->dtype, base + lin * es, (float *)o, (size_t)run);
    else memcpy(o, base + lin * es, (size_t)run * es);
    o += (size_t)run * out_es;
    int d = nd - 2;
    while (d >= 0 && ++idx[d] == e[d]) idx[d] = b[d], d--;
    if (d < 0) break;
  }
  return MK_STATUS_OK;
}

mk_status mk_st_read_f32(const mk_st_t *S, const mk_st_tensor *t, const int64_t *begin, const int64_t *end, float *dst) {
  return read_box(S, t, begin, end, dst, 1);
}
mk_status mk_st_read_raw(const mk_st_t *S, const mk_st_tensor *t, const int64_t *begin, const int64_t *end, void *dst) {
  return read_box(S, t, begin, end, dst, 0);
}
