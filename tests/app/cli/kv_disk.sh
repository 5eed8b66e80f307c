#!/usr/bin/env bash
# The KV disk tier across processes, on the default 4M model: `run` and
# `batch` give the cold run's output when their prefix blocks come back from
# disk in a new process (f16 and int8 KV; a tiny qwen35 with its recurrent-state
# snapshot), and a `batch` killed with -9 in
# the middle of its writes leaves nothing a later run uses wrongly. Entries
# planted under block names (FIFOs, directories, links out of the directory)
# are neither opened, followed nor touched, and a file-size limit turns the
# tier off instead of killing the process.
# usage: kv_disk.sh path/to/kvforge path/to/model.gguf work_dir
set -euo pipefail
kv="$1"
model="$2"
work="$3"
rm -rf "$work" && mkdir -p "$work" && cd "$work"

fail() { echo "FAIL (kv_disk): $*" >&2; exit 1; }
# "disk N hits" of a summary line, 0 when absent.
disk_hits() { sed -n 's/.*disk \([0-9]*\) hits.*/\1/p' "$1" | tail -1; }
rejected() { sed -n 's/.* \([0-9]*\) rejected.*/\1/p' "$1" | tail -1; }

prompt="In the beginning God created the heaven and the earth. And the earth was without form, \
and void; and darkness was upon the face of the deep. And the Spirit of God moved upon the face \
of the waters. And God said, Let there be light: and there was light."

for kvt in f16 int8; do
  "$kv" run -m "$model" -p "$prompt" -n 24 --temp 0 --kv-type "$kvt" >"cold-$kvt.out" 2>/dev/null
  for i in 1 2; do  # 1 writes the blocks, 2 is a new process reading them
    "$kv" run -m "$model" -p "$prompt" -n 24 --temp 0 --kv-type "$kvt" --kv-disk "disk-$kvt" \
      >"disk-$kvt-$i.out" 2>"disk-$kvt-$i.err"
    cmp -s "cold-$kvt.out" "disk-$kvt-$i.out" || fail "$kvt run $i differs from the cold run"
  done
  hits=$(disk_hits "disk-$kvt-2.err")
  [ "${hits:-0}" -gt 0 ] || { cat "disk-$kvt-2.err" >&2; fail "$kvt: no disk hits after restart"; }
done

# The static pipeline restores from the same files (its blocks are the
# paged pool's layout): a third process, --static, gives its own cold output.
"$kv" run -m "$model" -p "$prompt" -n 24 --temp 0 --static >cold-static.out 2>/dev/null
"$kv" run -m "$model" -p "$prompt" -n 24 --temp 0 --static --kv-disk disk-f16 \
  >disk-static.out 2>disk-static.err
cmp -s cold-static.out disk-static.out || fail "--static with restored blocks differs"
[ "$(disk_hits disk-static.err)" -gt 0 ] || { cat disk-static.err >&2; fail "--static: no disk hits"; }
cmp -s cold-static.out cold-f16.out || fail "--static and paged outputs differ"

# A hybrid model (qwen35: recurrent layers): the prompt's blocks and the
# recurrent-state snapshot at its last block boundary go to disk together,
# and a new process restores both and gives the cold output.
"$kv" make-model -o q35.gguf --arch qwen35 --preset tiny --n-layer 4 --seed 5 2>/dev/null
q35=("$kv" run -m q35.gguf -p "$prompt" -n 16 --temp 0)
"${q35[@]}" >cold-q35.out 2>/dev/null
for i in 1 2; do
  "${q35[@]}" --kv-disk disk-q35 >"q35-$i.out" 2>"q35-$i.err"
  cmp -s cold-q35.out "q35-$i.out" || fail "qwen35 run $i differs from the cold run"
done
snapshots() { sed -n "s/.*disk state snapshots \([0-9]*\) restored, \([0-9]*\) stored.*/\1 \2/p" "$1"; }
[ "$(snapshots q35-1.err)" = "0 1" ] || { cat q35-1.err >&2; fail "qwen35: the snapshot was not stored"; }
[ "$(snapshots q35-2.err)" = "1 0" ] || { cat q35-2.err >&2; fail "qwen35: no snapshot restored"; }
[ "$(disk_hits q35-2.err)" -gt 0 ] || { cat q35-2.err >&2; fail "qwen35: no disk hits after restart"; }

