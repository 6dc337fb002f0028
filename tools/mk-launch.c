/* mk-launch.c — start N local ranks of a program, like torchrun on one host.
 *
 *   mk-launch -n N [--nodes K] [--gpus G] [--grace S] -- PROGRAM ARGS...
 *
 * Each rank r gets RANK=r WORLD_SIZE=N LOCAL_RANK=r%(N/K) LOCAL_WORLD_SIZE=N/K
 * MASTER_ADDR=127.0.0.1 MASTER_PORT=<a free port> and MK_DEVICE=r: every rank sees all GPUs
 * and uses GPU r (mkernel calls cudaSetDevice(MK_DEVICE), else LOCAL_RANK), so CUDA IPC and
 * peer access work across all of them; with --nodes K, LOCAL_RANK repeats per emulated node
 * while the GPU stays distinct. --gpus G < N puts rank r on GPU r % G and sets MK_GPU_SHARE=1: ranks share
 * GPUs, for functional tests of several ranks on fewer GPUs (their kernels take turns by the driver's time slices,
 * so fused ops run, slowly; NCCL refuses it). NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and
 * NVSHMEM_DISABLE_NVLS=1 are always set (no NVLink multicast). With --nodes K > 1 (the
 * loopback transport's emulated nodes) CUDA_MODULE_LOADING=EAGER is set unless the caller set
 * it: the loopback proxy issues CUDA calls (copies, the signal kernel), and a kernel loaded
 * lazily by the rank's main thread while a fused op waits on the proxy blocks them (the
 * module load waits for the running kernel, which waits for the peer's signal: a deadlock).
 * Output: each line of a rank's stdout/stderr is written to ours with a "[r] " prefix.
 * SIGINT/SIGTERM are forwarded to every rank. When a rank exits non-zero or dies from a
 * signal, the others get SIGTERM, then SIGKILL after --grace seconds (default 3), and
 * mk-launch exits with that rank's code (128+signal for a signal). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct child {
  pid_t pid;
  int fd[2];        /* stdout, stderr read ends; -1 once closed */
  char *buf[2];
  size_t len[2];
  int running;
} child;

static volatile sig_atomic_t g_signal;
static void on_signal(int sig) { g_signal = sig; }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int usage(void) {
  fprintf(stderr, "usage: mk-launch -n N [--nodes K] [--gpus G] [--grace S] -- PROGRAM [ARGS...]\n"
                  "  -n N        number of ranks on this host\n"
                  "  --nodes K   emulate K nodes of N/K ranks each (default 1)\n"
                  "  --gpus G    put rank r on GPU r %% G (default N: a GPU each); G < N shares GPUs (MK_GPU_SHARE=1),\n"
                  "              for functional tests only\n"
                  "  --grace S   seconds between SIGTERM and SIGKILL when stopping ranks (default 3)\n");
  return 2;
}

static int parse_pos(const char *flag, const char *v, int *out) {
  char *end = NULL;
  long x = v ? strtol(v, &end, 10) : 0;
  if (!v || !*v || *end || x < 1 || x > 4096) {
    fprintf(stderr, "mk-launch: %s needs a positive integer, got '%s'\n", flag, v ? v : "");
    return -1;
  }
  *out = (int)x;
  return 0;
}

/* A port for rank 0 to listen on, chosen below the kernel's ephemeral range: a port from that
 * range can be taken, between this check and rank 0's bind, as the local end of any outgoing
 * connection (seen: "Address already in use" under back-to-back launches). Random start,
 * each candidate test-bound on all addresses; falls back to an ephemeral port. */
static int try_bind(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(port ? INADDR_ANY : INADDR_LOOPBACK);
  a.sin_port = htons((uint16_t)port);
  socklen_t len = sizeof a;
  int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0;
  close(fd);
  return ok ? ntohs(a.sin_port) : -1;
}

