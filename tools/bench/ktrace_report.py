#!/usr/bin/env python3
"""ktrace_report.py — per-kernel times and gaps of repeated calls, from libmk_ktrace.so's files
(tools/ktrace/ktrace.c).

    ktrace_report.py DIR [--boundary REGEX] [--min-count N] [--skip REGEX] [--max-groups N]
    ktrace_report.py DIR --list REGEX     every kernel whose name matches: count, median, p10, p90
    ktrace_report.py DIR --around REGEX   the kernels, copies and memsets of the device around each kernel matching
                                          REGEX (--pre / --post us before its start / after its end), each as the
                                          median start and end (us from that kernel's start) over the occurrences
                                          with the most common sequence

Each file (one process, one rank) is cut into calls at every kernel whose demangled name matches
--boundary (default: the layer bench's pre-call reset, `mk_fill_uniform_kernel<float>`); kernels
matching --skip (default: the bench's one-element barrier all-reduce, ncclDevKernel_AllReduce_Sum_f32)
right after it are dropped. Calls with the same sequence of kernel names form a group; for each group
of at least --min-count calls it prints the median span (first kernel's start to last kernel's end)
and, per kernel, the median duration and the median gap since the previous kernel ended (the first
kernel: since the boundary's last kernel ended). Times in microseconds."""
import argparse
import glob
import os
import re
import shutil
import statistics
import subprocess
import sys


def demangle(names):
    if not shutil.which("c++filt"):
        return {n: n for n in names}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
    return {n: (out[i] if i < len(out) and out[i] else n) for i, n in enumerate(names)}


def short(name, width):
    if name.endswith(")"):  # the argument list: the last balanced (...)
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += name[i] == ")"
            depth -= name[i] == "("
            if depth == 0:
                name = name[:i]
                break
    name = re.sub(r"\b(void|unsigned|const) ", "", name)
    return name if len(name) <= width else name[: width - 1] + "~"


def load(path, copies=False):
    ks = []
    with open(path) as f:
        for line in f:
            p = line.rstrip("\n").split(",", 8)
            if p[0] == "K" and len(p) == 9:
                ks.append((int(p[1]), int(p[2]), int(p[4]), p[8]))
            elif copies and p[0] == "C" and len(p) >= 7:
                ks.append((int(p[1]), int(p[2]), int(p[4]), f"copy {int(p[5]) >> 10} KiB kind {p[6]}"))
            elif copies and p[0] == "S" and len(p) >= 6:
                ks.append((int(p[1]), int(p[2]), int(p[4]), f"memset {int(p[5])} B"))
    ks.sort()
    return ks


def around(path, a):
    ev = load(path, copies=True)
    names = demangle(sorted({k[3] for k in ev if not k[3].startswith(("copy ", "memset "))}))
    nm = lambda n: names.get(n, n)
    pat = re.compile(a.around)
    groups = {}
    for s0, e0, _, n0 in ev:
        if not pat.search(nm(n0)):
            continue
        lo, hi = s0 - a.pre * 1000, e0 + a.post * 1000
        win = [(s - s0, e - s0, stream, nm(n)) for s, e, stream, n in ev if lo <= s <= hi]
        groups.setdefault(tuple((w[2], w[3]) for w in win), []).append(win)
    print(f"== {os.path.basename(path)}: around {a.around!r}, {sum(len(g) for g in groups.values())} occurrences, "
          f"{len(groups)} sequences")
    if not groups:
        return
    sig, occ = max(groups.items(), key=lambda kv: len(kv[1]))
    print(f"   the most common sequence: {len(occ)} occurrences; us from the matching kernel's start (medians)")
    print(f"   {'start':>8} {'end':>8} {'dur':>7} {'stream':>6}  event")
    for i, (stream, n) in enumerate(sig):
        st = statistics.median(o[i][0] for o in occ) / 1000.0
        en = statistics.median(o[i][1] for o in occ) / 1000.0
        print(f"   {st:8.1f} {en:8.1f} {en - st:7.1f} {stream:6d}  {short(n, a.width)}")


