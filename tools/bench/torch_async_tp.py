#!/usr/bin/env python3
"""torch_async_tp.py — PyTorch async-TP baseline for `mk-bench ag_gemm` / `gemm_rs`: times
torch.ops.symm_mem.fused_all_gather_matmul (AG+GEMM) and fused_matmul_reduce_scatter
(GEMM+RS) on the same per-rank shapes (symmetric memory, TORCH_SYMM_MEM_DISABLE_MULTICAST=1),
CUDA events around every call, median/p10/p90 of --iters calls after --warmup, the max over
ranks of each percentile. Rank 0 prints a JSON document whose "results" rows follow mk-bench's
schema with path "torch_async_tp". GEMM+AR has no fused op in PyTorch (recorded as such).

Run under the launcher (it sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT, MK_DEVICE):
  mk-launch -n 4 -- python3 tools/bench/torch_async_tp.py --op ag_gemm --json T.json
--merge FILE adds the rows to an mk-bench results file (in place) and prints, per shape, the
fused path's speed against async-TP and the unfused path.

usage: torch_async_tp.py --op ag_gemm|gemm_rs [--m 2048,8192,16384] [--n N] [--k K]
           [--warmup 10] [--iters 50] [--json FILE] [--merge FILE]"""
import argparse
import datetime
import json
import os
import socket
import sys

os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")


def ints(text):
    return [int(x) for x in text.split(",") if x]


def percentile(s, q):
    pos = q * (len(s) - 1)
    lo = int(pos)
    if lo >= len(s) - 1:
        return s[-1]
    return s[lo] + (s[lo + 1] - s[lo]) * (pos - lo)


def merge(path, doc):
    with open(path) as f:
        res = json.load(f)
    res["results"] = [r for r in res["results"] if r.get("path") != "torch_async_tp"] + doc["results"]
    res.setdefault("notes", []).append("torch_async_tp rows: " + doc["command"])
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
    by = {}
    for r in res["results"]:
        by.setdefault(json.dumps(r["shape"], sort_keys=True), {})[r["path"]] = r
    for shape, rows in by.items():
        f, t, u = rows.get("fused"), rows.get("torch_async_tp"), rows.get("unfused")
        if f and t:
            print("%s: fused %.4f ms, async-TP %.4f ms (%.2fx), unfused %s ms, bound %s ms" % (
                shape, f["median_ms"], t["median_ms"], t["median_ms"] / f["median_ms"],
                "%.4f" % u["median_ms"] if u else "-", "%.4f" % f["bound_ms"] if f.get("bound_ms") else "-"))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--op", choices=["ag_gemm", "gemm_rs"], required=True)
    ap.add_argument("--m", type=ints, default=[2048, 8192, 16384])
    ap.add_argument("--n", type=int)
    ap.add_argument("--k", type=int)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--json")
    ap.add_argument("--merge")
    args = ap.parse_args()
    n = args.n or (7168 if args.op == "ag_gemm" else 8192)
    k = args.k or (8192 if args.op == "ag_gemm" else 7168)

    import torch
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem

    dev = int(os.environ.get("MK_DEVICE", os.environ.get("LOCAL_RANK", "0")))
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=torch.device("cuda", dev))
    rank, world = dist.get_rank(), dist.get_world_size()
    group = dist.group.WORLD
    symm_mem.enable_symm_mem_for_group(group.group_name)
    torch.manual_seed(1234 + rank)
    rows, failures = [], []
    for m in args.m:
        if m % world:
            failures.append("M=%d is not a multiple of %d ranks" % (m, world))
            continue
        b = (torch.rand(n, k, device="cuda") * 2 - 1).to(torch.bfloat16)  # [N, K] like mkernel
        if args.op == "ag_gemm":
            a = (torch.rand(m // world, k, device="cuda") * 2 - 1).to(torch.bfloat16)

            def call():
                return torch.ops.symm_mem.fused_all_gather_matmul(a, [b.t()], 0, group.group_name)
        else:
            a = (torch.rand(m, k, device="cuda") * 2 - 1).to(torch.bfloat16)

            def call():
                return torch.ops.symm_mem.fused_matmul_reduce_scatter(a, b.t(), "sum", 0, group.group_name)
        try:
            for _ in range(args.warmup):
                call()
            torch.cuda.synchronize()
            dist.barrier()
            ms = []
            for _ in range(args.iters):
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                call()
                e1.record()
                e1.synchronize()
                ms.append(e0.elapsed_time(e1))
        except Exception as e:  # record why the op does not run here
            failures.append("%s M=%d: %s: %s" % (args.op, m, type(e).__name__, e))
            continue
        ms.sort()
        st = torch.tensor([percentile(ms, 0.5), percentile(ms, 0.1), percentile(ms, 0.9)], device="cuda")
        dist.all_reduce(st, op=dist.ReduceOp.MAX)
        med, p10, p90 = st.tolist()
        rows.append({"op": args.op, "path": "torch_async_tp", "shape": {"m": m, "n": n, "k": k}, "ranks": world,
                     "nodes": 1, "median_ms": med, "p10_ms": p10, "p90_ms": p90,
                     "tflops": 2.0 * m * n * k / (med * 1e-3) / 1e12, "gbps": None, "rel_err": None,
                     "compute_ms": None, "comm_ms": None, "bound_ms": None, "ratio": None})
    doc = {"gpu": torch.cuda.get_device_name(), "gpus": world, "torch": torch.__version__,
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "host": socket.gethostname(), "command": " ".join(sys.argv), "warmup": args.warmup,
           "iters": args.iters, "failures": failures, "results": rows}
    dist.barrier()
    dist.destroy_process_group()
    if rank != 0:
        return 0
    text = json.dumps(doc, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)
    if args.merge:
        return merge(args.merge, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
