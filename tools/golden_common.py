"""What tools/arch_goldens and tools/llama_golden share: making a random-weight
model predict the next byte (peaked logits, so greedy margins sit far above
the engines' rounding differences), llama.cpp's logits for a byte prompt, and
the margins those logits leave. Development-time only (needs gguf-py and
llama.cpp's dump_logits, see ../shared/peer/README.md)."""
import os
import subprocess
import sys

import numpy as np
from gguf import GGUFReader

NEXT_BYTE = 4.0
EMBD_SCALE = 2.0
PROMPT = "Once upon a time"  # byte vocabulary: token = 3 + byte, after BOS (1)
N_GEN = 16


def run(args: list) -> str:
    r = subprocess.run(args, capture_output=True, text=True, errors="replace")
    if r.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{r.stderr[-3000:]}")
    return r.stdout


def peak_next_byte(path: str) -> None:
    """Scales the token embeddings by EMBD_SCALE (the current token then weighs
    more in the residual stream) and, where the output projection is its own
    matrix, adds NEXT_BYTE times token j's embedding (scaled to the matrix's
    own range) to row j+1 of output.weight, in place."""
    reader = GGUFReader(path, "r+")
    tensors = {t.name: t for t in reader.tensors}
    embd = tensors["token_embd.weight"].data  # [n_vocab][n_embd]
    embd[...] *= EMBD_SCALE
    if "output.weight" in tensors:
        out = tensors["output.weight"].data  # [n_vocab][n_embd]
        out[1:] += NEXT_BYTE * embd[:-1] * (np.abs(out).max() / np.abs(embd).max())


def dump_logits(dump_logits_bin: str, model: str, out: str, prompt: str = PROMPT) -> None:
    """llama.cpp's logits for BOS + `prompt` (byte tokens) and N_GEN greedy steps, in its
    exact mode (f32 KV cache, no flash attention); layout in ../shared/peer/dump_logits.cpp."""
    tokens = ",".join(str(t) for t in [1] + [3 + b for b in prompt.encode()])
    run([dump_logits_bin, "-m", model, "-t", tokens, "-n", str(N_GEN), "-kv", "f32", "-fa", "off",
         "-th", "2", "-o", out])


def report(name: str, model: str, logits: str) -> None:
    """One line: the files' size, the logits' RMS and the smallest greedy margin."""
    margin, rms = margins(logits)
    size = os.path.getsize(model) + os.path.getsize(logits)
    print(f"{name:18s} {size / 1024:7.1f} KiB  logit RMS {rms:7.3f}  "
          f"smallest greedy margin {margin:.4f}")


def margins(logits_path: str) -> tuple:
    """Top-1 minus top-2 over the rows whose argmax is a greedy pick, and the logits' RMS."""
    raw = np.fromfile(logits_path, dtype="<i4", count=4)
    n_vocab, n_prompt, n_gen = int(raw[1]), int(raw[2]), int(raw[3])
    rows = n_prompt + n_gen
    logits = np.fromfile(logits_path, dtype="<f4", offset=16 + 4 * rows).reshape(rows, n_vocab)
    top2 = np.sort(logits[n_prompt - 1:rows - 1], axis=1)[:, -2:]
    return float((top2[:, 1] - top2[:, 0]).min()), float(np.sqrt((logits ** 2).mean()))
