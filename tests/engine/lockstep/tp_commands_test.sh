#!/usr/bin/env bash
# The commands beyond `run` under mpirun, on a tiny random model: one
# scheduler for all ranks (rank 0 leads, the others follow its engine in
# lockstep; engine/lockstep/). batch with prefix-cache hits and preemption
# (a small pool), chat (paged and static) and perplexity print the same bytes at 1, 2 and 4
# ranks as one process; bench runs and reports its communication, with
# --greedy fewer bytes per token; serve
# under mpirun -np 2 answers an OpenAI completion as one process does,
# counts its collectives in /metrics and stops cleanly on SIGTERM;
# bench-serve's greedy outputs (multi-turn chat included) match one process
# and --tiers is refused.
# usage: tp_commands_test.sh path/to/kvforge path/to/mpirun work_dir
# Exits 77 (skipped) when kvforge was built without MPI.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/tp_setup.sh"
printf '%s\n' "Hello there, how are you today my friend" "Hello there, how are you doing" \
  "Once upon a time" "The quick brown fox jumps over" >prompts.txt
for _ in 1 2 3 4 5 6; do cat prompts.txt; done >text.txt

# Timings differ from run to run; everything else must not.
untimed() { grep -vE "tok/s|ms |first token" "$1" | sed -E 's/[0-9.]+ s\)/s)/'; }
same_at_every_tp() {  # name, then the command's arguments
  local name=$1
  shift
  "$kv" "$@" >"$name.1" 2>"$name.1.err" || { cat "$name.1.err" >&2; fail "$name: one process"; }
  for np in 2 4; do
    timeout 60 "${mpi[@]}" -np "$np" "$kv" "$@" <"${stdin:-/dev/null}" >"$name.$np" \
      2>"$name.$np.err" || { cat "$name.$np.err" >&2; fail "$name: mpirun -np $np"; }
    cmp -s <(untimed "$name.1") <(untimed "$name.$np") ||
      { diff <(untimed "$name.1") <(untimed "$name.$np") | head >&2; fail "$name: tp=$np differs"; }
    echo "$name: tp=$np prints what one process prints"
  done
}

same_at_every_tp batch batch -m m.gguf -f prompts.txt -n 24 --temp 0 -t 1 --block-size 4 \
  --kv-blocks 40 --max-seqs 4 --max-batched-tokens 16 --ignore-eos
grep -qE "[1-9][0-9]* preemptions" batch.1 || fail "batch: no preemption"
grep -qE "prefix cache: [1-9][0-9]* hits" batch.1 || fail "batch: no prefix-cache hit"
# Constrained sampling: the followers get each request's grammar rules and mask the same
# tokens, so sampled (not only greedy) constrained replies match one process and follow it.
echo 'root ::= "{\"n\": " [0-9]{1,4} ", \"w\": \"" [a-z]{0,6} "\"}"' >obj.gbnf
same_at_every_tp batch_grammar batch -m m.gguf -f prompts.txt -n 40 --temp 0.9 -s 7 -t 1 \
  --grammar-file obj.gbnf
[ "$(grep -cE '^output: \{"n": [0-9]{1,4}, "w": "[a-z]{0,6}"\}$' batch_grammar.1)" = 4 ] ||
  { cat batch_grammar.1 >&2; fail "batch --grammar-file: replies do not follow the grammar"; }
# Each rank's KV pool holds its KV heads only: the same blocks in 1/tp of the bytes.
kv_kib() { sed -n 's/.*KV pool .* tokens, \([0-9.]*\) KiB.*/\1/p' "$1"; }
for np in 2 4; do
  want=$(awk -v k="$(kv_kib batch.1.err)" -v n="$np" 'BEGIN { printf "%.2f", k / n }')
  [ "$(kv_kib "batch.$np.err")" = "$want" ] ||
    fail "batch: rank 0's KV pool at tp=$np is $(kv_kib "batch.$np.err") KiB, not $want"
done
same_at_every_tp perplexity perplexity -m m.gguf -f text.txt -c 64 -t 1
printf 'Hello\nHow are you\n' >chat.in
stdin=chat.in same_at_every_tp chat chat -m m.gguf --temp 0 -n 8 -t 1 <chat.in
stdin=chat.in same_at_every_tp chat-static chat -m m.gguf --temp 0 -n 8 -t 1 --static <chat.in
timeout 60 "${mpi[@]}" -np 2 "$kv" bench -m m.gguf -p 16 -n 8 -r 1 -t 1 >bench.2 2>bench.2.err ||
  { cat bench.2.err >&2; fail "bench under mpirun -np 2"; }
grep -q "^| tg8" bench.2 || fail "bench: no tg8 row"
grep -qE "^tg8 +[0-9.]+ messages/token, .* ms/step in collectives" bench.2 ||
  { cat bench.2 >&2; fail "bench: no communication line"; }
# --greedy: each rank sends its vocabulary slice's maximum, not its logits.
timeout 60 "${mpi[@]}" -np 2 "$kv" bench -m m.gguf -p 16 -n 8 -r 1 -t 1 --greedy >greedy.2 \
  2>greedy.2.err || { cat greedy.2.err >&2; fail "bench --greedy under mpirun -np 2"; }
tg_sent() {  # bytes rank 0 sent per decoded token
  awk '/^tg8 / { for (i = 1; i < NF; ++i) if ($(i + 2) == "sent") {
    print $i * ($(i + 1) == "MiB" ? 1048576 : $(i + 1) == "KiB" ? 1024 : 1); exit } }' "$1"
}
awk -v g="$(tg_sent greedy.2)" -v f="$(tg_sent bench.2)" 'BEGIN { exit !(g > 0 && g < f) }' ||
  { cat bench.2 greedy.2 >&2; fail "bench --greedy: not fewer bytes per token"; }

