#!/usr/bin/env bash
# The flags a user coming from llama.cpp types, on a tiny random model: one KV
# default (f16) across commands, llama.cpp's spellings as aliases, and
# validation messages that name the flag.
# usage: ux_flags.sh path/to/kvforge work_dir
set -euo pipefail
kv="$1"
work="$2"
rm -rf "$work" && mkdir -p "$work" && cd "$work"

fail() { echo "FAIL (ux_flags): $*" >&2; exit 1; }
expect_in() { grep -qF -- "$1" "$2" || { cat "$2" >&2; fail "expected '$1' in $2"; }; }
# Runs a command that must fail; its stderr goes to $1.
expect_fail() {
  local err="$1"
  shift
  if "$@" >/dev/null 2>"$err"; then fail "expected failure: $*"; fi
}

"$kv" make-model -o tiny.gguf --preset tiny --seed 3 2>/dev/null

# --- one KV default: every command that owns a cache shows the same one in --help.
for cmd in run chat serve batch compile bench-static bench bench-serve kv-plan kv-eval; do
  "$kv" "$cmd" --help >"help-$cmd.out"
  grep -F -- '--kv-type TEXT=f16' "help-$cmd.out" >/dev/null ||
    { cat "help-$cmd.out" >&2; fail "$cmd: --kv-type default is not f16"; }
  expect_in "int8 holds about twice the tokens" "help-$cmd.out"
done
"$kv" run -m tiny.gguf -p Hi -n 2 --temp 0 >/dev/null 2>run-default.err
expect_in "KV f16" run-default.err

# --- llama.cpp's spellings.
"$kv" run -m tiny.gguf -p Hi -n 4 --temp 1 -s 7 -q >seed-s.out 2>/dev/null
"$kv" run -m tiny.gguf -p Hi -n 4 --temp 1 --seed 7 -q >seed-long.out 2>/dev/null
cmp -s seed-s.out seed-long.out || fail "-s 7 and --seed 7 differ"
"$kv" run -m tiny.gguf -p Hi -n 2 --temp 0 -ctk q8_0 -ctv f16 >/dev/null 2>ctk.err
expect_in "KV K int8, V f16" ctk.err
expect_in "q8_0 is kvforge's int8" ctk.err
"$kv" run -m tiny.gguf -p Hi -n 2 --temp 0 --cache-type-k f16 --cache-type-v q8_0 >/dev/null 2>ctv.err
expect_in "KV K f16, V int8" ctv.err
"$kv" make-model -o hd32.gguf --preset tiny --n-embd 64 --n-head 2 --n-kv-head 2 2>/dev/null
"$kv" run -m hd32.gguf -p Hi -n 2 --temp 0 -ctk q4_0 -ctv q4_0 >/dev/null 2>q4.err
expect_in "KV q4" q4.err
expect_in "q4_0 is kvforge's q4" q4.err
"$kv" run -m tiny.gguf -p Hi -n 2 --temp 0 -q -fa -ngl 99 --mlock --no-mmap >/dev/null 2>llama.err ||
  { cat llama.err >&2; fail "-fa -ngl --mlock --no-mmap refused"; }
expect_in "note: -ngl 99 ignored" llama.err
expect_in "note: -fa ignored" llama.err
expect_in "note: --no-mmap ignored" llama.err
"$kv" run -m tiny.gguf -p Hi -n 2 --temp 0 -q -fa on >/dev/null 2>fa-on.err || fail "-fa on refused"
"$kv" serve --help >serve-help.out
expect_in "--parallel" serve-help.out
printf 'from stdin' | "$kv" run -m tiny.gguf -f - -n 1 --temp 0 -q >stdin.out 2>/dev/null
expect_in "from stdin" stdin.out
printf 'Who made the heaven?\n' | "$kv" chat -m tiny.gguf -sys "Be brief." -n 4 --temp 0 >sys.out 2>sys.err ||
  { cat sys.err >&2; fail "chat -sys refused"; }
# -m for info and tokenize, the positional form kept.
"$kv" info -m tiny.gguf >info-m.out
"$kv" info tiny.gguf >info-pos.out
cmp -s info-m.out info-pos.out || fail "info -m differs from info MODEL"
[ "$("$kv" tokenize -m tiny.gguf Hello --ids)" = "$("$kv" tokenize tiny.gguf Hello --ids)" ] ||
  fail "tokenize -m differs from tokenize MODEL"
