#!/usr/bin/env bash
# Tensor parallelism over MPI on tiny random models (dense, mixtures of
# experts, hybrids, gemma4's shared-KV layers, per-layer head sizes, FFN
# widths and embeddings, and its experts beside a dense FFN), 1, 2 and 4 ranks
# over loopback: the logits of every step (a digest of their bits) and the greedy tokens of a batched workload with chunked prefill, prefix-cache hits and
# preemption (hybrids: recurrent-state snapshots restored on prefix hits),
# and of the static pipeline's slots (tp_logits.cpp), are the
# same bytes at every rank count and in a plain single process (greedy-only
# steps, which gather slice maxima instead of logits, too); `kvforge
# run` under mpirun prints once and matches a single process, on the paged
# engine and on the static pipeline; refusals and a killed rank end with a
# clear error.
# usage: tp_test.sh path/to/kvforge path/to/tp_logits path/to/mpirun work_dir
# Exits 77 (skipped) when kvforge was built without MPI.
set -euo pipefail
kv="$(realpath "$1")"
tp_logits="$(realpath "$2")"
mpirun="$3"
work="$4"
rm -rf "$work" && mkdir -p "$work" && cd "$work"

fail() { echo "FAIL: $*" >&2; exit 1; }
expect_in() { grep -qF -- "$1" "$2" || { cat "$2" >&2; fail "expected '$1' in $2"; }; }

if [ ! -x "$mpirun" ]; then
  echo "SKIP: kvforge was built without MPI (scripts/setup.sh installs Open MPI)"
  "$kv" make-model -o tiny.gguf --preset tiny 2>/dev/null
  if "$kv" run -m tiny.gguf -n 1 --tp 2 >/dev/null 2>tp.err; then fail "--tp 2 ran"; fi
  expect_in "built without MPI" tp.err
  exit 77
fi

# CI runs as root; 4 ranks on 2 cores need oversubscription, and idle ranks
# should yield rather than spin.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Under the ASan build, leak checking stays on for the single-process runs
# but is off under mpirun: Open MPI's plugins, unloaded at MPI_Finalize,
# leave allocations LeakSanitizer can neither attribute nor suppress.
mpi=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  "$mpirun" --oversubscribe --mca mpi_yield_when_idle 1 --bind-to none)

