/* plot.c — `mk-bench plot FILE.json -o FILE.png`: runs plot.py (installed beside the binary's
 * source, path fixed at build time) with the first Python that has matplotlib. */
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mk_bench.h"

static int has_matplotlib(const char *py) {
  pid_t pid = fork();
  if (pid < 0) return 0;
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execlp(py, py, "-c", "import matplotlib", (char *)NULL);
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return 0;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int mk_bench_plot(int argc, char **argv) {
  if (argc != 4 || strcmp(argv[2], "-o") != 0) {
    fprintf(stderr, "usage: mk-bench plot RESULTS.json -o OUT.png\n");
    return 2;
  }
  if (access(argv[1], R_OK) != 0) {
    fprintf(stderr, "mk-bench plot: cannot read %s\n", argv[1]);
    return 2;
  }
  static const char *const pythons[] = {"python3", "/usr/bin/python3"};
  for (size_t i = 0; i < sizeof pythons / sizeof pythons[0]; i++) {
    if (!has_matplotlib(pythons[i])) continue;
    pid_t pid = fork();
    if (pid < 0) break;
    if (pid == 0) {
      execlp(pythons[i], pythons[i], MK_PLOT_SCRIPT, argv[1], "-o", argv[3], (char *)NULL);
      _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0) break;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }
  fprintf(stderr, "mk-bench plot: no python3 with matplotlib found (Debian: python3-matplotlib)\n");
  return 1;
}
