#!/usr/bin/env bash
# The rough edges a new user hit in long use (issue 40), each as its repro:
# flag ranges, llama.cpp's multi-letter short flags, quantize's positional
# type and early output check, Ctrl-C during run, `kvforge` alone, what serve
# gives each sequence, and chat's multi-line input, /bye, over-long messages,
# trimming and reply length.
# usage: long_use.sh path/to/kvforge model.gguf work_dir
set -euo pipefail
kv="$1"
model="$2"
work="$3"
rm -rf "$work" && mkdir -p "$work" && cd "$work"

fail() { echo "FAIL (long_use): $*" >&2; exit 1; }
expect_in() { grep -qF -- "$1" "$2" || { cat "$2" >&2; fail "expected '$1' in $2"; }; }
expect_not_in() { if grep -qF -- "$1" "$2"; then cat "$2" >&2; fail "unexpected '$1' in $2"; fi; }
# Runs a command that must fail; its stderr goes to $1.
expect_fail() {
  local err="$1"
  shift
  if "$@" >/dev/null 2>"$err"; then fail "expected failure: $*"; fi
}

"$kv" make-model -o tiny.gguf --preset tiny --seed 3 2>/dev/null

# --- ranges: a port is 1..65535 (0 = any), sizes are not negative.
expect_fail port.err timeout 20 "$kv" serve -m tiny.gguf --port 99999
expect_in "a TCP port is 1..65535" port.err
expect_not_in "listening" port.err
expect_fail port-neg.err timeout 20 "$kv" serve -m tiny.gguf --port -1
expect_in "a TCP port is 1..65535" port-neg.err
expect_fail ctx.err "$kv" run -m tiny.gguf -p Hi -n 2 -c -5
expect_in "--ctx-size: must be >= 0" ctx.err
expect_fail serve-ctx.err timeout 20 "$kv" serve -m tiny.gguf -c -5
expect_in "--ctx-size: must be >= 0" serve-ctx.err
expect_fail batch.err "$kv" run -m tiny.gguf -p Hi -n 2 -b 0
expect_in "--batch-size: must be >= 1" batch.err
expect_fail np.err timeout 20 "$kv" serve -m tiny.gguf -np 0
expect_in "--max-seqs: must be >= 1" np.err

# --- llama.cpp's multi-letter short flags: their meaning, or what to use instead.
expect_fail cnv.err "$kv" run -m tiny.gguf -cnv
expect_in "-cnv: kvforge run does not converse; for a conversation use \`kvforge chat\`" cnv.err
expect_fail i.err "$kv" run -m tiny.gguf -i -p Hi
expect_in "use \`kvforge chat\`" i.err
"$kv" run -m tiny.gguf -no-cnv -p Hi -n 2 --temp 0 -q >/dev/null 2>no-cnv.err ||
  { cat no-cnv.err >&2; fail "run -no-cnv refused"; }
printf 'Hi\n' | "$kv" chat -m tiny.gguf -cnv -n 2 --temp 0 >/dev/null 2>chat-cnv.err ||
  { cat chat-cnv.err >&2; fail "chat -cnv refused"; }
expect_fail chat-no-cnv.err "$kv" chat -m tiny.gguf -no-cnv
expect_in "kvforge run -p TEXT" chat-no-cnv.err
expect_fail cb.err timeout 20 "$kv" serve -m tiny.gguf -cb --port 99999  # -cb passes, the port stops it
expect_in "note: -cb ignored: kvforge always batches continuously" cb.err
expect_in "a TCP port" cb.err
expect_fail hf.err "$kv" run -hf foo/bar
expect_in "-hf: kvforge does not download models" hf.err
expect_in "pass -m FILE.gguf" hf.err
# Context shift: run, chat and serve (context_shift.sh, truncation.test.mjs); others refuse it.
expect_fail shift.err timeout 20 "$kv" batch -m tiny.gguf --context-shift
expect_in "--context-shift: only kvforge run, chat and serve shift the KV cache" shift.err
"$kv" run -m tiny.gguf -p Hi -n 2 -q --no-context-shift >/dev/null 2>no-shift.err ||
  { cat no-shift.err >&2; fail "--no-context-shift refused"; }
# -r (llama.cpp's reverse prompt) on run is a stop string: the same text as --stop.
"$kv" run -m "$model" -p "In the beginning" -n 40 --temp 0 -q -r "hosts" >r.out 2>/dev/null
"$kv" run -m "$model" -p "In the beginning" -n 40 --temp 0 -q --stop "hosts" >stop.out 2>/dev/null
cmp -s r.out stop.out || fail "-r differs from --stop"
"$kv" run -m "$model" -p "In the beginning" -n 40 --temp 0 -q >nostop.out 2>/dev/null
cmp -s r.out nostop.out && fail "-r did not stop anything"

# --- quantize: llama-quantize's positional type; the output checked before the work.
"$kv" quantize tiny.gguf tiny-q4.gguf Q4_K_M 2>q4.err || { cat q4.err >&2; fail "positional type"; }
expect_in "Q4_K_M:" q4.err
expect_fail q-both.err "$kv" quantize tiny.gguf x.gguf Q4_K_M --type Q8_0
expect_in "type given twice" q-both.err
expect_fail q-dir.err "$kv" quantize tiny.gguf /nope/dir/out.gguf
expect_in "/nope/dir/out.gguf: cannot write: the directory /nope/dir does not exist" q-dir.err
expect_not_in "output_norm" q-dir.err  # no tensor was converted first

