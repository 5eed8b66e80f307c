#!/usr/bin/env bash
# End-to-end checks of the kvforge executable on a tiny random model:
# every subcommand runs, prints what it promises, and fails cleanly on bad input.
# usage: cli_smoke.sh path/to/kvforge work_dir
set -euo pipefail
kv="$1"
work="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rm -rf "$work" && mkdir -p "$work" && cd "$work"

fail() { echo "FAIL: $*" >&2; exit 1; }
expect_in() { grep -qF -- "$1" "$2" || { cat "$2" >&2; fail "expected '$1' in $2"; }; }

"$kv" make-model -o tiny.gguf --preset tiny --seed 3 2>make.err
"$kv" info tiny.gguf >info.out
expect_in "n_embd           64" info.out
expect_in "heads            4 (KV heads 2" info.out
expect_in "blk.0.attn_q.weight" info.out

# Every architecture: make-model writes it, info names its features, run generates.
"$kv" make-model -o g2.gguf --arch gemma2 --n-layer 2 --sliding-window 8 2>/dev/null
"$kv" info g2.gguf >info-g2.out
expect_in "sliding window 8 on 1 of 2 layers" info-g2.out
expect_in "GELU (tanh) FFN" info-g2.out
# A sequence's KV as kv-plan sizes it: windowed layers at their window.
expect_in "windowed layers at their window" info-g2.out
read -r ctx kv_seq < <(awk '/KV at/ {print $3, $5 " " $6}' info-g2.out)
"$kv" kv-plan -m g2.gguf -c "$ctx" >plan-g2.out
expect_in "$kv_seq/sequence of $ctx tokens" plan-g2.out
"$kv" run -m g2.gguf -p "Hello there" -n 16 --temp 0 -q >/dev/null 2>run-g2.err ||
  { cat run-g2.err >&2; fail "gemma2 model does not run"; }
for arch in qwen3 gemma3 phi3; do
  "$kv" make-model -o "$arch.gguf" --arch "$arch" 2>/dev/null
  "$kv" run -m "$arch.gguf" -p "Hi" -n 4 --temp 0 -q >/dev/null 2>"run-$arch.err" ||
    { cat "run-$arch.err" >&2; fail "$arch model does not run"; }
done
"$kv" make-model -o l3.gguf --llama3-rope-freqs 2>/dev/null
"$kv" info l3.gguf >info-l3.out
expect_in "Llama 3 RoPE frequency factors" info-l3.out

# Byte vocabulary: BOS = 1, byte b = b + 3, and SentencePiece's "▁" prefix (E2 96 81).
"$kv" tokenize tiny.gguf "Hello" --ids >tok.out
[ "$(cat tok.out)" = "1 229 153 132 75 104 111 111 114" ] || fail "tokenize gave $(cat tok.out)"

"$kv" run -m tiny.gguf -p "Hello" -n 8 --temp 0 -t 2 >run.out 2>run.err
expect_in "prefill" run.err
expect_in "decode" run.err
expect_in "generated     8 tokens" run.err

# Same seed, same text.
"$kv" run -m tiny.gguf -p "Hi" -n 12 --temp 1 --seed 5 -q >seed1.out 2>/dev/null
"$kv" run -m tiny.gguf -p "Hi" -n 12 --temp 1 --seed 5 -q >seed2.out 2>/dev/null
cmp -s seed1.out seed2.out || fail "same seed gave different text"

"$kv" quantize tiny.gguf tiny-q8.gguf --type q8_0 2>quant.err
"$kv" info tiny-q8.gguf >info-q8.out
expect_in "q8_0" info-q8.out
"$kv" run -m tiny-q8.gguf -p "Hello" -n 4 --temp 0 >/dev/null 2>&1 || fail "q8_0 model does not run"
# Re-quantizing an already quantized file warns; --dry-run prints the plan.
"$kv" quantize tiny-q8.gguf tiny-q4.gguf --type q4_0 --pure 2>requant.err
expect_in "already quantized" requant.err
"$kv" quantize tiny.gguf unused.gguf --type Q4_0 --dry-run >quant-plan.out
expect_in "output.weight" quant-plan.out

