#!/usr/bin/env python3
"""Vectors for the "gpt-4o" pre-tokenizer (gpt-oss, Llama 4) from llama.cpp.

Usage: gpt4o_heldout.py LLAMA_CPP_DIR OUT_PREFIX
  (OUT_PREFIX = tests/app/tokenizer/data/gpt-4o-split)

No GGUF with the gpt-4o pre-tokenizer is among llama.cpp's test vocabularies,
so this copies Llama 3's (models/ggml-vocab-llama-bpe.gguf, which
../shared/testdata/vocab holds too) with tokenizer.ggml.pre = "gpt-4o": the
tokens and merges stay Llama 3's, the split before merging is gpt-4o's. The
ids llama-tokenize gives for each string then test that split.

Writes OUT_PREFIX.inp (strings, each followed by "\\n__ggml_vocab_test__\\n")
and OUT_PREFIX.out (one line of ids each): no BOS, special-token text not
parsed. Run with /usr/bin/python3 and PYTHONPATH=LLAMA_CPP_DIR/gguf-py.
"""
import os
import subprocess
import sys
import tempfile

import gguf

LLAMA = sys.argv[1]
BIN = os.path.join(LLAMA, 'build/bin/llama-tokenize')
SOURCE = os.path.join(LLAMA, 'models/ggml-vocab-llama-bpe.gguf')


def copy_with_pre(src, dst, pre):
    reader = gguf.GGUFReader(src)
    arch = reader.get_field('general.architecture').contents()
    writer = gguf.GGUFWriter(dst, arch)
    for field in reader.fields.values():
        if field.name.startswith('GGUF.') or field.name == 'general.architecture':
            continue
        value = pre if field.name == 'tokenizer.ggml.pre' else field.contents()
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, value, vtype, sub_type=sub)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


# llama.cpp's own vectors for Llama 3 (the .inp beside the source), then
# strings that tell the gpt-4o split from Llama 3's: case runs inside words,
# contractions glued to words, '/' kept after punctuation, letters with marks.
SEP = '\n__ggml_vocab_test__\n'
cases = [s for s in open(SOURCE + '.inp', encoding='utf-8', newline='').read().split(SEP) if s]
cases += [
    'HelloWorld camelCaseID snake_case_id SCREAMING_CASE PascalCase',
    'iPhone eBay McDonald JSONParser XMLHttpRequest getHTTPResponseCode',
    "I'm you're he's we've they'd she'll it's DON'T WE'RE Y'ALL O'Neil",
    "don'tstop can'T 'tis rock'n'roll",
    'ÉCOLE école Éric ÅNGSTRÖM Ångström ÇA ça ĲssEL straße STRASSE',
    'e\u0301cole E\u0301COLE n\u0303o combining\u0301marks',
    'Привет Мир ПРИВЕТ мИР Ελληνικά ΕΛΛΗΝΙΚΆ Ωmega',
    '日本語テキスト 中文ABC한국어abc ＡＢＣｄｅｆ',
    'a//b\n/ x ,/\n\n//\r\n/ https://example.com/a/b?c=d',
    '...\n\n\n--- ***\r\n !!!?? «quotes» “curly” — dash',
    '12345 1234567 3.14159 1,000,000 ١٢٣٤ ๑๒๓ ²³ Ⅻ',
    '   leading and trailing   \n\n  \t\tTabs\t\n  ',
    'x\n\ny\r\n\r\nz\n \n',
    'emoji 😀🎉👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️ and mixedCASE😀Word',
    'def fooBar(x):\n    return x.toUpperCase() // 2\n',
    '<|start|>assistant<|channel|>final<|message|>Hi<|return|>',
]
inp, out = [], []
with tempfile.TemporaryDirectory() as tmp:
    vocab = os.path.join(tmp, 'gpt-4o.gguf')
    copy_with_pre(SOURCE, vocab, 'gpt-4o')
    for text in cases:
        path = os.path.join(tmp, 'text.txt')
        with open(path, 'w', encoding='utf-8', newline='') as f:
            f.write(text)
        args = [BIN, '-m', vocab, '-f', path, '--no-escape', '--ids', '--log-disable',
                '--no-bos', '--no-parse-special']
        r = subprocess.run(args, capture_output=True, text=True)
        ids = r.stdout.strip()
        assert ids.startswith('[') and ids.endswith(']'), (text, r.stdout, r.stderr[-500:])
        inp.append(text)
        out.append(' '.join(ids[1:-1].replace(',', ' ').split()))
open(sys.argv[2] + '.inp', 'w', encoding='utf-8', newline='').write(''.join(s + SEP for s in inp))
open(sys.argv[2] + '.out', 'w').write(''.join(l + '\n' for l in out))
print(len(cases))
