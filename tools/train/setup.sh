#!/bin/sh
# Installs everything the trainer needs from Debian's archive (run as root).
# The scripts use /usr/bin/python3 (Debian's interpreter), which is the one
# these python3-* packages install into.
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
  python3 python3-torch python3-numpy python3-sentencepiece python3-tqdm \
  python3-matplotlib libopenblas0-pthread bible-kjv bible-kjv-text
