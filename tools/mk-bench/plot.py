#!/usr/bin/env python3
"""plot.py — draw an mk-bench results JSON: one panel per op, median time per shape, one bar
per path (fused, unfused, ...), with the overlap bound as a marker where the rows carry it.
Usage: plot.py RESULTS.json -o OUT.png   (called by `mk-bench plot`)."""
import json
import sys


def main(argv):
    if len(argv) != 4 or argv[2] != "-o":
        print("usage: plot.py RESULTS.json -o OUT.png", file=sys.stderr)
        return 2
    src, dst = argv[1], argv[3]
    try:
        with open(src) as f:
            doc = json.load(f)
        rows = doc["results"]
        if not isinstance(rows, list):
            raise TypeError("'results' is not a list")
        for r in rows:
            if not (isinstance(r, dict) and isinstance(r.get("op"), str) and isinstance(r.get("path"), str)
                    and isinstance(r.get("shape"), dict) and isinstance(r.get("ranks", 1), int)):
                raise TypeError(f"malformed row {r!r:.80}")
            r.setdefault("ranks", 1)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"mk-bench plot: {src}: not an mk-bench results file ({e})", file=sys.stderr)
        return 1
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ops = sorted({r["op"] for r in rows})
    if not ops:
        print(f"mk-bench plot: {src} has no results", file=sys.stderr)
        return 1
    fig, axes = plt.subplots(len(ops), 1, figsize=(11, 3.6 * len(ops)), squeeze=False)
    for ax, op in zip(axes[:, 0], ops):
        sel = [r for r in rows if r["op"] == op]
        shapes, paths = [], []
        for r in sel:
            s = " ".join(f"{k}={v}" for k, v in r["shape"].items()) + (f" r={r['ranks']}" if r["ranks"] > 1 else "")
            if s not in shapes:
                shapes.append(s)
            if r["path"] not in paths:
                paths.append(r["path"])
        width = 0.8 / max(1, len(paths))
        for pi, p in enumerate(paths):
            xs, ys = [], []
            for r in sel:
                if r["path"] != p or r["median_ms"] is None:
                    continue
                s = " ".join(f"{k}={v}" for k, v in r["shape"].items()) + (f" r={r['ranks']}" if r["ranks"] > 1 else "")
                xs.append(shapes.index(s) + pi * width)
                ys.append(r["median_ms"])
            ax.bar(xs, ys, width, label=p)
        bx, by = [], []
        for r in sel:
            if r.get("bound_ms") is not None:
                s = " ".join(f"{k}={v}" for k, v in r["shape"].items()) + (f" r={r['ranks']}" if r["ranks"] > 1 else "")
                bx.append(shapes.index(s) + 0.4 - width / 2)
                by.append(r["bound_ms"])
        if bx:
            ax.scatter(bx, by, marker="_", s=400, color="black", label="overlap bound", zorder=3)
        vals = [r["median_ms"] for r in sel if r["median_ms"]]
        if vals and max(vals) / max(min(vals), 1e-9) > 20:
            ax.set_yscale("log")  # shapes that differ by orders of magnitude stay readable
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(shapes))])
        ax.set_xticklabels(shapes, rotation=20, ha="right", fontsize=8)
        ax.set_ylabel("median ms")
        ax.set_title(f"{op} — {doc.get('gpu', '?')} x{doc.get('gpus', '?')}, commit {doc.get('commit', '?')}, {doc.get('date', '?')}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print(f"mk-bench plot: wrote {dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
