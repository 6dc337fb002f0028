/* bootstrap.c — TCP rendezvous for setup and control messages (never the data path).
 *
 * Topology: a star. Rank 0 listens on MASTER_PORT (all interfaces); every other rank
 * connects to MASTER_ADDR:MASTER_PORT (retrying until the deadline) and sends a hello
 * {magic, rank, size}. Every collective is one exchange through rank 0:
 *   1. each rank r > 0 sends {magic, DATA, seq, len} + its contribution (len may be 0);
 *   2. rank 0 collects all contributions, in any order, then sends every rank the result.
 * allgather: contributions of `bytes` each, result size*bytes; bcast: only root contributes;
 * barrier: nothing contributed. seq counts collectives, so ranks in different collectives
 * are an error, not a silent mix-up.
 *
 * Failure: every wait is bounded by MK_BOOTSTRAP_TIMEOUT_MS. When rank 0 sees a rank close
 * its socket (it died) or miss the deadline, it sends ABORT {failed rank, why} to every
 * other rank and the bootstrap is broken for good; every rank returns MK_STATUS_REMOTE_ERROR
 * (dead) or MK_STATUS_TIMEOUT (missing) with a message naming the rank. Ranks > 0 wait
 * 2 s longer than rank 0, so they hear rank 0's verdict rather than their own timeout. */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "comm/mk_comm.h"
#include "core/check.h"

MK_PARAM_INT(bootstrap_timeout_ms, "BOOTSTRAP_TIMEOUT_MS", 60000, 100, 86400000)

enum { MAGIC = 0x6d6b6273, KIND_HELLO = 1, KIND_DATA = 2, KIND_RESULT = 3, KIND_ABORT = 4 };
enum { WHY_DIED = 1, WHY_TIMEOUT = 2, WHY_PROTOCOL = 3 };

typedef struct msg_hdr {
  uint32_t magic, kind;
  uint64_t seq, len;
  int32_t rank, size; /* hello: sender; abort: the failed rank, size = why */
} msg_hdr;

struct mk_bootstrap {
  mk_world w;
  int *fds;   /* rank 0: fds[r] for r > 0; others: fds[0] = the socket to rank 0 */
  uint64_t seq;
  mk_status broken; /* nonzero after a failure: every later call returns it */
};

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int send_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    c += k;
    n -= (size_t)k;
  }
  return 0;
}

/* 0 ok, -1 closed or error, -2 deadline */
static int recv_all(int fd, void *p, size_t n, int64_t deadline) {
  char *c = p;
  while (n) {
    int64_t left = deadline - now_ms();
    if (left <= 0) return -2;
    struct pollfd pf = {fd, POLLIN, 0};
    int r = poll(&pf, 1, (int)(left > 1000 ? 1000 : left));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) continue;
    ssize_t k = recv(fd, c, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    c += k;
    n -= (size_t)k;
  }
  return 0;
}

static void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static mk_status root_listen(mk_bootstrap_t *b, int64_t deadline) {
  int n = b->w.size, lfd = -1, joined = 0;
  mk_status st = MK_STATUS_OK;
  lfd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int v6 = lfd >= 0;
  if (!v6) lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  MK_SYS_CHECK_GOTO(lfd, st, fail);
  int one = 1, zero = 0;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (v6) {
    setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    struct sockaddr_in6 a;
    memset(&a, 0, sizeof a);
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons((uint16_t)b->w.master_port);
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) != 0) goto bind_fail;
  } else {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons((uint16_t)b->w.master_port);
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) != 0) goto bind_fail;
  }
  MK_SYS_CHECK_GOTO(listen(lfd, n + 16), st, fail);
  while (joined < n - 1) {
    int64_t left = deadline - now_ms();
    if (left <= 0) {
      char missing[512] = "";
      for (int r = 1, len = 0; r < n && len < 480; r++)
        if (b->fds[r] < 0) len += snprintf(missing + len, sizeof missing - len, "%s%d", len ? "," : "", r);
      MK_WARN(MK_SUBSYS_BOOTSTRAP, "bootstrap: rank(s) %s never joined within %lld ms (master port %d)", missing,
              (long long)mk_param_bootstrap_timeout_ms(), b->w.master_port);
      st = MK_STATUS_TIMEOUT;
      goto fail;
    }
    struct pollfd pf = {lfd, POLLIN, 0};
    int r = poll(&pf, 1, (int)(left > 1000 ? 1000 : left));
    if (r <= 0) continue;
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) continue;
    set_nodelay(fd);
    msg_hdr h;
    if (recv_all(fd, &h, sizeof h, now_ms() + 5000) != 0 || h.magic != MAGIC || h.kind != KIND_HELLO) {
      MK_WARN(MK_SUBSYS_BOOTSTRAP, "bootstrap: dropped a connection that did not say hello (not an mkernel rank?)");
      close(fd);
      continue;
    }
    if (h.size != n || h.rank <= 0 || h.rank >= n || b->fds[h.rank] >= 0) {
      MK_WARN(MK_SUBSYS_BOOTSTRAP, "bootstrap: a peer says it is rank %d of %d, but this world has %d ranks%s",
              h.rank, h.size, n, h.rank > 0 && h.rank < n && b->fds[h.rank] >= 0 ? " and that rank already joined" : "");
      close(fd);
      st = MK_STATUS_INVALID_ARGUMENT;
      goto fail;
    }
    b->fds[h.rank] = fd;
    joined++;
  }
  close(lfd);
  return MK_STATUS_OK;