# chat --session: two turns in two processes give the replies of two turns in
# one, the second turn's history coming back from the session's tier.
chat=("$kv" chat -m "$model" -n 16 --temp 0)
printf 'Who made the heaven?\nAnd the earth?\n' | "${chat[@]}" >chat-one.out 2>chat-one.err
printf 'Who made the heaven?\n' | "${chat[@]}" --session s.json >chat-a.out 2>chat-a.err
printf 'And the earth?\n' | "${chat[@]}" --session s.json >chat-b.out 2>chat-b.err
grep -q 'resumed 2 messages' chat-b.err || { cat chat-b.err >&2; fail "session not resumed"; }
[ -d s.json.kv ] || fail "the session's tier directory s.json.kv is missing"
cat chat-a.out chat-b.out | grep '^> .*[a-zA-Z]' >chat-two.txt || true
grep '^> .*[a-zA-Z]' chat-one.out >chat-one.txt || true
cmp -s chat-one.txt chat-two.txt || { diff chat-one.txt chat-two.txt >&2; fail "resumed replies differ"; }
reused=$(grep -o '[0-9]* reused' chat-b.err | tr -dc '0-9')
[ "${reused:-0}" -gt 0 ] || { cat chat-b.err >&2; fail "the resumed turn reused nothing"; }

# A burst of writes: 30 prompts that differ from their first token, in
# blocks of 4 tokens (some 450 files), killed with -9 as soon as the first
# files appear, three times over; then a complete run on what they left.
for i in $(seq 1 30); do
  echo "$i: $prompt And the count of them was $((i * 7))."
done >prompts.txt
# An array, not a function: kill -9 must reach kvforge itself, not a subshell.
batch=("$kv" batch -m "$model" -f prompts.txt -n 8 --temp 0 --block-size 4)
"${batch[@]}" >cold-batch.out 2>/dev/null
grep '^output' cold-batch.out >cold-batch.txt
mkdir killed
counts=()
for round in 1 2 3; do
  "${batch[@]}" --kv-disk killed >/dev/null 2>&1 &
  pid=$!
  before=$(ls killed | wc -l)
  while kill -0 "$pid" 2>/dev/null && [ "$(ls killed | wc -l)" -le "$before" ]; do sleep 0.01; done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  n=$(ls killed | wc -l)
  counts+=("$n")
  echo "kill -9 round $round: $n files"
