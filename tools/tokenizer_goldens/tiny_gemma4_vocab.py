#!/usr/bin/env python3
"""Writes a tiny vocabulary of Gemma 4's kind (tokenizer.ggml.model "gemma4")
for the CLI test tests/app/cli/gemma4_vocab.sh: Gemma 4's special tokens at
their real ids' order, "▁"-spelled pieces with merges, newline runs, and the
256 byte-fallback tokens.

Usage: PYTHONPATH=$LLAMA/gguf-py tiny_gemma4_vocab.py OUT.gguf
"""
import sys

import gguf

SPECIAL = [("<pad>", 3), ("<eos>", 3), ("<bos>", 3), ("<unk>", 3), ("<mask>", 3),
           ("<|turn>", 3), ("<turn|>", 3), ("<|tool_response>", 4), ("<|think|>", 3),
           ("<|channel>", 4), ("<channel|>", 4)]
PIECES = ["\n", "\n\n", "\u2581", "a", "b", "ab", "\u2581ab", "h", "i", "hi", "\u2581hi"]
MERGES = ["a b", "\u2581 ab", "h i", "\u2581 hi", "\n \n"]

w = gguf.GGUFWriter(sys.argv[1], "gemma4")
tokens = [t for t, _ in SPECIAL] + PIECES + ["<0x%02X>" % b for b in range(256)]
types = [k for _, k in SPECIAL] + [1] * len(PIECES) + [6] * 256
w.add_tokenizer_model("gemma4")
w.add_token_list(tokens)
w.add_token_types(types)
w.add_token_scores([0.0] * len(tokens))
w.add_token_merges(MERGES)
w.add_bos_token_id(2)
w.add_eos_token_id(1)
w.add_unk_token_id(3)
w.add_pad_token_id(0)
w.add_add_bos_token(True)
w.add_add_space_prefix(False)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
