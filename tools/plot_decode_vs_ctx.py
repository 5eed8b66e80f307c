#!/usr/bin/python3
"""Decode speed vs tokens already in the KV cache, from `kvforge bench --ctx-sweep` JSON.

    kvforge bench -m small-q8_0.gguf -p 0 -n 0 -t 2 -r 3 --ctx-sweep 2048 --json > q8_0.json
    tools/plot_decode_vs_ctx.py -o docs/bench/decode_vs_ctx.png q8_0.json q4_0.json f16.json

One line per JSON file (labelled with the file's stem unless --labels is
given): mean tok/s with a ±stddev band, and dashed the roofline of the same
run (measured read bandwidth ÷ bytes read per token, weights + KV).
"""
import argparse
import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    with open(path) as f:
        data = json.load(f)
    sweep = data.get("ctx_sweep")
    if not sweep:
        sys.exit(f"{path}: no ctx_sweep in this JSON (run bench with --ctx-sweep N --json)")
    return data, sweep


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="+", help="bench --ctx-sweep --json outputs")
    ap.add_argument("-o", "--output", required=True, help="PNG to write")
    ap.add_argument("--labels", help="comma-separated line labels, one per JSON file")
    ap.add_argument("--title", default="kvforge decode speed vs context (small preset)")
    args = ap.parse_args()
    labels = args.labels.split(",") if args.labels else [pathlib.Path(p).stem for p in args.json]
    if len(labels) != len(args.json):
        sys.exit(f"--labels has {len(labels)} names for {len(args.json)} files")

    fig, ax = plt.subplots(figsize=(8, 5), dpi=120)
    subtitle = ""
    for path, label in zip(args.json, labels):
        data, sweep = load(path)
        x = [p["n_past"] for p in sweep]
        y = [p["tok_per_s_mean"] for p in sweep]
        sd = [p["tok_per_s_stddev"] for p in sweep]
        roof = [p["roofline_tok_per_s"] for p in sweep]
        (line,) = ax.plot(x, y, marker="o", markersize=3, label=f"{label}")
        ax.fill_between(x, [a - b for a, b in zip(y, sd)], [a + b for a, b in zip(y, sd)],
                        color=line.get_color(), alpha=0.2)
        ax.plot(x, roof, linestyle="--", color=line.get_color(), alpha=0.7,
                label=f"{label} roofline")
        subtitle = (f"{data['threads']} threads, {data['simd']}, KV {data['kv_type']}, "
                    f"read bandwidth {data['bandwidth']['best_bytes_per_s'] / 1e9:.1f} GB/s")
    ax.set_xlabel("tokens in the KV cache before the decode step")
    ax.set_ylabel("decode tokens/s")
    ax.set_ylim(bottom=0)
    ax.set_title(f"{args.title}\n{subtitle}", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
