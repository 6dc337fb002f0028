#!/usr/bin/env python3
"""test_serve.py — mk-serve end to end on a tiny random model (CPU reference backend), over
loopback, each server on an ephemeral port:
  - completion (token ids) equals mk-run's greedy tokens; streaming gives the same tokens in
    SSE chunks ending with `data: [DONE]`; usage counts; /health, /v1/models, /metrics;
  - 16 concurrent clients get exactly what each prompt gets alone (greedy);
  - every malformed request gets 400 with an OpenAI-style error body, while valid requests
    sent at the same time all succeed, and the server still serves afterwards;
  - a client that disconnects mid-stream: the request is cancelled, its KV pages freed;
  - request timeout (408, and an error event in a stream); full queue -> 429;
  - `mk-bench serve` against the server: every request completes, the block and the JSON.
usage: test_serve.py MK_SERVE MK_GEN MK_RUN MK_BENCH [TOKENIZER_DIR]"""
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

MK_SERVE, MK_GEN, MK_RUN, MK_BENCH = sys.argv[1:5]
TOKDIR = sys.argv[5] if len(sys.argv) > 5 else None
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, flush=True)


class Server:
    def __init__(self, model, *flags):
        self.p = subprocess.Popen([MK_SERVE, "--model", model, "--port", "0", *flags], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        line = self.p.stdout.readline()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if not m:
            raise SystemExit("mk-serve did not start: " + line + self.p.stdout.read())
        self.port = int(m.group(1))
        threading.Thread(target=self.p.stdout.read, daemon=True).start()  # drain logs

    def req(self, method, path, body=None, raw=None, timeout=30):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        c.request(method, path, body=data, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        out = r.read().decode()
        c.close()
        return r.status, out

    def complete(self, body):
        st, out = self.req("POST", "/v1/completions", body)
        return st, json.loads(out)

    def stream(self, body):
        st, out = self.req("POST", "/v1/completions", dict(body, stream=True))
        events = [e[len("data: "):] for e in out.split("\n\n") if e.strip()]
        return st, events, out

    def metrics(self):
        st, out = self.req("GET", "/metrics")
        vals = {}
        for line in out.splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                vals[k] = float(v)
        return vals

    def stop(self):
        self.p.terminate()
        try:
            rc = self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = -9
        check(rc == 0, f"mk-serve exit code {rc} after SIGTERM")


def greedy(model, ids, n):
    out = subprocess.run([MK_RUN, "--model", model, "--prompt-ids", ",".join(map(str, ids)), "--max-tokens", str(n)],
                         capture_output=True, text=True, check=True).stdout
    return [int(x) for x in re.search(r"^generated ids:(.*)$", out, re.M).group(1).split()]


def basic(s, model):
    ids = [5, 17, 42, 99]
    want = greedy(model, ids, 12)
    st, r = s.complete({"prompt": ids, "max_tokens": 12, "temperature": 0})
    check(st == 200, f"completion status {st}")
    ch = r["choices"][0]
    check(ch["token_ids"] == want, f"completion tokens {ch['token_ids']} != mk-run greedy {want}")
    check(ch["finish_reason"] == "length", f"finish_reason {ch['finish_reason']}")
    check(r["usage"] == {"prompt_tokens": 4, "completion_tokens": 12, "total_tokens": 16}, f"usage {r['usage']}")
    check(r["object"] == "text_completion" and r["id"].startswith("cmpl-"), f"object/id {r['object']} {r['id']}")
    st, ev, raw = s.stream({"prompt": ids, "max_tokens": 12, "temperature": 0, "stream_options": {"include_usage": True}})
    check(st == 200 and ev and ev[-1] == "[DONE]" and raw.endswith("data: [DONE]\n\n"), f"stream end: {raw[-80:]!r}")
    chunks = [json.loads(e) for e in ev[:-1]]
    got = [t for c in chunks for ch in c["choices"] for t in ch["token_ids"]]
    check(got == want, f"streamed tokens {got} != {want}")
    fins = [ch["finish_reason"] for c in chunks for ch in c["choices"]]
    check(fins[-1] == "length" and all(f is None for f in fins[:-1]), f"stream finish reasons {fins}")
    check(chunks[-1].get("usage", {}).get("completion_tokens") == 12, f"stream usage chunk {chunks[-1]}")
    # a seed makes sampling repeatable
    a = s.complete({"prompt": ids, "max_tokens": 10, "temperature": 0.9, "top_p": 0.9, "seed": 1234})[1]
    b = s.complete({"prompt": ids, "max_tokens": 10, "temperature": 0.9, "top_p": 0.9, "seed": 1234})[1]
    check(a["choices"][0]["token_ids"] == b["choices"][0]["token_ids"], "same seed, different tokens")
    # a stop token id ends the completion at its first occurrence
    stop = want[5]
    r = s.complete({"prompt": ids, "max_tokens": 12, "temperature": 0, "stop_token_ids": [stop]})[1]["choices"][0]
    check(r["token_ids"] == want[:want.index(stop) + 1] and r["finish_reason"] == "stop", f"stop_token_ids: {r}")
    st, out = s.req("GET", "/health")
    check(st == 200 and json.loads(out)["status"] == "ok", f"/health {st} {out}")
    st, out = s.req("GET", "/v1/models")
    check(st == 200 and json.loads(out)["data"][0]["id"] == os.path.basename(model), f"/v1/models {out}")
    st, out = s.req("GET", "/nope")
    check(st == 404 and "error" in json.loads(out), f"/nope {st}")
    m = s.metrics()
    for k in ["mk_requests_running", "mk_requests_waiting", "mk_kv_pages_used", "mk_kv_usage_ratio",
              "mk_generation_tokens_total", "mk_prompt_tokens_total", "mk_time_to_first_token_seconds_count",
              "mk_inter_token_latency_seconds_count", 'mk_time_to_first_token_seconds_bucket{le="+Inf"}',
              'mk_requests_total{finish_reason="length"}']:
        check(k in m, f"/metrics lacks {k}")
    check(m.get("mk_generation_tokens_total", 0) >= 12 + 12 + 20, f"generation tokens {m.get('mk_generation_tokens_total')}")
    check(m.get("mk_time_to_first_token_seconds_count", 0) >= 4, "TTFT histogram count")
    # every engine step's forward is in the step histogram; the sampling time is counted
    check(m.get("mk_engine_forward_seconds_count", -1) == m.get("mk_engine_steps_total", -2) > 0
          and m.get("mk_engine_forward_seconds_sum", 0) > 0 and m.get("mk_engine_sample_seconds_total", -1) >= 0,
          f"step metrics: {[(k, v) for k, v in m.items() if k.startswith('mk_engine')]}")
    check(m.get("mk_kv_pages_used") == 0 and m.get("mk_requests_running") == 0, "pages or requests left over")


def concurrent(s, model):
    prompts = [[(7 * i + 3 * k) % 256 for k in range(1 + i % 9)] for i in range(16)]
    want = [greedy(model, p, 10) for p in prompts]
    got = [None] * 16

    def one(i):
        st, r = s.complete({"prompt": prompts[i], "max_tokens": 10, "temperature": 0})
        got[i] = r["choices"][0]["token_ids"] if st == 200 else st

    th = [threading.Thread(target=one, args=(i,)) for i in range(16)]
    for t in th:
        t.start()
    for t in th:
        t.join(60)
    for i in range(16):
        check(got[i] == want[i], f"concurrent client {i}: {got[i]} != sequential {want[i]}")


MALFORMED = [
    ("bad JSON", '{"prompt": [1, 2'),
    ("not an object", '[1, 2, 3]'),
    ("no prompt", '{"max_tokens": 3}'),
    ("prompt wrong type", '{"prompt": 12}'),
    ("prompt float ids", '{"prompt": [1, 2.5]}'),
    ("prompt empty", '{"prompt": []}'),
    ("batched prompts", '{"prompt": [[1], [2]]}'),
    ("token id outside the vocabulary", '{"prompt": [1, 100000]}'),
    ("negative token id", '{"prompt": [-1]}'),
    ("negative max_tokens", '{"prompt": [1], "max_tokens": -5}'),
    ("zero max_tokens", '{"prompt": [1], "max_tokens": 0}'),
    ("max_tokens string", '{"prompt": [1], "max_tokens": "8"}'),
    ("temperature string", '{"prompt": [1], "temperature": "hot"}'),
    ("negative temperature", '{"prompt": [1], "temperature": -1}'),
    ("top_p out of range", '{"prompt": [1], "top_p": 1.5}'),
    ("seed not integer", '{"prompt": [1], "seed": "x"}'),
    ("stream not bool", '{"prompt": [1], "stream": "yes"}'),
    ("stop wrong type", '{"prompt": [1], "stop": 5}'),
    ("stop_token_ids outside the vocabulary", '{"prompt": [1], "stop_token_ids": [999]}'),
    ("n > 1", '{"prompt": [1], "n": 2}'),
    ("prompt longer than the context", json.dumps({"prompt": [1] * 70, "max_tokens": 1})),
    ("prompt + max_tokens over the context", json.dumps({"prompt": [1] * 30, "max_tokens": 40})),
]


def malformed(s, model, text_prompt_ok):
    cases = list(MALFORMED)
    if not text_prompt_ok:
        cases.append(("text prompt without a tokenizer", '{"prompt": "hello"}'))
        cases.append(("stop string without a tokenizer", '{"prompt": [1], "stop": ["x"]}'))
    good_want = greedy(model, [9, 8, 7], 6)
    good = []

    def valid():
        st, r = s.complete({"prompt": [9, 8, 7], "max_tokens": 6, "temperature": 0})
        good.append(r["choices"][0]["token_ids"] if st == 200 else st)

    th = [threading.Thread(target=valid) for _ in range(6)]
    for t in th:
        t.start()
    for what, body in cases:
        st, out = s.req("POST", "/v1/completions", raw=body)
        try:
            err = json.loads(out)["error"]
            ok = isinstance(err["message"], str) and err["message"] and err["type"] == "invalid_request_error"
        except Exception:
            ok = False
        check(st == 400 and ok, f"malformed ({what}): HTTP {st} {out[:200]}")
    st, out = s.req("GET", "/v1/completions")
    check(st == 405, f"GET /v1/completions: {st}")
    st, out = s.req("POST", "/v1/completions", {"prompt": [1], "model": "other"})
    check(st == 404 and "error" in json.loads(out), f"unknown model: {st}")
    for t in th:
        t.join(60)
    check(good == [good_want] * 6, f"valid requests during the malformed ones: {good}")
    st, r = s.complete({"prompt": [9, 8, 7], "max_tokens": 6, "temperature": 0})
    check(st == 200 and r["choices"][0]["token_ids"] == good_want, "server no longer serves after malformed requests")


def open_stream(port, body):
    sk = socket.create_connection(("127.0.0.1", port), timeout=10)
    data = json.dumps(dict(body, stream=True)).encode()
    sk.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
               % len(data) + data)
    return sk


def wait_metrics(s, cond, what, tries=200):
    for _ in range(tries):
        m = s.metrics()
        if cond(m):
            return m
        time.sleep(0.05)
    check(False, f"{what}: metrics {m}")
    return m


def slow(s):
    # disconnect mid-stream
    sk = open_stream(s.port, {"prompt": [1, 2, 3], "max_tokens": 500, "ignore_eos": True})
    buf = b""
    while buf.count(b"data: ") < 3:
        d = sk.recv(4096)
        if not d:
            break
        buf += d
    check(b"HTTP/1.1 200" in buf and buf.count(b"data: ") >= 3, f"stream before the disconnect: {buf[:300]!r}")
    m = s.metrics()
    check(m["mk_requests_running"] == 1 and m["mk_kv_pages_used"] > 0, f"running stream: {m}")
    sk.close()
    wait_metrics(s, lambda m: m["mk_requests_running"] == 0 and m["mk_kv_pages_used"] == 0 and m["mk_kv_pages_reserved"] == 0
                 and m['mk_requests_total{finish_reason="abort"}'] >= 1, "disconnected stream not cancelled / pages not freed")
    # timeout: whole response and stream
    st, out = s.req("POST", "/v1/completions", {"prompt": [1, 2, 3], "max_tokens": 500})
    check(st == 408 and json.loads(out)["error"]["type"] == "timeout_error", f"timeout: {st} {out[:200]}")
    st, ev, raw = s.stream({"prompt": [1, 2, 3], "max_tokens": 500})
    check(ev[-1] == "[DONE]" and "error" in json.loads(ev[-2]), f"timeout in a stream: {raw[-300:]!r}")
    # queue full: one running (max batch 1), one waiting (max waiting 1), the next is refused
    a = open_stream(s.port, {"prompt": [1], "max_tokens": 500})
    wait_metrics(s, lambda m: m["mk_requests_running"] == 1, "first request not running")
    b = open_stream(s.port, {"prompt": [2], "max_tokens": 500})
    wait_metrics(s, lambda m: m["mk_requests_waiting"] == 1, "second request not waiting")
    st, out = s.req("POST", "/v1/completions", {"prompt": [3], "max_tokens": 5})
    check(st == 429 and json.loads(out)["error"]["message"], f"queue full: {st} {out[:200]}")
    a.close()
    b.close()
    wait_metrics(s, lambda m: m["mk_requests_running"] == 0 and m["mk_requests_waiting"] == 0 and m["mk_kv_pages_used"] == 0,
                 "requests left after the queue test")


def byte_decoder(tok):
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    u2b = {chr(c): b for b, c in zip(bs, cs)}
    strs = {i: (s, False) for s, i in tok["model"]["vocab"].items()}
    for a in tok["added_tokens"]:
        strs[a["id"]] = (a["content"], a["special"])

    def decode(ids):
        out = b""
        for i in ids:
            if i not in strs or strs[i][1]:
                continue
            s, _ = strs[i]
            out += s.encode() if i >= 420 else bytes(u2b[ch] for ch in s)
        return out.decode("utf-8", errors="replace")
    return decode


def text_prompts(s, model, tokfile, golden):
    decode = byte_decoder(json.load(open(tokfile)))
    for case in [c for c in golden if c["tokenizer"] == os.path.basename(tokfile)][:6]:
        want = greedy(model, case["ids"], 12)
        st, r = s.complete({"prompt": case["text"], "max_tokens": 12, "temperature": 0})
        check(st == 200, f"text prompt {case['text']!r}: {st} {r}")
        ch = r["choices"][0]
        check(r["usage"]["prompt_tokens"] == len(case["ids"]), f"text prompt {case['text']!r}: {r['usage']} vs {case['ids']}")
        check(ch["token_ids"] == want, f"text prompt {case['text']!r}: tokens {ch['token_ids']} != greedy {want}")
        check(ch["text"] == decode(want), f"text {ch['text']!r} != decode {decode(want)!r}")
        st, ev, raw = s.stream({"prompt": case["text"], "max_tokens": 12, "temperature": 0})
        streamed = "".join(c["text"] for e in ev[:-1] for c in json.loads(e)["choices"])
        check(streamed == ch["text"], f"streamed text {streamed!r} != {ch['text']!r}")
        full = ch["text"]
        if len(full) >= 6:
            stop = full[len(full) // 2: len(full) // 2 + 2]
            cut = full[:full.find(stop)]
            r = s.complete({"prompt": case["text"], "max_tokens": 12, "temperature": 0, "stop": [stop, "\x01never"]})[1]
            check(r["choices"][0]["text"] == cut and r["choices"][0]["finish_reason"] == "stop",
                  f"stop {stop!r}: {r['choices'][0]} want text {cut!r}")
            st, ev, raw = s.stream({"prompt": case["text"], "max_tokens": 12, "temperature": 0, "stop": stop})
            streamed = "".join(c["text"] for e in ev[:-1] for c in json.loads(e)["choices"])
            check(streamed == cut, f"streamed stop {stop!r}: {streamed!r} want {cut!r}")
    st, out = s.req("POST", "/v1/completions", raw=b'{"prompt": "bad \xff utf8"}')
    check(st == 400, f"invalid UTF-8 prompt: {st}")


def bench(s, tmp):
    out = os.path.join(tmp, "bench.json")
    r = subprocess.run([MK_BENCH, "serve", "--port", str(s.port), "--num-prompts", "12", "--concurrency", "4",
                        "--input-len", "6", "--output-len", "8", "--request-rate", "200", "--json", out],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and "Serving Benchmark Result" in r.stdout and "Median ITL (ms):" in r.stdout,
          f"mk-bench serve: rc {r.returncode}\n{r.stdout}{r.stderr}")
    j = json.load(open(out)) if os.path.exists(out) else {}
    check(j.get("completed") == 12 and j.get("total_output_tokens") == 96 and j.get("mean_ttft_ms", -1) > 0,
          f"mk-bench serve JSON: {j}")
    check(all(k in j for k in ("gpu", "commit", "date", "command")), f"mk-bench serve JSON lacks its metadata: {j}")
    # --duration: requests start for that long only; every started one completes and counts.
    r = subprocess.run([MK_BENCH, "serve", "--port", str(s.port), "--duration", "1.5", "--concurrency", "3",
                        "--input-len", "4", "--output-len", "4", "--json", out], capture_output=True, text=True, timeout=60)
    j = json.load(open(out)) if os.path.exists(out) else {}
    check(r.returncode == 0 and j.get("completed", 0) >= 3 and j.get("failed") == 0 and j.get("num_prompts") == j.get("completed")
          and j.get("duration_target_s") == 1.5 and 1.4 < j.get("duration_s", 0) < 30,
          f"mk-bench serve --duration 1.5: rc {r.returncode} {r.stderr} {j}")
    r = subprocess.run([MK_BENCH, "serve", "--port", str(s.port), "--duration", "0"], capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and "--duration" in r.stderr, f"mk-bench serve --duration 0: rc {r.returncode} {r.stderr}")
    r = subprocess.run([MK_BENCH, "serve", "--port", str(s.port), "--num-prompts", "2", "--input-len", "100"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 1 and "HTTP 400" in r.stderr, f"mk-bench serve with failing requests: rc {r.returncode} {r.stderr}")


def main():
    tmp = tempfile.mkdtemp(prefix="mk_test_serve_")
    try:
        model = os.path.join(tmp, "tiny")
        subprocess.run([MK_GEN, "--family", "qwen3_moe", "--out", model, "--seed", "11"], check=True, capture_output=True)
        s = Server(model, "--max-model-len", "64", "--kv-pages", "256", "--block-size", "4")
        try:
            basic(s, model)
            concurrent(s, model)
            malformed(s, model, text_prompt_ok=False)
            bench(s, tmp)
        finally:
            s.stop()
        if TOKDIR:
            tmodel = os.path.join(tmp, "tok")
            subprocess.run([MK_GEN, "--family", "qwen3_moe", "--out", tmodel, "--seed", "12", "--vocab", "448"],
                           check=True, capture_output=True)
            shutil.copy(os.path.join(TOKDIR, "tok_split.json"), os.path.join(tmodel, "tokenizer.json"))
            golden = json.load(open(os.path.join(TOKDIR, "golden.json")))["cases"]
            s = Server(tmodel, "--max-model-len", "64")
            try:
                text_prompts(s, tmodel, os.path.join(TOKDIR, "tok_split.json"), golden)
                malformed(s, tmodel, text_prompt_ok=True)
            finally:
                s.stop()
        s = Server(model, "--debug-step-delay-ms", "20", "--request-timeout-ms", "1500", "--max-batch", "1",
                   "--max-waiting", "1")
        try:
            slow(s)
        finally:
            s.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILS:
        print(f"{len(FAILS)} check(s) failed")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
