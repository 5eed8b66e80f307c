#!/usr/bin/env python3
"""Writes random-weight qwen35, qwen35moe and qwen3next (hybrid: Gated
DeltaNet + gated full attention; the last two with a mixture of experts and
a shared expert as FFN) models with llama.cpp's logits for them
(tests/model/data/hybrid, checked by hybrid_golden_test).

Development-time only (needs llama.cpp's dump_logits and gguf-py, see
../shared/peer/README.md):

  PYTHONPATH=$LLAMA/gguf-py /usr/bin/python3 tools/arch_goldens/make_hybrid_goldens.py \
      --kvforge build/kvforge --dump-logits $REF/dump_logits --out tests/model/data/hybrid

Each model is `kvforge make-model --arch ...` (f32, 259-token byte
vocabulary, n_embd 64, 8 layers: layers 3 and 7 full attention, the others
linear), peaked to predict the next byte as make_goldens.py's models are.
The prompt (BOS + 87 bytes) is longer than the conv window (4) and than one
of llama.cpp's 64-token Gated DeltaNet chunks; 16 greedy steps follow.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from golden_common import dump_logits, peak_next_byte, report, run  # noqa: E402

PROMPT = "Once upon a time, in a quiet village by the sea, there lived an old fisherman named Tom."

BASE = ["--arch", "qwen35", "--n-embd", "64", "--n-layer", "8", "--n-head", "4",
        "--n-kv-head", "2", "--head-dim", "32", "--n-ff", "128", "--n-ctx", "256", "--seed", "11"]

# name -> make-model arguments (over BASE's)
MODELS = {
    # 2 key heads shared by 4 value heads (value head h reads key head h % 2), 8 rotated dims.
    "qwen35-gqa": ["--ssm-k-heads", "2", "--ssm-v-heads", "4", "--ssm-head-dim", "16"],
    # As many key as value heads, a wider conv window, a 32-dim state, half the head rotated.
    "qwen35-wide": ["--ssm-k-heads", "2", "--ssm-v-heads", "2", "--ssm-head-dim", "32",
                    "--ssm-conv-kernel", "6", "--rope-dim", "16", "--seed", "12"],
    # qwen35-gqa's layers with 8 experts of 32 rows, 2 per token, beside a
    # shared expert of 32 rows behind its sigmoid gate: routing differs token
    # by token and layer by layer (32 rows: Q8_0 blocks fit every matrix).
    "qwen35moe": ["--arch", "qwen35moe", "--ssm-k-heads", "2", "--ssm-v-heads", "4",
                  "--ssm-head-dim", "16", "--n-expert", "8", "--n-expert-used", "2",
                  "--n-ff-exp", "32", "--n-ff-shexp", "32", "--seed", "13"],
    # The same with Qwen3-Next's layout: value heads grouped by key head
    # (value head h reads key head h / 2), beta|alpha fused in ssm_ba, plain NeoX RoPE.
    "qwen3next": ["--arch", "qwen3next", "--ssm-k-heads", "2", "--ssm-v-heads", "4",
                  "--ssm-head-dim", "16", "--n-expert", "8", "--n-expert-used", "2",
                  "--n-ff-exp", "32", "--n-ff-shexp", "32", "--seed", "14"],
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kvforge", required=True)
    ap.add_argument("--dump-logits", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", nargs="*", default=None)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name, extra in MODELS.items():
        if a.only and name not in a.only:
            continue
        model = os.path.join(a.out, name + ".gguf")
        base = [x for i in range(0, len(BASE), 2) if BASE[i] not in extra for x in BASE[i:i + 2]]
        run([a.kvforge, "make-model", "-o", model] + base + extra)
        peak_next_byte(model)
        logits = os.path.join(a.out, name + ".logits.bin")
        dump_logits(a.dump_logits, model, logits, PROMPT)
        report(name, model, logits)


if __name__ == "__main__":
    main()