bind_fail:
  MK_WARN(MK_SUBSYS_BOOTSTRAP, "bootstrap: rank 0 cannot listen on port %d: %s", b->w.master_port, strerror(errno));
  st = MK_STATUS_SYSTEM_ERROR;
fail:
  if (lfd >= 0) close(lfd);
  return st;
}

static mk_status peer_connect(mk_bootstrap_t *b, int64_t deadline) {
  char port[16];
  snprintf(port, sizeof port, "%d", b->w.master_port);
  struct addrinfo hints, *ai = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_STREAM;
  int64_t last_warn = now_ms();
  for (;;) {
    int gai = getaddrinfo(b->w.master_addr, port, &hints, &ai);
    if (gai != 0)
      MK_ERR_RETURN(MK_STATUS_NET_ERROR, MK_SUBSYS_BOOTSTRAP, "bootstrap: cannot resolve MASTER_ADDR '%s': %s",
                    b->w.master_addr, gai_strerror(gai));
    for (struct addrinfo *p = ai; p; p = p->ai_next) {
      int fd = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, p->ai_protocol);
      if (fd < 0) continue;
      if (connect(fd, p->ai_addr, p->ai_addrlen) == 0) {
        freeaddrinfo(ai);
        set_nodelay(fd);
        msg_hdr h = {MAGIC, KIND_HELLO, 0, 0, b->w.rank, b->w.size};
        if (send_all(fd, &h, sizeof h) != 0) {
          close(fd);
          MK_ERR_RETURN(MK_STATUS_REMOTE_ERROR, MK_SUBSYS_BOOTSTRAP, "bootstrap: rank 0 closed the connection at hello");
        }
        b->fds[0] = fd;
        return MK_STATUS_OK;
      }
      close(fd);
    }
    freeaddrinfo(ai);
    if (now_ms() >= deadline)
      MK_ERR_RETURN(MK_STATUS_TIMEOUT, MK_SUBSYS_BOOTSTRAP,
                    "bootstrap: rank 0 is not listening at %s:%d after %lld ms (it never joined, or died)",
                    b->w.master_addr, b->w.master_port, (long long)mk_param_bootstrap_timeout_ms());
    if (now_ms() - last_warn > 10000) {
      MK_INFO(MK_SUBSYS_BOOTSTRAP, "bootstrap: still waiting for rank 0 at %s:%d", b->w.master_addr, b->w.master_port);
      last_warn = now_ms();
    }
    usleep(20000);
  }
}

mk_status mk_bootstrap_create(const mk_world *w, mk_bootstrap_t **out) {
  if (!w || !out || w->size < 1 || w->rank < 0 || w->rank >= w->size)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_BOOTSTRAP, "bootstrap: bad world");
  *out = NULL;
  mk_bootstrap_t *b = calloc(1, sizeof *b);
  int *fds = malloc(sizeof(int) * (size_t)w->size);
  if (!b || !fds) {
    free(b);
    free(fds);
    return MK_STATUS_OUT_OF_MEMORY;
  }
  b->w = *w;
  b->fds = fds;
  for (int i = 0; i < w->size; i++) fds[i] = -1;
  int64_t deadline = now_ms() + mk_param_bootstrap_timeout_ms();
  mk_status st = MK_STATUS_OK;
  if (w->size > 1) st = w->rank == 0 ? root_listen(b, deadline) : peer_connect(b, deadline);
  if (st == MK_STATUS_OK) st = mk_bootstrap_barrier(b); /* everyone has joined */
  if (st != MK_STATUS_OK) {
    mk_bootstrap_destroy(b);
    return st;
  }
  MK_INFO(MK_SUBSYS_BOOTSTRAP, "bootstrap: rank %d of %d joined via %s:%d", w->rank, w->size, w->master_addr,
          w->master_port);
  *out = b;
  return MK_STATUS_OK;
}

