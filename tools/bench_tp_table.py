#!/usr/bin/env python3
"""The table of tools/bench_tp.sh: for each configuration and test, the
median round's mean tok/s, its ratio to tp=1 in the same round, and rank
0's messages, bytes and collective time per token.
usage: bench_tp_table.py RAW_DIR ROUNDS"""
import json
import statistics
import sys

CONFIGS = [("tp1", "tp=1, 2 threads"), ("tp2-shm", "tp=2, 1 thread/rank, shared memory"),
           ("tp2-tcp", "tp=2, 1 thread/rank, TCP loopback")]


def load(raw, name, rounds):
    return [json.load(open(f"{raw}/{name}.{r}.json")) for r in range(1, rounds + 1)]


def main():
    raw, rounds = sys.argv[1], int(sys.argv[2])
    runs = {name: load(raw, name, rounds) for name, _ in CONFIGS}
    print("| configuration | test | tok/s (median round) | × tp=1 (median of rounds) |"
          " messages/token | KiB sent/token | KiB received/token | ms/step in collectives"
          " | % of time |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, label in CONFIGS:
        for t, test in enumerate(runs[name][0]["tests"]):
            tps = [r["tests"][t]["tok_per_s_mean"] for r in runs[name]]
            base = [r["tests"][t]["tok_per_s_mean"] for r in runs["tp1"]]
            ratio = statistics.median(a / b for a, b in zip(tps, base))
            mid = sorted(range(rounds), key=lambda i: tps[i])[rounds // 2]
            comm = runs[name][mid]["tests"][t].get("communication")
            cells = ["-"] * 5
            if comm:
                cells = [f"{comm['messages_per_token']:.2f}",
                         f"{comm['bytes_sent_per_token'] / 1024:.2f}",
                         f"{comm['bytes_received_per_token'] / 1024:.2f}",
                         f"{comm['seconds_per_step'] * 1e3:.3f}",
                         f"{100 * comm['fraction_of_time']:.1f}"]
            print(f"| {label} | {test['name']} | {tps[mid]:.1f} | {ratio:.3f} | " +
                  " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
