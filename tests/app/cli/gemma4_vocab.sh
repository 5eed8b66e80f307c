#!/usr/bin/env bash
# A Gemma 4 model end to end with a vocabulary of Gemma 4's kind
# (tests/app/tokenizer/data/tiny-gemma4-vocab.gguf, made by
# tools/tokenizer_goldens/tiny_gemma4_vocab.py): make-model copies it,
# tokenize follows its rules (<bos> added, "▁" spaces, merges by rank, a
# newline run, byte fallback), run generates from it, and chat-template
# renders Gemma 4's template (tests/app/chat/data/gemma-4-vocab.jinja) to
# tokens with the turn markers whole.
# usage: gemma4_vocab.sh path/to/kvforge source_dir work_dir
set -euo pipefail
kv="$1"
src="$2"
work="$3"
rm -rf "$work" && mkdir -p "$work" && cd "$work"

fail() { echo "FAIL (gemma4_vocab): $*" >&2; exit 1; }

"$kv" make-model -o g4.gguf --arch gemma4 --n-layer 2 --seed 5 \
  --vocab "$src/tests/app/tokenizer/data/tiny-gemma4-vocab.gguf" 2>/dev/null

# <bos>=2 ab=16 ▁hi=21 "\n\n"=12 "\n"=11, then é as its bytes <0xC3> <0xA9>.
ids=$("$kv" tokenize -m g4.gguf --ids -p "$(printf 'ab hi\n\n\n\xc3\xa9')")
[ "$ids" = "2 16 21 12 11 217 191" ] || fail "tokenize gave '$ids'"

out=$("$kv" run -m g4.gguf -p "ab hi" -n 4 --temp 0 2>/dev/null)
[[ "$out" == "ab hi"* ]] || fail "run printed '$out'"

printf '[{"role": "user", "content": "hi"}]' > msgs.json
"$kv" chat-template -m g4.gguf --template "$src/tests/app/chat/data/gemma-4-vocab.jinja" \
  --messages-file msgs.json --tokens > rendered.txt
# <bos> <|turn> "user\n" ... "hi" <turn|> "\n" <|turn> ...: the turn markers are tokens.
tokens=$(sed -n '/^--- tokens$/{n;p}' rendered.txt)
[[ "$tokens" == "2 5 "* ]] || fail "rendered prompt tokens '$tokens'"
[[ " $tokens " == *" 20 6 11 5 "* ]] || fail "no 'hi<turn|>\\n<|turn>' in '$tokens'"
echo "gemma4_vocab: OK"
