#!/usr/bin/env python3
"""sdpa_ref.py — PyTorch baseline for `mk-bench attn --mode prefill`: times
torch.nn.functional.scaled_dot_product_attention with one backend (--backend: flash, FlashAttention-2, path
"torch_sdpa"; cudnn, cuDNN's fused attention, path "torch_sdpa_cudnn") on the same shapes
(B sequences of S tokens, hq query heads, hkv KV heads, head dim d, causal and non-causal,
q/k/v in mkernel's token-major layout [B, S, H, d] viewed as [B, H, S, d]) with CUDA events
around every call (median, p10, p90 of --iters calls after --warmup), and prints a JSON
document whose "results" rows follow mk-bench's schema (shape with "q" = S, as mk-bench's), so they merge
with `mk-bench attn --json` rows. rel_err: O over sampled rows against an fp64 reference.

GQA: enable_gqa=True where this torch's backend takes it; otherwise K/V are expanded to
hq heads before timing (the row's shape then carries "gqa":"expanded").

--merge FILE adds the rows to an `mk-bench attn --json FILE` results file (in place) and prints,
per shape, each mkernel path's speed relative to SDPA (sdpa median / path median; >= 0.9 is
the acceptance bar), so both sides come from one run on one GPU:
  build/bin/mk-bench attn --mode prefill --json R.json && python3 tools/bench/sdpa_ref.py --merge R.json

usage: python3 tools/bench/sdpa_ref.py [--seq 2048,8192,32768] [--causal 0,1] [--batch 1]
           [--hq 32] [--hkv 8] [--d 128] [--warmup 10] [--iters 50] [--json FILE] [--merge FILE]
           [--backend flash|cudnn]"""
import argparse
import datetime
import json
import math
import socket
import sys


def ints(text):
    return [int(x) for x in text.split(",") if x]


