/* world.c — rank facts from the launcher's environment, in DESIGN.md's order:
 *   torchrun / mk-launch  RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT
 *   Slurm                 SLURM_PROCID SLURM_NTASKS SLURM_LOCALID SLURM_NTASKS_PER_NODE; master =
 *                         MASTER_ADDR or the first host of SLURM_JOB_NODELIST (SLURM_NODELIST);
 *                         port = MASTER_PORT or 20000 + SLURM_JOB_ID % 20000
 *   Open MPI              OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK/_LOCAL_SIZE; MASTER_ADDR and
 *                         MASTER_PORT (MASTER_ADDR defaults to 127.0.0.1 on a single node)
 * Ranks must be laid out by node (node = rank / local_size); anything else is an error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/mk_comm.h"
#include "core/check.h"

typedef struct env {
  mk_env_get_fn get;
  void *user;
} env;

static const char *env_get(const env *e, const char *name) {
  const char *v = e->get ? e->get(name, e->user) : getenv(name);
  return v && *v ? v : NULL;
}

/* A required integer; lead = 1 accepts "4(x2)" style (Slurm), reading only the leading number. */
static mk_status env_int(const env *e, const char *launcher, const char *name, int lead, int64_t lo,
                         int64_t hi, int *out) {
  const char *v = env_get(e, name);
  if (!v)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_BOOTSTRAP, "world (%s): %s is not set", launcher, name);
  char buf[32];
  size_t n = strlen(v);
  if (lead) n = strspn(v, "0123456789");
  if (n == 0 || n >= sizeof buf)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_BOOTSTRAP, "world (%s): %s='%s' is not an integer",
                  launcher, name, v);
  memcpy(buf, v, n);
  buf[n] = 0;
  int64_t x;
  if (mk_param_parse_int(name, buf, lo, hi, &x) != MK_STATUS_OK)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_BOOTSTRAP, "world (%s): bad %s='%s'", launcher, name, v);
  *out = (int)x;
  return MK_STATUS_OK;
}

/* First host of a Slurm node list: "gpu[03-05,9],cpu1" -> "gpu03". */
static mk_status slurm_first_host(const char *list, char *out, size_t cap) {
  size_t n = strcspn(list, ",[");
  if (n == 0 || n >= cap) return MK_STATUS_INVALID_ARGUMENT;
  memcpy(out, list, n);
  out[n] = 0;
  if (list[n] == '[') {
    const char *r = list + n + 1;
    size_t m = strspn(r, "0123456789");
    if (m == 0 || n + m >= cap) return MK_STATUS_INVALID_ARGUMENT;
    memcpy(out + n, r, m);
    out[n + m] = 0;
  }
  return MK_STATUS_OK;
}

const char *mk_launcher_name(mk_launcher l) {
  return l == MK_LAUNCHER_TORCHRUN ? "torchrun" : l == MK_LAUNCHER_SLURM ? "Slurm" : "Open MPI";
}