# bench: the prefill and decode rows (the README's headline block runs it on
# the small preset in optimised builds only).
"$kv" bench -m tiny.gguf -p 48 -n 8 -r 1 -t 2 >bench.out 2>/dev/null
expect_in "pp48" bench.out
expect_in "tg8" bench.out

# bench-serve: the sweep table, and with --rounds the per-round ratios and their median.
"$kv" bench-serve -m tiny.gguf --concurrency 1,2 --prompt-len 8 --gen-len 4 --rounds 2 \
  --skip-prefix -t 2 >bench-serve.out 2>/dev/null
expect_in "| 2 |" bench-serve.out
expect_in "MiB, f16)" bench-serve.out  # the default KV format, as kvforge bench's
expect_in "Decode vs C=1 over 2 rounds" bench-serve.out
expect_in "median" bench-serve.out
expect_in "decode step's time goes" bench-serve.out  # the phase table
expect_in "outside forward" bench-serve.out
if "$kv" bench-serve -m tiny.gguf --rounds 0 >/dev/null 2>bench-serve.err; then
  fail "bench-serve accepted --rounds 0"
fi
expect_in "rounds" bench-serve.err

printf 'the quick brown fox jumps over the lazy dog\n%.0s' {1..20} >text.txt
"$kv" perplexity -m tiny.gguf -f text.txt -c 64 >ppl.out 2>/dev/null
expect_in "perplexity" ppl.out

# Bad input: clear errors, non-zero exit, no crash.
if "$kv" run -m missing.gguf -p x 2>err1.txt; then fail "missing model accepted"; fi
expect_in "missing.gguf: no such file" err1.txt
head -c 100 tiny.gguf >truncated.gguf
if "$kv" info truncated.gguf 2>err2.txt >/dev/null; then fail "truncated file accepted"; fi
expect_in "truncated.gguf" err2.txt
if "$kv" run -m tiny.gguf -p x --top-p 3 2>err3.txt; then fail "top_p 3 accepted"; fi
expect_in "--top-p" err3.txt
if "$kv" run -m tiny.gguf -p x -c 4 2>err4.txt >/dev/null; then fail "context overflow accepted"; fi
expect_in "context" err4.txt
# Static pipeline: compile a plan file, run it, and get the dynamic run's greedy text.
"$kv" compile -m tiny.gguf -t 2 --max-prompt-len 24 --min-response-len 8 --prefill-chunk 8 --generate-variants 16,32 \
  -o tiny.kvfplan 2>compile.err
expect_in "compiled 3 plans" compile.err
"$kv" run -m tiny.gguf --plan tiny.kvfplan -p "Hello" -n 8 --temp 0 -q >plan.out 2>plan.err
"$kv" run -m tiny.gguf -p "Hello" -n 8 --temp 0 -q >dyn.out 2>/dev/null
cmp -s plan.out dyn.out || fail "static plan run differs from the dynamic run"
"$kv" run -m tiny.gguf --static --max-prompt-len 24 --min-response-len 8 --prefill-chunk 8 \
  -p "Hello" -n 40 --temp 0 >cap.out 2>cap.err
expect_in "finish: length" cap.err
expect_in "static KV capacity of 32 tokens" cap.err
grep -q "training context" cap.err && fail "capacity 32 within the training context warned"
"$kv" run -m tiny.gguf --static --max-prompt-len 500 --min-response-len 100 -p "Hello" -n 2 \
  --temp 0 >/dev/null 2>big.err
expect_in "exceeds the model's training context of 512 tokens" big.err
if "$kv" run -m tiny.gguf --plan tiny.kvfplan -p "$(printf 'x%.0s' {1..40})" 2>err5.txt >/dev/null; then
  fail "prompt over --max-prompt-len accepted"
