#!/usr/bin/env python3
"""Writes tests/app/embedding/data/kjv_embeddings.json: llama.cpp's llama-embedding
(f32 K/V, no flash attention, --embd-normalize 2) on the default model, for each
pooling and text below. Development time only: CI reads the committed file.

usage: make_embedding_golden.py LLAMA_BIN_DIR MODEL.gguf OUT.json
"""
import json
import subprocess
import sys

TEXTS = ["In the beginning God created the heaven and the earth.",
         "And the LORD said unto Moses"]
POOLINGS = ["last", "mean"]


def embed(bin_dir, model, text, pooling):
    cmd = [f"{bin_dir}/llama-embedding", "-m", model, "-p", text, "--pooling", pooling,
           "--embd-normalize", "2", "--embd-output-format", "array", "-t", "1",
           "-ctk", "f32", "-ctv", "f32", "-fa", "off"]
    # llama.cpp's asynchronous logger sometimes loses the tail of stdout at exit: retry.
    for _ in range(5):
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        try:
            return json.loads(out)[0]
        except json.JSONDecodeError:
            continue
    raise RuntimeError("llama-embedding gave no complete output for " + text)


def main():
    bin_dir, model, out = sys.argv[1:4]
    cases = [{"pooling": p, "text": t, "embedding": embed(bin_dir, model, t, p)}
             for p in POOLINGS for t in TEXTS]
    with open(out, "w") as f:
        json.dump({"source": "llama.cpp llama-embedding de3ff815, -ctk f32 -ctv f32 -fa off "
                             "--embd-normalize 2", "cases": cases}, f)
        f.write("\n")


if __name__ == "__main__":
    main()
