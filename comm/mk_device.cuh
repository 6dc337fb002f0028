/* mk_device.cuh — the device-side communication API every kernel uses (CUDA C++ only).
 *
 *   mk_peer_ptr(w, p, off)           address of `off` in local peer p's heap (NVLink, IPC-mapped)
 *   mk_copy_warp / mk_copy_cta       SM copies (16-byte vectors when aligned), e.g. puts to a peer
 *   mk_copy_tma_cta                  TMA bulk copy global -> smem -> global (peer), staged
 *   mk_signal_add(w, p, off, v)      red.add.release.sys on peer p's counter (after the data)
 *   mk_wait_ge(w, off, target, ...)  bounded acquire-spin on a counter in this rank's heap
 *   mk_post(w, cmd...)               a command to this GPU's proxy FIFO (other node groups)
 *   mk_epoch(w, slot)                this call's epoch, for targets that grow across calls
 *
 * Signal protocol: the producer writes the data, makes it visible (__syncthreads, then one
 * thread's __threadfence_system + red.release.sys), the consumer's thread waits with
 * ld.acquire.sys and then reads. Counters only grow: call k of an op waits for
 * (epoch + 1) * per_call, and the host advances the epoch after the op (mk_comm_epoch_advance,
 * stream-ordered), so nothing is reset and graph replays stay correct.
 * Bounded waits: past w.timeout_ns the waiter sets the abort flag and writes the error record
 * (first one wins); every waiter polls the flag and leaves; the host reads both with
 * mk_comm_check. A wait never hangs.
 * FIFO protocol: claim slot idx = atomicAdd(head, 1); wait until idx < tail + capacity
 * (the proxy advances tail after it has read a slot); write the fields; __threadfence_system;
 * st.release.sys seq = idx + 1. The proxy reads slots in order and executes commands in
 * order, so a PUT_SIGNAL's signal never overtakes its data.
 * Lazy module loading: a kernel is loaded at its first launch, and loading waits for running
 * kernels. Launch (or cudaFuncGetAttributes) every kernel of a producer/consumer pair once
 * before one of them spins on the other; comm/ preloads its own (the proxy's signal kernel). */
#pragma once
#include <cuda_runtime.h>
#include <stdint.h>

#include "comm/mk_dev_world.h"

/* Op ids for error records (which op was waiting). */
enum { MK_OP_TEST = 0, MK_OP_FIFO = 1, MK_OP_COMM_BENCH = 2, MK_OP_AG_GEMM = 10, MK_OP_GEMM_RS, MK_OP_GEMM_AR,
       MK_OP_MOE, MK_OP_RING_ATTN, MK_OP_GATHER };