# name: make-model flags. Query heads divide by 4 for the 4-rank runs; with
# 2 KV heads, 4 ranks replicate each KV head on 2 ranks.
declare -A models=(
  [llama-mha]="--n-embd 64 --n-head 4 --n-kv-head 4"
  [llama-gqa-q8]="--n-embd 128 --n-head 8 --n-kv-head 4 --type q8_0 --n-vocab 512"
  [qwen2]="--arch qwen2 --n-embd 64 --n-head 8 --n-kv-head 4"
  [qwen3]="--arch qwen3 --n-embd 64 --n-head 4 --n-kv-head 2"
  [gemma2]="--arch gemma2 --n-embd 64 --n-head 4 --n-kv-head 2 --sliding-window 8"
  [phi3]="--arch phi3 --n-embd 64 --n-head 4 --n-kv-head 2"
  [qwen3moe]="--arch qwen3moe --n-embd 64 --n-head 4 --n-kv-head 2"
  [qwen3moe-q8]="--arch qwen3moe --n-embd 128 --n-head 8 --n-kv-head 4 --type q8_0 --n-vocab 512 --n-ff-exp 64"
  [gpt-oss]="--arch gpt-oss --n-embd 64 --n-head 4 --n-kv-head 2 --sliding-window 8"
  [qwen35]="--arch qwen35 --full-attention-interval 2 --n-embd 64 --n-head 4 --n-kv-head 2 --ssm-k-heads 4 --ssm-v-heads 8"
  [qwen3next]="--arch qwen3next --full-attention-interval 2 --n-embd 64 --n-head 4 --n-kv-head 2 --ssm-k-heads 4 --ssm-v-heads 8"
  [qwen35moe]="--arch qwen35moe --full-attention-interval 2 --n-embd 64 --n-head 4 --n-kv-head 2 --ssm-k-heads 4 --ssm-v-heads 8"
  [gemma4]="--arch gemma4 --n-embd 64 --n-head 4 --n-kv-head 1 --n-kv-head-swa 2 --head-dim 32 --head-dim-swa 8 --sliding-window 8 --swa-pattern 3 --shared-kv-layers 3 --n-embd-per-layer 16 --n-ff-double-wide"
  # Gemma 4's MoE variant: experts (8, 2 per token) beside the dense FFN on
  # two layers (windowed, then full); its other features are gemma4's above.
  [gemma4-moe]="--arch gemma4 --gemma4-moe --n-embd 64 --n-head 4 --n-kv-head 2 --head-dim 32 --sliding-window 8 --swa-pattern 2"
)
# Layers per model (default 2). gemma4: windows on 0, 1, 3, 4; layers 3-5
# read the K/V of 1 (windowed, 2 KV heads of 8) and 2 (full, 1 KV head of
# 32: replicated over the ranks, while the windowed layers' split); the
# windowed layers' K/V as wide as the full one's keeps the pool at 2 groups.
# The shared layers' FFNs are double wide (256 rows beside 128: ffn_down's
# parts per layer).
declare -A n_layers=([gemma4]=6)
# Architectures the static pipeline refuses: their paged workload only.
declare -A paged_only=()
# Rank counts per model. A sanitizer build is several times slower and 4 ranks
# share 2 cores: there every architecture runs at 2 ranks (each split of its
# layers) and 1 and 4 ranks only for llama-mha and qwen3 (4 ranks replicating
# qwen3's 2 KV heads); the optimised build runs every count for every model.
sanitized=0
if grep -aq -m1 -e __asan_init -e __tsan_init "$tp_logits"; then sanitized=1; fi
rank_counts() {
  if [ "$sanitized" = 1 ] && [ "$1" != llama-mha ] && [ "$1" != qwen3 ]; then echo 2; else echo 1 2 4; fi
}
for name in $(printf '%s\n' "${!models[@]}" | sort); do
  # shellcheck disable=SC2086
  "$kv" make-model -o "$name.gguf" --preset tiny --n-layer "${n_layers[$name]:-2}" ${models[$name]} \
    2>/dev/null
  only=()
  [ -z "${paged_only[$name]:-}" ] || only=(--paged-only)
  "$tp_logits" "$name.gguf" "$name.single" "${only[@]}" || fail "$name: single process"
  expect_in "tokens" "$name.single"
  heads=$("$kv" info "$name.gguf" | sed -n 's/^ *heads *\([0-9]*\) (KV heads.*/\1/p')
  for np in $(rank_counts "$name"); do
    [ "$np" -le "$heads" ] || continue
    timeout 60 "${mpi[@]}" -np "$np" "$tp_logits" "$name.gguf" "$name.tp$np" "${only[@]}" ||
      fail "$name: mpirun -np $np"
    cmp -s "$name.single" "$name.tp$np" ||
      { diff "$name.single" "$name.tp$np" | head >&2; fail "$name: tp=$np differs from one process"; }
    echo "$name: tp=$np bitwise equal to one process ($(grep -c logits "$name.single") logit rows)"
  done
done
expect_in "preemptions" llama-mha.single
grep -q "prefix hits [1-9]" llama-mha.single || fail "the workload had no prefix-cache hit"
grep -q "preemptions [1-9]" llama-mha.single || fail "the workload had no preemption"

# kvforge run: rank 0 alone prints, the same text as one process.
args=(run -m llama-mha.gguf -p "Hello there" -n 24 --temp 0 -q -t 1)
"$kv" "${args[@]}" >run.single 2>/dev/null
timeout 60 "${mpi[@]}" -np 2 "$kv" "${args[@]}" >run.tp2 2>run.tp2.err ||
  { cat run.tp2.err >&2; fail "mpirun -np 2 kvforge run"; }
cmp -s run.single run.tp2 || { cat run.single run.tp2 >&2; fail "kvforge run under mpirun -np 2"; }

