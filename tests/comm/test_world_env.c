/* test_world_env.c (unit) — world from torchrun, Slurm and Open MPI environments; missing,
 * malformed and inconsistent values are errors. */
#include <string.h>

#include "comm/mk_comm.h"
#include "tests/mk_test.h"

/* "NAME=value" pairs, NULL-terminated. */
static const char *lookup(const char *name, void *user) {
  const char *const *kv = user;
  size_t n = strlen(name);
  for (; *kv; kv++)
    if (!strncmp(*kv, name, n) && (*kv)[n] == '=') return *kv + n + 1;
  return NULL;
}

static mk_status parse(const char *const *kv, mk_world *w) { return mk_world_parse(lookup, (void *)kv, w); }

int main(int argc, char **argv) {
  mk_test_init(argc, argv, 30);
  mk_world w;
  {
    const char *kv[] = {"RANK=5", "WORLD_SIZE=8", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=4", "MASTER_ADDR=node0",
                        "MASTER_PORT=29500", NULL};
    ASSERT_OK(parse(kv, &w));
    ASSERT_EQ(w.launcher, MK_LAUNCHER_TORCHRUN);
    ASSERT_EQ(w.rank, 5); ASSERT_EQ(w.size, 8); ASSERT_EQ(w.local_rank, 1); ASSERT_EQ(w.local_size, 4);
    ASSERT_EQ(w.node, 1); ASSERT_EQ(w.nnodes, 2); ASSERT_EQ(w.master_port, 29500);
    ASSERT_STREQ(w.master_addr, "node0");
  }
  {
    const char *kv[] = {"SLURM_PROCID=9", "SLURM_NTASKS=16", "SLURM_LOCALID=1", "SLURM_NTASKS_PER_NODE=8(x2)",
                        "SLURM_JOB_NODELIST=gpu[07-08]", "SLURM_JOB_ID=123456", NULL};
    ASSERT_OK(parse(kv, &w));
    ASSERT_EQ(w.launcher, MK_LAUNCHER_SLURM);
    ASSERT_EQ(w.rank, 9); ASSERT_EQ(w.size, 16); ASSERT_EQ(w.local_size, 8); ASSERT_EQ(w.node, 1);
    ASSERT_STREQ(w.master_addr, "gpu07");
    ASSERT_EQ(w.master_port, 20000 + 123456 % 20000);
  }
  {
    const char *kv[] = {"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_NTASKS_PER_NODE=1",
                        "SLURM_NODELIST=a1,b2", "MASTER_ADDR=10.0.0.1", "MASTER_PORT=4000", NULL};
    ASSERT_OK(parse(kv, &w));
    ASSERT_STREQ(w.master_addr, "10.0.0.1"); /* MASTER_ADDR wins over the node list */
    ASSERT_EQ(w.master_port, 4000); ASSERT_EQ(w.nnodes, 2);
  }
  {
    const char *kv[] = {"OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_RANK=3",
                        "OMPI_COMM_WORLD_LOCAL_SIZE=4", "MASTER_PORT=1234", NULL};
    ASSERT_OK(parse(kv, &w));
    ASSERT_EQ(w.launcher, MK_LAUNCHER_OMPI);
    ASSERT_EQ(w.rank, 3); ASSERT_EQ(w.nnodes, 1);
    ASSERT_STREQ(w.master_addr, "127.0.0.1");
  }
  /* torchrun variables win over Slurm ones (torchrun inside an allocation). */
  {
    const char *kv[] = {"SLURM_PROCID=7", "RANK=0", "WORLD_SIZE=1", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=1",
                        "MASTER_ADDR=h", "MASTER_PORT=1", NULL};
    ASSERT_OK(parse(kv, &w));
    ASSERT_EQ(w.launcher, MK_LAUNCHER_TORCHRUN);
  }
  /* Errors. */
  const char *bad[][8] = {
      {NULL},                                                                                   /* nothing */
      {"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=2", "MASTER_PORT=1", NULL}, /* no addr */
      {"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", "MASTER_ADDR=h", "MASTER_PORT=1", NULL},      /* no local size */
      {"RANK=2", "WORLD_SIZE=2", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=1", NULL},
      {"RANK=x", "WORLD_SIZE=2", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=1", NULL},
      {"RANK=0", "WORLD_SIZE=3", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=1", NULL},
      {"RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=1", NULL},
      {"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=70000", NULL},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    printf("bad environment %zu (expect one warning):\n", i);
    ASSERT_STATUS(parse(bad[i], &w), MK_STATUS_INVALID_ARGUMENT);
  }
  const char *slurm_nolist[] = {"SLURM_PROCID=0", "SLURM_NTASKS=1", "SLURM_LOCALID=0", "SLURM_NTASKS_PER_NODE=1",
                                "SLURM_JOB_ID=5", NULL};
  ASSERT_STATUS(parse(slurm_nolist, &w), MK_STATUS_INVALID_ARGUMENT);
  const char *ompi_multi[] = {"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_RANK=0",
                              "OMPI_COMM_WORLD_LOCAL_SIZE=2", "MASTER_PORT=1", NULL};
  ASSERT_STATUS(parse(ompi_multi, &w), MK_STATUS_INVALID_ARGUMENT);
  printf("ok\n");
  return 0;
}