# --- Ctrl-C during run ends with the timing summary, as llama.cpp's.
"$kv" make-model -o long.gguf --preset tiny --n-ctx 65536 2>/dev/null
"$kv" run -m long.gguf -p Hi -n -1 --ignore-eos -c 65536 -t 2 >int.out 2>int.err &
pid=$!
for _ in $(seq 100); do [ -s int.out ] && break; sleep 0.1; done
sleep 0.5
kill -INT "$pid"
wait "$pid" || fail "run exited $? after Ctrl-C"
expect_in "finish: interrupted (Ctrl-C)" int.err
expect_in "decode " int.err

# --- kvforge alone: a short usage with the commands.
if "$kv" >alone.out 2>alone.err; then fail "kvforge alone exited 0"; fi
expect_in "usage: kvforge COMMAND" alone.err
for cmd in run chat serve quantize; do grep -qE "^  $cmd +" alone.err || fail "usage lacks $cmd"; done

# --- serve -c N -np P says what each sequence gets.
"$kv" serve -m tiny.gguf -c 128 -np 4 --port 0 -t 1 2>serve.err &
pid=$!
for _ in $(seq 100); do grep -q listening serve.err && break; sleep 0.1; done
kill -TERM "$pid"
wait "$pid" || true
expect_in "up to 4 sequences; each sequence gets the whole context of 128 tokens" serve.err
expect_in "llama-server would split -c across its -np slots" serve.err
# A hybrid model runs only as many sequences as it has recurrent-state slots:
# 3 sequences of 64 tokens fill this --kv-memory, whatever -np says.
"$kv" make-model -o hybrid.gguf --arch qwen35 --n-embd 64 --n-layer 4 --n-head 4 --n-kv-head 2 \
  --head-dim 16 --n-ff 64 --n-ctx 64 --ssm-k-heads 2 --ssm-v-heads 2 --ssm-head-dim 16 2>/dev/null
"$kv" serve -m hybrid.gguf -c 64 -np 8 --kv-memory 0.06 --port 0 -t 1 2>serve-hybrid.err &
pid=$!
for _ in $(seq 100); do grep -q listening serve-hybrid.err && break; sleep 0.1; done
kill -TERM "$pid"
wait "$pid" || true
grep -qF "up to 3 sequences; each sequence gets the whole context of 64 tokens" serve-hybrid.err ||
  { cat serve-hybrid.err >&2; fail "serve counts -np, not the hybrid model's state slots"; }

# --- chat: multi-line input (a trailing \ and """ blocks), /bye.
printf '%s\n' 'first line \' 'second line' '"""' 'block one' 'block two"""' '/save multi.json' \
  '/bye' 'never sent' | "$kv" chat -m tiny.gguf -n 2 --temp 0 >multi.out 2>multi.err
/usr/bin/python3 - multi.json <<'EOF' || { cat multi.err >&2; fail "multi-line messages"; }
import json, sys
m = [x["content"] for x in json.load(open(sys.argv[1])) if x["role"] == "user"]
assert m == ["first line \nsecond line", "block one\nblock two"], m
EOF
[ "$(grep -c 'prompt tokens' multi.err)" -eq 2 ] || { cat multi.err >&2; fail "/bye did not quit"; }
expect_not_in "unknown command /bye" multi.err

# --- chat on the default model: a message longer than the context, trimming, reply length.
python3 -c "print('Who made the heaven? ' * 60)" >long-message.txt
"$kv" chat -m "$model" -c 128 --temp 0 <long-message.txt >too-long.out 2>too-long.err ||
  fail "chat exited non-zero on a long message"
expect_in "(message not sent: with the chat template it is" too-long.err
expect_not_in "max_tokens" too-long.err
# Short turns, then a long message: several old turns go at once, said once.
{ for q in "Who made the heaven?" "And the earth?" "What of the sea?" "And the stars?"; do
    echo "$q"; done
  python3 -c "print('And the ' + 'light and the darkness and ' * 8)"; } |
  "$kv" chat -m "$model" -c 160 -n 24 --temp 0 >trim.out 2>trim.err
grep -o '(history trimmed[^)]*)' trim.err >trim-lines.txt || { cat trim.err >&2; fail "no trim line"; }
# Between two trim lines there is a reply's "(N prompt tokens ...)" line.
grep -o '(history trimmed\|prompt tokens' trim.err | awk '/trimmed/ && prev ~ /trimmed/ { exit 1 } { prev = $0 }' ||
  { cat trim.err >&2; fail "a trim line printed twice in a row"; }
grep -qE 'the oldest [3-9] messages dropped' trim-lines.txt ||
  { cat trim.err >&2; fail "the long message did not drop several messages at once"; }
# -n is the largest reply: 200 tokens at -c 256, not half the context.
echo "Who made the heaven?" | "$kv" chat -m "$model" -c 256 -n 200 --ignore-eos --temp 0 \
  >reply.out 2>reply.err
expect_in "200 generated" reply.err
echo "Who made the heaven?" | "$kv" chat -m "$model" -c 128 -n 200 --ignore-eos --temp 0 \
  >reply-cut.out 2>reply-cut.err
expect_in "(reply cut at the end of the 128-token context)" reply-cut.err
echo "long use: ok"