# Refusals, with the reason.
if "$kv" run -m llama-mha.gguf -n 1 --tp 2 >/dev/null 2>tp.err; then fail "--tp 2 without mpirun ran"; fi
expect_in "launch it as mpirun -np 2" tp.err
if timeout 60 "${mpi[@]}" -np 3 "$kv" run -m llama-mha.gguf -n 1 -t 1 >/dev/null 2>tp3.err; then
  fail "3 ranks on 4 KV heads ran"
fi
expect_in "KV heads do not divide evenly" tp3.err
# A mixture of experts whose experts' rows the ranks cannot share equally.
"$kv" make-model -o moe-odd.gguf --preset tiny --n-layer 1 --arch qwen3moe --n-embd 64 --n-head 4 \
  --n-kv-head 4 --n-ff-exp 34 2>/dev/null
if timeout 60 "${mpi[@]}" -np 4 "$kv" run -m moe-odd.gguf -n 1 -t 1 >/dev/null 2>moe4.err; then
  fail "4 ranks on experts of 34 rows ran"
fi
expect_in "34 rows of each expert do not divide evenly" moe4.err
# A hybrid model whose 2 linear-attention key heads 4 ranks cannot share.
"$kv" make-model -o hybrid-2k.gguf --preset tiny --n-layer 4 --arch qwen35 --n-embd 64 --n-head 4 \
  --n-kv-head 4 --ssm-k-heads 2 --ssm-v-heads 4 2>/dev/null
if timeout 60 "${mpi[@]}" -np 4 "$kv" run -m hybrid-2k.gguf -n 1 -t 1 >/dev/null 2>hyb4.err; then
  fail "4 ranks on 2 linear-attention key heads ran"
fi
expect_in "2 linear-attention key heads do not divide evenly" hyb4.err

# The static pipeline: each rank compiles the plans of its share; the same
# text as one process (the default plans: prefill chunks, generate variants).
for name in llama-mha llama-gqa-q8 gemma2; do
  sargs=(run -m "$name.gguf" -p "Hello there, static world" -n 40 --temp 0 -q -t 1 --static)
  "$kv" "${sargs[@]}" >"static.$name.1" 2>/dev/null
  heads=$("$kv" info "$name.gguf" | sed -n 's/^ *heads *\([0-9]*\) (KV heads.*/\1/p')
  for np in 2 4; do
    [ "$np" -le "$heads" ] || continue
    timeout 60 "${mpi[@]}" -np "$np" "$kv" "${sargs[@]}" >"static.$name.$np" 2>static.err ||
      { cat static.err >&2; fail "$name: mpirun -np $np run --static"; }
    cmp -s "static.$name.1" "static.$name.$np" ||
      { cat "static.$name.1" "static.$name.$np" >&2; fail "$name: static at tp=$np differs"; }
    echo "$name: static pipeline at tp=$np prints what one process prints"
  done
done

# A rank that dies mid-generation: the others end within seconds, with an error.
timeout 60 "${mpi[@]}" -np 2 "$kv" run -m llama-mha.gguf -p "Hello" -n -1 --ignore-eos -c 100000 \
  -t 1 >/dev/null 2>kill.err &
launcher=$!
trap 'kill $launcher 2>/dev/null || true' EXIT
victim=""
for _ in $(seq 100); do
  # timeout's child is mpirun, whose children are the ranks.
  for pid in $(pgrep -P "$(pgrep -P "$launcher" | head -1)" 2>/dev/null || true); do
    grep -qz "^OMPI_COMM_WORLD_RANK=1$" "/proc/$pid/environ" 2>/dev/null && victim=$pid
  done
  [ -n "$victim" ] && break
  sleep 0.1
done
[ -n "$victim" ] || fail "no rank 1 found to kill"
sleep 1
start=$(date +%s)
kill -9 "$victim"
if wait "$launcher"; then fail "the run survived a dead rank"; fi
took=$(($(date +%s) - start))
[ "$took" -le 10 ] || fail "the other ranks took ${took}s to end after rank 1 died"
grep -qiE "rank 1|exited on signal|killed" kill.err || { cat kill.err >&2; fail "no error naming the dead rank"; }
echo "a killed rank ended the run in ${took}s"
echo "ok"
