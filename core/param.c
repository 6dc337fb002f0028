/* param.c — the one loader of MK_* environment parameters (see MK_PARAM_INT in mk_core.h). */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/mk_core.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned g_generation = 1; /* bumped by mk_param_reset_cache */

mk_status mk_param_parse_int(const char *name, const char *text, int64_t lo, int64_t hi, int64_t *out) {
  if (!text) return MK_STATUS_INVALID_ARGUMENT;
  while (isspace((unsigned char)*text)) text++;
  if (!*text) {
    MK_WARN(MK_SUBSYS_INIT, "%s is empty; expected an integer", name);
    return MK_STATUS_INVALID_ARGUMENT;
  }
  errno = 0;
  char *end = NULL;
  long long v = strtoll(text, &end, 10);
  if (end == text || errno == ERANGE) {
    MK_WARN(MK_SUBSYS_INIT, "%s='%s' is not an integer", name, text);
    return MK_STATUS_INVALID_ARGUMENT;
  }
  int shift = 0;
  switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
  }
  while (isspace((unsigned char)*end)) end++;
  if (*end) {
    MK_WARN(MK_SUBSYS_INIT, "%s='%s' has trailing characters '%s'", name, text, end);
    return MK_STATUS_INVALID_ARGUMENT;
  }
  if (shift && (v > (INT64_MAX >> shift) || v < (INT64_MIN >> shift))) {
    MK_WARN(MK_SUBSYS_INIT, "%s='%s' overflows", name, text);
    return MK_STATUS_INVALID_ARGUMENT;
  }
  int64_t r = (int64_t)v * ((int64_t)1 << shift);
  if (r < lo || r > hi) {
    MK_WARN(MK_SUBSYS_INIT, "%s=%lld is outside [%lld, %lld]", name, (long long)r, (long long)lo, (long long)hi);
    return MK_STATUS_INVALID_ARGUMENT;
  }
  *out = r;
  return MK_STATUS_OK;
}

int64_t mk_param_load_int(mk_param_int *p) {
  /* Parse outside the lock: a bad value is logged, and logging reads parameters too. */
  pthread_mutex_lock(&g_mu);
  unsigned gen = g_generation;
  int fresh = (unsigned)p->state == gen;
  int64_t v = p->value;
  pthread_mutex_unlock(&g_mu);
  if (fresh) return v;
  const char *env = getenv(p->name);
  v = p->def;
  if (env && mk_param_parse_int(p->name, env, p->lo, p->hi, &v) != MK_STATUS_OK) {
    MK_WARN(MK_SUBSYS_INIT, "ignoring %s, using the default %lld", p->name, (long long)p->def);
    v = p->def;
  }
  pthread_mutex_lock(&g_mu);
  p->value = v;
  p->state = (int)gen;
  pthread_mutex_unlock(&g_mu);
  return v;
}

const char *mk_param_load_str(mk_param_str *p) {
  pthread_mutex_lock(&g_mu);
  if ((unsigned)p->state != g_generation) {
    const char *env = getenv(p->name);
    p->value = (env && *env) ? env : p->def;
    p->state = (int)g_generation;
  }
  const char *v = p->value;
  pthread_mutex_unlock(&g_mu);
  return v;
}

void mk_param_reset_cache(void) {
  pthread_mutex_lock(&g_mu);
  g_generation++;
  pthread_mutex_unlock(&g_mu);
}
