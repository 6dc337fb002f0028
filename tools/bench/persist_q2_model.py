#!/usr/bin/env python3
"""persist_q2_model.py — a model of the persistent flash kernel's item protocol (flash_fwd_ws.cu: ws_items,
ws_produce_persistent; merged from persist_q2.patch in session 52: two Q buffers and the items handed over in notes):
the producer warp and two consumer warpgroups over mbarriers (phase parity, arrival counts, TMA transactions that
complete later, in any order), in random interleavings of random item lists (items without key tiles among them).
Checks that each consumer takes every item once, in order, with its own note, Q and K/V tiles, that no Q or note is
overwritten while an S still reads it, and that nothing deadlocks. It failed with the producer's wait on a buffer's
empty barrier removed (a deadlock) and with Q released after the first S.

  persist_q2_model.py [INTERLEAVINGS]   (default 3000)"""
import random, sys

class Bar:
    def __init__(s, count): s.count, s.pending, s.phase, s.tx = count, count, 0, 0
    def arrive(s, tx=0):
        s.tx += tx; s.pending -= 1; s._maybe()
    def complete_tx(s, n):
        s.tx -= n; s._maybe()
    def _maybe(s):
        if s.pending == 0 and s.tx == 0: s.phase += 1; s.pending = s.count
def waitable(b, parity):  # try_wait.parity: the phase with this parity has completed (current phase's parity differs)
    return (b.phase & 1) != parity

def run(items, seed, S=2):
    rnd = random.Random(seed)
    full = [Bar(1), Bar(1)]; empty = [Bar(8), Bar(8)]
    kf = [Bar(1) for _ in range(S)]; ke = [Bar(8) for _ in range(S)]
    vf = [Bar(1) for _ in range(S)]; ve = [Bar(8) for _ in range(S)]
    note = [None, None]; qbuf = [None, None]
    kring = [None] * S; vring = [None] * S
    inflight = []  # (bar, bytes, action)
    consumed = [[], []]
    def producer():
        j = 0; kt = 0
        def publish(it):
            nonlocal j
            b = j & 1
            while not waitable(empty[b], ((j >> 1) & 1) ^ 1): yield
            note[b] = it
            if it is not None and it[1] > 0:
                full[b].arrive(tx=1); inflight.append((full[b], lambda b=b, it=it: qbuf.__setitem__(b, it[0])))
            else:
                full[b].arrive()
            j += 1
        def load(ring, f, e, kt_t, tag):
            s = kt_t % S
            while not waitable(e[s], ((kt_t // S) & 1) ^ 1): yield
            f[s].arrive(tx=1); inflight.append((f[s], lambda s=s, tag=tag: ring.__setitem__(s, tag)))
        idx = 0
        nxt = items[idx] if idx < len(items) else None; idx += 1
        yield from publish(nxt)
        i = 0
        while True:
            cur = note[i & 1]
            if cur is None: return
            name, tiles = cur
            if tiles > 0: yield from load(kring, kf, ke, kt, (name, 0))
            nxt = items[idx] if idx < len(items) else None; idx += 1
            yield from publish(nxt)
            for t in range(tiles):
                if t + 1 < tiles: yield from load(kring, kf, ke, kt + t + 1, (name, t + 1))
                yield from load(vring, vf, ve, kt + t, (name, t))
            kt += tiles; i += 1
    def consumer(wg):
        kt = 0; j = 0
        while True:
            b = j & 1
            while not waitable(full[b], (j >> 1) & 1): yield
            it = note[b]
            if it is None: return
            name, tiles = it
            if tiles == 0:
                for w in range(4): empty[b].arrive()
            else:
                assert qbuf[b] == name, ('Q', qbuf[b], name)
                for t in range(tiles):
                    s = (kt + t) % S
                    while not waitable(kf[s], ((kt + t) // S) & 1): yield
                    assert kring[s] == (name, t), ('K', kring[s], name, t)
                    yield
                    assert qbuf[b] == name and note[b] == it, ('Q or note overwritten during S', name, t)
                    for w in range(4): ke[s].arrive()
                    if t == tiles - 1:
                        for w in range(4): empty[b].arrive()
                    while not waitable(vf[s], ((kt + t) // S) & 1): yield
                    assert vring[s] == (name, t), ('V', vring[s], name, t)
                    yield
                    for w in range(4): ve[s].arrive()
                kt += tiles
            consumed[wg].append(name)
            j += 1
    procs = [producer(), consumer(0), consumer(1)]
    alive = [True] * 3
    steps = 0
    while any(alive) or inflight:
        steps += 1
        if steps > 10 ** 6: raise SystemExit('deadlock (seed %d)' % seed)
        choices = [k for k in range(3) if alive[k]] + (['tx'] if inflight else [])
        c = rnd.choice(choices)
        if c == 'tx':
            k = rnd.randrange(len(inflight)); bar, act = inflight.pop(k); act(); bar.complete_tx(1)
        else:
            try: next(procs[c])
            except StopIteration: alive[c] = False
    names = [n for n, _ in items]
    assert consumed[0] == names and consumed[1] == names, (consumed, names)
    return steps

n = 0
for seed in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3000):
    rnd = random.Random(seed * 7 + 1)
    items = [('i%d' % k, rnd.choice([0, 0, 1, 2, 3, 5, 8])) for k in range(rnd.randrange(0, 9))]
    run(items, seed); n += 1
print('ok', n, 'interleavings, every item consumed once in order with its own note, Q and tiles, no deadlock')
