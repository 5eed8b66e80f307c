#!/usr/bin/env bash
# `kvforge chat` driven through stdin for three turns, on the paged engine and
# on the static pipeline: every turn gets a reply, turns 2 and 3 reuse the K/V
# of the earlier ones (prefix-cache hits in paged mode, the kept static slot
# in static mode), and greedy replies are the same in both modes.
# usage: chat_turns.sh path/to/kvforge model.gguf work_dir
set -euo pipefail
kv="$1"
model="$2"
work="$3"
mkdir -p "$work" && cd "$work"

fail() { echo "FAIL (chat): $*" >&2; exit 1; }

turns=$'Who made the heaven?\nAnd the earth?\nWhat of the sea?\n'
printf '%s' "$turns" | "$kv" chat -m "$model" -n 16 --temp 0 -t 2 >chat-paged.out 2>chat-paged.err
printf '%s' "$turns" | "$kv" chat -m "$model" -n 16 --temp 0 -t 2 --static --max-prompt-len 192 \
  --min-response-len 64 --prefill-chunk 64 --generate-variants 64,128,256 \
  >chat-static.out 2>chat-static.err

for mode in paged static; do
  # One "(P prompt tokens, R reused from earlier turns, G generated, ...)" line per turn.
  grep -o '([0-9]* prompt tokens, [0-9]* reused' "chat-$mode.err" | tr -dc '0-9 \n' |
    awk '{print $1, $2}' >"reuse-$mode.txt"
  [ "$(wc -l <"reuse-$mode.txt")" -eq 3 ] || { cat "chat-$mode.err" >&2; fail "$mode: expected 3 turns"; }
  read -r p1 r1 < <(sed -n 1p "reuse-$mode.txt")
  read -r p2 r2 < <(sed -n 2p "reuse-$mode.txt")
  read -r p3 r3 < <(sed -n 3p "reuse-$mode.txt")
  [ "$r1" -eq 0 ] || fail "$mode: first turn reused $r1 tokens from nothing"
  [ "$p2" -gt "$p1" ] && [ "$p3" -gt "$p2" ] || fail "$mode: the history does not grow ($p1, $p2, $p3)"
  # The earlier turns are a prefix of the next prompt: most of it must come back.
  [ "$r2" -ge $((p1 / 2)) ] || fail "$mode: turn 2 reused $r2 of the first turn's $p1 prompt tokens"
  [ "$r3" -ge $((p2 / 2)) ] || fail "$mode: turn 3 reused $r3 of turn 2's $p2 prompt tokens"
  # Three non-empty replies after the "> " prompts.
  replies=$(grep -c '^> .*[a-zA-Z]' "chat-$mode.out" || true)
  [ "$replies" -ge 3 ] || { cat "chat-$mode.out" >&2; fail "$mode: $replies replies, expected 3"; }
done
cmp -s chat-paged.out chat-static.out || {
  diff chat-paged.out chat-static.out >&2 || true
  fail "greedy replies differ between the paged engine and the static pipeline"
}
echo "chat: 3 turns on both engines; reused (paged) $(tr '\n' ' ' <reuse-paged.txt)/ (static) $(tr '\n' ' ' <reuse-static.txt)"