def percentile(sorted_ms, q):
    if len(sorted_ms) == 1:
        return sorted_ms[0]
    pos = q * (len(sorted_ms) - 1)
    lo = int(pos)
    if lo >= len(sorted_ms) - 1:
        return sorted_ms[-1]
    return sorted_ms[lo] + (sorted_ms[lo + 1] - sorted_ms[lo]) * (pos - lo)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seq", type=ints, default=[2048, 8192, 32768])
    ap.add_argument("--causal", type=ints, default=[0, 1])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--hq", type=int, default=32)
    ap.add_argument("--hkv", type=int, default=8)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--samples", type=int, default=96, help="(row, head) pairs checked against fp64")
    ap.add_argument("--json", help="also write the document to this file")
    ap.add_argument("--merge", help="add the rows to this mk-bench results file and compare")
    ap.add_argument("--backend", choices=["flash", "cudnn"], default="flash")
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if not torch.cuda.is_available():
        print("sdpa_ref.py: no CUDA device", file=sys.stderr)
        return 1
    dev = torch.device("cuda")
    torch.manual_seed(0)
    backend = SDPBackend.FLASH_ATTENTION if args.backend == "flash" else SDPBackend.CUDNN_ATTENTION
    path = "torch_sdpa" if args.backend == "flash" else "torch_sdpa_cudnn"
    rows = []
    for s in args.seq:
        b, hq, hkv, d = args.batch, args.hq, args.hkv, args.d
        # Token-major storage as in mkernel, viewed as [B, H, S, d] (no copy).
        q = (torch.rand(b, s, hq, d, device=dev) * 4 - 2).to(torch.bfloat16).transpose(1, 2)
        k = (torch.rand(b, s, hkv, d, device=dev) * 4 - 2).to(torch.bfloat16).transpose(1, 2)
        v = (torch.rand(b, s, hkv, d, device=dev) * 2 - 1).to(torch.bfloat16).transpose(1, 2)
        scale = 1.0 / math.sqrt(d)
        for causal in args.causal:
            gqa = "native"
            kk, vv = k, v

            def call():
                with sdpa_kernel([backend]):
                    if gqa == "native" and hq != hkv:
                        return F.scaled_dot_product_attention(q, kk, vv, is_causal=bool(causal), scale=scale,
                                                              enable_gqa=True)
                    return F.scaled_dot_product_attention(q, kk, vv, is_causal=bool(causal), scale=scale)

            try:
                out = call()
            except RuntimeError:
                gqa = "expanded"
                kk = k.repeat_interleave(hq // hkv, dim=1)
                vv = v.repeat_interleave(hq // hkv, dim=1)
                out = call()
            for _ in range(args.warmup):
                call()
            ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(args.iters)]
            for e0, e1 in ev:
                e0.record()
                call()
                e1.record()
            torch.cuda.synchronize()
            ms = sorted(e0.elapsed_time(e1) for e0, e1 in ev)

            # Sampled rows against fp64 (first and last row included).
            g = torch.Generator().manual_seed(7)
            num = den = 0.0
            for i in range(args.samples):
                bi, h = i % b, (i * 5) % hq
                row = 0 if i == 0 else s - 1 if i == 1 else int(torch.randint(0, s, (1,), generator=g))
                qr = q[bi, h, row].double()
                kh, vh = k[bi, h // (hq // hkv)].double(), v[bi, h // (hq // hkv)].double()
                last = row if causal else s - 1
                p = torch.softmax((kh[: last + 1] @ qr) * scale, dim=0)
                ref = p @ vh[: last + 1]
                got = out[bi, h, row].double()
                num += float(((got - ref) ** 2).sum())
                den += float((ref ** 2).sum())
            rel_err = math.sqrt(num / den) if den > 0 else None

            flops = 4.0 * b * hq * s * s * d * (0.5 if causal else 1.0)
            med = percentile(ms, 0.5)
            shape = {"b": b, "s": s, "q": s, "hq": hq, "hkv": hkv, "d": d, "causal": causal}
            if gqa != "native" and hq != hkv:
                shape["gqa"] = gqa
            rows.append({"op": "attn_prefill", "path": path, "shape": shape, "ranks": 1, "nodes": 1,
                         "median_ms": med, "p10_ms": percentile(ms, 0.1), "p90_ms": percentile(ms, 0.9),
                         "tflops": flops / (med * 1e-3) / 1e12, "gbps": None, "rel_err": rel_err,
                         "compute_ms": None, "comm_ms": None, "bound_ms": None, "ratio": None})
            print(f"{path} {shape}: median {med:.4f} ms, {rows[-1]['tflops']:.1f} TFLOP/s, "
                  f"rel_err {rel_err:.2e} (gqa {gqa})", file=sys.stderr)
        del q, k, v
        torch.cuda.empty_cache()

    doc = {"gpu": torch.cuda.get_device_name(dev), "gpus": torch.cuda.device_count(),
           "torch": torch.__version__, "cuda": torch.version.cuda,
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "host": socket.gethostname(), "command": " ".join(sys.argv), "warmup": args.warmup,
           "iters": args.iters, "results": rows}
    text = json.dumps(doc, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    if args.merge:
        return merge(args.merge, doc)
    return 0


def merge(path, doc):
    with open(path) as f:
        mk = json.load(f)
    if mk.get("gpu") != doc["gpu"]:
        print(f"sdpa_ref.py: warning: {path} was measured on {mk.get('gpu')}, SDPA on {doc['gpu']}", file=sys.stderr)
    mine = {r["path"] for r in doc["results"]}
    mk["results"] = [r for r in mk["results"] if r.get("path") not in mine] + doc["results"]
    mk["torch"] = doc["torch"]
    with open(path, "w") as f:
        f.write(json.dumps(mk, indent=2) + "\n")
    key = lambda r: json.dumps({k: v for k, v in r["shape"].items() if k != "gqa"}, sort_keys=True)
    sdpa = {key(r): r for r in doc["results"]}
    print(f"{'shape':<64} {'path':<13} {'ms':>9} {'TFLOP/s':>8} {'sdpa ms':>9} {'vs sdpa':>8}   (sdpa: {sorted(mine)})")
    for r in mk["results"]:
        base = sdpa.get(key(r))
        if r["op"] != "attn_prefill" or r["path"].startswith("torch_sdpa") or not base or not r.get("median_ms"):
            continue
        print(f"{key(r):<64} {r['path']:<13} {r['median_ms']:9.4f} {r['tflops'] or 0:8.1f} "
              f"{base['median_ms']:9.4f} {base['median_ms'] / r['median_ms']:8.3f}")
    print(f"sdpa_ref.py: merged {len(doc['results'])} rows into {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