__device__ __forceinline__ uint64_t mk_globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ uint64_t mk_ld_acquire_sys(const uint64_t *p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint64_t mk_ld_volatile(const uint64_t *p) { return *(const volatile uint64_t *)p; }
__device__ __forceinline__ void mk_st_release_sys(uint64_t *p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
/* A strong store with no fence of its own: after one __threadfence_system() it publishes what the
 * fence ordered (fence + strong store is a release pattern). Several flags behind one fence: a
 * release store per flag would wait for the previous flag's acknowledgement (one NVLink round
 * trip each when the flags are remote). */
__device__ __forceinline__ void mk_st_relaxed_sys(uint64_t *p, uint64_t v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void mk_red_add_relaxed_sys(uint64_t *p, uint64_t v) {
  asm volatile("red.relaxed.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void mk_red_add_release_sys(uint64_t *p, uint64_t v) {
  asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

template <typename T = char>
__device__ __forceinline__ T *mk_peer_ptr(const mk_dev_world &w, int local_peer, uint64_t off) {
  return reinterpret_cast<T *>(w.peer_heap[local_peer] + off);
}
template <typename T = char>
__device__ __forceinline__ T *mk_local_ptr(const mk_dev_world &w, uint64_t off) {
  return reinterpret_cast<T *>(w.heap + off);
}
__device__ __forceinline__ uint64_t mk_epoch(const mk_dev_world &w, int slot) { return mk_ld_volatile(&w.ctrl->epoch[slot]); }
__device__ __forceinline__ bool mk_aborted(const mk_dev_world &w) { return *(volatile int32_t *)&w.ctrl->abort_flag != 0; }

/* First timeout wins the record; then the flag goes up. static: each .cu that includes this
 * header keeps its own copy (two of them in one program would otherwise clash at link time). */
static __device__ __noinline__ void mk_raise_record(mk_heap_ctrl *ctrl, int rank, int op, int peer, int tile,
                                                    uint64_t expected, uint64_t seen) {
  mk_err_record *r = &ctrl->rec;
  if (atomicCAS((int *)&r->valid, 0, -1) == 0) {
    volatile mk_err_record *v = r;
    v->op = op;
    v->rank = rank;
    v->peer = peer;
    v->tile = tile;
    v->expected = expected;
    v->seen = seen;
    __threadfence_system();
    v->valid = 1;
  }
  __threadfence_system();
  atomicExch((int *)&ctrl->abort_flag, 1);
}
/* The same from a world: a kernel whose only call is mk_raise_record with two scalars keeps its world in
 * parameter space (a call taking the world by reference made the LL sender copy it to a 712-byte stack frame). */
static __device__ __forceinline__ void mk_raise_timeout(const mk_dev_world &w, int op, int peer, int tile,
                                                        uint64_t expected, uint64_t seen) {
  mk_raise_record(w.ctrl, w.rank, op, peer, tile, expected, seen);
}

/* One thread: wait until the counter *p (this GPU's memory: the heap or a local buffer) is >= target.
 * Returns false (and leaves) on timeout or abort. pause_ns > 0: sleep that long between polls
 * (waits that may last milliseconds beside a GEMM, where thousands of spinning threads would take
 * memory-system bandwidth from it). */
__device__ __forceinline__ bool mk_wait_ge_ptr(const mk_dev_world &w, const uint64_t *p, uint64_t target, int op,
                                               int peer, int tile, unsigned pause_ns) {
  uint64_t v = mk_ld_acquire_sys(p);
  if (v >= target) return true;
  const uint64_t t0 = mk_globaltimer();
  for (uint32_t it = 1;; it++) {
    if (pause_ns) __nanosleep(pause_ns);
    v = mk_ld_acquire_sys(p);
    if (v >= target) return true;
    if ((it & 31) == 0) {
      if (mk_aborted(w)) return false;
      if (mk_globaltimer() - t0 > w.timeout_ns) {
        mk_raise_timeout(w, op, peer, tile, target, v);
        return false;
      }
    }
  }
}

/* The same for the counter at `sig_off` in this rank's heap. */
__device__ __forceinline__ bool mk_wait_ge_paced(const mk_dev_world &w, uint64_t sig_off, uint64_t target, int op,
                                                 int peer, int tile, unsigned pause_ns) {
  return mk_wait_ge_ptr(w, reinterpret_cast<const uint64_t *>(w.heap + sig_off), target, op, peer, tile, pause_ns);
}

__device__ __forceinline__ bool mk_wait_ge(const mk_dev_world &w, uint64_t sig_off, uint64_t target, int op, int peer,
                                           int tile) {
  return mk_wait_ge_paced(w, sig_off, target, op, peer, tile, 0);
}

/* Whole CTA: thread 0 waits, everyone learns the outcome (a barrier). */
__device__ __forceinline__ bool mk_wait_ge_cta(const mk_dev_world &w, uint64_t sig_off, uint64_t target, int op,
                                               int peer, int tile) {
  int ok = 1;
  if (threadIdx.x == 0) ok = mk_wait_ge(w, sig_off, target, op, peer, tile);
  return __syncthreads_and(ok);
}

/* One thread, after the data it signals for is written and made visible to it (__syncthreads). */
__device__ __forceinline__ void mk_signal_add(const mk_dev_world &w, int local_peer, uint64_t sig_off, uint64_t v) {
  __threadfence_system();
  mk_red_add_release_sys(reinterpret_cast<uint64_t *>(w.peer_heap[local_peer] + sig_off), v);
}

/* ---- SM copies ----------------------------------------------------------------------- */
__device__ __forceinline__ void mk_copy_range(char *dst, const char *src, uint64_t bytes, uint64_t tid, uint64_t nthr) {
  if ((((uintptr_t)dst | (uintptr_t)src) & 15) == 0) {
    const uint64_t nv = bytes / 16;
    uint4 *d = reinterpret_cast<uint4 *>(dst);
    const uint4 *s = reinterpret_cast<const uint4 *>(src);
    uint64_t i = tid;
    for (; i + 3 * nthr < nv; i += 4 * nthr) { /* 4 loads in flight per thread */
      uint4 a = s[i], b = s[i + nthr], c = s[i + 2 * nthr], e = s[i + 3 * nthr];
      d[i] = a;
      d[i + nthr] = b;
      d[i + 2 * nthr] = c;
      d[i + 3 * nthr] = e;
    }
    for (; i < nv; i += nthr) d[i] = s[i];
    for (uint64_t j = nv * 16 + tid; j < bytes; j += nthr) dst[j] = src[j];
  } else {
    for (uint64_t j = tid; j < bytes; j += nthr) dst[j] = src[j];
  }
}
__device__ __forceinline__ void mk_copy_warp(void *dst, const void *src, uint64_t bytes) {
  mk_copy_range((char *)dst, (const char *)src, bytes, threadIdx.x & 31, 32);
}
__device__ __forceinline__ void mk_copy_cta(void *dst, const void *src, uint64_t bytes) {
  mk_copy_range((char *)dst, (const char *)src, bytes, threadIdx.x, blockDim.x);
}

/* ---- TMA bulk copy: global -> shared (mbarrier) -> global, `stages` chunks in flight ---- */
__device__ __forceinline__ uint32_t mk_smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* Whole CTA calls; thread 0 issues. smem: stages * chunk bytes (16-aligned, chunk % 16 == 0),
 * bars: `stages` uint64_t in shared memory. dst/src/bytes 16-byte aligned use TMA; anything
 * else falls back to mk_copy_cta. The data is complete (and visible to a following
 * mk_signal_add by thread 0) when the function returns. */
__device__ __forceinline__ void mk_copy_tma_cta(void *dst, const void *src, uint64_t bytes, char *smem, uint32_t chunk,
                                                int stages, uint64_t *bars) {
  if ((((uintptr_t)dst | (uintptr_t)src | bytes) & 15) || chunk % 16) {
    mk_copy_cta(dst, src, bytes);
    __syncthreads();
    return;
  }
  if (threadIdx.x == 0) {
    const uint64_t n = (bytes + chunk - 1) / chunk;
    for (int s = 0; s < stages; s++)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(mk_smem_addr(&bars[s])));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    auto load = [&](uint64_t i) {
      const int s = (int)(i % stages);
      const uint32_t len = (uint32_t)min((uint64_t)chunk, bytes - i * chunk);
      const uint32_t bar = mk_smem_addr(&bars[s]);
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(len) : "memory");
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                       mk_smem_addr(smem + (size_t)s * chunk)),
                   "l"((const char *)src + i * chunk), "r"(len), "r"(bar)
                   : "memory");
    };
    for (uint64_t i = 0; i < n && i < (uint64_t)stages; i++) load(i);
    for (uint64_t i = 0; i < n; i++) {
      const int s = (int)(i % stages);
      const uint32_t parity = (uint32_t)((i / stages) & 1), bar = mk_smem_addr(&bars[s]);
      asm volatile(
          "{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra W;\n}" ::"r"(bar),
          "r"(parity)
          : "memory");
      const uint32_t len = (uint32_t)min((uint64_t)chunk, bytes - i * chunk);
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"((char *)dst + i * chunk),
                   "r"(mk_smem_addr(smem + (size_t)s * chunk)), "r"(len)
                   : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      if (i + stages < n) {
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); /* stage s is free again */
        load(i + stages);
      }
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    asm volatile("fence.proxy.async.global;" ::: "memory");
  }
  __syncthreads();
}

/* ---- proxy FIFO ------------------------------------------------------------------------ */
/* One thread. src_off is in this rank's heap; dst_off/sig_off in dst_rank's. Returns false if
 * there is no FIFO (one node group) or the wait for a free slot timed out / was aborted. Data
 * that src_off names must be written (and __syncthreads'ed) before the call. */
__device__ __forceinline__ bool mk_post(const mk_dev_world &w, uint32_t op, int dst_rank, uint64_t src_off,
                                        uint64_t dst_off, uint64_t bytes, uint64_t sig_off, uint64_t sig_add) {
  const uint64_t cap = w.fifo.capacity;
  if (cap == 0) return false;
  const uint64_t idx = atomicAdd(reinterpret_cast<unsigned long long *>(w.fifo.head), 1ull);
  if (idx >= mk_ld_volatile(w.fifo.tail) + cap) {
    const uint64_t t0 = mk_globaltimer();
    for (uint32_t it = 1; idx >= mk_ld_volatile(w.fifo.tail) + cap; it++) {
      if ((it & 31) == 0) {
        if (mk_aborted(w)) return false;
        if (mk_globaltimer() - t0 > w.timeout_ns) {
          mk_raise_timeout(w, MK_OP_FIFO, dst_rank, -1, idx - cap + 1, mk_ld_volatile(w.fifo.tail));
          return false;
        }
      }
    }
  }
  volatile mk_fifo_cmd *c = w.fifo.slots + (idx & (cap - 1));
  c->op = op;
  c->dst_rank = dst_rank;
  c->src_off = src_off;
  c->dst_off = dst_off;
  c->bytes = bytes;
  c->sig_off = sig_off;
  c->sig_add = sig_add;
  __threadfence_system();
  mk_st_release_sys((uint64_t *)&c->seq, idx + 1);
  return true;
}
