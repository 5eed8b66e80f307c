#!/bin/sh
# Rebuilds the default model and everything shipped beside it in models/, from scratch.
# Run ./setup.sh (as root) once first. Everything runs at nice 19 on the CPU; training is
# the long step (see README.md). Intermediate files go to tools/train/out/ (not committed).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
models=$(cd "$here/../../models" && pwd)
out=$here/out
name=kvforge-kjv-4m
py="nice -n 19 /usr/bin/python3"
mkdir -p "$out"

# 1. Corpus: KJV from Debian's bible-kjv-text, one chapter per line; validation = every 25th.
$py "$here/prepare_corpus.py" --train "$out/kjv.train.txt" --val "$models/$name.val.txt" \
  --provenance "$models/$name.provenance.json"
# 2. Tokenizer: SentencePiece BPE, 4096 pieces, LLaMA-like settings.
$py "$here/train_tokenizer.py" --text "$out/kjv.train.txt" --prefix "$out/$name"
cp "$out/$name.model" "$models/$name.spm.model"
# 3. Training (fixed seeds; writes out/run/model.pt, train_log.json, loss.png).
$py "$here/train.py" --train-text "$out/kjv.train.txt" --val-text "$models/$name.val.txt" \
  --tokenizer "$out/$name.model" --out "$out/run"
cp "$out/run/loss.png" "$models/$name.loss.png"
cp "$out/run/train_log.json" "$models/$name.train-log.json"
# 4. Export to GGUF (F16 matrices, F32 norms) and check it against an independent forward pass.
$py "$here/export_gguf.py" --checkpoint "$out/run/model.pt" --tokenizer "$out/$name.model" \
  --out "$models/$name.gguf" --name "$name"
$py "$here/check_gguf_forward.py" --gguf "$models/$name.gguf"
# 5. Reference outputs for kvforge's cross-implementation and tokenizer tests.
$py "$here/make_references.py" --gguf "$models/$name.gguf" --tokenizer "$out/$name.model" \
  --val-text "$models/$name.val.txt" --reference "$models/$name.reference.json" \
  --vectors "$models/$name.tokenizer-vectors.json"