done
"${batch[@]}" --kv-disk killed >after.out 2>after.err
total=$(ls killed | wc -l)
# On a fast machine a round may finish its burst between two polls; the test
# needs one kill that landed mid-burst, whichever round it was.
landed=0
for c in "${counts[@]}"; do [ "$c" -lt "$total" ] && landed=$((landed + 1)); done
[ "$landed" -gt 0 ] || fail "no kill landed during the writes (${counts[*]} of $total files)"
grep '^output' after.out >after.txt
cmp -s cold-batch.txt after.txt || fail "batch after kill -9 differs from the cold run"
[ "$(rejected after.out)" = 0 ] || { tail -3 after.out >&2; fail "a file written before kill -9 was rejected"; }
[ "$(disk_hits after.out)" -gt 0 ] || fail "nothing written before kill -9 was reused"
ls -a killed | grep -q '^\.tmp-' && fail "temporary files of killed writers were not cleaned"
# Untrusted entries: one block file of disk-f16 at a time replaced by a FIFO,
# a directory, a link to a copy of that file outside the directory, or a
# link to a stand-in for /etc/passwd. Each run ends within the timeout with
# the cold output, opening none of them and leaving the tier on; the files
# outside keep their bytes and modification times.
mkdir outside
echo 'root:x:0:0:root:/root:/bin/bash' >outside/passwd
for f in disk-f16/*.kvb; do cp -p "$f" outside/; done
touch -d '2001-09-09 01:46:40' outside/*
stamp() { (cd outside && for f in *; do echo "$f $(stat -c %y "$f") $(cksum <"$f")"; done); }
before=$(stamp)
for kind in fifo dir link-out link-passwd; do
  for f in disk-f16/*.kvb; do
    name=$(basename "$f")
    rm -rf planted && cp -rp disk-f16 planted && rm "planted/$name"
    case $kind in
      fifo) mkfifo "planted/$name" ;;
      dir) mkdir -p "planted/$name/inside" ;;
      link-out) ln -s "$PWD/outside/$name" "planted/$name" ;;
      link-passwd) ln -s "$PWD/outside/passwd" "planted/$name" ;;
    esac
    status=0
    timeout 60 "$kv" run -m "$model" -p "$prompt" -n 24 --temp 0 --kv-type f16 \
      --kv-disk planted >planted.out 2>planted.err || status=$?
    what="$kind under $name"
    [ "$status" = 0 ] || { cat planted.err >&2; fail "$what: run ended with status $status"; }
    cmp -s cold-f16.out planted.out || fail "$what: output differs from the cold run"
    [ "$(rejected planted.err)" = 0 ] || { cat planted.err >&2; fail "$what: opened it"; }
    grep -q 'DEGRADED' planted.err && { cat planted.err >&2; fail "$what: tier off"; }
    [ "$before" = "$(stamp)" ] || fail "$what: a file outside the tier's directory changed"
  done
done

# A file-size limit below one block file, SIGXFSZ at its default: the first
# block write fails with EFBIG, the tier turns off with one warning naming
# the file, and the run ends normally with the cold output.
status=0
(ulimit -f 20 && exec "$kv" run -m "$model" -p "$prompt" -n 24 --temp 0 --kv-type f16 \
  --kv-disk limited) >limited.out 2>limited.err || status=$?
[ "$status" = 0 ] || { cat limited.err >&2; fail "run under ulimit -f 20 ended with status $status"; }
cmp -s cold-f16.out limited.out || fail "run under ulimit -f 20 differs from the cold run"
grep -q "warning: KV disk tier limited: cannot write .*limited/.*File too large; serving from RAM only" \
  limited.err || { cat limited.err >&2; fail "no warning that the tier turned off"; }
grep -q 'DEGRADED' limited.err || { cat limited.err >&2; fail "the summary does not say DEGRADED"; }

# The same for serve: both completions answered (the first write turns the
# tier off), the server alive after them and stopping normally on SIGTERM.
(ulimit -f 20 && exec "$kv" serve -m "$model" --port 0 --kv-disk limited-serve) 2>serve.err &
pid=$!
port=
for _ in $(seq 1 600); do
  port=$(sed -n 's|.*listening on http://[^:]*:\([0-9]*\).*|\1|p' serve.err)
  [ -n "$port" ] || ! kill -0 "$pid" 2>/dev/null && break
  sleep 0.05
done
[ -n "$port" ] || { cat serve.err >&2; fail "serve under ulimit -f 20 did not start"; }
for i in 1 2; do
  code=$(curl -s -o "serve-$i.json" -w '%{http_code}' --max-time 30 \
    -H 'Content-Type: application/json' \
    -d "{\"prompt\": \"$prompt\", \"max_tokens\": 8, \"temperature\": 0}" \
    "http://127.0.0.1:$port/v1/completions") || true
  [ "$code" = 200 ] || { cat serve.err >&2; fail "serve under ulimit -f 20: request $i got '$code'"; }
done
kill -0 "$pid" 2>/dev/null || { cat serve.err >&2; fail "serve under ulimit -f 20 died"; }
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
[ "$status" = 0 ] || { cat serve.err >&2; fail "serve under ulimit -f 20 ended with status $status"; }
grep -q "KV disk tier limited-serve: cannot write .*File too large" serve.err ||
  { cat serve.err >&2; fail "serve: no warning that the tier turned off"; }

echo "kv_disk: ok"