mk_status mk_world_parse(mk_env_get_fn get, void *user, mk_world *out) {
  env e = {get, user};
  mk_world w;
  memset(&w, 0, sizeof w);
  const char *addr = env_get(&e, "MASTER_ADDR");
  int have_port = env_get(&e, "MASTER_PORT") != NULL;
  const char *L;
  if (env_get(&e, "RANK") || env_get(&e, "WORLD_SIZE")) {
    w.launcher = MK_LAUNCHER_TORCHRUN;
    L = "torchrun";
    MK_CHECK(env_int(&e, L, "WORLD_SIZE", 0, 1, 1 << 20, &w.size));
    MK_CHECK(env_int(&e, L, "RANK", 0, 0, 1 << 20, &w.rank));
    MK_CHECK(env_int(&e, L, "LOCAL_RANK", 0, 0, 1 << 20, &w.local_rank));
    MK_CHECK(env_int(&e, L, "LOCAL_WORLD_SIZE", 0, 1, 1 << 20, &w.local_size));
    if (!addr) MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_BOOTSTRAP, "world (torchrun): MASTER_ADDR is not set");
    MK_CHECK(env_int(&e, L, "MASTER_PORT", 0, 1, 65535, &w.master_port));
  } else if (env_get(&e, "SLURM_PROCID")) {
    w.launcher = MK_LAUNCHER_SLURM;
    L = "Slurm";
    MK_CHECK(env_int(&e, L, "SLURM_NTASKS", 0, 1, 1 << 20, &w.size));
    MK_CHECK(env_int(&e, L, "SLURM_PROCID", 0, 0, 1 << 20, &w.rank));
    MK_CHECK(env_int(&e, L, "SLURM_LOCALID", 0, 0, 1 << 20, &w.local_rank));
    MK_CHECK(env_int(&e, L, "SLURM_NTASKS_PER_NODE", 1, 1, 1 << 20, &w.local_size));
    static char host[256];
    if (!addr) {
      const char *list = env_get(&e, "SLURM_JOB_NODELIST");
      if (!list) list = env_get(&e, "SLURM_NODELIST");
      if (!list)
        MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_BOOTSTRAP,
                      "world (Slurm): neither MASTER_ADDR nor SLURM_JOB_NODELIST/SLURM_NODELIST is set");
      if (slurm_first_host(list, host, sizeof host) != MK_STATUS_OK)
        MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_BOOTSTRAP,
                      "world (Slurm): cannot read the first host of the node list '%s'", list);
      addr = host;
    }
    if (have_port) {
      MK_CHECK(env_int(&e, L, "MASTER_PORT", 0, 1, 65535, &w.master_port));
    } else {
      int job;
      MK_CHECK(env_int(&e, L, "SLURM_JOB_ID", 0, 0, INT32_MAX, &job));
      w.master_port = 20000 + job % 20000;
    }
  } else if (env_get(&e, "OMPI_COMM_WORLD_RANK")) {
    w.launcher = MK_LAUNCHER_OMPI;
    L = "Open MPI";
    MK_CHECK(env_int(&e, L, "OMPI_COMM_WORLD_SIZE", 0, 1, 1 << 20, &w.size));
    MK_CHECK(env_int(&e, L, "OMPI_COMM_WORLD_RANK", 0, 0, 1 << 20, &w.rank));
    MK_CHECK(env_int(&e, L, "OMPI_COMM_WORLD_LOCAL_RANK", 0, 0, 1 << 20, &w.local_rank));
    MK_CHECK(env_int(&e, L, "OMPI_COMM_WORLD_LOCAL_SIZE", 0, 1, 1 << 20, &w.local_size));
    if (!addr) {
      if (w.local_size != w.size)
        MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_BOOTSTRAP,
                      "world (Open MPI): MASTER_ADDR is not set (needed with more than one node)");
      addr = "127.0.0.1";
    }
    MK_CHECK(env_int(&e, L, "MASTER_PORT", 0, 1, 65535, &w.master_port));
  } else {
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_BOOTSTRAP,
                  "world: no launcher environment found (torchrun/mk-launch: RANK WORLD_SIZE ...; Slurm: "
                  "SLURM_PROCID ...; Open MPI: OMPI_COMM_WORLD_RANK ...)");
  }
  if (strlen(addr) >= sizeof w.master_addr)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_BOOTSTRAP, "world (%s): master address too long", L);
  snprintf(w.master_addr, sizeof w.master_addr, "%s", addr);
  if (w.rank >= w.size)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_BOOTSTRAP, "world (%s): rank %d is not below world size %d",
                  L, w.rank, w.size);
  if (w.local_rank >= w.local_size)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_BOOTSTRAP,
                  "world (%s): local rank %d is not below local size %d", L, w.local_rank, w.local_size);
  if (w.size % w.local_size)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_BOOTSTRAP,
                  "world (%s): world size %d is not a multiple of the local size %d", L, w.size, w.local_size);
  if (w.rank % w.local_size != w.local_rank)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_BOOTSTRAP,
                  "world (%s): rank %d with local rank %d of %d: ranks must be laid out by node "
                  "(local rank = rank %% local size)", L, w.rank, w.local_rank, w.local_size);
  w.node = w.rank / w.local_size;
  w.nnodes = w.size / w.local_size;
  *out = w;
  return MK_STATUS_OK;
}