/* Rank 0: tell every live rank who failed, and break the bootstrap. */
static mk_status root_abort(mk_bootstrap_t *b, int failed, int why, mk_status st) {
  msg_hdr h = {MAGIC, KIND_ABORT, b->seq, 0, failed, why};
  for (int r = 1; r < b->w.size; r++)
    if (b->fds[r] >= 0 && r != failed) send_all(b->fds[r], &h, sizeof h);
  b->broken = st;
  return st;
}

static const char *why_str(int why) {
  return why == WHY_DIED ? "died (closed its connection)" : why == WHY_TIMEOUT ? "did not arrive in time" : "broke the protocol";
}

/* The one collective. contrib[len] from this rank; the result (res_len bytes) lands in res.
 * mode: 0 allgather (every rank contributes len, result = concatenation), 1 bcast from root. */
static mk_status exchange(mk_bootstrap_t *b, const void *contrib, size_t len, void *res, size_t res_len, int mode,
                          int root) {
  if (b->broken) return b->broken;
  const int n = b->w.size, me = b->w.rank;
  const uint64_t seq = ++b->seq;
  const int64_t tmo = mk_param_bootstrap_timeout_ms();
  if (n == 1) {
    if (res_len && res != contrib) memmove(res, contrib, len);
    return MK_STATUS_OK;
  }
  if (me != 0) {
    int sends = mode == 0 || root == me;
    msg_hdr h = {MAGIC, KIND_DATA, seq, sends ? len : 0, me, n};
    if (send_all(b->fds[0], &h, sizeof h) != 0 || (h.len && send_all(b->fds[0], contrib, len) != 0)) {
      b->broken = MK_STATUS_REMOTE_ERROR;
      MK_ERR_RETURN(MK_STATUS_REMOTE_ERROR, MK_SUBSYS_BOOTSTRAP,
                    "bootstrap: rank 0 closed the connection (rank 0 died) in collective #%llu", (unsigned long long)seq);
    }
    int r = recv_all(b->fds[0], &h, sizeof h, now_ms() + tmo + 2000);
    if (r == 0 && h.magic == MAGIC && h.kind == KIND_ABORT) {
      b->broken = h.size == WHY_TIMEOUT ? MK_STATUS_TIMEOUT : MK_STATUS_REMOTE_ERROR;
      MK_ERR_RETURN(b->broken, MK_SUBSYS_BOOTSTRAP, "bootstrap: rank %d %s (collective #%llu, reported by rank 0)",
                    h.rank, why_str(h.size), (unsigned long long)seq);
    }
    if (r == 0 && (h.magic != MAGIC || h.kind != KIND_RESULT || h.seq != seq || h.len != res_len)) r = -3;
    if (r == 0 && res_len) r = recv_all(b->fds[0], res, res_len, now_ms() + tmo);
    if (r != 0) {
      b->broken = r == -2 ? MK_STATUS_TIMEOUT : MK_STATUS_REMOTE_ERROR;
      MK_ERR_RETURN(b->broken, MK_SUBSYS_BOOTSTRAP, "bootstrap: rank 0 %s in collective #%llu",
                    r == -2 ? "did not answer in time" : r == -3 ? "sent a malformed message" : "closed the connection (rank 0 died)",
                    (unsigned long long)seq);
    }
    return MK_STATUS_OK;
  }
  /* rank 0 */
  char *out = res;
  if (len && (mode == 0 || root == 0) && out != contrib) memmove(out, contrib, len);
  int pending = n - 1;
  char *got = calloc((size_t)n, 1);
  struct pollfd *pf = calloc((size_t)n, sizeof *pf);
  if (!got || !pf) {
    free(got);
    free(pf);
    return MK_STATUS_OUT_OF_MEMORY;
  }
  const int64_t deadline = now_ms() + tmo;
  mk_status st = MK_STATUS_OK;
  while (pending) {
    int np = 0;
    for (int r = 1; r < n; r++)
      if (!got[r]) pf[np++] = (struct pollfd){b->fds[r], POLLIN, 0};
    int64_t left = deadline - now_ms();
    if (left <= 0) {
      int first = -1, len2 = 0;
      char missing[512] = "";
      for (int r = 1; r < n; r++)
        if (!got[r]) {
          if (first < 0) first = r;
          if (len2 < 480) len2 += snprintf(missing + len2, sizeof missing - len2, "%s%d", len2 ? "," : "", r);
        }
      MK_WARN(MK_SUBSYS_BOOTSTRAP, "bootstrap: rank(s) %s did not reach collective #%llu within %lld ms", missing,
              (unsigned long long)seq, (long long)tmo);
      st = root_abort(b, first, WHY_TIMEOUT, MK_STATUS_TIMEOUT);
      goto done;
    }
    int pr = poll(pf, (nfds_t)np, (int)(left > 1000 ? 1000 : left));
    if (pr <= 0) continue;
    for (int i = 0; i < np; i++) {
      if (!pf[i].revents) continue;
      int r = 1;
      while (b->fds[r] != pf[i].fd) r++;
      msg_hdr h;
      int rr = recv_all(pf[i].fd, &h, sizeof h, now_ms() + tmo);
      int bad = rr == 0 && (h.magic != MAGIC || h.kind != KIND_DATA || h.seq != seq || h.rank != r ||
                            (h.len != 0 && h.len != len) || (mode == 1 && h.len != (r == root ? len : 0)) ||
                            (mode == 0 && h.len != len));
      if (rr == 0 && !bad && h.len) rr = recv_all(pf[i].fd, out + (mode == 0 ? (size_t)r * len : 0), len, now_ms() + tmo);
      if (rr != 0 || bad) {
        if (bad)
          MK_WARN(MK_SUBSYS_BOOTSTRAP, "bootstrap: rank %d sent a mismatched message in collective #%llu (its #%llu, "
                  "%llu bytes; expected %zu): ranks called different collectives", r, (unsigned long long)seq,
                  (unsigned long long)h.seq, (unsigned long long)h.len, len);
        else
          MK_WARN(MK_SUBSYS_BOOTSTRAP, "bootstrap: rank %d %s in collective #%llu", r,
                  rr == -2 ? "stalled mid-message" : "died (closed its connection)", (unsigned long long)seq);
        close(b->fds[r]);
        b->fds[r] = -1;
        st = root_abort(b, r, bad ? WHY_PROTOCOL : WHY_DIED, bad ? MK_STATUS_INVALID_ARGUMENT : MK_STATUS_REMOTE_ERROR);
        goto done;
      }
      got[r] = 1;
      pending--;
    }
  }
  for (int r = 1; r < n; r++) {
    msg_hdr h = {MAGIC, KIND_RESULT, seq, res_len, 0, n};
    if (send_all(b->fds[r], &h, sizeof h) != 0 || (res_len && send_all(b->fds[r], out, res_len) != 0)) {
      MK_WARN(MK_SUBSYS_BOOTSTRAP, "bootstrap: rank %d died (closed its connection) in collective #%llu", r,
              (unsigned long long)seq);
      st = root_abort(b, r, WHY_DIED, MK_STATUS_REMOTE_ERROR);
      goto done;
    }
  }
done:
  free(got);
  free(pf);
  return st;
}

