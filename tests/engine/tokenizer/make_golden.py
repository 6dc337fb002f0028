#!/usr/bin/env python3
"""make_golden.py — writes the tokenizer golden files that test_tokenizer checks against:
tiny byte-level BPE tokenizers trained here with HF `tokenizers` (pip install tokenizers),
and golden.json: for each tokenizer and text, HF's ids (encode without special tokens added)
and HF's decode of them. Run from this directory; commit what it writes.
  tok_gpt2.json         ByteLevel pre-tokenizer (GPT-2 regex), merges as ["a", "b"] pairs,
                        a special <|endoftext|> and a non-special added token <tool>
  tok_gpt2_legacy.json  the same tokenizer with merges as "a b" strings (the older format)
  tok_split.json        Sequence[Split(Qwen2-style regex, Isolated), ByteLevel(no regex)]
  tok_prefix.json       ByteLevel with add_prefix_space
`make_golden.py --check` retrains nothing: it encodes golden.json's texts with the committed
tokenizer files through the installed `tokenizers` and reports any id or decode that differs
(for a machine with another tokenizers version, e.g. the GPU machine)."""
import sys
import json

import tokenizers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

CORPUS = [
    "The quick brown fox jumps over the lazy dog. " * 3,
    "Mixture-of-Experts transformers route each token to its top-k experts; 12 experts, 2 active.",
    "def forward(self, x):\n    return self.w2(F.silu(self.w1(x)) * self.w3(x))\n",
    "Numbers: 0 1 2 3 12345 3.14159 2026-11-21 1,000,000",
    "Unicode: café naïve résumé Zürich — “quotes” ‘single’ … 日本語のテキスト 中文文本 한국어 😀🚀",
    "Whitespace:   three spaces\ttab\n\nnewlines   \n  trailing   ",
    "It's they're we've I'm you'll he'd CAN'T Don't",
] * 20
QWEN_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
           r"|\s+(?!\S)|\s+")
TEXTS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "  leading spaces and trailing  ",
    "tabs\tand\nnewlines\n\n\nend",
    "numbers 12345 and 3.14159, dates 2026-11-21",
    "It's they're CAN'T won't",
    "café naïve Zürich — “quoted”",
    "日本語のテキスト 中文 한국어",
    "emoji 😀🚀 and ZWJ 👩‍💻",
    "special <|endoftext|> in the middle<|endoftext|>",
    "an added <tool>call</tool> token",
    "unseen words: xylophone quixotic zephyr",
    "a",
    " ",
    "def f(x):\n    return x * 2\n",
    "symbols !@#$%^&*()_+-=[]{}|;:,.<>/?~`",
    "mixed    whitespace \t \n runs",
]


def train(pre, prefix=False):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre
    tok.decoder = decoders.ByteLevel()
    tr = trainers.BpeTrainer(vocab_size=420, special_tokens=["<|endoftext|>"],
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS, tr)
    tok.add_tokens([AddedToken("<tool>", special=False, normalized=False)])
    return tok


def main():
    toks = {
        "tok_gpt2.json": train(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)),
        "tok_split.json": train(pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN_RE), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])),
        "tok_prefix.json": train(pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)),
    }
    for name, tok in toks.items():
        tok.save(name)
    j = json.load(open("tok_gpt2.json"))
    merges = j["model"]["merges"]
    j["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in merges]
    with open("tok_gpt2_legacy.json", "w") as f:
        json.dump(j, f, ensure_ascii=False)
    toks["tok_gpt2_legacy.json"] = Tokenizer.from_file("tok_gpt2_legacy.json")
    cases = []
    for name, tok in toks.items():
        for t in TEXTS:
            ids = tok.encode(t, add_special_tokens=False).ids
            cases.append({"tokenizer": name, "text": t, "ids": ids,
                          "decoded": tok.decode(ids, skip_special_tokens=False)})
    with open("golden.json", "w") as f:
        json.dump({"generated_by": f"tokenizers {tokenizers.__version__}", "cases": cases}, f, ensure_ascii=False, indent=0)
    print(f"wrote {len(toks)} tokenizers and {len(cases)} cases")


def check():
    g = json.load(open("golden.json"))
    bad = 0
    for c in g["cases"]:
        tok = Tokenizer.from_file(c["tokenizer"])
        ids = tok.encode(c["text"], add_special_tokens=False).ids
        if ids != c["ids"] or tok.decode(ids, skip_special_tokens=False) != c["decoded"]:
            bad += 1
            print(f"DIFF {c['tokenizer']} {c['text']!r}: {ids} vs golden {c['ids']}")
    print(f"tokenizers {tokenizers.__version__}: {len(g['cases']) - bad}/{len(g['cases'])} golden cases agree")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        sys.exit(check())
    main()
