#!/usr/bin/env python3
"""Writes the llama-quantize'd golden models and llama.cpp's logits for them
(tests/model/data/llama_quantized, checked by llama_quantized_golden_test).

Development-time only (needs llama.cpp's llama-quantize, dump_logits and gguf-py,
see ../shared/peer/README.md):

  PYTHONPATH=$LLAMA/gguf-py /usr/bin/python3 tools/llama_golden/make_goldens.py \
      --kvforge build/kvforge --llama-quantize $LLAMA/build/bin/llama-quantize \
      --dump-logits $REF/dump_logits --out tests/model/data/llama_quantized

The model: `kvforge make-model` (random weights; shape in MODEL below) made to
predict the next byte so that its logits are peaked: the token embeddings are
scaled by EMBD_SCALE (tools/golden_common.py; the current token then weighs more in the residual
stream) and row j+1 of output.weight gets NEXT_BYTE times token j's embedding
(scaled to the matrix's own range) added. llama.cpp's smallest greedy margin is
then 4.7 (Q2_K) to 8 where the plain random model's go down to 0.006, far above
the engines' rounding differences (the test's bound is 0.29), while the layers
still move every logit.

n_embd 256 lets the K-quants hold rows of the attention and up/gate matrices;
n_ff (128) is no multiple of 256, so ffn_down takes each K-quant's 32-element
fallback. One layer, a 259-token byte vocabulary and a single KV head keep the
16 files and their logits near 6 MB. Each file gets llama.cpp's logits for
PROMPT (with BOS) and 16 greedy steps in its exact mode (f32 KV cache, no flash
attention); layout of X.logits.bin in ../shared/peer/dump_logits.cpp.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from golden_common import dump_logits, margins, peak_next_byte, run  # noqa: E402

MODEL = dict(n_embd=256, n_layer=1, n_head=4, n_kv_head=1, n_ff=128, seed=7)

# file name -> (llama-quantize type, --pure). The single types are pure (llama-quantize would
# otherwise give output.weight Q6_K); the _M files are llama.cpp's mixtures.
FILES = {
    "q8_0": ("Q8_0", True),
    "q4_0": ("Q4_0", True),
    "q4_1": ("Q4_1", True),
    "q5_0": ("Q5_0", True),
    "q5_1": ("Q5_1", True),
    "q2_k": ("Q2_K", True),
    "q3_k_s": ("Q3_K_S", True),
    "q4_k_s": ("Q4_K_S", True),
    "q5_k_s": ("Q5_K_S", True),
    "q6_k": ("Q6_K", True),
    "iq4_nl": ("IQ4_NL", True),
    "iq4_xs": ("IQ4_XS", True),
    "q3_k_m": ("Q3_K_M", False),
    "q4_k_m": ("Q4_K_M", False),
    "q5_k_m": ("Q5_K_M", False),
}


def make_f32(kvforge: str, path: str) -> None:
    args = [kvforge, "make-model", "-o", path]
    for key, value in MODEL.items():
        args += ["--" + key.replace("_", "-"), str(value)]
    run(args)
    peak_next_byte(path)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kvforge", required=True)
    ap.add_argument("--llama-quantize", required=True)
    ap.add_argument("--dump-logits", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    f32 = os.path.join(a.out, "f32.gguf")
    make_f32(a.kvforge, f32)
    names = ["f32"] + list(FILES)
    for name in names:
        model = os.path.join(a.out, name + ".gguf")
        if name != "f32":
            qtype, pure = FILES[name]
            run([a.llama_quantize] + (["--pure"] if pure else []) + [f32, model, qtype])
        logits = os.path.join(a.out, name + ".logits.bin")
        dump_logits(a.dump_logits, model, logits)
        margin, rms = margins(logits)
        size = os.path.getsize(model) + os.path.getsize(logits)
        print(f"{name:8s} {size / 1024:7.1f} KiB  logit RMS {rms:6.3f}  "
              f"smallest greedy margin {margin:.4f}")


if __name__ == "__main__":
    main()
