#!/usr/bin/env bash
# The README's headline figures, measured in one go on the `small` preset
# (768/12 layers/12 heads/4 KV heads/ff 2048/32000 tokens, random weights):
#   kernels and roofline   kvforge bench        Q8_0, Q4_0, F16 (issue 7)
#   decode vs context      kvforge bench --ctx-sweep + tools/plot_decode_vs_ctx.py
#   batching engine        kvforge bench-serve  C = 1, 4, 16, 64 and a shared prefix (issue 3)
#   KV formats             kvforge kv-bench     f16 / int8 / q4 at 2048 and 4096 (issue 5)
#   static pipeline        kvforge bench-static (issue 4)
#   server                 kvforge serve + tests/app/server/throughput.mjs, 16 clients (issue 6)
# Each command prints its own ratios against a baseline measured in the same
# run. Run it on an otherwise idle machine; outputs land in OUT (default
# docs/bench). Usage: tools/bench_headline.sh [BUILD_DIR] [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
out="${2:-docs/bench}"
kvforge="$build/kvforge"
models="${TMPDIR:-/tmp}/kvforge-bench-models"
mkdir -p "$out" "$models"
threads=2

step() { echo "== $*" >&2; }

for type in q8_0 q4_0 f16; do
  model="$models/small-$type.gguf"
  [ -f "$model" ] || "$kvforge" make-model --preset small --type "$type" -o "$model"
done
q8="$models/small-q8_0.gguf"

{
  echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/machine.txt"

for type in q8_0 q4_0 f16; do
  step "bench $type (pp512, tg128, roofline)"
  "$kvforge" bench -m "$models/small-$type.gguf" -p 512 -n 128 -t $threads -r 5 |
    tee "$out/bench-$type.txt"
done

sweeps=()
for type in q8_0 q4_0 f16; do
  step "decode tok/s vs context ($type weights, f16 KV)"
  "$kvforge" bench -m "$models/small-$type.gguf" -p 0 -n 0 -t $threads -r 3 --ctx-sweep 2048 \
    --ctx-step 128 --json >"$out/$type.json"
  sweeps+=("$out/$type.json")
done
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  /usr/bin/python3 tools/plot_decode_vs_ctx.py -o "$out/decode_vs_ctx.png" "${sweeps[@]}"
else
  echo "matplotlib missing (apt-get install python3-matplotlib): no plot" >&2
fi

step "bench-serve (batching engine, Q8_0)"
"$kvforge" bench-serve -m "$q8" -t $threads | tee "$out/bench-serve.txt"

step "kv-bench (Q8_0 weights)"
"$kvforge" kv-bench -m "$q8" -t $threads | tee "$out/kv-bench.txt"

step "bench-static vs dynamic (Q8_0)"
"$kvforge" bench-static -m "$q8" -t $threads --kv-type f16 | tee "$out/bench-static.txt"

serve_throughput() {  # label, then serve flags
  local label="$1" port=18089
  shift
  step "server throughput, 16 clients, 64-token completions ($label)"
  "$kvforge" serve -m "$q8" -t $threads --port $port "$@" >"$out/serve-$label.log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
    sleep 0.1
  done
  node tests/app/server/throughput.mjs "http://127.0.0.1:$port" 16 30 64 | tee "$out/serve-$label.json"
  kill $pid
  wait $pid || true
}
if command -v node >/dev/null && [ -d tests/app/server/node_modules ]; then
  serve_throughput paged
  serve_throughput static16 --static --static-slots 16 --max-prompt-len 256 --min-response-len 128
fi

echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
step "done: $out"
