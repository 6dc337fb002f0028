#!/usr/bin/env python3
"""clock_steps.py — the SM clock and the board power during each step of a GPU bench script: reads the samples of
`nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw[,temperature.gpu,clocks_event_reasons.active]
--format=csv,noheader -lms 50` (CLOCKS) and the step marks "start|end NAME YYYY/MM/DD HH:MM:SS.mmm" (MARKS, written by
next_s46.sh's `marked`), and prints per step the median, 10th and 90th percentile SM clock (MHz), the median and the
highest power (W), and, where sampled, the highest temperature (C) and the clock event reasons seen (OR of the masks)
of GPU 0's samples inside it.

  clock_steps.py CLOCKS MARKS"""
import datetime
import statistics
import sys


def when(s):
    return datetime.datetime.strptime(s.strip(), "%Y/%m/%d %H:%M:%S.%f")


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    samples = []
    with open(sys.argv[1]) as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) < 4 or parts[1] != "0":
                continue
            try:
                temp = float(parts[4]) if len(parts) > 4 else float("nan")
                why = int(parts[5], 16) if len(parts) > 5 else 0
                samples.append((when(parts[0]), float(parts[2].split()[0]), float(parts[3].split()[0]), temp, why))
            except ValueError:
                continue
    starts, rows = {}, []
    with open(sys.argv[2]) as f:
        for line in f:
            kind, name, day, hms = line.split()
            t = when(day + " " + hms)
            if kind == "start":
                starts[name] = t
            elif name in starts:
                rows.append((name, starts.pop(name), t))
    print(f"{'step':28s} {'samples':>7s} {'MHz p10':>8s} {'median':>7s} {'p90':>6s} {'W':>6s} {'W max':>6s} "
          f"{'C max':>5s} reasons")
    for name, t0, t1 in rows:
        inside = [s for s in samples if t0 <= s[0] <= t1]
        if not inside:
            print(f"{name:28s} {0:7d}")
            continue
        mhz = [s[1] for s in inside]
        watts = [s[2] for s in inside]
        why = 0
        for s in inside:
            why |= s[4]
        print(f"{name:28s} {len(inside):7d} {pct(mhz, 0.1):8.0f} {statistics.median(mhz):7.0f} {pct(mhz, 0.9):6.0f} "
              f"{statistics.median(watts):6.0f} {max(watts):6.0f} {max(s[3] for s in inside):5.0f} {why:#x}")


if __name__ == "__main__":
    main()
