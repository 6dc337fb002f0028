/* mk_test.c — shared test helpers (see mk_test.h). */
#include "tests/mk_test.h"

#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *g_name = "test";

MK_PARAM_INT(test_seed, "TEST_SEED", 0, 0, INT64_MAX)

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "FAIL: test watchdog expired (hang?)\n";
  ssize_t r = write(2, msg, sizeof msg - 1);
  (void)r;
  _exit(1);
}

void mk_test_init(int argc, char **argv, unsigned timeout_s) {
  (void)argc;
  if (argv && argv[0]) g_name = argv[0];
  signal(SIGALRM, on_alarm);
  alarm(timeout_s);
  setvbuf(stdout, NULL, _IOLBF, 0);
}

/* The GPU this rank will use (comm/comm.c: MK_DEVICE, else LOCAL_RANK); -1 outside a launcher. */
int64_t mk_param_device(void);
int64_t mk_param_gpu_share(void);
static int rank_device(void) {
  if (mk_param_device() >= 0) return (int)mk_param_device();
  const char *lr = getenv("LOCAL_RANK");
  return lr && *lr ? atoi(lr) : -1;
}

void mk_test_require_gpus(int n) {
  int have = 0;
  const int dev = rank_device();
  if (dev + 1 > n || (mk_param_gpu_share() && dev >= 0)) /* mk-launch -n 8 on 4 GPUs: ranks 4..7 skip, and */
    n = dev + 1;                                           /* mk-launch exits 77; with --gpus, its GPU only */
  mk_status st = mk_device_count(&have);
  if (st != MK_STATUS_OK || have < n) {
    printf("SKIP %s: needs %d GPU(s), found %d (%s)\n", g_name, n, have,
           st == MK_STATUS_OK ? "not enough" : mk_device_absent_reason());
    exit(MK_TEST_SKIP_CODE);
  }
}

uint64_t mk_test_seed(void) {
  static uint64_t seed;
  if (!seed) {
    seed = (uint64_t)mk_param_test_seed();
    if (!seed) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      seed = ((uint64_t)ts.tv_sec * 1000003u) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
    }
    seed &= (uint64_t)INT64_MAX; /* replayable through MK_TEST_SEED */
    if (!seed) seed = 1;
    printf("%s: seed %" PRIu64 " (replay with MK_TEST_SEED=%" PRIu64 ")\n", g_name, seed, seed);
  }
  return seed;
}

static double rel_err(const float *outf, const uint16_t *outh, const float *ref, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    double o = outf ? outf[i] : mk_bf16_to_float(outh[i]);
    if (!isfinite(o)) return INFINITY;
    double d = o - ref[i];
    num += d * d;
    den += (double)ref[i] * ref[i];
  }
  if (den == 0) return num == 0 ? 0 : INFINITY;
  return sqrt(num / den);
}

double mk_test_rel_err_f32(const float *out, const float *ref, size_t n) { return rel_err(out, NULL, ref, n); }
double mk_test_rel_err_bf16(const uint16_t *out, const float *ref, size_t n) { return rel_err(NULL, out, ref, n); }
