#!/usr/bin/env bash
# Integration tests of `kvforge serve`: starts the real server on a free loopback port and
# drives it with the clients people use (the official `openai` and `ollama` npm packages) and
# raw HTTP. The suites are independent, so CTest runs each as its own test (in parallel).
# Usage: run_server_tests.sh KVFORGE_BINARY [MODEL [SUITE...]]
#   SUITE: chat (server.test.mjs on each engine), structured (JSON schemas, issue 39),
#   tools (tool calls; the AI SDK and LangChain clients; reasoning_content; issue 39),
#   routes (CORS, model and utility routes, Ollama; issue 41), apis (embeddings, the
#   Responses API, Anthropic's Messages API, errors through every client; issue 41),
#   hostile (issue 25).
#   No suite: all of them, in that order.
# KVFORGE_SERVER_MODES="paged static" (default) picks the engines of `chat`;
# KVFORGE_STRUCTURED_MODES (default: the same) those of `structured`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
kvforge="$1"
model="${2:-$here/../../../models/kvforge-kjv-4m.gguf}"
shift $(($# < 2 ? $# : 2))
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(chat structured tools routes apis hostile)

if ! command -v node >/dev/null; then
  echo "SKIP: node is not installed (scripts/setup.sh installs the test dependencies)"
  exit 77
fi
for package in openai ollama; do
  if [ ! -d "$here/node_modules/$package" ]; then
    echo "FAIL: $here/node_modules/$package is missing; run scripts/setup.sh (npm ci in tests/app/server)" >&2
    exit 1
  fi
done
export KVFORGE_BIN="$kvforge" KVFORGE_MODEL="$model"
# A sanitizer build is slower and bigger: suites scale their time limits and skip RSS limits.
if grep -aq -m1 -e __asan_init -e __tsan_init "$kvforge"; then export KVFORGE_SANITIZED=1; fi
if grep -aq -m1 -e __tsan_init "$kvforge"; then export KVFORGE_TSAN=1; fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

run_node() { node --test --test-concurrency=1 "$here/$1"; }

suite_chat() {
  for mode in ${KVFORGE_SERVER_MODES:-paged static}; do
    echo "== kvforge serve, $mode engine"
    if ! KVFORGE_SERVER_MODE="$mode" KVFORGE_SERVER_LOG_FILE="$scratch/server.log" \
        run_node server.test.mjs; then
      echo "== FAILED ($mode engine); the server's log, last 60 lines:"
      tail -n 60 "$scratch/server.log"
      return 1
    fi
  done
}

# A corpus of JSON schemas validated with ajv, on the default model (each engine) and on a
# random-weight model (the worst case for a grammar).
suite_structured() {
  for mode in ${KVFORGE_STRUCTURED_MODES:-${KVFORGE_SERVER_MODES:-paged static}}; do
    echo "== structured output, $mode engine"
    KVFORGE_SERVER_MODE="$mode" run_node structured.test.mjs
  done
  "$kvforge" make-model -o "$scratch/random.gguf" --preset tiny --seed 5 2>/dev/null
  echo "== structured output, random-weight model"
  KVFORGE_MODEL="$scratch/random.gguf" run_node structured.test.mjs
}

# Tool calls: the generic and the Hermes form, on the default and a random-weight model; then
# structured output and tools through the AI SDK and LangChain.
suite_tools() {
  echo "== tool calls"
  run_node tools.test.mjs
  "$kvforge" make-model -o "$scratch/random.gguf" --preset tiny --seed 5 2>/dev/null
  echo "== tool calls, random-weight model"
  KVFORGE_MODEL="$scratch/random.gguf" run_node tools.test.mjs
  echo "== structured output and tools through the AI SDK and LangChain"
  run_node clients.test.mjs
  echo "== reasoning_content: <think> templates and gpt-oss's harmony"
  run_node reasoning.test.mjs
  "$kvforge" make-model -o "$scratch/gpt-oss.gguf" --preset tiny --arch gpt-oss --seed 3 \
    --control-tokens '<|start|>,<|end|>,<|message|>,<|channel|>,<|constrain|>,<|return|>,<|call|>' \
    2>/dev/null
  echo "== gpt-oss tool calls under required and a named function, random-weight model"
  KVFORGE_MODEL="$scratch/gpt-oss.gguf" run_node harmony_tools.test.mjs
}

# CORS, model routes, llama-server's utility routes and Ollama's API: one engine suffices.
suite_routes() {
  echo "== kvforge serve, the routes beyond chat and completions"
  run_node api_routes.test.mjs
  echo "== kvforge serve, Ollama's API through the ollama client"
  run_node ollama.test.mjs
}

# Embeddings (openai and ollama clients), the Responses API (openai), Anthropic's Messages
# API (@anthropic-ai/sdk); each error status through every client; cached prompt tokens in
# each API's usage; slot save/restore.
suite_apis() {
  echo "== kvforge serve, embeddings through the openai and ollama clients"
  run_node embeddings.test.mjs
  echo "== kvforge serve, the Responses API through the openai client"
  run_node responses.test.mjs
  echo "== kvforge serve, Anthropic's Messages API through the @anthropic-ai/sdk client"
  run_node anthropic.test.mjs
  echo "== kvforge serve, every error status through each client's typed errors"
  run_node client_errors.test.mjs
  echo "== kvforge serve, prompt tokens served from the prefix cache in each API's usage"
  run_node cache.test.mjs
  echo "== kvforge serve, llama-server's slot save and restore"
  run_node slots.test.mjs
}

# Hostile clients and model files: template bombs, 7 MB prompts, slow connections, a used
# port, SIGTERM under load. Paged engine only: the HTTP layer is shared.
suite_hostile() {
  echo "== kvforge serve against hostile input"
  run_node hostile.test.mjs
}

for suite in "${suites[@]}"; do
  case "$suite" in
    chat | structured | tools | routes | apis | hostile) "suite_$suite" ;;
    *)
      echo "unknown suite '$suite' (chat, structured, tools, routes, apis, hostile)" >&2
      exit 2
      ;;
  esac
done
