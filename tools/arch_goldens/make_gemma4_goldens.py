#!/usr/bin/env python3
"""Writes the Gemma 4 goldens (tests/model/data/gemma4, checked by
tests/model/gemma4_golden_test.cpp): a random-weight f32 gemma4 file and
llama.cpp's logits for it.

Development-time only (needs llama.cpp's dump_logits and gguf-py, see
../shared/peer/README.md):

  PYTHONPATH=$LLAMA/gguf-py /usr/bin/python3 tools/arch_goldens/make_gemma4_goldens.py \\
      --kvforge build/kvforge --dump-logits $REF/dump_logits --out tests/model/data/gemma4 \\
      --quantize $LLAMA/build/bin/llama-quantize

The shape keeps every Gemma 4 feature of the dense models in play: 9 layers,
windows of 8 on layers 0, 1, 3, 4, 6, 7 and full attention on 2, 5, 8; the
last 3 layers share K/V (6 and 7 read layer 4's, 8 reads layer 5's);
per-layer embeddings of 16 values; 4 query heads of 32 over 2 KV heads
(q_dim 128 != n_embd 64); Q/K norms and the weightless V norm; no query
scaling; the full layers' proportional RoPE (rope_freqs: half the pairs
unrotated) at base 1e6, the windowed ones at 10000; a per-layer output scale;
a final soft-cap of 30. The prompt (17 tokens) and 16 greedy steps reach
position 32, four windows. The shared layers have no K/V weights, so llama.cpp
can only run them on their source layers' K/V.

gemma4-swa-heads-f32 is the same shape with the windowed layers' heads 16
wide (attention.key_length_swa, rope.dimension_count_swa) beside the full
layers' 32, as real Gemma 4 files have (256 beside 512).

gemma4-double-wide-f32 is the same shape with use_double_wide_mlp (Gemma 4
E2B/E4B): the 3 shared-KV layers' FFNs have 256 rows beside the others' 128,
feed_forward_length written as one entry per layer.
gemma4-kv-heads-f32 is gemma4-swa-heads-f32 with one KV head in the full
layers and two in the windowed ones: attention.head_count_kv written per
layer, as llama.cpp's converter writes the 31B's and 26B-A4B's (16 KV heads
of 256 in the windowed layers, 4 of 512 in the full ones).

gemma4-moe-f32 is the MoE variant (26B-A4B's layer): 8 experts of 32 rows
(2 per token) beside the dense FFN in each of 6 layers (windows of 8 on 0,
1, 3, 4; the last 3 sharing K/V: 3 and 4 read layer 1's, 5 reads layer 2's),
with the router's input scale, each expert's output scale, the branches'
norms, and per-layer embeddings of 32 (so that every matrix takes Q8_0's
blocks of 32). gemma4-moe-q8_0 is it quantized by llama-quantize;
gemma4-moe-q4_k_m a 256-wide variant (4 layers, windows on 0 and 2, the
last 2 sharing K/V; 4 experts of 256 rows, 2 per token; no per-layer
embeddings, as 26B-A4B) quantized to Q4_K_M, its f32 original not kept.
On a machine with AMX, pass a dump_logits that loads models with
use_extra_bufts = false: llama.cpp's AMX path crashes on Q8_0 matrices
(tests/model/data/gemma4/README.md).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from golden_common import dump_logits, peak_next_byte, report, run  # noqa: E402

ARGS = ["--arch", "gemma4", "--n-embd", "64", "--n-layer", "9", "--n-head", "4",
        "--n-kv-head", "2", "--head-dim", "32", "--n-ff", "128", "--n-ctx", "64",
        "--sliding-window", "8", "--swa-pattern", "3", "--rope-base", "1000000",
        "--rope-base-swa", "10000", "--n-embd-per-layer", "16", "--final-softcap", "30",
        "--seed", "1"]
SHARED = "3"
# name -> extra make-model arguments
FILES = {"gemma4-f32": [], "gemma4-swa-heads-f32": ["--head-dim-swa", "16"],
         "gemma4-double-wide-f32": ["--n-ff-double-wide"],
         "gemma4-kv-heads-f32": ["--head-dim-swa", "16", "--n-kv-head", "1",
                                 "--n-kv-head-swa", "2"]}
MOE = ["--arch", "gemma4", "--gemma4-moe", "--n-head", "4", "--n-kv-head", "2", "--n-ctx", "64",
       "--sliding-window", "8", "--rope-base", "1000000", "--rope-base-swa", "10000",
       "--final-softcap", "30", "--n-expert-used", "2"]
MOE_F32 = MOE + ["--n-embd", "64", "--head-dim", "32", "--n-ff", "128", "--n-layer", "6",
                 "--swa-pattern", "3", "--shared-kv-layers", "3", "--n-embd-per-layer", "32",
                 "--n-expert", "8", "--n-ff-exp", "32", "--seed", "2"]
MOE_WIDE = MOE + ["--n-embd", "256", "--head-dim", "64", "--n-ff", "256", "--n-layer", "4",
                  "--swa-pattern", "2", "--shared-kv-layers", "2", "--n-embd-per-layer", "0",
                  "--n-expert", "4", "--n-ff-exp", "256", "--seed", "3"]


def with_overrides(args: list, extra: list) -> list:
    """args with the options of extra (pairs) replacing or appended to theirs."""
    out = list(args)
    for flag, value in zip(extra[::2], extra[1::2]):
        if flag in out:
            out[out.index(flag) + 1] = value
        else:
            out += [flag, value]
    return out


def write(a, name: str, make_args: list, quantize_to: str = "") -> None:
    """make-model (peaked), llama-quantize'd to quantize_to if given, and llama.cpp's logits."""
    model = os.path.join(a.out, name + ".gguf")
    logits = os.path.join(a.out, name + ".logits.bin")
    base = model + ".f32.tmp" if quantize_to else model
    run([a.kvforge, "make-model", "-o", base] + make_args)
    peak_next_byte(base)
    if quantize_to:
        run([a.quantize, base, model, quantize_to])
        os.remove(base)
    dump_logits(a.dump_logits, model, logits)
    report(name, model, logits)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kvforge", required=True)
    ap.add_argument("--dump-logits", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quantize", required=True, help="llama.cpp's llama-quantize")
    ap.add_argument("--only", nargs="*", help="write these files only (default: all)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    files = {name: (["--shared-kv-layers", SHARED] + with_overrides(ARGS, extra), "")
             for name, extra in FILES.items()}
    files["gemma4-moe-f32"] = (MOE_F32, "")
    files["gemma4-moe-q8_0"] = (MOE_F32, "Q8_0")
    files["gemma4-moe-q4_k_m"] = (MOE_WIDE, "Q4_K_M")
    for name, (make_args, quantize_to) in files.items():
        if not a.only or name in a.only:
            write(a, name, make_args, quantize_to)

if __name__ == "__main__":
    main()
