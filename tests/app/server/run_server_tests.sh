#!/usr/bin/env bash
# Integration tests of `kvforge serve`: starts the real server on a free
# loopback port and drives it with the official `openai` npm client and raw
# HTTP (tests/app/server/server.test.mjs), once on the paged batching engine and
# once on the static slots (`serve --static`).
# Usage: run_server_tests.sh KVFORGE_BINARY [MODEL]
# KVFORGE_SERVER_MODES="paged static" (default) picks the engines.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
kvforge="$1"
model="${2:-$here/../../../models/kvforge-kjv-4m.gguf}"

if ! command -v node >/dev/null; then
  echo "SKIP: node is not installed (scripts/setup.sh installs the test dependencies)"
  exit 77
fi
for package in openai ollama @anthropic-ai/sdk; do
  if [ ! -d "$here/node_modules/$package" ]; then
    echo "FAIL: $here/node_modules/$package is missing; run scripts/setup.sh (npm ci in tests/app/server)" >&2
    exit 1
  fi
done
export KVFORGE_BIN="$kvforge" KVFORGE_MODEL="$model"
server_log="$(mktemp)"
trap 'rm -f "$server_log"' EXIT
for mode in ${KVFORGE_SERVER_MODES:-paged static}; do
  echo "== kvforge serve, $mode engine"
  if ! KVFORGE_SERVER_MODE="$mode" KVFORGE_SERVER_LOG_FILE="$server_log" \
      node --test --test-concurrency=1 "$here/server.test.mjs"; then
    echo "== FAILED ($mode engine); the server's log, last 60 lines:"
    tail -n 60 "$server_log"
    exit 1
  fi
done
# Structured output (issue 39): a corpus of JSON schemas validated with ajv, on the
# default model (both engines) and on a random-weight model (the worst case for a grammar).
for mode in ${KVFORGE_SERVER_MODES:-paged static}; do
  echo "== structured output, $mode engine"
  KVFORGE_SERVER_MODE="$mode" node --test --test-concurrency=1 "$here/structured.test.mjs"
done
random_model="$(mktemp --suffix=.gguf)"
trap 'rm -f "$server_log" "$random_model"' EXIT
"$kvforge" make-model -o "$random_model" --preset tiny --seed 5 2>/dev/null
echo "== structured output, random-weight model"
KVFORGE_MODEL="$random_model" node --test --test-concurrency=1 "$here/structured.test.mjs"
# CORS, model routes, llama-server's utility routes (issue 41): one engine suffices.
echo "== kvforge serve, the routes beyond chat and completions"
node --test --test-concurrency=1 "$here/api_routes.test.mjs"
echo "== kvforge serve, Ollama's API through the ollama client"
node --test --test-concurrency=1 "$here/ollama.test.mjs"
echo "== kvforge serve, embeddings through the openai and ollama clients"
node --test --test-concurrency=1 "$here/embeddings.test.mjs"
echo "== kvforge serve, the Responses API through the openai client"
node --test --test-concurrency=1 "$here/responses.test.mjs"
echo "== kvforge serve, Anthropic's Messages API through the @anthropic-ai/sdk client"
node --test --test-concurrency=1 "$here/anthropic.test.mjs"
# Hostile clients and model files (issue 25): template bombs, 7 MB prompts, slow
# connections, a used port, SIGTERM under load. Paged engine only: the HTTP layer is shared.
echo "== kvforge serve against hostile input"
# A sanitizer build is slower and bigger: the suite scales its time limits and skips RSS limits.
if grep -aq -m1 -e __asan_init -e __tsan_init "$kvforge"; then export KVFORGE_SANITIZED=1; fi
node --test --test-concurrency=1 "$here/hostile.test.mjs"