static int free_port(void) {
  int lo = 32768;
  FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
  if (f) {
    if (fscanf(f, "%d", &lo) != 1) lo = 32768;
    fclose(f);
  }
  const int base = 12000;
  if (lo > base + 1000) {
    unsigned span = (unsigned)(lo - base), start = (unsigned)getpid() * 2654435761u ^ (unsigned)time(NULL);
    for (unsigned i = 0; i < 200; i++) {
      int port = try_bind(base + (int)((start + i * 7919u) % span));
      if (port > 0) return port;
    }
  }
  return try_bind(0);
}

/* Write complete lines of child c's stream s with its prefix; flush = also the remainder. */
static void emit(child *c, int rank, int s, int flush) {
  FILE *out = s ? stderr : stdout;
  char *b = c->buf[s];
  size_t start = 0;
  for (size_t i = 0; i < c->len[s]; i++)
    if (b[i] == '\n') {
      fprintf(out, "[%d] %.*s\n", rank, (int)(i - start), b + start);
      start = i + 1;
    }
  if (flush && start < c->len[s]) {
    fprintf(out, "[%d] %.*s\n", rank, (int)(c->len[s] - start), b + start);
    start = c->len[s];
  }
  memmove(b, b + start, c->len[s] - start);
  c->len[s] -= start;
  fflush(out);
}

static void signal_all(child *ch, int n, int sig) {
  for (int r = 0; r < n; r++)
    if (ch[r].running) kill(-ch[r].pid, sig);
}

