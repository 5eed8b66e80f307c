#!/usr/bin/env bash
# kvforge serve as a llama-server or vLLM user expects it (issue 26): --alias,
# the access log, 400s for ignored fields (ux.test.mjs), and the chat page in
# headless Chromium (page.test.mjs; skipped without Debian's chromium package).
# Usage: run_ux_tests.sh KVFORGE_BINARY [MODEL]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v node >/dev/null; then
  echo "SKIP: node is not installed (scripts/setup.sh installs the test dependencies)"
  exit 77
fi
if [ ! -d "$here/node_modules/openai" ]; then
  echo "FAIL: $here/node_modules/openai is missing; run scripts/setup.sh (npm ci in tests/app/server)" >&2
  exit 1
fi
export KVFORGE_BIN="$1" KVFORGE_MODEL="${2:-$here/../../../models/kvforge-kjv-4m.gguf}"
# A sanitizer build is slower: the page test holds a shorter conversation there.
if grep -aq -m1 -e __asan_init -e __tsan_init "$1"; then export KVFORGE_SANITIZED=1; fi
node --test --test-concurrency=1 "$here/ux.test.mjs" "$here/page.test.mjs" "$here/truncation.test.mjs"
