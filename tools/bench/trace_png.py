#!/usr/bin/env python3
"""trace_png.py — render an MK_TRACE Chrome trace (one rank's FILE.rankN.json) as a PNG: one
row per CTA, bars coloured by event (compute, wait, send, reduce), time in microseconds.

usage: python3 tools/bench/trace_png.py TRACE.json -o OUT.png [--title TEXT]"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--title")
    args = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    with open(args.trace) as f:
        doc = json.load(f)
    ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    names = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e.get("ph") == "M" and "tid" in e}
    tids = sorted({e["tid"] for e in ev})
    if not ev:
        print("trace_png.py: no events in %s" % args.trace, file=sys.stderr)
        return 1
    colors = {"compute": "#4c72b0", "wait": "#dd8452", "send": "#55a868", "reduce": "#c44e52"}
    row = {t: i for i, t in enumerate(tids)}
    fig, ax = plt.subplots(figsize=(14, max(4, 0.06 * len(tids) + 2)))
    for kind, col in colors.items():
        bars = [(e["ts"], e["dur"]) for e in ev if e["name"] == kind]
        for t in tids:
            sub = [(e["ts"], max(e["dur"], 0.05)) for e in ev if e["name"] == kind and e["tid"] == t]
            if sub:
                ax.broken_barh(sub, (row[t] - 0.4, 0.8), facecolors=col, linewidth=0)
        del bars
    step = max(1, len(tids) // 24)
    ax.set_yticks([row[t] for t in tids][::step])
    ax.set_yticklabels([names.get(t, str(t)) for t in tids][::step], fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("time (us)")
    other = doc.get("otherData", {})
    ax.set_title(args.title or "%s, rank %s: CTA roles over time" % (other.get("op", "?"), other.get("rank", "?")))
    ax.legend(handles=[Patch(color=c, label=k) for k, c in colors.items()], loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