int main(int argc, char **argv) {
  int n = 0, nodes = 1, gpus = 0, grace = 3, i = 1;
  for (; i < argc; i++) {
    if (!strcmp(argv[i], "--")) {
      i++;
      break;
    }
    if (!strcmp(argv[i], "-n") || !strcmp(argv[i], "--nodes") || !strcmp(argv[i], "--gpus") ||
        !strcmp(argv[i], "--grace")) {
      int *dst = !strcmp(argv[i], "-n")        ? &n
                 : !strcmp(argv[i], "--nodes") ? &nodes
                 : !strcmp(argv[i], "--gpus")  ? &gpus
                                               : &grace;
      if (parse_pos(argv[i], i + 1 < argc ? argv[i + 1] : NULL, dst)) return 2;
      i++;
    } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage();
      return 0;
    } else {
      fprintf(stderr, "mk-launch: unknown flag '%s'\n", argv[i]);
      return usage();
    }
  }
  if (n < 1 || i >= argc) return usage();
  if (n % nodes) {
    fprintf(stderr, "mk-launch: -n %d is not a multiple of --nodes %d\n", n, nodes);
    return 2;
  }
  if (gpus == 0 || gpus > n) gpus = n;
  int port = free_port();
  if (port < 0) {
    perror("mk-launch: cannot find a free port");
    return 1;
  }
  int local = n / nodes;
  child *ch = calloc((size_t)n, sizeof *ch);
  if (!ch) return 1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  int live = 0;
  for (int r = 0; r < n; r++) {
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC)) {
      perror("mk-launch: pipe");
      signal_all(ch, r, SIGKILL);
      return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
      perror("mk-launch: fork");
      signal_all(ch, r, SIGKILL);
      return 1;
    }
    if (pid == 0) {
      setpgid(0, 0);
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      signal(SIGPIPE, SIG_DFL);
      dup2(po[1], 1);
      dup2(pe[1], 2);
      char v[32];
#define SETI(name, val) (snprintf(v, sizeof v, "%d", (val)), setenv(name, v, 1))
      SETI("RANK", r);
      SETI("WORLD_SIZE", n);
      SETI("LOCAL_RANK", r % local);
      SETI("LOCAL_WORLD_SIZE", local);
      SETI("GROUP_RANK", r / local);
      SETI("MASTER_PORT", port);
      SETI("MK_DEVICE", r % gpus);
      if (gpus < n) setenv("MK_GPU_SHARE", "1", 1);
#undef SETI
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("NCCL_NVLS_ENABLE", "0", 1);
      setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", 1);
      setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
      if (nodes > 1) setenv("CUDA_MODULE_LOADING", "EAGER", 0);
      execvp(argv[i], argv + i);
      fprintf(stderr, "mk-launch: cannot run '%s': %s\n", argv[i], strerror(errno));
      _exit(127);
    }
    setpgid(pid, pid);
    close(po[1]);
    close(pe[1]);
    ch[r] = (child){pid, {po[0], pe[0]}, {malloc(65536), malloc(65536)}, {0, 0}, 1};
    live++;
  }

  int first_fail = -1, fail_code = 0, forwarded = 0;
  double stop_at = 0; /* when SIGTERM went out; SIGKILL follows after grace */
  struct pollfd *pf = calloc((size_t)n * 2, sizeof *pf);
  int *who = calloc((size_t)n * 2, sizeof *who);
  for (;;) {
    int np = 0;
    for (int r = 0; r < n; r++)
      for (int s = 0; s < 2; s++)
        if (ch[r].fd[s] >= 0) {
          pf[np] = (struct pollfd){ch[r].fd[s], POLLIN, 0};
          who[np++] = r * 2 + s;
        }
    if (np == 0 && live == 0) break;
    int pr = poll(pf, (nfds_t)np, 50);
    for (int k = 0; pr > 0 && k < np; k++) {
      if (!pf[k].revents) continue;
      child *c = &ch[who[k] / 2];
      int s = who[k] % 2;
      if (c->len[s] == 65536) emit(c, who[k] / 2, s, 1);
      ssize_t got = read(c->fd[s], c->buf[s] + c->len[s], 65536 - c->len[s]);
      if (got > 0) {
        c->len[s] += (size_t)got;
        emit(c, who[k] / 2, s, 0);
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        emit(c, who[k] / 2, s, 1);
        close(c->fd[s]);
        c->fd[s] = -1;
      }
    }
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      for (int r = 0; r < n; r++) {
        if (ch[r].pid != pid || !ch[r].running) continue;
        ch[r].running = 0;
        live--;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (code != 0 && first_fail < 0 && !g_signal) {
          first_fail = r;
          fail_code = code;
          if (WIFSIGNALED(status))
            fprintf(stderr, "mk-launch: rank %d died from signal %d; stopping the other ranks\n", r, WTERMSIG(status));
          else
            fprintf(stderr, "mk-launch: rank %d exited with code %d; stopping the other ranks\n", r, code);
          signal_all(ch, n, SIGTERM);
          stop_at = now_s();
        }
      }
    }
    if (g_signal && !forwarded) {
      fprintf(stderr, "mk-launch: got signal %d; forwarding it to the ranks\n", (int)g_signal);
      signal_all(ch, n, g_signal);
      forwarded = 1;
      if (stop_at == 0) stop_at = now_s();
    }
    if (stop_at > 0 && live > 0 && now_s() - stop_at > grace) {
      fprintf(stderr, "mk-launch: %d rank(s) still running %d s after SIGTERM; killing them\n", live, grace);
      signal_all(ch, n, SIGKILL);
      stop_at = 1e300;
    }
    if (live == 0 && pr <= 0) {
      /* Ranks are gone; their grandchildren may hold the pipes: drain what is there, then stop. */
      int open = 0;
      for (int r = 0; r < n; r++) open += (ch[r].fd[0] >= 0) + (ch[r].fd[1] >= 0);
      if (!open || stop_at > 0) break;
    }
  }
  for (int r = 0; r < n; r++)
    for (int s = 0; s < 2; s++)
      if (ch[r].fd[s] >= 0) emit(&ch[r], r, s, 1);
  if (g_signal) return 128 + g_signal;
  return first_fail >= 0 ? (fail_code ? fail_code : 1) : 0;
}
