#!/usr/bin/env python3
"""parity_transformers.py — the fp32 reference (mk-run) against HF transformers.

For each family (mixtral, qwen2_moe, qwen3_moe, olmoe) it builds a tiny model with
transformers from a config, randomises every parameter (so logits are far from ties),
saves it with save_pretrained (safetensors) and, a second time, as its raw state dict
(transformers 5 holds experts as fused 3-D gate_up_proj/down_proj tensors), then runs the same prompt through transformers
(fp32, eager attention, greedy, no cache) and through `mk-run --logits-out`, and compares
the logits of every position (relative Frobenius error <= 1e-4) and the greedy tokens.

  python3 tests/parity/parity_transformers.py --mk-run build/bin/mk-run --out docs/parity/parity.json

With --launch N the GPU engine runs instead (mk-run --gpus under mk-launch -n N [--nodes K]),
compared at the GPU tolerance (relative error <= 2e-2, identical greedy tokens):

  python3 tests/parity/parity_transformers.py --mk-run build/bin/mk-run --launch 4 --nodes 2 \
      --mk-launch build/bin/mk-launch --out docs/parity/parity_gpu4x2.json

With --bf16 the CPU reference runs in its bf16-faithful mode (mk-run --bf16: rounded where the
GPU engine stores bf16), compared at the GPU tolerance: what bf16 alone costs, without a GPU.

Every family is also run teacher-forced (one prefill of transformers' 39 tokens) and reported
with transformers' router margins: a position at a routing near tie may pick another expert in
bf16 (an expert flip), which moves its logits and, through attention, later positions'.

Needs torch and transformers (not part of the build or of ctest). Exit code 0 only if every
family passes."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM

PROMPT = [1, 5, 9, 200, 17, 33, 2, 101]
TOL = 1e-4
TOL_GPU = 2e-2
LAUNCH = None  # [mk-launch, -n, N, (--nodes, K)] when the GPU engine runs
BF16 = False  # mk-run --bf16 (the CPU reference's bf16-faithful mode), GPU tolerance


def configs():
    common = dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, vocab_size=256,
                  max_position_embeddings=256, rms_norm_eps=1e-6, tie_word_embeddings=False)
    return {
        "mixtral": transformers.MixtralConfig(**common, head_dim=16, num_local_experts=4, num_experts_per_tok=2,
                                              intermediate_size=32, sliding_window=None),
        "qwen2_moe": transformers.Qwen2MoeConfig(**common, num_experts=4, num_experts_per_tok=2,
                                                 moe_intermediate_size=32, shared_expert_intermediate_size=48,
                                                 intermediate_size=96, decoder_sparse_step=1, mlp_only_layers=[1],
                                                 norm_topk_prob=False, use_sliding_window=False),
        "qwen3_moe": transformers.Qwen3MoeConfig(**common, head_dim=16, num_experts=4, num_experts_per_tok=2,
                                                 moe_intermediate_size=32, intermediate_size=96,
                                                 norm_topk_prob=True, use_sliding_window=False),
        "olmoe": transformers.OlmoeConfig(**{**common, "tie_word_embeddings": True}, num_experts=4,
                                          num_experts_per_tok=2, intermediate_size=32, norm_topk_prob=False),
    }


def randomise(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name and p.dim() == 1:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:
                fan_in = p.shape[-1]
                scale = 1.0 if "embed" in name else 1.0 / fan_in ** 0.5
                p.copy_(scale * torch.randn(p.shape, generator=g))


def save_state_dict(model, d, src):
    """The in-memory state dict as it is (transformers 5: fused 3-D expert tensors)."""
    from safetensors.torch import save_file
    os.makedirs(d, exist_ok=True)
    save_file({k: v.detach().contiguous().clone() for k, v in model.state_dict().items()},
              os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(src, "config.json")) as f, open(os.path.join(d, "config.json"), "w") as g:
        g.write(f.read())


def run_family(name, cfg, mk_run, steps, workdir, seed, layout):
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
    randomise(model, seed)
    d = os.path.join(workdir, name)
    model.save_pretrained(d, safe_serialization=True)
    if layout == "state_dict":
        save_state_dict(model, d + "_sd", d)
        d = d + "_sd"
    seq = list(PROMPT)
    with torch.no_grad():
        for _ in range(steps):
            logits = model(torch.tensor([seq]), use_cache=False).logits[0]
            seq.append(int(torch.argmax(logits[-1])))
        hf_logits = model(torch.tensor([seq[:-1]]), use_cache=False).logits[0].double().numpy()
    hf_tokens = seq[len(PROMPT):]
    out = os.path.join(workdir, name + layout + ".logits")
    cmd = [mk_run, "--model", d, "--prompt-ids", ",".join(map(str, PROMPT)), "--max-tokens", str(steps),
           "--logits-out", out]
    if LAUNCH:
        cmd = LAUNCH + ["--"] + cmd + ["--gpus"]
    elif BF16:
        cmd += ["--bf16"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, NCCL_NVLS_ENABLE="0"))
    res = {"family": name, "saved_with": layout, "command": " ".join(cmd), "hf_tokens": hf_tokens}
    if r.returncode != 0:
        res.update(passed=False, error=(r.stdout + r.stderr)[-2000:])
        return res
    mk_tokens = []
    for line in r.stdout.splitlines():
        if LAUNCH:  # mk-launch prefixes each line with "[rank] "; rank 0 prints the results
            if not line.startswith("[0] "):
                continue
            line = line[4:]
        if line.startswith("generated ids:"):
            mk_tokens = [int(x) for x in line.split(":")[1].split()]
    mk_logits = np.fromfile(out, dtype="<f4").astype(np.float64).reshape(hf_logits.shape)
    rel = float(np.linalg.norm(mk_logits - hf_logits) / np.linalg.norm(hf_logits))
    rel_pos = [float(np.linalg.norm(mk_logits[i] - hf_logits[i]) / np.linalg.norm(hf_logits[i]))
               for i in range(hf_logits.shape[0])]
    import safetensors
    keys = []
    for fn in sorted(os.listdir(d)):
        if fn.endswith(".safetensors"):
            with safetensors.safe_open(os.path.join(d, fn), "pt") as f:
                keys += list(f.keys())
    fused = any("gate_up_proj" in k for k in keys)
    res.update(mk_tokens=mk_tokens, tokens_match=mk_tokens == hf_tokens, rel_err=rel, max_rel_err_position=max(rel_pos),
               max_abs_err=float(np.abs(mk_logits - hf_logits).max()), positions=int(hf_logits.shape[0]),
               checkpoint_experts="fused 3-D" if fused else "per-expert", tensors=len(keys))
    if not res["tokens_match"]:
        res.update(divergence(mk_logits, hf_logits, mk_tokens, hf_tokens))
    res.update(teacher_forced(cmd, out, hf_logits, hf_tokens, route_margins(model, seq[:-1])))
    res["passed"] = bool(res["tokens_match"] and rel <= (TOL_GPU if LAUNCH or BF16 else TOL))
    return res


def divergence(mk_logits, hf_logits, mk_tokens, hf_tokens):
    """Where the greedy tokens first differ: the logits row p that chose token s (the inputs of rows
    0..p are the same for both), the error of the rows up to p, and both sides' margin between the two
    candidates at p (a margin under the logits' error there is a near-tie, not a wrong model)."""
    n = min(len(mk_tokens), len(hf_tokens))
    s = next((i for i in range(n) if mk_tokens[i] != hf_tokens[i]), n)
    p = len(PROMPT) - 1 + s
    if s >= n or p >= hf_logits.shape[0]:
        return {"first_differing_step": s}
    a, b = hf_tokens[s], mk_tokens[s]
    pre_m, pre_h = mk_logits[:p + 1], hf_logits[:p + 1]
    return {"first_differing_step": s, "rel_err_before_divergence": float(np.linalg.norm(pre_m - pre_h) /
                                                                         np.linalg.norm(pre_h)),
            "max_abs_err_before_divergence": float(np.abs(pre_m - pre_h).max()),
            "max_abs_err_at_divergence": float(np.abs(mk_logits[p] - hf_logits[p]).max()),
            "hf_margin": float(hf_logits[p][a] - hf_logits[p][b]), "mk_margin": float(mk_logits[p][b] - mk_logits[p][a])}


def route_margins(model, seq):
    """Per position, over the MoE layers, the smallest relative top-k router margin of transformers'
    model ((k-th largest - (k+1)-th largest router logit) / (largest - smallest), as
    mk_ref_route_margin): where it is small a bf16 engine may pick another expert (an "expert
    flip"), which moves that row's logits by 0.1..0.5 (rel.) and later rows through attention.
    None if this transformers version does not return router logits."""
    try:
        with torch.no_grad():
            r = model(torch.tensor([seq]), use_cache=False, output_router_logits=True).router_logits
        k = model.config.num_experts_per_tok
        m = np.full(len(seq), np.inf)
        for lg in r or ():
            if lg is None:
                continue
            v = lg.reshape(len(seq), -1).double().numpy()
            if v.shape[1] <= k:
                continue
            s = -np.sort(-v, axis=1)
            spread = s[:, 0] - s[:, -1]
            m = np.minimum(m, np.where(spread > 0, (s[:, k - 1] - s[:, k]) / np.where(spread > 0, spread, 1), np.inf))
        return [float(x) for x in m]
    except Exception:  # noqa: BLE001 (a diagnostic only)
        return None


def teacher_forced(cmd, out, hf_logits, hf_tokens, margins=None):
    """The same model on transformers' own token sequence (prompt + its greedy tokens, one prefill of
    39 tokens), run for every family: logits of every position against transformers', how many
    positions pick the same argmax, the worst position, and (with transformers' router margins) the
    positions at a routing near tie (margin < 2e-2) and the error without them."""
    seq = list(PROMPT) + hf_tokens[:-1]
    c = list(cmd)
    c[c.index("--prompt-ids") + 1] = ",".join(map(str, seq))
    c[c.index("--max-tokens") + 1] = "1"
    tf = out + ".tf"
    c[c.index("--logits-out") + 1] = tf
    r = subprocess.run(c, capture_output=True, text=True, env=dict(os.environ, NCCL_NVLS_ENABLE="0"))
    if r.returncode != 0:
        return {"teacher_forced_error": (r.stdout + r.stderr)[-1000:]}
    m = np.fromfile(tf, dtype="<f4").astype(np.float64)
    if m.size != hf_logits.size:
        return {"teacher_forced_error": f"{m.size} logits, want {hf_logits.size}"}
    m = m.reshape(hf_logits.shape)
    same = int((m.argmax(axis=1) == hf_logits.argmax(axis=1)).sum())
    rel_pos = np.linalg.norm(m - hf_logits, axis=1) / np.linalg.norm(hf_logits, axis=1)
    res = {"teacher_forced_rel_err": float(np.linalg.norm(m - hf_logits) / np.linalg.norm(hf_logits)),
           "teacher_forced_same_argmax": same, "teacher_forced_positions": int(hf_logits.shape[0]),
           "teacher_forced_worst_position": int(rel_pos.argmax()),
           "teacher_forced_worst_position_rel_err": float(rel_pos.max()),
           "teacher_forced_passed": bool(np.linalg.norm(m - hf_logits) <= (TOL_GPU if LAUNCH or BF16 else TOL) *
                                         np.linalg.norm(hf_logits))}
    if margins is not None and len(margins) == hf_logits.shape[0]:
        ties = [i for i, x in enumerate(margins) if x < 2e-2]
        keep = [i for i in range(hf_logits.shape[0]) if i not in ties]
        res.update(teacher_forced_route_margins=margins, teacher_forced_near_tie_positions=ties,
                   teacher_forced_worst_position_route_margin=margins[int(rel_pos.argmax())])
        if keep:
            res["teacher_forced_rel_err_without_near_ties"] = float(np.linalg.norm(m[keep] - hf_logits[keep]) /
                                                                    np.linalg.norm(hf_logits[keep]))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mk-run", required=True)
    ap.add_argument("--out", required=True, help="JSON results")
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--families", default="mixtral,qwen2_moe,qwen3_moe,olmoe")
    ap.add_argument("--launch", type=int, default=0, help="run mk-run --gpus under mk-launch -n N")
    ap.add_argument("--nodes", type=int, default=1, help="with --launch: emulated nodes (mk-launch --nodes)")
    ap.add_argument("--mk-launch", default=None, help="with --launch: path of mk-launch (default: beside mk-run)")
    ap.add_argument("--bf16", action="store_true", help="the CPU reference's bf16-faithful mode (mk-run --bf16)")
    a = ap.parse_args()
    global LAUNCH, BF16
    BF16 = a.bf16 and not a.launch
    if a.launch:
        ml = a.mk_launch or os.path.join(os.path.dirname(os.path.abspath(a.mk_run)), "mk-launch")
        LAUNCH = [os.path.abspath(ml), "-n", str(a.launch)] + (["--nodes", str(a.nodes)] if a.nodes > 1 else [])
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    results = []
    with tempfile.TemporaryDirectory() as wd:
        cfgs = configs()
        for fam in a.families.split(","):
            for layout in ("save_pretrained", "state_dict"):
                results.append(run_family(fam, cfgs[fam], os.path.abspath(a.mk_run), a.steps, wd, a.seed, layout))
    print(f"{'family':<10} {'saved with':<16} {'experts':<11} {'positions':>9} {'rel err':>10} {'max abs':>10} "
          f"{'tokens':>8} {'forced':>10}  result")
    for r in results:
        if "rel_err" in r:
            print(f"{r['family']:<10} {r['saved_with']:<16} {r['checkpoint_experts']:<11} {r['positions']:>9} "
                  f"{r['rel_err']:>10.2e} "
                  f"{r['max_abs_err']:>10.2e} {('same' if r['tokens_match'] else 'DIFFER'):>8} "
                  f"{r.get('teacher_forced_rel_err', float('nan')):>10.2e}  "
                  f"{'PASS' if r['passed'] else 'FAIL'}")
        else:
            print(f"{r['family']:<10} mk-run failed: {r['error'][-300:]}")
        if "hf_margin" in r:
            print(f"{'':<10} first differing step {r['first_differing_step']}: rel err before it "
                  f"{r['rel_err_before_divergence']:.2e}, max abs err there {r['max_abs_err_at_divergence']:.3f}, "
                  f"margins hf {r['hf_margin']:.4f} / mk {r['mk_margin']:.4f}")
        if "teacher_forced_rel_err" in r:
            line = (f"{'':<10} teacher-forced on transformers' tokens: rel err {r['teacher_forced_rel_err']:.2e}, "
                    f"same argmax at {r['teacher_forced_same_argmax']}/{r['teacher_forced_positions']} positions, "
                    f"worst position {r['teacher_forced_worst_position']} "
                    f"({r['teacher_forced_worst_position_rel_err']:.2e}")
            if "teacher_forced_worst_position_route_margin" in r:
                line += (f", router margin there {r['teacher_forced_worst_position_route_margin']:.4f}); near ties at "
                         f"{r['teacher_forced_near_tie_positions']}, rel err without them "
                         f"{r.get('teacher_forced_rel_err_without_near_ties', float('nan')):.2e}")
            else:
                line += ")"
            print(line)
        elif "teacher_forced_error" in r:
            print(f"{'':<10} teacher-forced run failed: {r['teacher_forced_error'][-300:]}")
    ok = all(r["passed"] for r in results)
    doc = {"tool": "tests/parity/parity_transformers.py", "torch": torch.__version__,
           "transformers": transformers.__version__, "prompt": PROMPT, "steps": a.steps,
           "tolerance": TOL_GPU if LAUNCH or BF16 else TOL,
           "device": f"gpu: mk-launch -n {a.launch} --nodes {a.nodes}, MK_PATH={os.environ.get('MK_PATH', 'default')}"
           if LAUNCH else "cpu, bf16-faithful reference" if BF16 else "cpu", "all_passed": ok, "results": results}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print("all families pass" if ok else "PARITY FAILED", "->", a.out)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
