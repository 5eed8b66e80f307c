#!/usr/bin/env bash
# Structured output end to end (issue 39): decode throughput of 16 concurrent
# requests under a JSON schema against 16 unconstrained ones, on `kvforge
# serve` (end_to_end.mjs), and llama.cpp's llama-completion with and without
# --json-schema on the same file (one sequence: it has no batching), each
# alternating constrained and not, in the same run. MODEL files: see
# docs/bench/grammar-end-to-end.md for how they were made. THREADS (default 1)
# compute threads for both engines; SCHEMA (default schema_e2e.json here) the
# JSON schema file.
# Usage: tools/grammar_bench/end_to_end.sh KVFORGE LLAMA_COMPLETION MODEL [clients=16] [max_tokens=96] [rounds=3]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
kvforge="$1" llama="$2" model="$3"
clients="${4:-16}" max_tokens="${5:-96}" rounds="${6:-3}"
schema="${SCHEMA:-$here/schema_e2e.json}"
threads="${THREADS:-1}"  # llama.cpp at 2 threads spins badly on a shared machine

echo "== kvforge serve, $clients concurrent requests of $max_tokens tokens: $model"
log="$(mktemp)"
"$kvforge" serve -m "$model" --port 0 -t "$threads" -c 1024 --max-seqs "$clients" 2>"$log" &
server=$!
trap 'kill $server 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 600); do
  port="$(sed -n 's/.*listening on http:\/\/[0-9.]*:\([0-9]*\).*/\1/p' "$log" | head -1)"
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { cat "$log" >&2; exit 1; }
node "$here/end_to_end.mjs" "http://127.0.0.1:$port" "$schema" "$clients" "$max_tokens" "$rounds"
kill $server
wait $server 2>/dev/null || true

# llama.cpp's figures: eval (the forward passes) and sampling (the grammar's
# masks included) per token, from llama_perf's report.
echo "== llama-completion, one sequence of $max_tokens tokens, with and without -j: $model"
perf() {
  "$llama" -m "$model" -p "Record 1 of round $1:" -n "$max_tokens" -t "$threads" --temp 1 \
    --seed "$1" -no-cnv --no-warmup "${@:2}" 2>&1 >/dev/null |
    awk -v mode="$2" '
      function num(after) { split(substr($0, index($0, after) + length(after)), f, " "); return f[1] }
      /sampling time =/ { s = num("=") }
      / eval time =/ && !/prompt/ { e = num("="); n = num("/") }
      END { printf "{\"llama_json_schema\": %s, \"decoded\": %d, \"sampling_ms\": %s, \"eval_ms\": %s, \"tokens_per_s\": %.2f, \"sampling_ms_per_token\": %.3f}\n",
                   (mode == "-j" ? "true" : "false"), n, s, e, n * 1000 / (s + e), s / (n + 1) }'
}
for r in $(seq "$rounds"); do
  perf "$r" --ignore-eos
  perf "$r" -j "$(cat "$schema")"
done
