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
  clang-format
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
