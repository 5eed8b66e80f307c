#!/usr/bin/env bash
# Installs every build and test dependency of kvforge from Debian's archive.
# Idempotent; run as root or with sudo available.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  clang libclang-rt-dev      # libFuzzer target for the GGUF reader
  libgtest-dev libgmock-dev  # unit tests
  libbenchmark-dev           # kernel micro-benchmarks
  libpcre2-dev               # Unicode-aware pre-tokenizer regexes (\p{L}, \p{N})
  nlohmann-json3-dev         # JSON
  libcli11-dev               # command-line parsing
  libcpp-httplib-dev         # HTTP server (kvforge serve)
  libedit-dev                # line editing and history in kvforge chat
  clang-format
  libopenmpi-dev openmpi-bin # tensor parallelism across processes (mpirun -np N kvforge run)
  python3                    # tests/app/cli/chat_pty.py drives kvforge chat in a pty
  chromium                   # headless: tests/app/server/page.test.mjs loads serve's chat page
  time                       # GNU time: tests/app/cli/context_shift.sh reads peak resident memory
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi

# The server's integration tests drive it with the clients people use (openai, ollama,
# @anthropic-ai/sdk, the AI SDK, LangChain; tests/app/server/package.json)
# pinned by its package-lock.json and installed into tests/app/server/node_modules.
root="$(cd "$(dirname "$0")/.." && pwd)"
if command -v npm >/dev/null; then
  # Every dependency package.json names must be installed (a new one added since the last setup too).
  missing="$(cd "$root/tests/app/server" && node -e '
    const fs = require("fs");
    const deps = Object.keys(require("./package.json").dependencies);
    console.log(deps.filter((d) => !fs.existsSync("node_modules/" + d + "/package.json")).join(" "));')"
  if [ -n "$missing" ]; then
    echo "setup: installing the npm packages of tests/app/server (missing: $missing)"
    npm ci --prefix "$root/tests/app/server" --no-audit --no-fund --loglevel=error
  else
    echo "setup: tests/app/server npm packages present"
  fi
else
  echo "setup: npm not found; the server integration test (tests/app/server) will be skipped"
fi
