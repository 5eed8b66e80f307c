#!/usr/bin/env python3
"""Writes one random-weight model per architecture and RoPE variant, with
llama.cpp's logits for it (tests/model/data/architectures, checked by
architecture_golden_test).

Development-time only (needs llama.cpp's dump_logits and gguf-py, see
../shared/peer/README.md):

  PYTHONPATH=$LLAMA/gguf-py /usr/bin/python3 tools/arch_goldens/make_goldens.py \
      --kvforge build/kvforge --dump-logits $REF/dump_logits \
      --out tests/model/data/architectures

Each model is `kvforge make-model` (f32, 259-token byte vocabulary, n_embd 64,
4 heads / 2 KV heads) with its architecture's tensors and keys, made to
predict the next byte so that greedy margins are far above the engines'
rounding differences (as tools/llama_golden does): token embeddings scaled by
EMBD_SCALE (tools/golden_common.py) and, where the output projection is its own matrix, row j+1 of
output.weight gets NEXT_BYTE times token j's embedding. The prompt (17 tokens)
plus 16 greedy steps reach position 32: past the sliding windows (8) and past
the original contexts of the scaled RoPE variants (16). Logits in llama.cpp's
exact mode (f32 KV cache, no flash attention); layout in
../shared/peer/dump_logits.cpp.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from golden_common import dump_logits, margins, peak_next_byte, run  # noqa: E402

BASE = {"--n-embd": "64", "--n-layer": "2", "--n-head": "4", "--n-kv-head": "2",
        "--n-ff": "128", "--n-ctx": "64", "--seed": "11"}

# name -> make-model arguments (over BASE's)
MODELS = {
    "llama": ["--arch", "llama"],
    "llama3-rope-freqs": ["--arch", "llama", "--llama3-rope-freqs", "--rope-orig-ctx", "64"],
    "llama-linear": ["--arch", "llama", "--rope-scaling", "linear", "--rope-factor", "4"],
    "llama-yarn": ["--arch", "llama", "--rope-scaling", "yarn", "--rope-factor", "4",
                   "--rope-orig-ctx", "16"],
    "llama-fused-qkv": ["--arch", "llama", "--fused-qkv"],
    "qwen2": ["--arch", "qwen2"],
    "qwen3": ["--arch", "qwen3", "--head-dim", "32", "--rope-base", "1000000"],
    "qwen3-yarn": ["--arch", "qwen3", "--rope-scaling", "yarn", "--rope-factor", "4",
                   "--rope-orig-ctx", "16"],
    "gemma2": ["--arch", "gemma2", "--n-layer", "3", "--sliding-window", "8",
               "--attn-softcap", "5", "--final-softcap", "8"],
    "gemma3": ["--arch", "gemma3", "--n-layer", "3", "--sliding-window", "8",
               "--swa-pattern", "3", "--rope-base", "1000000", "--rope-base-swa", "10000",
               "--rope-scaling", "linear", "--rope-factor", "8"],
    "phi3-longrope": ["--arch", "phi3", "--longrope-factors", "--rope-orig-ctx", "16"],
    # 8 experts of 16 rows, 2 per token, over 3 layers: routing differs
    # token by token, so a wrong pick or weight moves the logits.
    "qwen3moe": ["--arch", "qwen3moe", "--n-layer", "3", "--head-dim", "32", "--n-expert", "8",
                 "--n-expert-used", "2", "--n-ff-exp", "16"],
}


def make_model(kvforge: str, path: str, extra: list) -> None:
    base = [x for key, value in BASE.items() if key not in extra for x in (key, value)]
    run([kvforge, "make-model", "-o", path] + base + extra)
    peak_next_byte(path)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kvforge", required=True)
    ap.add_argument("--dump-logits", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--extra", nargs="*", default=[],
                    help="name=make-model args, for trying variants: 'x=--arch gemma3 ...'")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    models = dict(MODELS)
    for item in a.extra:
        name, args = item.split("=", 1)
        models[name] = args.split()
    for name, extra in models.items():
        if a.only and name not in a.only:
            continue
        model = os.path.join(a.out, name + ".gguf")
        make_model(a.kvforge, model, extra)
        logits = os.path.join(a.out, name + ".logits.bin")
        dump_logits(a.dump_logits, model, logits)
        margin, rms = margins(logits)
        size = os.path.getsize(model) + os.path.getsize(logits)
        print(f"{name:18s} {size / 1024:7.1f} KiB  logit RMS {rms:7.3f}  "
              f"smallest greedy margin {margin:.4f}")


if __name__ == "__main__":
    main()
