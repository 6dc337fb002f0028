/* safetensors_index.c — opening a checkpoint: one .safetensors file, or a model directory
 * with model.safetensors or model.safetensors.index.json ({"weight_map": {tensor: file}}).
 * Every shard must resolve (symlinks included) inside the model directory, every tensor of
 * the index must be in the shard it names, and every tensor of a shard must be indexed. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/check.h"
#include "models/st_internal.h"

#define MK_INDEX_MAX_BYTES (64u << 20)

/* Read a whole small text file (bounded). */
mk_status mk_models_read_text_(const char *path, size_t max, char **out, size_t *len) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_MODEL, "%s: cannot open: %s", path, strerror(errno));
  char *buf = malloc(max + 1);
  if (!buf) {
    fclose(f);
    return MK_STATUS_OUT_OF_MEMORY;
  }
  size_t n = fread(buf, 1, max + 1, f);
  int err = ferror(f);
  fclose(f);
  if (err || n > max) {
    free(buf);
    MK_ERR_RETURN(MK_STATUS_FORMAT_ERROR, MK_SUBSYS_MODEL, "%s: %s", path, err ? "read error" : "file too large");
  }
  buf[n] = 0;
  *out = buf;
  *len = n;
  return MK_STATUS_OK;
}

static int is_file(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* A ".." path component. */
static int has_dotdot(const char *p) {
  for (const char *s = p; (s = strstr(s, "..")); s += 2)
    if ((s == p || s[-1] == '/') && (s[2] == 0 || s[2] == '/')) return 1;
  return 0;
}

static mk_status open_index(mk_st_t *S, const char *dir, const char *index_path) {
  mk_status st = MK_STATUS_OK;
  char *text = NULL, *rdir = NULL;
  size_t len;
  cJSON *root = NULL;
  const char **files = NULL;
  int nfiles = 0;
  MK_CHECK(mk_models_read_text_(index_path, MK_INDEX_MAX_BYTES, &text, &len));
  root = cJSON_ParseWithLength(text, len);
  const cJSON *wm = root ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
  if (!cJSON_IsObject(wm)) {
    MK_WARN(MK_SUBSYS_MODEL, "%s: not JSON with a \"weight_map\" object", index_path);
    st = MK_STATUS_FORMAT_ERROR;
    goto fail;
  }
  rdir = realpath(dir, NULL);
  if (!rdir) {
    MK_WARN(MK_SUBSYS_MODEL, "%s: %s", dir, strerror(errno));
    st = MK_STATUS_INVALID_ARGUMENT;
    goto fail;
  }
  int nent = cJSON_GetArraySize(wm);
  files = calloc((size_t)(nent ? nent : 1), sizeof *files);
  if (!files) { st = MK_STATUS_OUT_OF_MEMORY; goto fail; }
  for (const cJSON *e = wm->child; e; e = e->next) {
    if (!cJSON_IsString(e) || !*e->valuestring) {
      MK_WARN(MK_SUBSYS_MODEL, "%s: tensor '%s': shard file is not a string", index_path, e->string ? e->string : "");
      st = MK_STATUS_FORMAT_ERROR;
      goto fail;
    }
    int k = 0;
    while (k < nfiles && strcmp(files[k], e->valuestring)) k++;
    if (k == nfiles) files[nfiles++] = e->valuestring;
  }
  for (int k = 0; k < nfiles; k++) {
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, files[k]) >= (int)sizeof path) {
      MK_WARN(MK_SUBSYS_MODEL, "%s: shard path '%s' is too long", index_path, files[k]);
      st = MK_STATUS_FORMAT_ERROR;
      goto fail;
    }
    char *real = realpath(path, NULL);
    size_t dl = strlen(rdir);
    int inside = real && !strncmp(real, rdir, dl) && real[dl] == '/', exists = real != NULL;
    free(real);
    int escapes = files[k][0] == '/' || has_dotdot(files[k]) || (exists && !inside);
    if (escapes || !exists) {
      MK_WARN(MK_SUBSYS_MODEL, "%s: shard '%s' is %s", index_path, files[k],
              escapes ? "outside the model directory" : "missing");
      st = MK_STATUS_FORMAT_ERROR;
      goto fail;
    }
    MK_CHECK_GOTO(mk_st_map_file_(S, path, path), st, fail);
  }
  MK_CHECK_GOTO(mk_st_finish_(S), st, fail);
  for (const cJSON *e = wm->child; e; e = e->next) {
    const mk_st_tensor *t = mk_st_find(S, e->string);
    if (!t || strcmp(S->files[t->file].label + strlen(dir) + 1, e->valuestring)) {
      MK_WARN(MK_SUBSYS_MODEL, "%s: tensor '%s' is listed for shard %s but is in %s", index_path, e->string,
              e->valuestring, t ? S->files[t->file].label : "no shard");
      st = MK_STATUS_FORMAT_ERROR;
      goto fail;
    }
  }
  for (int i = 0; i < S->ntensors; i++) {
    const mk_st_tensor *t = &S->tensors[i];
    if (!cJSON_GetObjectItemCaseSensitive(wm, t->name)) {
      MK_WARN(MK_SUBSYS_MODEL, "%s: tensor '%s' of shard %s is not in the index's weight_map", index_path, t->name,
              S->files[t->file].label);
      st = MK_STATUS_FORMAT_ERROR;
      goto fail;
    }
  }
fail:
  free(files);
  free(rdir);
  cJSON_Delete(root);
  free(text);
  return st;
}

mk_status mk_st_open(const char *path, mk_st_t **out) {
  *out = NULL;
  if (!path) return MK_STATUS_INVALID_ARGUMENT;
  mk_st_t *S = calloc(1, sizeof *S);
  if (!S) return MK_STATUS_OUT_OF_MEMORY;
  mk_status st;
  struct stat sb;
  if (stat(path, &sb)) {
    MK_WARN(MK_SUBSYS_MODEL, "%s: %s", path, strerror(errno));
    st = MK_STATUS_INVALID_ARGUMENT;
    goto fail;
  }
  if (S_ISDIR(sb.st_mode)) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", path);
    if (is_file(p)) {
      MK_CHECK_GOTO(open_index(S, path, p), st, fail);
    } else {
      snprintf(p, sizeof p, "%s/model.safetensors", path);
      if (!is_file(p)) {
        MK_WARN(MK_SUBSYS_MODEL, "%s: no model.safetensors or model.safetensors.index.json", path);
        st = MK_STATUS_INVALID_ARGUMENT;
        goto fail;
      }
      MK_CHECK_GOTO(mk_st_map_file_(S, p, p), st, fail);
      MK_CHECK_GOTO(mk_st_finish_(S), st, fail);
    }
  } else {
    MK_CHECK_GOTO(mk_st_map_file_(S, path, path), st, fail);
    MK_CHECK_GOTO(mk_st_finish_(S), st, fail);
  }
  *out = S;
  return MK_STATUS_OK;
fail:
  mk_st_close(S);
  return st;
}
