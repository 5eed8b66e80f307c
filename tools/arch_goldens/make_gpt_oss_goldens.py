#!/usr/bin/env python3
"""Writes the gpt-oss goldens (tests/model/data/gpt_oss, checked by
tests/model/gpt_oss_golden_test.cpp): one random-weight gpt-oss file in f32
and its MXFP4_MOE version made by llama-quantize, each with llama.cpp's
logits for it.

Development-time only (needs llama.cpp's dump_logits, llama-quantize and
gguf-py, see ../shared/peer/README.md):

  PYTHONPATH=$LLAMA/gguf-py /usr/bin/python3 tools/arch_goldens/make_gpt_oss_goldens.py \\
      --kvforge build/kvforge --dump-logits $REF/dump_logits \\
      --quantize $LLAMA/build/bin/llama-quantize --out tests/model/data/gpt_oss

The shape keeps every gpt-oss feature in play: 4 layers (windows of 8 on
layers 0 and 2, full attention on 1 and 3), 4 query heads of 32 over 2 KV
heads (q_dim 128 != n_embd 64), learned sinks, biases on Q/K/V/output,
router and experts, 8 experts of 32 rows with 4 per token, YaRN (factor 4
over an original context of 16). The prompt (17 tokens) and 16 greedy steps
reach position 32, four windows. Before writing, checks that llama.cpp
honours the file's window: the same weights with a window of 64 must give
other logits past position 8.
"""
import argparse
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from golden_common import dump_logits, peak_next_byte, report, run  # noqa: E402

ARGS = ["--arch", "gpt-oss", "--n-embd", "64", "--n-layer", "4", "--n-head", "4",
        "--n-kv-head", "2", "--head-dim", "32", "--n-ff", "128", "--n-ctx", "64",
        "--n-expert", "8", "--n-expert-used", "4", "--n-ff-exp", "32",
        "--rope-scaling", "yarn", "--rope-factor", "4", "--rope-orig-ctx", "16", "--seed", "11"]
WINDOW = 8


def logits_of(path: str) -> np.ndarray:
    raw = np.fromfile(path, dtype="<i4", count=4)
    rows = int(raw[2]) + int(raw[3])
    return np.fromfile(path, dtype="<f4", offset=16 + 4 * rows).reshape(rows, int(raw[1]))


def make(kvforge: str, path: str, window: int) -> None:
    run([kvforge, "make-model", "-o", path, "--sliding-window", str(window)] + ARGS)
    peak_next_byte(path)


def check_window_honoured(a: argparse.Namespace, tmp: str, golden: str) -> None:
    wide = os.path.join(tmp, "wide.gguf")
    make(a.kvforge, wide, 64)
    dump_logits(a.dump_logits, wide, wide + ".logits.bin")
    narrow, broad = logits_of(golden), logits_of(wide + ".logits.bin")
    inside = np.abs(narrow[:WINDOW] - broad[:WINDOW]).max()
    past = np.abs(narrow[WINDOW:] - broad[WINDOW:]).max()
    print(f"window {WINDOW} vs 64: max difference {inside:.2e} inside the window, "
          f"{past:.2e} past it")
    if inside > 1e-4 or past < 1e-2:
        sys.exit("llama.cpp does not apply the file's sliding window as expected")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kvforge", required=True)
    ap.add_argument("--dump-logits", required=True)
    ap.add_argument("--quantize", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "base.gguf")
        make(a.kvforge, base, WINDOW)
        files = {"gpt-oss-f32": base}
        mxfp4 = os.path.join(tmp, "mxfp4.gguf")
        run([a.quantize, base, mxfp4, "MXFP4_MOE"])
        files["gpt-oss-mxfp4_moe"] = mxfp4
        for name, src in files.items():
            model = os.path.join(a.out, name + ".gguf")
            shutil.copyfile(src, model)
            logits = os.path.join(a.out, name + ".logits.bin")
            dump_logits(a.dump_logits, model, logits)
            report(name, model, logits)
        check_window_honoured(a, tmp, os.path.join(a.out, "gpt-oss-f32.logits.bin"))


if __name__ == "__main__":
    main()
