/* log.c — MK_DEBUG level x MK_DEBUG_SUBSYS mask logging; one line per message,
 * "host:pid rank [dev] SUBSYS LEVEL message", to stderr or to a callback. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/mk_core.h"

MK_PARAM_STR(debug, "DEBUG", "WARN")
MK_PARAM_STR(debug_subsys, "DEBUG_SUBSYS", "ALL")

static const struct {
  const char *name;
  unsigned bit;
} k_subsys[] = {
    {"INIT", MK_SUBSYS_INIT},     {"BOOTSTRAP", MK_SUBSYS_BOOTSTRAP}, {"NET", MK_SUBSYS_NET},
    {"PROXY", MK_SUBSYS_PROXY},   {"COMM", MK_SUBSYS_COMM},           {"KERNEL", MK_SUBSYS_KERNEL},
    {"BENCH", MK_SUBSYS_BENCH},   {"MODEL", MK_SUBSYS_MODEL},         {"ENGINE", MK_SUBSYS_ENGINE},
    {"SERVE", MK_SUBSYS_SERVE},   {"ALL", MK_SUBSYS_ALL},
};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static mk_log_level g_level = MK_LOG_WARN;
static unsigned g_mask = MK_SUBSYS_ALL;
static mk_log_callback g_cb;
static void *g_cb_user;
static int g_rank = -1, g_dev = -1;
static char g_host[64];

mk_status mk_log_parse_level(const char *text, mk_log_level *out) {
  static const struct {
    const char *name;
    mk_log_level lvl;
  } k[] = {{"NONE", MK_LOG_NONE}, {"WARN", MK_LOG_WARN}, {"INFO", MK_LOG_INFO}, {"TRACE", MK_LOG_TRACE}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    if (text && strcasecmp(text, k[i].name) == 0) {
      *out = k[i].lvl;
      return MK_STATUS_OK;
    }
  return MK_STATUS_INVALID_ARGUMENT;
}

mk_status mk_log_parse_subsys(const char *text, unsigned *out_mask) {
  if (!text || !*text) return MK_STATUS_INVALID_ARGUMENT;
  int invert = text[0] == '^';
  if (invert) text++;
  unsigned mask = 0;
  char buf[256];
  if (strlen(text) >= sizeof buf) return MK_STATUS_INVALID_ARGUMENT;
  strcpy(buf, text);
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    size_t i = 0, n = sizeof k_subsys / sizeof k_subsys[0];
    while (i < n && strcasecmp(tok, k_subsys[i].name) != 0) i++;
    if (i == n) return MK_STATUS_INVALID_ARGUMENT;
    mask |= k_subsys[i].bit;
  }
  if (!mask) return MK_STATUS_INVALID_ARGUMENT;
  *out_mask = invert ? ~mask : mask;
  return MK_STATUS_OK;
}

static void log_init(void) {
  if (gethostname(g_host, sizeof g_host) != 0) strcpy(g_host, "?");
  g_host[sizeof g_host - 1] = 0;
  const char *lv = mk_param_debug(), *ss = mk_param_debug_subsys();
  if (mk_log_parse_level(lv, &g_level) != MK_STATUS_OK) {
    g_level = MK_LOG_WARN;
    fprintf(stderr, "%s:%d mkernel WARN MK_DEBUG='%s' is not one of NONE, WARN, INFO, TRACE; using WARN\n",
            g_host, (int)getpid(), lv);
  }
  if (mk_log_parse_subsys(ss, &g_mask) != MK_STATUS_OK) {
    g_mask = MK_SUBSYS_ALL;
    fprintf(stderr,
            "%s:%d mkernel WARN MK_DEBUG_SUBSYS='%s' is not a comma list of INIT, BOOTSTRAP, NET, PROXY, "
            "COMM, KERNEL, BENCH, MODEL, ENGINE, SERVE, ALL (optionally starting with ^); using ALL\n",
            g_host, (int)getpid(), ss);
  }
}

mk_log_level mk_log_level_get(void) {
  pthread_once(&g_once, log_init);
  return g_level;
}

int mk_log_enabled(mk_log_level level, unsigned subsys) {
  pthread_once(&g_once, log_init);
  if (level == MK_LOG_NONE || level > g_level) return 0;
  return level == MK_LOG_WARN || (subsys & g_mask) != 0; /* warnings ignore the mask */
}

void mk_log_set_callback(mk_log_callback cb, void *user) {
  pthread_mutex_lock(&g_mu);
  g_cb = cb;
  g_cb_user = user;
  pthread_mutex_unlock(&g_mu);
}

void mk_log_set_rank(int rank, int device) {
  pthread_mutex_lock(&g_mu);
  g_rank = rank;
  g_dev = device;
  pthread_mutex_unlock(&g_mu);
}

static const char *subsys_name(unsigned subsys) {
  if (subsys == MK_SUBSYS_ALL) return "ALL";
  for (size_t i = 0; i < sizeof k_subsys / sizeof k_subsys[0]; i++)
    if (subsys & k_subsys[i].bit) return k_subsys[i].name;
  return "?";
}

void mk_log_write(mk_log_level level, unsigned subsys, const char *file, int line, const char *fmt, ...) {
  pthread_once(&g_once, log_init);
  static const char *const lvl_name[] = {"NONE", "WARN", "INFO", "TRACE"};
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  char msg[2048];
  pthread_mutex_lock(&g_mu);
  int n = snprintf(msg, sizeof msg, "%s:%d %d [%d] %s %s %s:%d ", g_host, (int)getpid(), g_rank, g_dev,
                   subsys_name(subsys), lvl_name[level], base, line);
  if (n < 0) n = 0;
  if ((size_t)n < sizeof msg) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
  }
  if (g_cb) {
    g_cb(level, subsys, msg, g_cb_user);
  } else {
    fprintf(stderr, "%s\n", msg);
    fflush(stderr);
  }
  pthread_mutex_unlock(&g_mu);
}
