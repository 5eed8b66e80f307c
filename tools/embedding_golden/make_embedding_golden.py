#!/usr/bin/env python3
"""Writes tests/app/embedding/data/NAME_embeddings.json for each model below:
llama.cpp's llama-embedding (f32 K/V, no flash attention, --embd-normalize 2)
for each pooling and text, with the token ids llama.cpp embedded (its
--verbose-prompt listing), so that the test can check kvforge embeds the same
ones. Development time only: CI reads the committed files
(tests/app/embedding/embedder_test.cpp).

usage: make_embedding_golden.py LLAMA_BIN_DIR [NAME...]   (no NAME: all of them)
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT_DIR = os.path.join(ROOT, "tests", "app", "embedding", "data")

KJV_TEXTS = ["In the beginning God created the heaven and the earth.",
             "And the LORD said unto Moses"]
# The random-weight files have a 64-position context and a byte vocabulary
# (one token per byte, three for SentencePiece's space mark): short texts.
SHORT_TEXTS = ["Hello world", "The quick brown fox jumps over"]

# name -> (model file relative to the repository, texts, poolings). The
# random-weight files (tools/arch_goldens/make_goldens.py) state no pooling;
# CLS pooling of a causal model is the first token's (BOS's) state.
MODELS = {
    "kjv": ("models/kvforge-kjv-4m.gguf", KJV_TEXTS, ["last", "mean"]),
    "qwen3": ("tests/model/data/architectures/qwen3.gguf", SHORT_TEXTS, ["last", "mean", "cls"]),
    "llama": ("tests/model/data/architectures/llama.gguf", SHORT_TEXTS, ["last", "mean", "cls"]),
}

TOKEN_LINE = re.compile(r"^\s*(\d+) -> '")


def llama_cpp_commit(bin_dir):
    out = subprocess.run([f"{bin_dir}/llama-embedding", "--version"], capture_output=True,
                         text=True).stderr
    return re.search(r"commit (\w+)", out).group(1)


def embed(bin_dir, model, text, pooling):
    """(token ids, embedding) of one text."""
    # -c 512: llama.cpp asserts on its output buffer at the tiny files' 64-position
    # context; every text is far shorter than either context.
    cmd = [f"{bin_dir}/llama-embedding", "-m", model, "-p", text, "--pooling", pooling,
           "--embd-normalize", "2", "--embd-output-format", "array", "-t", "1",
           "-ctk", "f32", "-ctv", "f32", "-fa", "off", "--no-repack",
           "-c", "512", "-b", "512", "-ub", "512", "--verbose-prompt"]
    # llama.cpp's asynchronous logger sometimes loses the tail of stdout at exit: retry.
    for _ in range(5):
        lines = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                               check=True).stdout.splitlines()
        tokens = [int(m.group(1)) for m in map(TOKEN_LINE.match, lines) if m]
        arrays = [line for line in lines if line.startswith("[[")]
        try:
            return tokens, json.loads(arrays[0])[0]
        except (IndexError, json.JSONDecodeError):
            continue
    raise RuntimeError("llama-embedding gave no complete output for " + text)


def write_golden(bin_dir, name, commit):
    model, texts, poolings = MODELS[name]
    cases = []
    for pooling in poolings:
        for text in texts:
            tokens, embedding = embed(bin_dir, os.path.join(ROOT, model), text, pooling)
            cases.append({"pooling": pooling, "text": text, "tokens": tokens,
                          "embedding": embedding})
    with open(os.path.join(OUT_DIR, name + "_embeddings.json"), "w") as f:
        json.dump({"source": f"llama.cpp llama-embedding {commit}, -ctk f32 -ctv f32 -fa off "
                             "--embd-normalize 2",
                   "model": model, "cases": cases}, f)
        f.write("\n")


def main():
    bin_dir = sys.argv[1]
    commit = llama_cpp_commit(bin_dir)
    for name in sys.argv[2:] or MODELS:
        write_golden(bin_dir, name, commit)


if __name__ == "__main__":
    main()
