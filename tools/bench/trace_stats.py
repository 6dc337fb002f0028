#!/usr/bin/env python3
"""tools/bench/trace_stats.py — summary of one MK_TRACE file (FILE.rankN.json of a fused op): when the GEMM's
last tile was stored, when the last event ended, and per track kind (role CTA / the GEMM CTAs' tail) and
event kind: count, median and total duration, first start and last end (us from the trace's start), and how
many compute events ended in each 10 us (GEMM+RS / GEMM+AR: tiles stored; AG+GEMM: a CTA's next tile's loads
begun, i.e. about its previous tile's end).
  python3 tools/bench/trace_stats.py TRACE.rank0.json [...]"""
import json
import statistics
import sys


def summary(path):
    d = json.load(open(path))
    ev = [e for e in d["traceEvents"] if e.get("ph") == "X"]
    names = {e["tid"]: e["args"]["name"] for e in d["traceEvents"] if e.get("ph") == "M" and "tid" in e}
    compute_tids = {e["tid"] for e in ev if e["name"] == "compute"}
    gemm_end = max((e["ts"] + e["dur"] for e in ev if e["name"] == "compute"), default=0.0)
    end = max(e["ts"] + e["dur"] for e in ev)
    print(f"{path}: {d.get('otherData')}; {len(compute_tids)} GEMM CTAs, {len(names) - len(compute_tids)} others")
    print(f"  last tile stored at {gemm_end:.1f} us, last event ends at {end:.1f} us (tail {end - gemm_end:.1f} us)")
    groups = {}
    for e in ev:
        who = "gemm-cta" if e["tid"] in compute_tids else "role-cta"
        groups.setdefault((who, e["name"]), []).append(e)
    for (who, kind), es in sorted(groups.items()):
        durs = [e["dur"] for e in es]
        after = [e for e in es if e["ts"] >= gemm_end - 1]
        print(f"  {who:8s} {kind:8s} n={len(es):5d} median {statistics.median(durs):7.2f} us  sum {sum(durs):9.1f} us"
              f"  first {min(e['ts'] for e in es):8.1f}  last end {max(e['ts'] + e['dur'] for e in es):8.1f}"
              f"  (after the GEMM: {len(after)})")


    ends = sorted(e["ts"] + e["dur"] for e in ev if e["name"] == "compute")
    if ends:  # compute events' ends (RS/AR: a tile stored; AG: the next tile's loads begun) in each 10 us
        hist = {}
        for t in ends:
            hist[int(t // 10)] = hist.get(int(t // 10), 0) + 1
        print("  compute events ending per 10 us: " + " ".join(f"{10 * b}:{c}" for b, c in sorted(hist.items())))


for p in sys.argv[1:]:
    summary(p)
