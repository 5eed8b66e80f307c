#!/usr/bin/env bash
# Tensor parallelism's speed on one machine, all in one run, on the `small`
# preset at Q8_0 (768 wide, 12 layers, 12 heads / 4 KV heads, ff 2048,
# 32000-token vocabulary): kvforge bench (prefill 512 tokens, 128 decodes
# from an empty cache) at
#   tp=1  one process, 2 threads                     (the baseline)
#   tp=2  mpirun -np 2, 1 thread per rank, shared memory (Open MPI's vader BTL)
#   tp=2  the same over TCP on loopback (--mca btl tcp,self)
# then a table of tok/s, the ratio to tp=1, and rank 0's messages, bytes
# and time in collectives per token. Rounds alternate the three so that a
# change in the machine's load hits all of them; the table takes the median
# round. Writes OUT/bench-tp.md (and the raw JSON) and prints the table.
# usage: tools/bench_tp.sh [BUILD_DIR] [OUT] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
out="${2:-docs/bench}"
rounds="${3:-3}"
kvforge="$(realpath "$build/kvforge")"
models="${TMPDIR:-/tmp}/kvforge-bench-models"
raw="$out/bench-tp-raw"
mkdir -p "$out" "$models" "$raw"
model="$models/small-q8_0.gguf"
[ -f "$model" ] || "$kvforge" make-model --preset small --type q8_0 -o "$model"

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bench=(bench -m "$model" -p 512 -n 128 -r 3 --json)
mpi=(mpirun -np 2 --bind-to core)
for round in $(seq "$rounds"); do
  echo "== round $round/$rounds" >&2
  "$kvforge" "${bench[@]}" -t 2 >"$raw/tp1.$round.json" 2>/dev/null
  "${mpi[@]}" "$kvforge" "${bench[@]}" -t 1 >"$raw/tp2-shm.$round.json" 2>/dev/null
  "${mpi[@]}" --mca btl tcp,self "$kvforge" "${bench[@]}" -t 1 >"$raw/tp2-tcp.$round.json" \
    2>/dev/null
done
{
  echo "# tensor parallel on one machine: small preset, Q8_0"
  echo
  echo "Measured $(date -u +%F) by tools/bench_tp.sh at $(git rev-parse --short HEAD);"
  echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores" \
    "($(lscpu | sed -n 's/^Hypervisor vendor: *//p') guest), Open MPI" \
    "$(mpirun --version | head -1 | awk '{print $NF}'); load average before: $load_before," \
    "after: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  python3 tools/bench_tp_table.py "$raw" "$rounds"
} >"$out/bench-tp.md"
cat "$out/bench-tp.md"
