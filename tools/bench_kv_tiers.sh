#!/usr/bin/env bash
# The KV disk tier's figures (issue 28) on the `small` preset, Q8_0, in one go:
#   1. kvforge bench-serve --tiers: time to first token of a request whose
#      2,048-token prefix is not cached / in the RAM pool / on disk in a new
#      engine (page cache warm, then the tier's files dropped from it), f16
#      and int8 KV, with bytes read; and the multi-turn chat workload with
#      the tier off and on;
#   2. the same prefix across processes: `kvforge run` on a 2,048-token
#      prompt with no tier, then twice with --kv-disk (the second process
#      restores what the first wrote), f16 and int8.
# Outputs land in OUT (default docs/bench/kv-tiers).
# Usage: tools/bench_kv_tiers.sh [BUILD_DIR] [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
out="${2:-docs/bench/kv-tiers}"
kvforge="$build/kvforge"
models="${TMPDIR:-/tmp}/kvforge-bench-models"
model="$models/small-q8_0.gguf"
mkdir -p "$out" "$models"
[ -f "$model" ] || "$kvforge" make-model --preset small --type q8_0 -o "$model"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

{
  echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "# commit: $(git rev-parse --short HEAD)"
  echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/machine.txt"

# The small preset's context is 2,048: -c 4096 lets a 2,048-token prefix have a suffix.
"$kvforge" bench-serve -m "$model" -t 2 -c 4096 --skip-sweep --skip-prefix --tiers \
  --tier-rounds 3 --tier-kv-types f16,int8 --chat-conversations 16 --chat-turns 4 \
  2>/dev/null | tee "$out/bench-serve-tiers.txt"

# 1,420 characters of these words are 2,048 tokens (BOS included) for the preset's tokenizer.
python3 - "$work/prompt.txt" <<'PY'
import random, sys
random.seed(1)
words = ('the of and to in a that is was he for it with as his on be at by I this had not are '
         'but from or have an they which one you were her all she there would their we him been '
         'has when who will more no if out so said what up its about into than them can only '
         'other new some could time these two may then do first any my now such like our over '
         'man me even most made after also did many before must through back years where much '
         'your way well down should because each just those people').split()
open(sys.argv[1], 'w').write(' '.join(random.choice(words) for _ in range(600))[:1420])
PY
{
  echo
  echo "## Across processes: kvforge run -f prompt.txt -n 1 -c 4096 (2,048-token prompt)"
  echo
  echo "| KV | run | prompt | time to first token | KV tiers |"
  echo "|---|---|---|---|---|"
  for kvt in f16 int8; do
    for what in "no tier" "tier, first process" "tier, new process"; do
      args=()
      [ "$what" = "no tier" ] || args=(--kv-disk "$work/disk-$kvt")
      "$kvforge" run -m "$model" -f "$work/prompt.txt" -n 1 --temp 0 -c 4096 -t 2 \
        --kv-type "$kvt" "${args[@]}" >/dev/null 2>"$work/run.err"
      prompt=$(grep -o 'prompt *[0-9]* tokens' "$work/run.err" | tr -s ' ')
      ttft=$(grep -o 'time to first token [0-9.]* ms' "$work/run.err" | sed 's/time to first token //')
      tiers=$(grep -o 'disk [0-9]* hits ([^)]*)' "$work/run.err" || echo "-")
      echo "| $kvt | $what | $prompt | $ttft | $tiers |"
    done
  done
} | tee "$out/run-restart.md"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
