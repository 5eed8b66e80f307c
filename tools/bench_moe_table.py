#!/usr/bin/env python3
"""Turns tools/bench_moe.sh's moe.jsonl into Markdown tables.

Per shape:
- prefill (pp) and decode (tg): the median over the alternating pairs of
  kvforge's and llama.cpp's tok/s, the median of the per-pair ratios
  kvforge / llama.cpp (each pair ran back to back, so its ratio sees one
  machine state) with their range, and kvforge's decode as a share of the
  roofline of the bytes a token reads (`kvforge bench`'s roofline_fraction:
  the router, the k experts a token runs and everything else, against the
  read bandwidth probed right before each repetition);
- batched decode: per round, decode tok/s with 1 and with 16 sequences
  (kvforge bench-serve's "decode tok/s", llama-batched-bench's S_TG), the
  scaling 16 / 1 of each engine, and the ratio kvforge / llama.cpp at 16;
  medians over rounds.
"""
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_hybrid_table import cell as ratio_cell, llama_rate  # noqa: E402


def their_rate(llama, prompt):
    """llama-bench's tok/s, or (on hosts where it crashes) llama-batched-bench --no-repack's."""
    if isinstance(llama, dict):
        return llama["no_repack"]["speed_pp" if prompt else "speed_tg"]
    return llama_rate(llama, prompt)


def ours_test(report, prefix):
    return next(t for t in report["tests"] if t["name"].startswith(prefix))


def serve_decode_rates(path):
    """Decode tok/s per concurrency level in a bench-serve report's sweep table."""
    rates = {}
    for line in open(path, encoding="utf-8", errors="replace"):
        m = re.match(r"^\| (\d+) \| [\d.]+ \| ([\d.]+) \|", line)
        if m:
            rates.setdefault(int(m.group(1)), float(m.group(2)))
    return rates


def bench_table(rows, shapes):
    print("| shape | size MiB | pairs | prefill tok/s kvforge / llama.cpp | ratio (range) "
          "| decode tok/s kvforge / llama.cpp | ratio (range) | kvforge decode % of active-bytes roofline "
          "| active MB/token |")
    print("|---|---|---|---|---|---|---|---|---|")
    for shape in shapes:
        mine = [r for r in rows if r["shape"] == shape]
        if not mine:
            continue
        pp = [(ours_test(r["kvforge"], "pp")["tok_per_s_mean"], their_rate(r["llama"], True))
              for r in mine]
        tg = [(ours_test(r["kvforge"], "tg")["tok_per_s_mean"], their_rate(r["llama"], False))
              for r in mine]
        roof = statistics.median(100 * ours_test(r["kvforge"], "tg")["roofline_fraction"]
                                 for r in mine)
        active = ours_test(mine[0]["kvforge"], "tg")["bytes_per_token"] / 1e6
        size = mine[0]["file_bytes"] / (1 << 20)
        note = " (llama.cpp --no-repack)" if isinstance(mine[0]["llama"], dict) else ""
        print(f"| {shape}{note} | {size:.0f} | {len(mine)} | {ratio_cell(pp)} | {ratio_cell(tg)} "
              f"| {roof:.0f} % | {active:.0f} |")


def batched_table(rows, shapes):
    print("| shape | rounds | kvforge decode tok/s 1 → 16 | scaling | llama.cpp decode tok/s 1 → 16 "
          "| scaling | kvforge / llama.cpp at 16 |")
    print("|---|---|---|---|---|---|---|")
    for shape in shapes:
        mine = [r for r in rows if r["shape"] == shape]
        if not mine:
            continue
        ours = [serve_decode_rates(r["kvforge"]) for r in mine]
        theirs = [{t["pl"]: t["speed_tg"] for t in r["llama"]} for r in mine]
        med = statistics.median
        k1, k16 = med(o[1] for o in ours), med(o[16] for o in ours)
        l1, l16 = med(t[1] for t in theirs), med(t[16] for t in theirs)
        scale_k = med(o[16] / o[1] for o in ours)
        scale_l = med(t[16] / t[1] for t in theirs)
        vs = med(o[16] / t[16] for o, t in zip(ours, theirs))
        print(f"| {shape} | {len(mine)} | {k1:.1f} → {k16:.1f} | {scale_k:.2f}× "
              f"| {l1:.1f} → {l16:.1f} | {scale_l:.2f}× | **{vs:.2f}×** |")


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    print("Prefill pp512, decode tg64, `-t 2`, one repetition per run, runs alternating:\n")
    bench_table([r for r in rows if r["kind"] == "bench"], shapes)
    print("\nBatched decode, prompts of 128 tokens, 32 generated each, rounds alternating:\n")
    batched_table([r for r in rows if r["kind"] == "batched"], shapes)


if __name__ == "__main__":
    main()
