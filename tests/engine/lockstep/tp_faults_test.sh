#!/usr/bin/env bash
# A rank that hangs (kill -STOP) mid-generation ends a tensor-parallel run
# within 10 s with an error naming it: a stopped follower seen by rank 0, a
# stopped rank 0 seen by a follower, and under serve, where the request in
# flight and one that arrives meanwhile are answered 503 before the server
# exits; and rank 0 killed while chat waits for input, when its follower
# has no deadline. --tp-timeout 2 keeps the test short (the default is 5 s).
# usage: tp_faults_test.sh path/to/kvforge path/to/mpirun work_dir
# Exits 77 (skipped) when kvforge was built without MPI.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/tp_setup.sh"

stopped=()
trap 'for p in "${stopped[@]}"; do kill -9 "$p" 2>/dev/null || true; done' EXIT
# The pid of rank $2 of the mpirun under `timeout` pid $1.
rank_pid() {
  local pid
  for _ in $(seq 100); do
    for pid in $(pgrep -P "$(pgrep -P "$1" | head -1)" 2>/dev/null || true); do
      if grep -qz "^OMPI_COMM_WORLD_RANK=$2$" "/proc/$pid/environ" 2>/dev/null; then
        echo "$pid"
        return
      fi
    done
    sleep 0.1
  done
}
# Stops rank $2 of launcher $1 once its output $3 (if given) shows tokens (the ranks are
# in the generation loop, whose every exchange has a deadline; before it, a
# slow start under a sanitizer and a loaded machine could leave the follower
# in a wait without one) and waits for the run to end: fails unless it ends
# with an error within 10 s; prints the seconds it took.
stop_and_wait() {
  local victim start out="${3:-}"
  victim=$(rank_pid "$1" "$2")
  [ -n "$victim" ] || fail "no rank $2 found"
  if [ -z "$out" ]; then
    sleep 1  # serve: answering /health, its request in flight
  else
    for _ in $(seq 600); do
      [ "$(stat -c %s "$out" 2>/dev/null || echo 0)" -ge 64 ] && break
      sleep 0.1
    done
    [ "$(stat -c %s "$out")" -ge 64 ] || fail "the run wrote no tokens in 60 s"
  fi
  stopped+=("$victim")
  start=$(date +%s)
  kill -STOP "$victim"
  if wait "$1"; then fail "the run survived rank $2 stopping"; fi
  took=$(($(date +%s) - start))
  [ "$took" -le 10 ] || fail "the run took ${took}s to end after rank $2 stopped"
}

run=(run -m m.gguf -p Hello -n -1 --ignore-eos -c 100000 -t 1 --tp-timeout 2)
for victim in 1 0; do
  timeout 120 "${mpi[@]}" -np 2 "$kv" "${run[@]}" >"run$victim.out" 2>"run$victim.err" &
  stop_and_wait $! "$victim" "run$victim.out"
  grep -q "rank $victim did not answer" "run$victim.err" ||
    { cat "run$victim.err" >&2; fail "no error naming the stopped rank $victim"; }
  echo "run: a stopped rank $victim ended the run in ${took}s, named"
done

# Rank 0 killed while it waits for a person (chat reading stdin) and the
# follower waits for it without a deadline: Open MPI's launcher sees the
# process die and ends the job, naming rank 0 (nothing of kvforge's own).
mkfifo chat.in
exec 3<>chat.in  # held open: chat waits for a line that never comes
timeout 60 "${mpi[@]}" -np 2 "$kv" chat -m m.gguf --temp 0 -n 4 -t 1 <chat.in >/dev/null \
  2>chat.err &
launcher=$!
for _ in $(seq 100); do grep -q "^chatting with" chat.err && break; sleep 0.1; done
grep -q "^chatting with" chat.err || { cat chat.err >&2; fail "chat did not start"; }
victim=$(rank_pid "$launcher" 0)
[ -n "$victim" ] || fail "no rank 0 found"
start=$(date +%s)
kill -9 "$victim"
if wait "$launcher"; then fail "chat survived rank 0 dying"; fi
took=$(($(date +%s) - start))
exec 3>&-
[ "$took" -le 10 ] || fail "chat took ${took}s to end after rank 0 died"
grep -q "process rank 0 .* exited on signal 9" chat.err ||
  { cat chat.err >&2; fail "no error naming rank 0"; }
echo "chat: rank 0 killed while waiting for input ended the run in ${took}s, named"

port=$(free_port)
timeout 60 "${mpi[@]}" -np 2 "$kv" serve -m m.gguf --port "$port" -t 1 -c 100000 \
  --tp-timeout 2 2>serve.err &
launcher=$!
for _ in $(seq 100); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.1; done
complete() {  # prompt, max_tokens, output file; prints the HTTP status
  curl -s "localhost:$port/v1/completions" -H 'Content-Type: application/json' -o "$3" \
    -w '%{http_code}' -d "{\"prompt\":\"$1\",\"max_tokens\":$2,\"ignore_eos\":true}" || true
}
complete Hello 60000 long.out >long.status &
client=$!
(sleep 1.5 && complete Hi 4 second.out >second.status) &
second=$!
stop_and_wait "$launcher" 1
wait "$client" "$second" || true
[ "$(cat long.status)" = 503 ] ||
  { cat long.out >&2; fail "the request in flight got $(cat long.status), not 503"; }
[ "$(cat second.status)" = 503 ] ||
  fail "a request during the hang got $(cat second.status), not 503"
grep -q "rank 1 did not answer" second.out || fail "the 503 does not name rank 1"
grep -q "kvforge serve: stopped" serve.err || fail "serve did not stop cleanly"
echo "serve: a stopped rank ended the server in ${took}s; 503 in flight and meanwhile"
echo "ok"