# bench-serve: rank 0 drives every workload and prints once; the greedy
# outputs (counts and digests) and the cache counts (prefix cache, the
# multi-turn chat's RAM hits and preemptions) match one process.
bench_serve=(bench-serve -m m.gguf --concurrency 1,3 --prompt-len 8 --gen-len 6 -t 1
  --prefix-requests 3 --prefix-len 12 --suffix-len 3 --prefix-gen-len 4 --block-size 4
  --max-batched-tokens 16 --multi-turn --chat-conversations 4 --chat-turns 3
  --chat-context-len 12 --chat-user-len 4 --chat-reply-len 4)
outputs() {  # what must not depend on the number of ranks, without timings
  grep -E "^(Greedy outputs|Conversations at the end)" "$1"
  sed -nE 's/^\| (on|off) \| [0-9.]+ \| [0-9.]+ \/ [0-9.]+ \| [0-9.]+ \| ([0-9]+) \| ([0-9]+ \/ [0-9]+) \|$/prefix \1 \2 \3/p' "$1"
  sed -nE 's/^\| off \| .* \| ([0-9]+) \| 0 \| 0 B .* \| ([0-9]+) \|$/chat off \1 \2/p' "$1"
}
"$kv" "${bench_serve[@]}" >bench-serve.1 2>bench-serve.1.err ||
  { cat bench-serve.1.err >&2; fail "bench-serve: one process"; }
[ "$(outputs bench-serve.1 | wc -l)" = 6 ] || { cat bench-serve.1 >&2; fail "bench-serve: no outputs"; }
grep -q "^prefix on 12 3 / 6$" <(outputs bench-serve.1) || fail "bench-serve: no prefix-cache hits"
grep -qE "^chat off [1-9][0-9]* [1-9][0-9]*$" <(outputs bench-serve.1) ||
  fail "bench-serve: the multi-turn chat had no RAM hits or no preemption"
for np in 2 4; do
  timeout 60 "${mpi[@]}" -np "$np" "$kv" "${bench_serve[@]}" >"bench-serve.$np" \
    2>"bench-serve.$np.err" || { cat "bench-serve.$np.err" >&2; fail "bench-serve: mpirun -np $np"; }
  [ "$(grep -c "^# bench-serve" "bench-serve.$np")" = 1 ] || fail "bench-serve: tp=$np printed twice"
  grep -qE "^  C=3 +[0-9.]+ messages and .* sent per decoded token" "bench-serve.$np" ||
    { cat "bench-serve.$np" >&2; fail "bench-serve: tp=$np reports no communication"; }
  cmp -s <(outputs bench-serve.1) <(outputs "bench-serve.$np") ||
    { diff <(outputs bench-serve.1) <(outputs "bench-serve.$np") >&2; fail "bench-serve: tp=$np differs"; }
  echo "bench-serve: tp=$np gives what one process gives"
done
if timeout 60 "${mpi[@]}" -np 2 "$kv" "${bench_serve[@]}" --tiers >/dev/null 2>tiers.err; then
  fail "bench-serve --tiers ran under mpirun"
fi
grep -q "bench-serve --tiers does not run under mpirun" tiers.err || { cat tiers.err >&2; fail "bench-serve --tiers: no reason"; }

# serve: the same completion as one process; SIGTERM to rank 0 stops the
# server, which tells the other rank, and the run ends with status 0.
complete() {  # port; prints the completion without its id and timestamp
  curl -sf "localhost:$1/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt":"Hello there","max_tokens":16,"temperature":0}' | jq -c 'del(.id, .created)'
}
wait_up() {
  for _ in $(seq 100); do
    curl -sf "localhost:$1/health" >/dev/null && return
    sleep 0.1
  done
  fail "no server on $1"
}
port=$(free_port)
"$kv" serve -m m.gguf --port "$port" -t 1 2>serve.1.err &
one=$!
wait_up "$port"
complete "$port" >serve.1
kill -TERM "$one" && wait "$one"
timeout 60 "${mpi[@]}" -np 2 "$kv" serve -m m.gguf --port "$port" -t 1 2>serve.2.err &
launcher=$!
wait_up "$port"
complete "$port" >serve.2
cmp -s serve.1 serve.2 || { cat serve.1 serve.2 >&2; fail "serve: tp=2 answers differently"; }
curl -sf "localhost:$port/metrics" >metrics.2
grep -qE "^kvforge_tp_messages_total [1-9]" metrics.2 || fail "/metrics: no tp messages"
grep -qE "^kvforge_tp_communication_seconds_total [0-9]" metrics.2 || fail "/metrics: no comm time"
rank0=""
for pid in $(pgrep -P "$(pgrep -P "$launcher" | head -1)"); do
  grep -qz "^OMPI_COMM_WORLD_RANK=0$" "/proc/$pid/environ" && rank0=$pid
done
[ -n "$rank0" ] || fail "no rank 0 found"
kill -TERM "$rank0"
wait "$launcher" || { cat serve.2.err >&2; fail "serve under mpirun: no clean exit on SIGTERM"; }
grep -q "stopped" serve.2.err || fail "serve: no 'stopped' line"
echo "serve: tp=2 answers as one process and stops cleanly on SIGTERM"
echo "ok"
