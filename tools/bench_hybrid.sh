#!/usr/bin/env bash
# Issue 37's benchmark: Qwen-3.5-shaped hybrid files (random weights, Qwen 3.5's 248,320-token
# vocabulary, Q8_0 written by make-model so both engines read the same bytes) against
# llama.cpp, in one run:
#   prefill (pp512) and decode (tg128) tok/s   kvforge bench and llama-bench, alternating,
#                                              PAIRS pairs per file, one repetition each
#   16 concurrent conversations vs 1           kvforge bench-serve --concurrency 1 16,
#                                              levels taking turns (--rounds)
# Development-time only: needs llama.cpp built by ../shared/peer/build_llama_cpp.sh.
# Usage: tools/bench_hybrid.sh [BUILD_DIR] [OUT_DIR] [LLAMA_REF_DIR] [SHAPE...]
#   SHAPE: 0.8b, 2b (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
out="${2:-docs/bench/hybrid}"
ref="${3:-${TMPDIR:-/tmp}/llama-ref}"
shift $(($# < 3 ? $# : 3))
shapes=("$@")
((${#shapes[@]})) || shapes=(0.8b 2b)
kvforge="$build/kvforge"
llama_bench="$ref/llama.cpp/build/bin/llama-bench"
vocab="$ref/llama.cpp/models/ggml-vocab-qwen35.gguf"
for tool in "$kvforge" "$llama_bench" "$vocab"; do
  [ -e "$tool" ] || { echo "bench_hybrid: $tool not found" >&2; exit 1; }
done
models="${TMPDIR:-/tmp}/kvforge-hybrid-models"
mkdir -p "$out" "$models"
pairs="${KVFORGE_BENCH_PAIRS:-3}"
rounds="${KVFORGE_BENCH_ROUNDS:-3}"
results="$out/hybrid.jsonl"
: >"$results"

step() { echo "== $*" >&2; }

# Qwen 3.5's widths: 3 of 4 layers Gated DeltaNet with 16 key and 16 value heads of 128,
# every 4th gated attention with 8 query heads and 2 KV heads of 256, tied embeddings.
declare -A widths=(
  [0.8b]="--n-embd 1024 --n-ff 3584"
  [2b]="--n-embd 2048 --n-ff 6144"
)

for shape in "${shapes[@]}"; do
  file="$models/qwen35-$shape-q8_0.gguf"
  if [ ! -f "$file" ]; then
    step "make-model $shape"
    # shellcheck disable=SC2086
    "$kvforge" make-model -o "$file" --arch qwen35 --vocab "$vocab" --type q8_0 --tied \
      ${widths[$shape]} --n-layer 24 --n-head 8 --n-kv-head 2 --head-dim 256 --n-ctx 4096 \
      --ssm-head-dim 128 --ssm-k-heads 16 --ssm-v-heads 16 2>/dev/null
  fi
  for pair in $(seq "$pairs"); do
    step "$shape pair $pair: kvforge bench"
    ours="$("$kvforge" bench -m "$file" -p 512 -n 128 -t 2 -r 1 --json)"
    step "$shape pair $pair: llama-bench"
    theirs="$("$llama_bench" -m "$file" -p 512 -n 128 -t 2 -r 1 -o json 2>/dev/null)"
    printf '{"shape":"%s","pair":%s,"file_bytes":%s,"kvforge":%s,"llama":%s}\n' "$shape" "$pair" \
      "$(stat -L -c %s "$file")" "$ours" "$theirs" | tr -d '\n' >>"$results"
    echo >>"$results"
  done
  step "$shape: bench-serve, 1 and 16 concurrent conversations"
  "$kvforge" bench-serve -m "$file" -t 2 --concurrency 1 16 --rounds "$rounds" --skip-prefix \
    --prompt-len 128 --gen-len 64 -c 4096 --kv-memory 1024 >"$out/serve-$shape.txt" 2>&1
done
python3 tools/bench_hybrid_table.py "$results" | tee "$out/hybrid.md"
