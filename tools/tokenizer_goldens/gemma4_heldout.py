#!/usr/bin/env python3
"""Held-out Gemma 4 tokenizer vectors from llama.cpp's llama-tokenize.

Usage: gemma4_heldout.py LLAMA_CPP_DIR OUT_PREFIX
  (OUT_PREFIX = tests/app/tokenizer/data/gemma-4-heldout)

Writes OUT_PREFIX.inp (strings, each followed by "\n__ggml_vocab_test__\n",
prefixed "plain:" or "special:") and OUT_PREFIX.out (one line of ids each).
"plain": no BOS, special-token text not parsed; "special": the vocabulary's
BOS (llama.cpp forces it on for Gemma 4) and special tokens parsed.
"""
import os
import subprocess
import sys
import tempfile

LLAMA = sys.argv[1]
BIN = os.path.join(LLAMA, 'build/bin/llama-tokenize')
V = os.path.join(LLAMA, 'models/ggml-vocab-gemma-4.gguf')
cases = [
 ('plain', 'Hello, world!'),
 ('plain', ' leading space'),
 ('plain', 'trailing space '),
 ('plain', 'a  b   c    d     e'),
 ('plain', '      '),
 ('plain', '\n'),
 ('plain', '\n\n\n\n\n\n\n\n\n\n'),
 ('plain', '\n' * 40),
 ('plain', 'line one\nline two\n\nline four\n'),
 ('plain', ' \n \n  \n'),
 ('plain', 'tab\tseparated\tvalues\r\nCRLF line\r\n'),
 ('plain', 'def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n'),
 ('plain', 'for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }  // dot'),
 ('plain', '{"key": [1, 2.5, -3e10], "nested": {"ok": true, "x": null}}'),
 ('plain', '3.14159265358979 1234567890 007 1,000,000'),
 ('plain', '日本語のテキストと中文文本，한국어 텍스트도 있습니다。'),
 ('plain', 'Привет, мир! Ελληνικά κείμενα. עברית ערבית: مرحبا بالعالم'),
 ('plain', 'हिन्दी पाठ और தமிழ் உரை, ภาษาไทย'),
 ('plain', 'emoji 😀🎉👍🏽 family 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵 and ❤️'),
 ('plain', 'café naïve résumé Zürich ﬁ ligature e\u0301 combining'),
 ('plain', 'zero\u200bwidth\u200dspace\ufeffbom\u00a0nbsp'),
 ('plain', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math 𝑥² + 𝑦² = 𝑧² ∑∫√∞'),
 ('plain', '\u0001\u0002 control \u007f chars \u0085 nel'),
 ('plain', 'rare: \U0001F9FF\U0001FAE8 \U00010348 \U000E0041'),
 ('plain', '<start_of_turn>user not special here<end_of_turn>'),
 ('plain', '<|turn>user\nhi<turn|> as plain text'),
 ('plain', '<unused0> <mask> <0x41> [multimodal]'),
 ('plain', "it's don't we're I'll they've"),
 ('plain', 'A' * 300),
 ('plain', 'ab' * 150 + ' ' + 'xyz ' * 50),
 ('plain', '▁already▁escaped▁ text'),
 ('plain', 'https://example.com/path?q=1&r=two#frag user@example.org'),
 ('plain', '    indented\n\tand tabbed\n  \n'),
 ('special', ''),
 ('special', 'Hello'),
 ('special', '<|turn>user\nWhat is 2+2?<turn|>\n<|turn>model\n'),
 ('special', '<|turn>system\n<|think|>Be brief.<turn|>\n'),
 ('special', '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>'),
 ('special', '<|channel>thought\n<channel|>Answer <eos>'),
 ('special', ' <bos> twice <pad><unk>'),
]
sep = '\n__ggml_vocab_test__\n'
inp, out = [], []
for mode, text in cases:
    with tempfile.NamedTemporaryFile('w', encoding='utf-8', newline='', suffix='.txt') as f:
        f.write(text)
        f.flush()
        args = [BIN, '-m', V, '-f', f.name, '--no-escape', '--ids', '--log-disable']
        if mode == 'plain':
            args += ['--no-bos', '--no-parse-special']
        r = subprocess.run(args, capture_output=True, text=True)
    ids = r.stdout.strip()
    assert ids.startswith('[') and ids.endswith(']'), (text, r.stdout, r.stderr[-500:])
    ids = ids[1:-1].replace(',', ' ').split()
    inp.append(mode + ':' + text)
    out.append(' '.join(ids))
open(sys.argv[2] + '.inp', 'w', encoding='utf-8', newline='').write(''.join(s + sep for s in inp))
open(sys.argv[2] + '.out', 'w').write(''.join(l + '\n' for l in out))
print(len(cases))
