#!/usr/bin/env bash
# The JSON-schema corpus (structured.test.mjs, issue 39) against `kvforge serve` under
# `mpirun -np 2`: rank 0 sends each request's grammar rules to rank 1, which masks the same
# tokens, so every reply still validates (and the ranks, sampling in lockstep, never diverge:
# a divergence ends the run, failing every later request).
# Usage: run_tp_structured.sh KVFORGE_BINARY MPIRUN. Skips (77) without MPI or node.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
kvforge="$1"
mpirun="$2"
[ -x "$mpirun" ] || { echo "SKIP: kvforge was built without MPI"; exit 77; }
if grep -aq -m1 -e __asan_init -e __tsan_init "$kvforge"; then
  echo "SKIP: a sanitizer build runs the grammar wire in tensor_parallel_commands and the"
  echo "      grammar_wire tests; the corpus under mpirun runs in the release build"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Two ranks on two cores (or fewer): oversubscribed, yielding while idle; leak checks off
# under mpirun as in tests/engine/lockstep/tp_setup.sh.
asan="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export KVFORGE_SERVER_LAUNCHER="[\"env\", \"ASAN_OPTIONS=$asan\", \"$mpirun\", \"--oversubscribe\",
  \"--mca\", \"mpi_yield_when_idle\", \"1\", \"--bind-to\", \"none\", \"-np\", \"2\"]"
KVFORGE_STRUCTURED_MODES=paged exec bash "$here/run_server_tests.sh" "$kvforge" "" structured
