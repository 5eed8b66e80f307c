#!/usr/bin/env bash
# The README's weight-format table, in the style of llama.cpp's quantize
# table: for every format a user downloads, files made by llama.cpp's own
# llama-quantize (so both engines read the same bytes), measured in one run:
#   bits per weight and size   from llama-bench's model size / parameter count
#   perplexity                 kvforge perplexity, default model, its validation text
#   prefill / decode tok/s     kvforge bench and llama-bench, alternating per format,
#                              on the default model and on the `small` preset
# Development-time only: needs llama.cpp built by ../shared/peer/build_llama_cpp.sh.
# Usage: tools/bench_formats.sh [BUILD_DIR] [OUT_DIR] [LLAMA_REF_DIR] [FORMAT...]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
out="${2:-docs/bench/formats}"
ref="${3:-${TMPDIR:-/tmp}/llama-ref}"
shift $(($# < 3 ? $# : 3))
formats=("$@")
((${#formats[@]})) || formats=(F16 Q8_0 Q6_K Q5_K_M Q5_K_S Q5_1 Q5_0 Q4_K_M Q4_K_S Q4_1 Q4_0
  IQ4_NL IQ4_XS Q3_K_M Q3_K_S Q2_K)
kvforge="$build/kvforge"
quantize="$ref/llama.cpp/build/bin/llama-quantize"
llama_bench="$ref/llama.cpp/build/bin/llama-bench"
for tool in "$kvforge" "$quantize" "$llama_bench"; do
  [ -x "$tool" ] || { echo "bench_formats: $tool not found" >&2; exit 1; }
done
models="${TMPDIR:-/tmp}/kvforge-format-models"
mkdir -p "$out" "$models"
threads=2
reps="${KVFORGE_BENCH_REPS:-5}"  # timed repetitions per test, both engines
results="$out/formats.jsonl"
: >"$results"

step() { echo "== $*" >&2; }

# quantized FILE_PREFIX F16_SOURCE FORMAT -> prints the path of the llama-quantize'd file
quantized() {
  local prefix="$1" src="$2" format="$3" path="$1-$3.gguf"
  if [ "$format" = F16 ]; then
    echo "$src"
    return
  fi
  [ -f "$path" ] || "$quantize" "$src" "$path" "$format" >"$path.log" 2>&1
  echo "$path"
}

# measure MODEL_NAME FILE FORMAT PROMPT_TOKENS GEN_TOKENS PERPLEXITY_TEXT
measure() {
  local name="$1" file="$2" format="$3" pp="$4" tg="$5" text="$6" ppl="null"
  step "$name $format: kvforge bench"
  local ours theirs
  ours="$("$kvforge" bench -m "$file" -p "$pp" -n "$tg" -t $threads -r "$reps" --json)"
  step "$name $format: llama-bench"
  theirs="$("$llama_bench" -m "$file" -p "$pp" -n "$tg" -t $threads -r "$reps" -o json 2>/dev/null)"
  if [ -n "$text" ]; then
    step "$name $format: perplexity"
    ppl="$("$kvforge" perplexity -m "$file" -f "$text" -t $threads 2>/dev/null |
      awk '/^perplexity /{print $2}')"
  fi
  printf '{"model":"%s","format":"%s","file_bytes":%s,"perplexity":%s,"kvforge":%s,"llama":%s}\n' \
    "$name" "$format" "$(stat -c %s "$file")" "$ppl" "$ours" "$theirs" |
    tr -d '\n' >>"$results"
  echo >>"$results"
}

{
  echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "# kvforge: $(git rev-parse --short HEAD)$(git diff --quiet || echo '+dirty')"
  echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/machine.txt"

default_src="models/kvforge-kjv-4m.gguf"
for format in "${formats[@]}"; do
  measure default "$(quantized "$models/default" "$default_src" "$format")" "$format" 128 64 \
    models/kvforge-kjv-4m.val.txt
done

small_src="$models/small-f16.gguf"
[ -f "$small_src" ] || "$kvforge" make-model --preset small --type f16 -o "$small_src"
for format in "${formats[@]}"; do
  measure small "$(quantized "$models/small" "$small_src" "$format")" "$format" 512 128 ""
done

echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
python3 tools/bench_formats_table.py "$results" | tee "$out/formats.md"