fi
expect_in "--overflow truncate-left" err5.txt
"$kv" run -m tiny.gguf --plan tiny.kvfplan --overflow truncate-left -p "$(printf 'x%.0s' {1..40})" \
  -n 2 -q >/dev/null 2>&1 || fail "truncate-left refused"
"$kv" make-model -o tiny2.gguf --preset tiny --seed 4 2>/dev/null
if "$kv" run -m tiny2.gguf --plan tiny.kvfplan -p x 2>err6.txt >/dev/null; then fail "plan ran on another model"; fi
expect_in "compiled for a different model" err6.txt
if "$kv" run -m tiny.gguf --plan tiny.kvfplan --static-slots 2 -p x 2>err7.txt >/dev/null; then
  fail "plan ran with another configuration"
fi
expect_in "--static-slots 1 in the plan, 2 requested" err7.txt
head -c 300 tiny.kvfplan >trunc.kvfplan
if "$kv" run -m tiny.gguf --plan trunc.kvfplan -p x 2>err8.txt >/dev/null; then fail "truncated plan accepted"; fi
expect_in "truncated plan file" err8.txt
# batch: every non-empty prompt line gets an output and the totals are printed;
# a pool too small for a request is a clear error.
printf 'Hello\nIn the beginning\n\nthe lazy dog\n' >prompts.txt
"$kv" batch -m tiny.gguf -f prompts.txt -n 6 --temp 0 -t 2 --kv-blocks 8 --block-size 4 \
  >batch.out 2>batch.err
expect_in "=== request 3 " batch.out
expect_in "3 requests, " batch.out
expect_in "preemptions" batch.out
if "$kv" batch -m tiny.gguf -f prompts.txt -n 64 --kv-blocks 2 --block-size 4 2>err9.txt >/dev/null; then
  fail "request larger than the KV pool accepted"
fi
expect_in "the KV pool of 2 blocks" err9.txt
# kv-plan is window-aware: Gemma-2-2B's 13 windowed layers keep 4096 + 16 of 8192 positions.
"$kv" kv-plan --preset gemma-2-2b -c 8192 >kvplan.out
expect_in "624.81 MiB window-aware vs 832.00 MiB" kvplan.out
expect_in "(75.1%, 655163392 vs 872415232 bytes)" kvplan.out
# kv-plan --tp: Llama-2-70B f16 over 4 ranks is about 32 GiB of weights per rank, plus KV.
"$kv" kv-plan --preset llama-2-70b --tp 4 >kvplan-tp.out
expect_in "8 KV heads over 4 ranks: 2 per rank" kvplan-tp.out
expect_in "per rank       weights 32.49 GiB" kvplan-tp.out
expect_in "a 32 GiB card per rank: does NOT fit" kvplan-tp.out
"$kv" kv-plan --preset llama-2-70b --tp 16 >kvplan-tp16.out
expect_in "each held by 2 ranks (replicated" kvplan-tp16.out
# kv-plan --state-snapshots: 4 snapshots of Qwen3-Next's 79036416-byte state
# come out of the KV budget before its split into slots and blocks.
"$kv" kv-plan --preset qwen3-next-80b-a3b --weight-type q4_k --budget-gib 64 -c 4096 \
  --parallel 2 --state-snapshots 4 >kvplan-snap.out
expect_in "snapshots      4 for prefix reuse (--state-snapshots), 301.50 MiB" kvplan-snap.out
expect_in "--parallel 2: 4 snapshots (301.50 MiB), 2 state slots (150.75 MiB)" kvplan-snap.out
# chat: three turns through stdin, paged and static, each reusing the earlier turns' K/V.
bash "$here/chat_turns.sh" "$kv" "$here/../../../models/kvforge-kjv-4m.gguf" "$work/chat"
echo "cli smoke: ok"
