#!/usr/bin/env python3
"""test_serve_ranks.py — mk-serve on several ranks (CPU reference backend on every rank; rank 0
serves and broadcasts each step's plan, the followers run the same calls):
  - `mk-launch -n 2 -- mk-serve`: completions equal mk-run's greedy tokens (what one rank
    gives), streaming ends with `data: [DONE]`, concurrent clients, an idle pause longer than
    the followers' bounded wait (MK_BOOTSTRAP_TIMEOUT_MS=1500: heartbeats keep them waiting);
    SIGTERM to mk-launch stops every rank cleanly (the follower says rank 0 stopped it);
  - ranks started by hand (torchrun variables): a follower killed with SIGKILL -> rank 0 exits
    1 within seconds, naming rank 1; rank 0 killed -> the follower exits 1, naming rank 0.
With --gpus N [--nodes K] [--path P]: the GPU backend under `mk-launch -n N [--nodes K]`, the
same checks against `mk-launch ... mk-run` (the GPU model's greedy tokens); exits 77 (skipped)
with fewer than N GPUs.
With --ranks N (CPU backend): the mk-launch checks on N ranks instead of 2 (the by-hand ones
are skipped), e.g. 8 for the plan broadcast to 7 followers.
usage: test_serve_ranks.py MK_LAUNCH MK_SERVE MK_GEN MK_RUN [--gpus N [--nodes K] [--path P] | --ranks N]"""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

MK_LAUNCH, MK_SERVE, MK_GEN, MK_RUN = sys.argv[1:5]
OPT = dict(zip(sys.argv[5::2], sys.argv[6::2]))
GPUS = int(OPT.get("--gpus", 0))
RANKS = GPUS or int(OPT.get("--ranks", 2))
LAUNCH = ["-n", str(RANKS)] + (["--nodes", OPT["--nodes"]] if "--nodes" in OPT else [])
FAILS = []
FLAGS = ["--port", "0", "--max-model-len", "64", "--kv-pages", "256", "--block-size", "4", "--max-batch", "4"]
FLAGS += ["--gpus", "--path", OPT.get("--path", "unfused")] if GPUS else []
ENV = dict(os.environ, MK_BOOTSTRAP_TIMEOUT_MS="1500" if not GPUS else "60000", NCCL_NVLS_ENABLE="0")


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, flush=True)


class Proc:
    """A process whose merged output is collected by a thread; wait_for() a regex in it."""

    def __init__(self, argv, env):
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        self.out, self.cv = "", threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            sys.stdout.write("  | " + line)
            with self.cv:
                self.out += line
                self.cv.notify_all()

    def wait_for(self, pattern, timeout):
        end = time.time() + timeout
        with self.cv:
            while True:
                m = re.search(pattern, self.out)
                if m or time.time() >= end:
                    return m
                self.cv.wait(0.2)

    def wait(self, timeout):
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            return None


def req(port, body, timeout=30):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    out = r.read().decode()
    c.close()
    return r.status, out


def greedy(model, ids, n):
    run = [MK_RUN, "--model", model, "--prompt-ids", ",".join(map(str, ids)), "--max-tokens", str(n)]
    if GPUS:
        run = [MK_LAUNCH, *LAUNCH, "--", *run, "--gpus", "--path", OPT.get("--path", "unfused")]
    out = subprocess.run(run, capture_output=True, text=True, check=True, env=ENV).stdout
    return [int(x) for x in re.search(r"^(?:\[0\] )?generated ids:(.*)$", out, re.M).group(1).split()]


