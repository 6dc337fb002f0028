#!/usr/bin/env python3
"""shared_gpu.py — the multigpu tests on fewer GPUs: every ctest test labelled multigpu whose name matches REGEX and
whose command runs mk-launch, run with `--gpus G` added to that mk-launch (rank r on GPU r % G, MK_GPU_SHARE=1: the
ranks' kernels take turns on a GPU), one after the other, each under a wall-clock limit. For the sessions lent one
GPU: the multi-rank logic runs, its timing means nothing. A test whose path needs NCCL fails there (NCCL refuses
ranks that share a GPU).

  shared_gpu.py --build build-gpu [--gpus 1] [--timeout 120] [--logs DIR] [--list] REGEX

Prints one line a test (name, rc, seconds) and a summary; exits 1 if any test failed or timed out."""
import argparse
import json
import os
import re
import subprocess
import sys
import time


def tests(build):
    out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"], check=True, capture_output=True,
                         text=True).stdout
    for t in json.loads(out)["tests"]:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        yield t["name"], t.get("command", []), props


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("regex")
    ap.add_argument("--build", default="build-gpu")
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=120, help="seconds a test")
    ap.add_argument("--logs", help="folder for one log a test")
    ap.add_argument("--list", action="store_true", help="print the commands, run nothing")
    a = ap.parse_args()
    if a.gpus < 1:
        sys.exit("shared_gpu.py: --gpus must be >= 1")
    pat = re.compile(a.regex)
    picked = []
    for name, cmd, props in tests(a.build):
        labels = props.get("LABELS", [])
        if "multigpu" not in labels or not pat.search(name):
            continue
        at = [i for i, c in enumerate(cmd) if os.path.basename(c) == "mk-launch"]
        if not at:
            continue
        picked.append((name, cmd[:at[0] + 1] + ["--gpus", str(a.gpus)] + cmd[at[0] + 1:], props))
    if not picked:
        sys.exit(f"shared_gpu.py: no multigpu test under mk-launch matches '{a.regex}'")
    if a.logs:
        os.makedirs(a.logs, exist_ok=True)
    bad = []
    for name, cmd, props in picked:
        if a.list:
            print(name, " ".join(cmd))
            continue
        env = dict(os.environ)
        for kv in props.get("ENVIRONMENT", []):
            k, _, v = kv.partition("=")
            env[k] = v
        t0 = time.time()
        try:
            p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=a.timeout,
                               cwd=props.get("WORKING_DIRECTORY"))
            rc, log = p.returncode, p.stdout
        except subprocess.TimeoutExpired as e:
            rc, log = "timeout", e.stdout or b""
        dt = time.time() - t0
        if a.logs:
            with open(os.path.join(a.logs, name + ".log"), "wb") as f:
                f.write(log)
        ok = rc == 0 or rc == 77
        if not ok:
            bad.append(name)
        print(f"{name}: rc={rc} {dt:.0f} s{'  (skipped)' if rc == 77 else ''}", flush=True)
        if not ok:
            for line in log.decode(errors="replace").splitlines()[-8:]:
                print("   ", line)
    if not a.list:
        print(f"shared_gpu: {len(picked) - len(bad)} of {len(picked)} passed on {a.gpus} GPU(s)"
              + (f"; failed: {' '.join(bad)}" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