mk_status mk_bootstrap_allgather(mk_bootstrap_t *b, const void *send, void *recv, size_t bytes) {
  if (!b || (bytes && (!send || !recv)))
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_BOOTSTRAP, "bootstrap allgather: null argument");
  return exchange(b, send, bytes, recv, bytes * (size_t)b->w.size, 0, 0);
}

mk_status mk_bootstrap_bcast(mk_bootstrap_t *b, void *buf, size_t bytes, int root) {
  if (!b || (bytes && !buf) || root < 0 || root >= b->w.size)
    MK_ERR_RETURN(MK_STATUS_INVALID_ARGUMENT, MK_SUBSYS_BOOTSTRAP, "bootstrap bcast: bad argument (root %d)", root);
  return exchange(b, buf, bytes, buf, b->w.size > 1 ? bytes : 0, 1, root);
}

mk_status mk_bootstrap_barrier(mk_bootstrap_t *b) {
  if (!b) return MK_STATUS_INVALID_ARGUMENT;
  return exchange(b, NULL, 0, NULL, 0, 1, 0);
}

void mk_bootstrap_destroy(mk_bootstrap_t *b) {
  if (!b) return;
  for (int i = 0; i < b->w.size; i++)
    if (b->fds[i] >= 0) close(b->fds[i]);
  free(b->fds);
  free(b);
}
