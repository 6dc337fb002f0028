#!/usr/bin/env python3
"""ws_stamps.py — the consumer warpgroups' phases in one CTA of the warp-specialised flash kernel, from the stamps of
tools/bench/ws_stamps.patch (or session 45's dbg44 / dbg45 patches, in the trees of 76e0533 / fb0edfa):
MK_WS_STAMPS=FILE writes lines "wg kind tile cycles", kind 0 K_t landed, 1 the warpgroup's turn to issue S_t, 2 S_t's
softmax done, 3 (not in dbg44) S_t in registers; clock64 of the SM. Per warpgroup, medians over the tiles of: the
tile period (turn to turn), the wait for the turn (1 - 0), turn to softmax done (2 - 1), turn to S in registers
(3 - 1); and warpgroup 1's turn after warpgroup 0's as
a fraction of the period (0.5: the two alternate evenly, FA3's aim). --item N: the same per run of N tiles (an
item), to see whether the phases change at an item's start.

  ws_stamps.py FILE [FILE ...] [--item 128]"""
import argparse
import statistics


def load(path):
    st = {}
    with open(path) as f:
        for line in f:
            w, k, i, c = (int(x) for x in line.split())
            st[(w, k, i)] = c
    return st


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def summary(st, tiles):
    out = {}
    for w in (0, 1):
        per = [st[(w, 1, t + 1)] - st[(w, 1, t)] for t in tiles if (w, 1, t) in st and (w, 1, t + 1) in st]
        wait = [st[(w, 1, t)] - st[(w, 0, t)] for t in tiles if (w, 0, t) in st and (w, 1, t) in st]
        soft = [st[(w, 2, t)] - st[(w, 1, t)] for t in tiles if (w, 1, t) in st and (w, 2, t) in st]
        sready = [st[(w, 3, t)] - st[(w, 1, t)] for t in tiles if (w, 1, t) in st and (w, 3, t) in st]
        out[w] = (med(per), med(wait), med(soft), med(sready))
    lag = [(st[(1, 1, t)] - st[(0, 1, t)]) / (st[(0, 1, t + 1)] - st[(0, 1, t)]) for t in tiles
           if (0, 1, t) in st and (1, 1, t) in st and (0, 1, t + 1) in st and st[(0, 1, t + 1)] > st[(0, 1, t)]]
    return out, med(lag)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--item", type=int, default=0, help="tiles an item: also print each item's medians")
    a = ap.parse_args()
    for path in a.files:
        st = load(path)
        n = max((i for (_, _, i) in st), default=-1) + 1
        if n == 0:
            print(f"{path}: no stamps")
            continue
        out, lag = summary(st, range(n))
        print(f"{path}: {n} tiles; wg1's turn after wg0's {lag:.3f} of a period")
        for w in (0, 1):
            print(f"  wg{w}: period {out[w][0]:.0f} cycles, turn wait {out[w][1]:.0f}, turn to softmax done {out[w][2]:.0f}"
                  + (f", turn to S in registers {out[w][3]:.0f}" if out[w][3] == out[w][3] else ""))
        if a.item > 0:
            for s in range(0, n, a.item):
                o, l = summary(st, range(s, min(n, s + a.item)))
                print(f"  tiles {s}..{min(n, s + a.item) - 1}: period {o[0][0]:.0f} / {o[1][0]:.0f}, "
                      f"wait {o[0][1]:.0f} / {o[1][1]:.0f}, softmax {o[0][2]:.0f} / {o[1][2]:.0f}, lag {l:.3f}")


if __name__ == "__main__":
    main()
