#!/usr/bin/env python3
"""Writes Q4_K_M goldens of the MoE and hybrid architectures, and gpt-oss in
Q8_0: files quantized by llama-quantize with llama.cpp's logits for them
(tests/model/data/{hybrid_quantized,moe_quantized,gpt_oss}, checked by the
*_quantized_golden_test.cpp and gpt_oss_golden_test.cpp).

Development-time only (needs llama.cpp's dump_logits, llama-quantize and
gguf-py, see ../shared/peer/README.md):

  PYTHONPATH=$LLAMA/gguf-py /usr/bin/python3 tools/arch_goldens/make_kquant_goldens.py \\
      --kvforge build/kvforge --dump-logits $REF/dump_logits \\
      --quantize $LLAMA/build/bin/llama-quantize --tests tests/model/data

K-quants take rows of 256 values: the Q4_K_M files are 256 wide (n_embd,
n_ff, the experts' rows, 4 heads of 64, 4 Gated DeltaNet value heads of 64),
so that every matrix takes a K-quant and none falls back to Q5_0 / Q8_0 as
the 64-wide goldens' would. The f32 originals are not kept (15 MB and more).
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from golden_common import PROMPT, dump_logits, peak_next_byte, report, run  # noqa: E402
from make_gemma4_goldens import ARGS as GEMMA4_ARGS  # noqa: E402
from make_gemma4_goldens import SHARED as GEMMA4_SHARED  # noqa: E402
from make_hybrid_goldens import PROMPT as HYBRID_PROMPT  # noqa: E402

WIDE = ["--n-embd", "256", "--n-head", "4", "--n-kv-head", "2", "--head-dim", "64",
        "--n-ff", "256"]



def without(args: list, names: list) -> list:
    """`args` (flag, value pairs) less the flags in `names` and their values."""
    pairs = zip(args[::2], args[1::2])
    return [x for flag, value in pairs if flag not in names for x in (flag, value)]


# name -> (folder, make-model arguments, prompt)
MODELS = {
    # 8 layers (3 and 7 full attention), 2 key heads shared by 4 value heads.
    "qwen35-q4_k_m": ("hybrid_quantized", ["--arch", "qwen35", "--n-layer", "8", "--n-ctx", "256",
                                           "--ssm-k-heads", "2", "--ssm-v-heads", "4",
                                           "--ssm-head-dim", "64", "--seed", "21"], HYBRID_PROMPT),
    # 4 layers alternating linear and full attention (each kind twice), a
    # mixture of 4 experts of 256 rows (2 per token) and a shared expert as
    # FFN; qwen3next with its own layout (value heads grouped by key head,
    # beta|alpha fused, plain NeoX RoPE).
    "qwen35moe-q4_k_m": ("hybrid_quantized", ["--arch", "qwen35moe", "--n-layer", "4", "--n-ctx", "256",
                                              "--full-attention-interval", "2",
                                              "--ssm-k-heads", "2", "--ssm-v-heads", "4",
                                              "--ssm-head-dim", "64", "--n-expert", "4",
                                              "--n-expert-used", "2", "--n-ff-exp", "256",
                                              "--n-ff-shexp", "256", "--seed", "24"], HYBRID_PROMPT),
    "qwen3next-q4_k_m": ("hybrid_quantized", ["--arch", "qwen3next", "--n-layer", "4", "--n-ctx", "256",
                                              "--full-attention-interval", "2",
                                              "--ssm-k-heads", "2", "--ssm-v-heads", "4",
                                              "--ssm-head-dim", "64", "--n-expert", "4",
                                              "--n-expert-used", "2", "--n-ff-exp", "256",
                                              "--n-ff-shexp", "256", "--seed", "25"], HYBRID_PROMPT),
    # 4 experts of 256 rows, 2 per token.
    "qwen3moe-q4_k_m": ("moe_quantized", ["--arch", "qwen3moe", "--n-layer", "3", "--n-ctx", "64",
                                          "--n-expert", "4", "--n-expert-used", "2",
                                          "--n-ff-exp", "256", "--seed", "22"], PROMPT),
    # The gpt-oss golden's layout (windows of 8 on layers 0 and 2, sinks,
    # biases, YaRN) at 256 wide, 4 experts of 256 rows, 2 per token.
    "gpt-oss-q4_k_m": ("gpt_oss", ["--arch", "gpt-oss", "--sliding-window", "8", "--n-layer", "4",
                                   "--n-ctx", "64", "--n-expert", "4", "--n-expert-used", "2",
                                   "--n-ff-exp", "256", "--rope-scaling", "yarn",
                                   "--rope-factor", "4", "--rope-orig-ctx", "16", "--seed", "23"],
                       PROMPT),
    # The Gemma 4 golden's layout (windows of 8, 3 shared-K/V layers,
    # per-layer embeddings, soft-cap) at 256 wide, windowed heads of 32
    # beside full ones of 64. The per-layer projections' 16-wide rows take no
    # block format and stay f32, as in real files.
    "gemma4-q4_k_m": ("gemma4", without(GEMMA4_ARGS, WIDE[::2] + ["--seed"]) +
                      ["--shared-kv-layers", GEMMA4_SHARED,
                                               "--head-dim-swa", "32", "--seed", "26"], PROMPT),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kvforge", required=True)
    ap.add_argument("--dump-logits", required=True)
    ap.add_argument("--quantize", required=True)
    ap.add_argument("--tests", required=True, help="tests/model/data")
    ap.add_argument("--only", nargs="*", help="write these models only (default: all)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name, (folder, args, prompt) in MODELS.items():
            if a.only and name not in a.only:
                continue
            base = os.path.join(tmp, name + "-f32.gguf")
            run([a.kvforge, "make-model", "-o", base] + WIDE + args)
            peak_next_byte(base)
            model = os.path.join(a.tests, folder, name + ".gguf")
            run([a.quantize, base, model, "Q4_K_M"])
            logits = model[:-len(".gguf")] + ".logits.bin"
            dump_logits(a.dump_logits, model, logits, prompt)
            report(name, model, logits)
    # gpt-oss and Gemma 4 in Q8_0: their 64-wide f32 goldens quantized (blocks of 32 fit).
    for name, folder, source in (("gpt-oss-q8_0", "gpt_oss", "gpt-oss-f32.gguf"),
                                 ("gemma4-q8_0", "gemma4", "gemma4-swa-heads-f32.gguf")):
        if a.only and name not in a.only:
            continue
        model = os.path.join(a.tests, folder, name + ".gguf")
        run([a.quantize, os.path.join(a.tests, folder, source), model, "Q8_0"])
        dump_logits(a.dump_logits, model, model[:-len(".gguf")] + ".logits.bin")
        report(name, model, model[:-len(".gguf")] + ".logits.bin")


if __name__ == "__main__":
    main()
