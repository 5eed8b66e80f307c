#!/usr/bin/env python3
"""Turns tools/bench_hybrid.sh's hybrid.jsonl into a Markdown table.

Per shape: the median over the alternating pairs of kvforge's and llama.cpp's
prefill (pp512) and decode (tg128) tok/s, and the median of the per-pair
ratios kvforge / llama.cpp (each pair ran back to back, so its ratio sees one
machine state), with the ratios' range.
"""
import json
import statistics
import sys


def llama_rate(tests, prompt):
    return next(t["avg_ts"] for t in tests if (t["n_prompt"] > 0) == prompt)


def ours_rate(report, prefix):
    return next(t["tok_per_s_mean"] for t in report["tests"] if t["name"].startswith(prefix))


def cell(pairs):
    ours = statistics.median(k for k, _ in pairs)
    theirs = statistics.median(l for _, l in pairs)
    ratios = sorted(k / l for k, l in pairs)
    spread = f"{ratios[0]:.2f}–{ratios[-1]:.2f}" if len(ratios) > 1 else ""
    return f"{ours:.1f} / {theirs:.1f} | **{statistics.median(ratios):.2f}×** {spread}"


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    print("| shape | size MiB | pairs | prefill tok/s kvforge / llama.cpp | ratio (range) "
          "| decode tok/s kvforge / llama.cpp | ratio (range) |")
    print("|---|---|---|---|---|---|---|")
    for shape in dict.fromkeys(r["shape"] for r in rows):
        mine = [r for r in rows if r["shape"] == shape]
        pp = [(ours_rate(r["kvforge"], "pp"), llama_rate(r["llama"], True)) for r in mine]
        tg = [(ours_rate(r["kvforge"], "tg"), llama_rate(r["llama"], False)) for r in mine]
        size = mine[0]["file_bytes"] / (1 << 20)
        print(f"| {shape} | {size:.0f} | {len(mine)} | {cell(pp)} | {cell(tg)} |")


if __name__ == "__main__":
    main()
