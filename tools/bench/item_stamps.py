#!/usr/bin/env python3
"""item_stamps.py — where a call of the warp-specialised flash kernel spends its time between work items, from the
stamps of tools/bench/item_stamps.patch (MK_ITEM_STAMPS=FILE: one line a work item, "slot f0 ... f15"; f0 smid << 32 |
tiles, f1 CTA entry, f2 consumer 0 at the item's start, f3 its Q waited, f4 its last P V done, f5 its stores done,
f6 consumer 1's stores done, f7 the producer's Q load issued, f8 the CTA's exit, f11-f13 inside the staged epilogue
(its first barrier passed, its shared stores done, its second barrier passed), f14 consumer 0's K0 in, f15 its TMA
store issued (0 before session 52), all clock64 of
the SM; f9 globaltimer at entry, f10 globaltimer at consumer 0's stores done; older files have f0-f11). Per file: the call's span, the SM clock (cycles against ns),
and medians (cycles) of each phase of an item, and of the gap between one item's end and the next one's start on the
same SM (a new CTA's entry, or, persistent, the next item's Q waited). The tile loop's cycles a tile (f4 - f3) / tiles
and the fraction of the span that the SMs spent inside tile loops show how much the starts and ends cost.

  item_stamps.py FILE [FILE ...]"""
import statistics
import sys


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def pct(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def load(path):
    head, items = "", []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                head = line[1:].strip()
                continue
            v = [int(x) for x in line.split()]
            slot, fl = v[0], v[1:]
            items.append({"cta": slot // 8, "r": slot % 8, "sm": fl[0] >> 32, "tiles": fl[0] & 0xFFFFFFFF,
                          "f": fl})
    return head, items


def report(path):
    head, items = load(path)
    print(f"== {path}: {head}, {len(items)} items")
    if not items:
        return
    ctas = {}
    for it in items:
        ctas.setdefault(it["cta"], []).append(it)
    first = [its for its in ctas.values() if any(i["r"] == 0 for i in its)]
    e_ns = [i["f"][9] for its in first for i in its if i["r"] == 0 and i["f"][9]]
    end_ns = [i["f"][10] for i in items if i["f"][10]]
    span_us = (max(end_ns) - min(e_ns)) / 1e3 if e_ns and end_ns else float("nan")
    ghz = []
    for its in ctas.values():
        r0 = [i for i in its if i["r"] == 0]
        last = max(its, key=lambda i: i["r"])
        if r0 and r0[0]["f"][9] and last["f"][10] and last["f"][5] > r0[0]["f"][1]:
            ghz.append((last["f"][5] - r0[0]["f"][1]) / (last["f"][10] - r0[0]["f"][9]))
    clk = med(ghz)
    per_tile = [(i["f"][4] - i["f"][3]) / i["tiles"] for i in items if i["tiles"] and i["f"][4] > i["f"][3]]
    loop_cyc = sum(i["f"][4] - i["f"][3] for i in items if i["f"][4] > i["f"][3])
    sms = len({i["sm"] for i in items})
    print(f"  span {span_us:.1f} us, {sms} SMs, clock {clk:.3f} GHz; tile loop {med(per_tile):.0f} cycles a tile "
          f"(p10 {pct(per_tile, 0.1):.0f}, p90 {pct(per_tile, 0.9):.0f}); tiles an item {med([i['tiles'] for i in items])}")
    if clk == clk and span_us == span_us:
        print(f"  inside tile loops: {loop_cyc / clk / 1e3 / (sms * span_us):.3f} of SMs x span")
    rows = [
        ("CTA entry -> consumer start (r 0)", [i["f"][2] - i["f"][1] for i in items if i["r"] == 0 and i["f"][1]]),
        ("consumer start -> Q waited", [i["f"][3] - i["f"][2] for i in items if i["f"][3]]),
        ("producer Q issued -> Q waited", [i["f"][3] - i["f"][7] for i in items if i["f"][7] and i["f"][3]]),
        ("Q waited -> last P V done", [i["f"][4] - i["f"][3] for i in items if i["f"][4] > i["f"][3]]),
        ("last P V done -> stores done (wg 0)", [i["f"][5] - i["f"][4] for i in items if i["f"][5]]),
        ("wg 1 stores done - wg 0's", [i["f"][6] - i["f"][5] for i in items if i["f"][6] and i["f"][5]]),
    ]
    if len(items[0]["f"]) > 14:
        stage = [i for i in items if i["f"][11] and i["f"][13]]
        rows[4:4] = [
            ("Q waited -> K0 in", [i["f"][14] - i["f"][3] for i in items if i["f"][14] and i["f"][3]]),
            ("  epilogue: last P V -> first barrier passed", [i["f"][11] - i["f"][4] for i in stage]),
            ("  epilogue: -> shared stores done", [i["f"][12] - i["f"][11] for i in stage]),
            ("  epilogue: -> fence, second barrier passed", [i["f"][13] - i["f"][12] for i in stage]),
            ("  epilogue: -> TMA store issued", [i["f"][5] - i["f"][13] for i in stage]),
        ]
        if any(i["f"][15] for i in stage):  # f15 (item_stamps_q2.patch): the leader's TMA store issued, the LSE after
            split = [i for i in stage if i["f"][15]]
            rows[8:9] = [
                ("  epilogue: -> TMA store issued (leader)", [i["f"][15] - i["f"][13] for i in split]),
                ("  epilogue: -> LSE stored", [i["f"][5] - i["f"][15] for i in split]),
            ]
    exits, gaps, q_early = [], [], []
    by_sm = {}
    for its in ctas.values():
        its.sort(key=lambda i: i["r"])
        r0 = [i for i in its if i["r"] == 0]
        if r0 and r0[0]["f"][8]:
            exits.append(r0[0]["f"][8] - its[-1]["f"][5])
        for a, b in zip(its, its[1:]):  # persistent: items of one CTA
            if a["f"][5] and b["f"][3]:
                gaps.append(("next item's Q waited - stores done", b["f"][3] - a["f"][5]))
            if a["f"][4] and b["f"][7]:
                q_early.append(b["f"][7] - a["f"][4])
        if r0:
            by_sm.setdefault(r0[0]["sm"], []).append(its)
    rows.append(("last stores done -> CTA exit", exits))
    for sm_ctas in by_sm.values():  # one CTA an item: the next CTA on the same SM
        sm_ctas.sort(key=lambda c: c[0]["f"][1])
        for a, b in zip(sm_ctas, sm_ctas[1:]):
            if a[0]["f"][8] and b[0]["f"][1] > a[0]["f"][8]:
                gaps.append(("CTA exit -> next CTA's entry, same SM", b[0]["f"][1] - a[0]["f"][8]))
                gaps.append(("stores done -> next CTA's Q waited, same SM", b[0]["f"][3] - a[-1]["f"][5]))
    for name in dict.fromkeys(g[0] for g in gaps):
        rows.append((name, [g[1] for g in gaps if g[0] == name]))
    rows.append(("next item's Q issued - last P V done (persistent)", q_early))
    for name, xs in rows:
        if xs:
            print(f"  {name:52s} median {med(xs):8.0f}  p10 {pct(xs, 0.1):8.0f}  p90 {pct(xs, 0.9):8.0f}  (n {len(xs)})")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for path in sys.argv[1:]:
        report(path)


if __name__ == "__main__":
    main()
