#!/usr/bin/env python3
"""deal_sim.py — the flash kernel's persistent deal of work items to CTAs, simulated (NOTES, attention/flash_fwd
"Session 44"): items weigh their key tiles (causal: query block m sees m + 1 tiles of 128), in order 1 (heaviest first
across heads) or 2 (KV head by KV head, heaviest first within one), dealt in alternating static rounds
(ws_item in kernels/attention/flash_fwd_ws.cu) or greedily (each CTA takes the next item when it is free). Prints the
slowest CTA's tiles and the mean.

  deal_sim.py [--ctas 132] [--hq 32] [--hkv 8] S [S ...]"""
import argparse
import heapq


def static(order, g):
    loads = [0] * g
    for r in range((len(order) + g - 1) // g):
        for c in range(g):
            i = r * g + (g - 1 - c if r & 1 else c)
            if i < len(order):
                loads[c] += order[i]
    return max(loads)


def greedy(order, g):
    h = [0] * g
    for w in order:
        heapq.heappush(h, heapq.heappop(h) + w)
    return max(h)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("seq", type=int, nargs="+")
    ap.add_argument("--ctas", type=int, default=132)
    ap.add_argument("--hq", type=int, default=32)
    ap.add_argument("--hkv", type=int, default=8)
    a = ap.parse_args()
    if a.ctas < 1 or a.hkv < 1 or a.hq % a.hkv:
        raise SystemExit("deal_sim.py: --ctas >= 1, and --hq a multiple of --hkv")
    grp = a.hq // a.hkv
    for s in a.seq:
        blocks = (s + 127) // 128
        o1 = [m + 1 for m in reversed(range(blocks)) for _ in range(a.hq)]
        o2 = [m + 1 for _ in range(a.hkv) for m in reversed(range(blocks)) for _ in range(grp)]
        mean = sum(o1) / a.ctas
        print(f"S {s}: mean {mean:.1f} tiles a CTA; slowest: order 1 static {static(o1, a.ctas)}, greedy "
              f"{greedy(o1, a.ctas)}; order 2 static {static(o2, a.ctas)}, greedy {greedy(o2, a.ctas)}")


if __name__ == "__main__":
    main()
