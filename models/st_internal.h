/* st_internal.h — internals of the safetensors reader shared by safetensors.c and
 * safetensors_index.c (not a public header). */
#ifndef MK_MODELS_ST_INTERNAL_H
#define MK_MODELS_ST_INTERNAL_H

#include "models/mk_models.h"

typedef struct mk_st_file {
  char *label; /* path or name shown in messages */
  const uint8_t *map;
  size_t size;
  int mapped;
} mk_st_file;

struct mk_st {
  mk_st_file *files;
  int nfiles;
  mk_st_tensor *tensors;
  int ntensors, cap;
  const mk_st_tensor **sorted; /* by name */
  char **meta;                 /* key, value pairs */
  int nmeta;
};

mk_status mk_st_add_tensor_(mk_st_t *S, mk_st_tensor *t);
mk_status mk_st_add_meta_(mk_st_t *S, const char *k, const char *v);
mk_status mk_st_add_file_(mk_st_t *S, const char *label, int *fi);
mk_status mk_st_parse_file_(mk_st_t *S, int fi, const char *label, const uint8_t *data, size_t size);
mk_status mk_st_map_file_(mk_st_t *S, const char *path, const char *label);
mk_status mk_st_finish_(mk_st_t *S);

#endif