def report(path, a):
    if a.around:
        around(path, a)
        return
    ks = load(path)
    if not ks:
        print(f"{path}: no kernels")
        return
    names = demangle(sorted({k[3] for k in ks}))
    if a.list:
        pat, by = re.compile(a.list), {}
        for s, e, _, n in ks:
            if pat.search(names[n]):
                by.setdefault(names[n], []).append((e - s) / 1000.0)
        print(f"== {os.path.basename(path)}: kernels matching {a.list!r} (us)")
        for n, ds in sorted(by.items(), key=lambda kv: -len(kv[1])):
            ds.sort()
            q = lambda f: ds[min(len(ds) - 1, int(f * len(ds)))]
            print(f"   {len(ds):6d} x median {statistics.median(ds):8.1f} p10 {q(0.1):8.1f} p90 {q(0.9):8.1f}  "
                  f"{short(n, a.width)}")
        return
    bnd, skip = re.compile(a.boundary), re.compile(a.skip)
    calls, cur, prev_end = [], None, None
    for s, e, stream, n in ks:
        dn = names[n]
        if bnd.search(dn):
            if cur:
                calls.append(cur)
            cur, prev_end = {"t0": e, "k": []}, e
            continue
        if cur is None:
            continue
        if not cur["k"] and skip.search(dn):
            cur["t0"] = e
            continue
        cur["k"].append((s, e, dn))
    if cur:
        calls.append(cur)
    groups = {}
    for c in calls:
        if not c["k"]:
            continue
        sig = tuple(k[2] for k in c["k"])
        groups.setdefault(sig, []).append(c)
    print(f"== {os.path.basename(path)}: {len(ks)} kernels, {len(calls)} calls, {len(groups)} kinds of call")
    shown = 0
    for sig, cs in sorted(groups.items(), key=lambda kv: kv[1][0]["t0"]):
        if len(cs) < a.min_count:
            continue
        shown += 1
        if shown > a.max_groups:
            break
        med = lambda xs: statistics.median(xs) / 1000.0
        span = med([c["k"][-1][1] - c["k"][0][0] for c in cs])
        lead = med([c["k"][0][0] - c["t0"] for c in cs])
        busy = med([sum(k[1] - k[0] for k in c["k"]) for c in cs])
        print(f"-- group {shown}: {len(cs)} calls, {len(sig)} kernels, span {span:.1f} us (kernels {busy:.1f}, "
              f"gaps {span - busy:.1f}), first kernel {lead:.1f} us after the boundary")
        print(f"   {'#':>3} {'dur':>8} {'gap':>7}  kernel")
        for i in range(len(sig)):
            d = med([c["k"][i][1] - c["k"][i][0] for c in cs])
            g = med([c["k"][i][0] - (c["k"][i - 1][1] if i else c["t0"]) for c in cs])
            print(f"   {i:>3} {d:8.1f} {g:7.1f}  {short(sig[i], a.width)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--boundary", default=r"mk_fill_uniform_kernel<float>")
    ap.add_argument("--skip", default=r"ncclDevKernel_AllReduce_Sum_f32")
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--max-groups", type=int, default=40)
    ap.add_argument("--width", type=int, default=110)
    ap.add_argument("--list", help="a regex: per-kernel statistics of the matching kernels instead of calls")
    ap.add_argument("--around", help="a regex: the timeline around each matching kernel instead of calls")
    ap.add_argument("--pre", type=float, default=20.0, help="--around: us before the kernel's start")
    ap.add_argument("--post", type=float, default=60.0, help="--around: us after the kernel's end")
    ap.add_argument("--files", type=int, default=1, help="how many of the files (ranks), in name order")
    a = ap.parse_args()
    files = sorted(glob.glob(os.path.join(a.dir, "ktrace.*.csv")))
    if not files:
        sys.exit(f"ktrace_report: no ktrace.*.csv in {a.dir}")
    for f in files[: a.files]:
        report(f, a)


if __name__ == "__main__":
    main()
