#!/usr/bin/env bash
# Issue 38's benchmark: mixture-of-experts files (random weights, written by make-model so both
# engines read the same bytes) against llama.cpp, in one run:
#   prefill (pp512) and decode (tg64) tok/s   kvforge bench and llama-bench, alternating,
#                                             PAIRS pairs per file, one repetition each, with
#                                             kvforge's % of the roofline of the bytes a token
#                                             reads (the experts it runs, not all of them)
#   batched decode, 1 and 16 sequences        kvforge bench-serve --concurrency 1 16 and
#                                             llama-batched-bench -npl 1,16 (prompts of 128,
#                                             32 generated tokens each)
# Development-time only: needs llama.cpp's llama-bench and llama-batched-bench.
# Usage: tools/bench_moe.sh [BUILD_DIR] [OUT_DIR] [LLAMA_REF_DIR] [SHAPE...]
#   SHAPE: gpt-oss-20b (~12 GB), qwen3-30b-a3b (~17 GB): the full-size files, or
#          gpt-oss-small, qwen3moe-small (a few hundred MB: to try the script)
#   Files go to KVFORGE_MOE_MODELS (default ${TMPDIR:-/tmp}/kvforge-moe-models), made once.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
out="${2:-docs/bench/moe}"
ref="${3:-${TMPDIR:-/tmp}/llama-ref}"
shift $(($# < 3 ? $# : 3))
shapes=("$@")
((${#shapes[@]})) || shapes=(gpt-oss-20b qwen3-30b-a3b)
kvforge="$build/kvforge"
llama_bench="$ref/llama.cpp/build/bin/llama-bench"
llama_batched="$ref/llama.cpp/build/bin/llama-batched-bench"
for tool in "$kvforge" "$llama_bench" "$llama_batched"; do
  [ -x "$tool" ] || { echo "bench_moe: $tool not found" >&2; exit 1; }
done
models="${KVFORGE_MOE_MODELS:-${TMPDIR:-/tmp}/kvforge-moe-models}"
mkdir -p "$out" "$models"
pairs="${KVFORGE_BENCH_PAIRS:-3}"
rounds="${KVFORGE_BENCH_ROUNDS:-3}"
threads="${KVFORGE_BENCH_THREADS:-2}"
results="$out/moe.jsonl"
: >"$results"

step() { echo "== $*" >&2; }

# make-model arguments of each shape. gpt-oss-20b: 24 layers of 2880, 64 query heads and
# 8 KV heads of 64, 32 experts of 2880 rows, 4 per token, windows of 128 on every other
# layer, sinks, YaRN x32 over 4096, RoPE base 150000, a byte vocabulary padded to gpt-oss's
# 201,088 tokens; experts MXFP4 (as gpt-oss ships them), the rest Q8_0.
# qwen3-30b-a3b: 48 layers of 2048, 32 query heads and 4 KV heads of 128, 128 experts of 768
# rows, 8 per token, RoPE base 1e6, 151,936 tokens; experts Q4_0, the rest Q8_0.
declare -A shape_args=(
  [gpt-oss-20b]="--arch gpt-oss --n-embd 2880 --n-layer 24 --n-head 64 --n-kv-head 8
    --head-dim 64 --n-ff 2880 --n-expert 32 --n-expert-used 4 --n-ff-exp 2880
    --sliding-window 128 --rope-base 150000 --rope-scaling yarn --rope-factor 32
    --rope-orig-ctx 4096 --n-ctx 131072 --n-vocab 201088 --type q8_0 --expert-type mxfp4"
  [qwen3-30b-a3b]="--arch qwen3moe --n-embd 2048 --n-layer 48 --n-head 32 --n-kv-head 4
    --head-dim 128 --n-ff 6144 --n-expert 128 --n-expert-used 8 --n-ff-exp 768
    --rope-base 1000000 --n-ctx 40960 --n-vocab 151936 --type q8_0 --expert-type q4_0"
  [gpt-oss-small]="--arch gpt-oss --n-embd 512 --n-layer 4 --n-head 8 --n-kv-head 2
    --head-dim 64 --n-ff 512 --n-expert 32 --n-expert-used 4 --n-ff-exp 512
    --sliding-window 128 --n-ctx 4096 --n-vocab 32000 --type q8_0 --expert-type mxfp4"
  [qwen3moe-small]="--arch qwen3moe --n-embd 512 --n-layer 4 --n-head 8 --n-kv-head 2
    --head-dim 64 --n-expert 32 --n-expert-used 4 --n-ff-exp 256 --n-ctx 4096 --n-vocab 32000
    --type q8_0 --expert-type q4_0"
)

for shape in "${shapes[@]}"; do
  [ -n "${shape_args[$shape]:-}" ] || { echo "bench_moe: unknown shape $shape" >&2; exit 1; }
  file="$models/$shape.gguf"
  if [ ! -f "$file" ]; then
    step "make-model $shape"
    # shellcheck disable=SC2086
    "$kvforge" make-model -o "$file.part" ${shape_args[$shape]} -t "$threads"
    mv "$file.part" "$file"
  fi
  # llama-bench always uses llama.cpp's repacked (extra) weight buffers, whose AMX kernels
  # crash on some AMX hosts; there the same pp512 and tg64 come from llama-batched-bench
  # --no-repack (one sequence), and the table says so.
  no_repack=()
  if ! "$llama_bench" -m "$file" -p 8 -n 2 -t "$threads" -r 1 >/dev/null 2>&1; then
    step "$shape: llama-bench fails on this host; llama.cpp runs with --no-repack"
    no_repack=(--no-repack)
  fi
  for pair in $(seq "$pairs"); do
    step "$shape pair $pair: kvforge bench"
    ours="$("$kvforge" bench -m "$file" -p 512 -n 64 -t "$threads" -r 1 --json)"
    if ((${#no_repack[@]})); then
      step "$shape pair $pair: llama-batched-bench --no-repack, 1 sequence"
      theirs="{\"no_repack\":$("$llama_batched" -m "$file" -t "$threads" -c 1024 -b 2048 -ub 512 \
        -npp 512 -ntg 64 -npl 1 --no-repack --output-format jsonl 2>/dev/null | grep '^{')}"
    else
      step "$shape pair $pair: llama-bench"
      theirs="$("$llama_bench" -m "$file" -p 512 -n 64 -t "$threads" -r 1 -o json 2>/dev/null)"
    fi
    printf '{"kind":"bench","shape":"%s","pair":%s,"file_bytes":%s,"kvforge":%s,"llama":%s}\n' \
      "$shape" "$pair" "$(stat -L -c %s "$file")" "$ours" "$theirs" | tr -d '\n' >>"$results"
    echo >>"$results"
  done
  for round in $(seq "$rounds"); do
    step "$shape round $round: kvforge bench-serve, 1 and 16 sequences"
    serve="$out/serve-$shape-$round.txt"
    "$kvforge" bench-serve -m "$file" -t "$threads" --concurrency 1 16 --rounds 1 --max-seqs 16 \
      --skip-prefix --prompt-len 128 --gen-len 32 -c 4096 >"$serve" 2>&1
    step "$shape round $round: llama-batched-bench"
    batched="$("$llama_batched" -m "$file" -t "$threads" -c 4608 -b 2048 -ub 512 \
      -npp 128 -ntg 32 -npl 1,16 "${no_repack[@]}" --output-format jsonl 2>/dev/null |
      grep '^{' | tr '\n' ',')"
    printf '{"kind":"batched","shape":"%s","round":%s,"kvforge":"%s","llama":[%s]}\n' \
      "$shape" "$round" "$serve" "${batched%,}" >>"$results"
  done
done
python3 tools/bench_moe_table.py "$results" | tee "$out/moe.md"