[ "$("$kv" tokenize -m tiny.gguf -p Hello --ids)" = "$("$kv" tokenize tiny.gguf Hello --ids)" ] ||
  fail "tokenize -m -p differs from tokenize MODEL TEXT"
"$kv" --version >version.out
grep -E '^kvforge [0-9a-f]{7,}.* \(SIMD (scalar|avx2|avx512)\)$|^kvforge unknown' version.out >/dev/null ||
  { cat version.out >&2; fail "--version"; }
"$kv" kv-eval --help >kv-eval-help.out
grep -q '{false}' kv-eval-help.out && fail "kv-eval --help shows {false}"
# One meaning per short flag: -c is a context size, -b tokens per pass, -r repetitions,
# -s the seed, -n tokens, wherever they appear.
"$kv" --help-all >help-all.out
for flag in -c -b -r -s -t -m -f -n -o -p -q; do
  grep -oE -- "^ +$flag,--[a-z-]+" help-all.out | sed 's/^ *//' | sort -u >"short$flag.txt"
done
[ "$(cat short-c.txt)" = "-c,--ctx-size" ] || fail "-c means $(tr '\n' ' ' <short-c.txt)"
[ "$(cat short-b.txt)" = "-b,--batch-size" ] || fail "-b means $(tr '\n' ' ' <short-b.txt)"
[ "$(cat short-r.txt)" = "-r,--repetitions" ] || fail "-r means $(tr '\n' ' ' <short-r.txt)"
[ "$(cat short-s.txt)" = "-s,--seed" ] || fail "-s means $(tr '\n' ' ' <short-s.txt)"
[ "$(cat short-t.txt)" = "-t,--threads" ] || fail "-t means $(tr '\n' ' ' <short-t.txt)"
[ "$(cat short-m.txt)" = "-m,--model" ] || fail "-m means $(tr '\n' ' ' <short-m.txt)"

# --- validation in the user's vocabulary.
"$kv" run -m tiny.gguf -p Hi -n 2 --temp 0 -q -c 100000 >/dev/null 2>ctx.err
expect_in "-c/--ctx-size 100000 is beyond the model's training context of 512 tokens" ctx.err
"$kv" make-model -o yarn.gguf --preset tiny --n-ctx 2048 --rope-scaling yarn --rope-factor 4 \
  --rope-orig-ctx 512 2>/dev/null
expect_fail yarn.err "$kv" run -m yarn.gguf -p Hi -n 2 -c 4096
expect_in "4096 is beyond the 2048 positions the model's RoPE scaling covers" yarn.err
"$kv" run -m tiny.gguf -p Hi -n 2 --temp 0 -q -c 256 >/dev/null 2>ctx-ok.err
grep -q "training context" ctx-ok.err && fail "-c 256 within the training context warned"
"$kv" run -m tiny.gguf -p Hi -n 2 --temp 0 -t -1 >/dev/null 2>t-all.err
expect_in "$(nproc) threads" t-all.err
expect_fail t0.err "$kv" run -m tiny.gguf -p Hi -t 0
expect_in "-t must be >= 1, or -1 for all" t0.err
expect_fail t5.err "$kv" run -m tiny.gguf -p Hi -t -5
expect_in "-t must be >= 1" t5.err
"$kv" run -m tiny.gguf -p Hi -n 1 -q -t 1000 >/dev/null 2>t1000.err
expect_in "warning: -t 1000 is more than the" t1000.err
expect_fail n5.err "$kv" run -m tiny.gguf -p Hi -n -5
expect_in "-n must be >= 1, or -1" n5.err
expect_fail n0.err "$kv" run -m tiny.gguf -p Hi -n 0
expect_in "-n must be >= 1, or -1" n0.err
grep -q max_tokens n0.err && fail "-n 0 names the API field"
"$kv" run -m tiny.gguf -p Hi -n -1 --temp 0 -q -c 32 >/dev/null 2>n-1.err || fail "-n -1 refused"
expect_fail topp.err "$kv" run -m tiny.gguf -p Hi --top-p 3
expect_in "--top-p must be in (0, 1]" topp.err
echo "ux flags: ok"
