#!/usr/bin/python3
"""Exports a trained checkpoint and its SentencePiece tokenizer to a GGUF llama file.

Tensor names and shapes follow llama.cpp's llama GGUF files (ne0 = input features):
  token_embd.weight [n_embd, n_vocab], blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output,
  ffn_norm, ffn_gate, ffn_up, ffn_down}.weight, output_norm.weight, output.weight (untied only).
Q and K are written WITHOUT the row permutation that Hugging Face converters apply: that
permutation turns HF's rotate-halves RoPE into GGML's rotate-adjacent-pairs RoPE, and
model.py already rotates adjacent pairs. Norm weights stay F32; matrices are F16 or Q8_0.
"""
import argparse

import sentencepiece as spm
import torch

import gguf_write as g

FILE_TYPES = {"f16": (g.GGML_F16, 1), "q8_0": (g.GGML_Q8_0, 7)}  # ggml type, general.file_type

# Token types as GGUF llama vocabularies use them.
NORMAL, UNKNOWN, CONTROL, UNUSED, BYTE = 1, 2, 3, 5, 6


def token_type(sp, i):
    if sp.is_unknown(i):
        return UNKNOWN
    if sp.is_control(i):
        return CONTROL
    if sp.is_byte(i):
        return BYTE
    if sp.is_unused(i):
        return UNUSED
    return NORMAL


def add_tokenizer(w, sp):
    n = sp.get_piece_size()
    w.add("tokenizer.ggml.model", g.STRING, "llama")
    w.add_array("tokenizer.ggml.tokens", g.STRING, [sp.id_to_piece(i) for i in range(n)])
    w.add_array("tokenizer.ggml.scores", g.FLOAT32, [sp.get_score(i) for i in range(n)])
    w.add_array("tokenizer.ggml.token_type", g.INT32, [token_type(sp, i) for i in range(n)])
    w.add("tokenizer.ggml.bos_token_id", g.UINT32, sp.bos_id())
    w.add("tokenizer.ggml.eos_token_id", g.UINT32, sp.eos_id())
    w.add("tokenizer.ggml.unknown_token_id", g.UINT32, sp.unk_id())
    w.add("tokenizer.ggml.add_bos_token", g.BOOL, True)
    w.add("tokenizer.ggml.add_eos_token", g.BOOL, False)
    w.add("tokenizer.ggml.add_space_prefix", g.BOOL, True)  # SentencePiece add_dummy_prefix


def add_hparams(w, cfg, name, file_type):
    w.add("general.architecture", g.STRING, "llama")
    w.add("general.name", g.STRING, name)
    w.add("general.file_type", g.UINT32, file_type)
    w.add("general.alignment", g.UINT32, g.ALIGNMENT)
    if file_type == FILE_TYPES["q8_0"][1]:
        w.add("general.quantization_version", g.UINT32, 2)
    for key, value in (("context_length", cfg["context_length"]),
                       ("embedding_length", cfg["n_embd"]), ("block_count", cfg["n_layer"]),
                       ("feed_forward_length", cfg["n_ff"]),
                       ("attention.head_count", cfg["n_head"]),
                       ("attention.head_count_kv", cfg["n_kv_head"]),
                       ("rope.dimension_count", cfg["n_embd"] // cfg["n_head"]),
                       ("vocab_size", cfg["vocab_size"])):
        w.add("llama." + key, g.UINT32, value)
    w.add("llama.rope.freq_base", g.FLOAT32, cfg["rope_theta"])
    w.add("llama.attention.layer_norm_rms_epsilon", g.FLOAT32, cfg["norm_eps"])


def gguf_tensors(state, cfg):
    """Yields (GGUF name, torch tensor, is_norm) in llama.cpp's order."""
    yield "token_embd.weight", state["token_embd.weight"], False
    for i in range(cfg["n_layer"]):
        p, b = f"blk.{i}.", f"blocks.{i}."
        for gguf_name, torch_name in (("attn_norm", "attn_norm"), ("attn_q", "attn.wq"),
                                      ("attn_k", "attn.wk"), ("attn_v", "attn.wv"),
                                      ("attn_output", "attn.wo"), ("ffn_norm", "ffn_norm"),
                                      ("ffn_gate", "ffn.gate"), ("ffn_up", "ffn.up"),
                                      ("ffn_down", "ffn.down")):
            yield p + gguf_name + ".weight", state[b + torch_name + ".weight"], "norm" in gguf_name
    yield "output_norm.weight", state["output_norm.weight"], True
    if not cfg["tied_output"]:
        yield "output.weight", state["output.weight"], False


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--checkpoint", required=True, help="model.pt written by train.py")
    ap.add_argument("--tokenizer", required=True, help="SentencePiece .model")
    ap.add_argument("--out", required=True, help="output .gguf")
    ap.add_argument("--name", required=True, help="general.name")
    ap.add_argument("--type", choices=FILE_TYPES, default="f16")
    args = ap.parse_args()

    ckpt = torch.load(args.checkpoint, map_location="cpu")
    cfg, state = ckpt["config"], ckpt["model"]
    sp = spm.SentencePieceProcessor(model_file=args.tokenizer)
    if sp.get_piece_size() != cfg["vocab_size"]:
        raise ValueError(f"tokenizer has {sp.get_piece_size()} pieces, model {cfg['vocab_size']}")
    ggml_type, file_type = FILE_TYPES[args.type]

    w = g.GGUFWriter()
    add_hparams(w, cfg, args.name, file_type)
    add_tokenizer(w, sp)
    for name, tensor, is_norm in gguf_tensors(state, cfg):
        w.add_tensor(name, tensor.float().numpy(), g.GGML_F32 if is_norm else ggml_type)
    w.write(args.out)
    print(f"wrote {args.out}: {len(w.tensors)} tensors, {len(w.kvs)} metadata keys")


if __name__ == "__main__":
    main()