def under_launch(model):
    p = Proc([MK_LAUNCH, *LAUNCH, "--", MK_SERVE, "--model", model, *FLAGS], ENV)
    be = f"gpu, {GPUS}" if GPUS else f"cpu-reference, {RANKS}"
    be = be.replace(", ", r"(?:, path \w+)?, ")  # the GPU backend's label names the path: "gpu, path fused, 4"
    m = p.wait_for(r"\[0\] mk-serve: listening on http://127\.0\.0\.1:(\d+).*backend " + be + " rank", 120)
    if not m:
        p.p.kill()
        check(False, f"mk-launch {' '.join(LAUNCH)} -- mk-serve did not start")
        return
    port = int(m.group(1))
    ids = [5, 17, 42, 99]
    want = greedy(model, ids, 12)
    st, out = req(port, {"prompt": ids, "max_tokens": 12, "temperature": 0})
    check(st == 200 and json.loads(out)["choices"][0]["token_ids"] == want, f"2 ranks: {st} {out} != {want}")
    st, out = req(port, {"prompt": ids, "max_tokens": 12, "temperature": 0, "stream": True})
    ev = [e[len("data: "):] for e in out.split("\n\n") if e.strip()]
    got = [t for e in ev[:-1] for ch in json.loads(e)["choices"] for t in ch["token_ids"]]
    check(st == 200 and ev[-1] == "[DONE]" and got == want, f"2 ranks, streamed: {got} != {want}")
    prompts = [[(7 * i + 3 * k) % 256 for k in range(1 + i % 5)] for i in range(6)]
    wants = [greedy(model, q, 8) for q in prompts]
    got = [None] * len(prompts)

    def one(i):
        s, o = req(port, {"prompt": prompts[i], "max_tokens": 8, "temperature": 0})
        got[i] = json.loads(o)["choices"][0]["token_ids"] if s == 200 else s

    th = [threading.Thread(target=one, args=(i,)) for i in range(len(prompts))]
    for t in th:
        t.start()
    for t in th:
        t.join(60)
    for i in range(len(prompts)):
        check(got[i] == wants[i], f"2 ranks, concurrent client {i}: {got[i]} != {wants[i]}")
    time.sleep(3)  # idle for twice the followers' bounded wait: heartbeats keep them
    st, out = req(port, {"prompt": ids, "max_tokens": 4, "temperature": 0})
    check(st == 200 and json.loads(out)["choices"][0]["token_ids"] == want[:4], f"2 ranks after idling: {st} {out}")
    t0 = time.time()
    p.p.send_signal(signal.SIGTERM)
    rc = p.wait(20)
    check(rc is not None and time.time() - t0 < 10, f"mk-launch took {time.time() - t0:.1f} s to stop (rc {rc})")
    check(p.wait_for(r"\[1\] mk-serve: rank 1: rank 0 stopped after \d+ steps", 1), "the follower did not stop cleanly")
    check(not re.search(r"exited with code|died from signal|killing them", p.out), "a rank did not stop cleanly")


def by_hand(model, kill_rank):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    ps = []
    for r in range(2):
        env = dict(ENV, RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r), LOCAL_WORLD_SIZE="2",
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        ps.append(Proc([MK_SERVE, "--model", model, *FLAGS], env))
    m = ps[0].wait_for(r"listening on http://127\.0\.0\.1:(\d+)", 60)
    check(m is not None, "hand-started ranks did not start")
    if m:
        st, out = req(int(m.group(1)), {"prompt": [1, 2, 3], "max_tokens": 3, "temperature": 0})
        check(st == 200, f"hand-started ranks: {st} {out}")
    other = 1 - kill_rank
    ps[kill_rank].p.kill()
    t0 = time.time()
    rc = ps[other].wait(20)
    dt = time.time() - t0
    check(rc == 1 and dt < 8, f"rank {kill_rank} killed: rank {other} exit {rc} after {dt:.1f} s (want 1 within 8 s)")
    want = r"rank 1 died|lost the other ranks" if kill_rank == 1 else r"rank 0 .*\(rank 0 died\)|lost rank 0"
    check(re.search(want, ps[other].out) is not None, f"rank {kill_rank} killed: no clear error from rank {other}")
    ps[kill_rank].wait(5)


def main():
    if GPUS:
        n = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.count("GPU ") \
            if shutil.which("nvidia-smi") else 0
        if n < GPUS:
            print(f"skipped: {n} GPU(s), need {GPUS}")
            sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="mk_test_serve_ranks_")
    try:
        model = os.path.join(tmp, "tiny")
        sizes = ["--hidden", "256", "--heads", "8", "--kv-heads", "4", "--head-dim", "64", "--experts", "8"] if GPUS else []
        subprocess.run([MK_GEN, "--family", "qwen3_moe", "--out", model, "--seed", "11", *sizes], check=True,
                       capture_output=True)
        under_launch(model)
        if not GPUS and RANKS == 2:
            by_hand(model, 1)
            by_hand(model, 0)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILS:
        print(f"{len(FAILS)} failure(s)")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
