#!/usr/bin/env python3
"""Writes the Gemma 4 goldens (tests/model/data/gemma4, checked by
tests/model/gemma4_golden_test.cpp): a random-weight f32 gemma4 file and
llama.cpp's logits for it.

Development-time only (needs llama.cpp's dump_logits and gguf-py, see
../shared/peer/README.md):

  PYTHONPATH=$LLAMA/gguf-py /usr/bin/python3 tools/arch_goldens/make_gemma4_goldens.py \\
      --kvforge build/kvforge --dump-logits $REF/dump_logits --out tests/model/data/gemma4

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
FILES = {"gemma4-f32": [], "gemma4-swa-heads-f32": ["--head-dim-swa", "16"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kvforge", required=True)
    ap.add_argument("--dump-logits", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name, extra in FILES.items():
        model = os.path.join(a.out, name + ".gguf")
        logits = os.path.join(a.out, name + ".logits.bin")
        run([a.kvforge, "make-model", "-o", model, "--shared-kv-layers", SHARED] + ARGS + extra)
        peak_next_byte(model)
        dump_logits(a.dump_logits, model, logits)
        report(name, model, logits)

if __name__ == "__main__":
    main()
