# Sourced by tp_commands_test.sh and tp_faults_test.sh after `set -euo
# pipefail`: reads their arguments (kvforge, mpirun, work_dir), enters a fresh
# work_dir, skips (77) when kvforge was built without MPI, and sets `mpi`
# (mpirun for 2-4 ranks on a 2-core machine; leak checks off under mpirun,
# see tp_test.sh) and m.gguf, a tiny 4-head model.
kv="$(realpath "$1")"
mpirun="$2"
work="$3"
rm -rf "$work" && mkdir -p "$work" && cd "$work"

fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "$mpirun" ] || { echo "SKIP: kvforge was built without MPI"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  "$mpirun" --oversubscribe --mca mpi_yield_when_idle 1 --bind-to none)
"$kv" make-model -o m.gguf --preset tiny --n-layer 2 --n-embd 64 --n-head 4 --n-kv-head 4 \
  2>/dev/null
# A TCP port nothing listens on now, picked by the kernel (a random number
# could meet a server another test runs at the same time).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
