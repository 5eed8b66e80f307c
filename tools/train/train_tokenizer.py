#!/usr/bin/python3
"""Trains the SentencePiece BPE tokenizer of the default model.

The settings make SentencePiece behave like LLaMA's tokenizer, so that a plain llama-style
SPM BPE implementation (spaces -> U+2581, one leading U+2581, merges by piece score, bytes
for unknown characters) reproduces its encoding exactly:
  - identity normalization: no NFKC, text is encoded as given;
  - add_dummy_prefix: a U+2581 is prepended to the input (GGUF add_space_prefix = true);
  - remove_extra_whitespaces=false: runs of spaces, leading and trailing spaces are kept;
  - byte_fallback: characters outside the vocabulary become <0xNN> byte pieces, never <unk>;
  - split_digits: every digit is its own piece;
  - ids 0/1/2 = <unk>/<s>/</s> as in LLaMA; no padding piece.
"""
import argparse

import sentencepiece as spm


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--text", required=True, help="training text, one chapter per line")
    ap.add_argument("--prefix", required=True, help="output prefix (.model/.vocab)")
    ap.add_argument("--vocab-size", type=int, default=4096)
    args = ap.parse_args()
    spm.SentencePieceTrainer.train(
        input=args.text,
        model_prefix=args.prefix,
        model_type="bpe",
        vocab_size=args.vocab_size,
        character_coverage=1.0,
        max_sentence_length=1 << 16,  # a line is a whole chapter (Psalm 119: ~25 KB)
        normalization_rule_name="identity",
        add_dummy_prefix=True,
        remove_extra_whitespaces=False,
        allow_whitespace_only_pieces=True,
        split_digits=True,
        byte_fallback=True,
        unk_id=0,
        bos_id=1,
        eos_id=2,
        pad_id=-1,
        num_threads=2,
        minloglevel=1,
    )


if __name__ == "__main__":
    main()
