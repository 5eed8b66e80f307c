#!/usr/bin/env python3
"""Writes the per-tensor types llama-quantize chooses for each mixture, as tables
that tests/app/tools/quantize_plan_test.cpp compares kvforge's plan against.

Development-time only (needs llama.cpp's llama-quantize and gguf-py, see
../shared/peer/README.md):

  PYTHONPATH=$LLAMA/gguf-py /usr/bin/python3 tools/quantize_mixtures/make_tables.py \
      --kvforge build/kvforge --llama-quantize $LLAMA/build/bin/llama-quantize \
      --out tests/app/tools/data/quantize_mixtures

For each model below: `kvforge make-model` writes the F32 file, llama-quantize
converts it to every mixture (and, in a second table, to every mixture with
--pure), and gguf-py reads back the type of each tensor. Table layout (text):

  # comment lines
  spec n_embd=256 n_layer=8 ...        the make-model shape the test rebuilds
  tensor <MIX1> <MIX2> ...              header: one column per mixture
  general.file_type <id> <id> ...       the llama_ftype id written
  <tensor name> <type> <type> ...       one row per tensor, in the quantized file's order
"""
import argparse
import os
import subprocess
import sys
import tempfile

from gguf import GGUFReader

MIXTURES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "IQ4_NL",
            "IQ4_XS", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "Q8_0"]

# name -> make-model shape. Eight layers so that the layer rules show; the first model's rows
# all divide by 256 and it has 4 query heads per KV head (the GQA rules); the second's ffn_down
# rows (704) need the 32-element fallbacks; the third's n_embd (320) is no multiple of 256
# either, its ffn_down rows (720) not even of 32 (F16), and its output is tied to the
# token embedding. The fourth has llama.cpp's 70B shape (80 layers, GQA), whose attn_v gets
# Q5_K where a mixture would give Q3_K or Q4_K; its rows of 64 make every K-quant fall back,
# which keeps the model small and still tells the fallbacks of Q3_K, Q4_K and Q5_K apart.
MODELS = {
    "e256-ff768-gqa4": dict(n_embd=256, n_layer=8, n_head=8, n_kv_head=2, n_ff=768,
                            n_vocab=300, tied=0, seed=1),
    "e256-ff704-gqa2": dict(n_embd=256, n_layer=8, n_head=4, n_kv_head=2, n_ff=704,
                            n_vocab=300, tied=0, seed=2),
    "e320-ff720-tied": dict(n_embd=320, n_layer=8, n_head=4, n_kv_head=2, n_ff=720,
                            n_vocab=300, tied=1, seed=3),
    "e64-l80-gqa4": dict(n_embd=64, n_layer=80, n_head=8, n_kv_head=2, n_ff=64,
                         n_vocab=300, tied=0, seed=4),
}


def make_model(kvforge: str, spec: dict, path: str) -> None:
    args = [kvforge, "make-model", "-o", path, "--seed", str(spec["seed"])]
    for key in ("n_embd", "n_layer", "n_head", "n_kv_head", "n_ff", "n_vocab"):
        args += ["--" + key.replace("_", "-"), str(spec[key])]
    if spec["tied"]:
        args.append("--tied")
    subprocess.run(args, check=True, stderr=subprocess.DEVNULL)


def chosen_types(quantize: str, src: str, dst: str, mixture: str, pure: bool) -> list:
    args = [quantize] + (["--pure"] if pure else []) + [src, dst, mixture]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{run.stderr[-2000:]}")
    reader = GGUFReader(dst)
    file_type = reader.fields["general.file_type"].contents()
    return [("general.file_type", str(file_type))] + \
        [(t.name, t.tensor_type.name) for t in reader.tensors]


def write_table(path: str, name: str, spec: dict, columns: dict, pure: bool) -> None:
    names = [n for n, _ in next(iter(columns.values()))]
    with open(path, "w") as f:
        f.write(f"# llama-quantize{' --pure' if pure else ''}'s type for each tensor of the "
                f"make-model model '{name}'.\n")
        f.write("# Written by tools/quantize_mixtures/make_tables.py; do not edit.\n")
        f.write("spec " + " ".join(f"{k}={v}" for k, v in spec.items()) + "\n")
        f.write("tensor " + " ".join(columns) + "\n")
        for i, tensor in enumerate(names):
            row = []
            for mixture, types in columns.items():
                assert types[i][0] == tensor, f"{mixture}: tensor order differs"
                row.append(types[i][1])
            f.write(tensor + " " + " ".join(row) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kvforge", required=True)
    ap.add_argument("--llama-quantize", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, spec in MODELS.items():
            src = os.path.join(tmp, name + ".gguf")
            make_model(a.kvforge, spec, src)
            for pure in (False, True):
                columns = {}
                for mixture in MIXTURES:
                    dst = os.path.join(tmp, "q.gguf")
                    columns[mixture] = chosen_types(a.llama_quantize, src, dst, mixture, pure)
                    os.remove(dst)
                out = os.path.join(a.out, name + (".pure" if pure else "") + ".txt")
                write_table(out, name, spec, columns, pure)
                print(out)


if __name__ == "__main__":
    main()
