#!/usr/bin/env bash
# Runs the README's shell blocks marked `<!-- readme-test -->` (the line before
# the fence), as documentation tests do: each block in one bash -euo pipefail,
# in a scratch directory laid out like the repository after ./scripts/build.sh
# (build/kvforge = the binary under test, models/ = the repository's). Port
# 8080 is replaced by a free one so parallel tests and other servers do not
# collide. The first block (setup, build, run) is what CI itself runs.
# usage: readme_test.sh path/to/kvforge work_dir
set -euo pipefail
kv="$1"
work="$2"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
rm -rf "$work" && mkdir -p "$work/build" && cd "$work"
ln -s "$kv" build/kvforge
ln -s "$root/models" models

# Blocks into block-N.sh; fails if none is marked (a renamed marker must not pass silently).
awk -v dir="$work" '
  /^<!-- readme-test -->$/ { marked = 1; next }
  marked && /^```sh$/ { n++; file = dir "/block-" n ".sh"; inside = 1; marked = 0; next }
  inside && /^```$/ { inside = 0; close(file); next }
  inside { print > file; next }
  { marked = 0 }
  END { if (n == 0) exit 1 }
' "$root/README.md" || { echo "FAIL (readme): no <!-- readme-test --> blocks in README.md" >&2; exit 1; }

free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
status=0
for block in $(ls block-*.sh | sort -t- -k2 -n); do
  sed -i "s/8080/$(free_port)/g" "$block"
  if timeout 300 bash -euo pipefail "$block" >"$block.out" 2>&1; then
    echo "ok   $block"
  else
    echo "FAIL $block:" >&2
    sed 's/^/  | /' "$block" >&2
    tail -n 30 "$block.out" | sed 's/^/  > /' >&2
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "readme: every marked block ran"
exit "$status"
