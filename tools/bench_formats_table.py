#!/usr/bin/env python3
"""Turns tools/bench_formats.sh's formats.jsonl into the README's Markdown table.

Each row: a format on one model, its bits per weight and size (llama-bench's
model size, i.e. tensor bytes, over the parameter count), the default model's
perplexity (and its change against F16), and kvforge's prefill / decode tok/s
beside llama.cpp's from the same run, with the ratio kvforge / llama.cpp.
"""
import json
import sys


def llama_rate(tests, prompt):
    for t in tests:
        if (t["n_prompt"] > 0) == prompt:
            return t["avg_ts"], t["model_size"], t["model_n_params"]
    return None, None, None


def ours_rate(report, prefix):
    for t in report["tests"]:
        if t["name"].startswith(prefix):
            return t["tok_per_s_mean"], t.get("roofline_fraction")
    return None, None


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    base_ppl = {r["model"]: r["perplexity"] for r in rows if r["format"] == "F16"}
    print("| model | format | bits/weight | size MiB | perplexity (vs F16) "
          "| prefill tok/s kvforge / llama.cpp | decode tok/s kvforge / llama.cpp "
          "| decode, % of roofline |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        pp_l, size, params = llama_rate(r["llama"], True)
        tg_l, _, _ = llama_rate(r["llama"], False)
        pp_k, _ = ours_rate(r["kvforge"], "pp")
        tg_k, roof = ours_rate(r["kvforge"], "tg")
        ppl = "–"
        if r["perplexity"] is not None:
            base = base_ppl.get(r["model"])
            ppl = f"{r['perplexity']:.4f}"
            if base and r["format"] != "F16":
                ppl += f" ({100 * (r['perplexity'] / base - 1):+.2f} %)"

        def pair(k, l):
            if k is None or l is None:
                return "–"
            return f"{k:.1f} / {l:.1f} (**{k / l:.2f}×**)"

        bpw = f"{8 * size / params:.2f}" if size else "–"
        mib = f"{size / 2**20:.2f}" if size else "–"
        roof_s = f"{100 * roof:.0f} %" if roof else "–"
        print(f"| {r['model']} | {r['format']} | {bpw} | {mib} | {ppl} | {pair(pp_k, pp_l)} "
              f"| {pair(tg_k, tg_l)} | {roof_s} |")


if __name__ == "__main__":
    main()
