#!/usr/bin/python3
"""Computes the reference outputs that kvforge's cross-implementation tests compare against.

Everything is computed from the shipped GGUF file itself (weights read back and widened to
float32), so rounding to F16/Q8_0 is already included; the forward pass is model.py's, in
float32.

reference.json:
  perplexity: tokens = [<s>] + SentencePiece(whole validation file, newlines included).
    The stream is cut into floor(len(tokens) / ctx) non-overlapping windows of exactly ctx
    tokens. Each window is scored on its own from an empty cache at positions 0..ctx-1 (only
    the first window starts with <s>); positions 1..ctx-1 are predicted, i.e. ctx - 1
    predictions per window. ppl = exp(mean NLL over all predictions); per-window mean NLLs
    are listed too. "with_partial_window" also scores the trailing r = len(tokens) % ctx
    tokens the same way (r - 1 more predictions) and averages over all predictions.
  greedy: prompt ids = [<s>] + SentencePiece(prompt); n tokens appended one at a time by
    argmax over the logits of the last position (</s> is not treated specially), with the
    margin top1 - top2 (logit units) of every step.
tokenizer-vectors.json: a list of {"text", "ids"}; ids are SentencePiece's encoding of text
  with no <s>.
"""
import argparse
import json
import math
import os
import random

import numpy as np
import sentencepiece as spm
import torch
import torch.nn.functional as F

from gguf_write import read_gguf
from model import Config, Llama

TRICKY = [
    "", " ", "  ", "   ", "\n", "\n\n", "\t", " \t\n ", "\r\n", "hello", " hello", "  hello",
    "hello ", "hello  world", "a  b   c    d", "line1\nline2", "line1\n\nline2",
    " \n leading", "trailing \n", "    indented code", "tab\tseparated\tvalues",
    "1", "12", "123", "2024", "3.14159", "10,000", "-42", "phone: 555-0199", "a1b2c3",
    "Genesis 1:1", "Rev 22:21", "0x0A", "!!!", "?!", "...", "--", "'quoted'", "\"double\"",
    "(parens) [brackets] {braces}", "a/b\\c", "x+y=z", "50% off", "#hashtag @user",
    "email@example.com", "https://example.com/path?q=1&r=2", "C++ and C#", "~`^|<>",
    "café", "naïve résumé", "Ångström", "Zürich", "straße", "ﬁ ligature", "½ ¼", "€100",
    "£5", "¥", "—em dash–en dash", "“smart quotes”", "‘single’", "…", "•", "©®™",
    "Привет мир", "Γειά σου κόσμε", "שלום", "مرحبا", "नमस्ते", "日本語のテキスト", "漢字",
    "한국어", "ไทย", "🙂", "👍🏽", "👨‍👩‍👧", "🇫🇷", "e\u0301", "\u00a0nbsp", "zero\u200bwidth",
    "\u2581", "\u2581\u2581", "a\u2581b", " \u2581 ", "<s>", "</s>", "<unk>", "<0x0A>",
    "<s>hello</s>", "\x01\x02", "\x7f", "ALL CAPS TEXT", "MiXeD cAsE", "And", "and", "AND",
    "the the the the", "thee thou thy", "LORD", "Jesus Christ", "unto",
    "supercalifragilisticexpialidocious", "a" * 40, "ab" * 20, "In the beginning",
    "In the beginning God created the heaven and the earth.",
    "And God said, Let there be light: and there was light.",
]


def load_model(path):
    meta, tensors = read_gguf(path)
    a = "llama."
    cfg = Config(vocab_size=len(meta["tokenizer.ggml.tokens"]),
                 n_embd=meta[a + "embedding_length"], n_layer=meta[a + "block_count"],
                 n_head=meta[a + "attention.head_count"],
                 n_kv_head=meta[a + "attention.head_count_kv"],
                 n_ff=meta[a + "feed_forward_length"], context_length=meta[a + "context_length"],
                 rope_theta=meta[a + "rope.freq_base"],
                 norm_eps=meta[a + "attention.layer_norm_rms_epsilon"],
                 tied_output="output.weight" not in tensors)
    names = {"token_embd.weight": "token_embd.weight", "output_norm.weight": "output_norm.weight",
             "output.weight": "output.weight"}
    for i in range(cfg.n_layer):
        for g, t in (("attn_norm", "attn_norm"), ("attn_q", "attn.wq"), ("attn_k", "attn.wk"),
                     ("attn_v", "attn.wv"), ("attn_output", "attn.wo"), ("ffn_norm", "ffn_norm"),
                     ("ffn_gate", "ffn.gate"), ("ffn_up", "ffn.up"), ("ffn_down", "ffn.down")):
            names[f"blk.{i}.{g}.weight"] = f"blocks.{i}.{t}.weight"
    model = Llama(cfg)
    state = {names[k]: torch.from_numpy(np.array(v)) for k, v in tensors.items()}
    model.load_state_dict(state, strict=True)
    return model.eval(), meta


def window_nll(model, windows):
    """windows: [n, t] token ids -> [n] mean NLL of predicting positions 1..t-1 (float64)."""
    nll = F.cross_entropy(model(windows)[:, :-1].transpose(1, 2), windows[:, 1:],
                          reduction="none")
    return nll.double().mean(dim=1)


@torch.no_grad()
def perplexity(model, tokens, ctx, batch=8):
    n_windows = len(tokens) // ctx
    windows = torch.tensor(tokens[:n_windows * ctx]).view(n_windows, ctx)
    nlls = torch.cat([window_nll(model, windows[i:i + batch])
                      for i in range(0, n_windows, batch)]).tolist()
    mean_nll = sum(nlls) / len(nlls)  # every window has ctx - 1 predictions
    result = {"context_length": ctx, "n_tokens": len(tokens), "n_windows": n_windows,
              "n_predictions": n_windows * (ctx - 1), "mean_nll": mean_nll,
              "perplexity": math.exp(mean_nll)}
    tail = tokens[n_windows * ctx:]
    if len(tail) >= 2:
        tail_nll = window_nll(model, torch.tensor([tail])).item()
        n_pred = result["n_predictions"] + len(tail) - 1
        total = mean_nll * result["n_predictions"] + tail_nll * (len(tail) - 1)
        result["with_partial_window"] = {"n_windows": n_windows + 1, "n_predictions": n_pred,
                                         "mean_nll": total / n_pred,
                                         "perplexity": math.exp(total / n_pred)}
    result["window_mean_nll"] = nlls
    return result


@torch.no_grad()
def greedy(model, ids, n):
    ids, margins = list(ids), []
    for _ in range(n):
        logits = model(torch.tensor([ids]))[0, -1]
        top = torch.topk(logits, 2)
        ids.append(int(top.indices[0]))
        margins.append(float(top.values[0] - top.values[1]))
    return ids, margins


def tokenizer_cases(sp, val_text, n_random, rng):
    """Validation fragments (random start and length, so many begin mid-word or on a space),
    a few multi-line spans with their newlines, and the hand-written tricky strings."""
    lines = val_text.split("\n")
    texts = []
    for _ in range(n_random):
        line = rng.choice([l for l in lines if l])
        start = rng.randrange(len(line))
        texts.append(line[start:start + rng.randint(1, 400)])
    for _ in range(8):
        start = rng.randrange(len(val_text) - 4000)
        texts.append(val_text[start:start + 4000])  # spans chapter boundaries ("\n")
    texts += TRICKY
    return [{"text": t, "ids": sp.encode(t)} for t in texts]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--tokenizer", required=True, help="SentencePiece .model")
    ap.add_argument("--val-text", required=True)
    ap.add_argument("--reference", required=True, help="output reference JSON")
    ap.add_argument("--vectors", required=True, help="output tokenizer vectors JSON")
    ap.add_argument("--prompt", default="In the beginning God created")
    ap.add_argument("--n-generate", type=int, default=80)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    sp = spm.SentencePieceProcessor(model_file=args.tokenizer)
    model, meta = load_model(args.gguf)
    if meta["tokenizer.ggml.tokens"] != [sp.id_to_piece(i) for i in range(sp.get_piece_size())]:
        raise ValueError(f"{args.gguf}: vocabulary differs from {args.tokenizer}")
    with open(args.val_text, encoding="utf-8") as f:
        val_text = f.read()

    ctx = model.cfg.context_length
    tokens = [sp.bos_id()] + sp.encode(val_text)
    ppl = perplexity(model, tokens, ctx)
    prompt_ids = [sp.bos_id()] + sp.encode(args.prompt)
    ids, margins = greedy(model, prompt_ids, args.n_generate)
    generated = ids[len(prompt_ids):]
    reference = {
        "model": os.path.basename(args.gguf),
        "perplexity": {"text_file": os.path.basename(args.val_text), **ppl},
        "greedy": {
            "prompt": args.prompt, "prompt_ids": prompt_ids, "generated_ids": generated,
            # decoded in context, so that the first piece keeps its leading space
            "generated_text": sp.decode(ids[1:])[len(sp.decode(prompt_ids[1:])):],
            "top1_margins": margins,
        },
        "method": __doc__.split("reference.json:")[1].split("tokenizer-vectors.json")[0].strip(),
    }
    with open(args.reference, "w", encoding="utf-8") as f:
        json.dump(reference, f, indent=1, ensure_ascii=False)
        f.write("\n")
    cases = tokenizer_cases(sp, val_text, 300, random.Random(1234))
    with open(args.vectors, "w", encoding="utf-8") as f:  # one case per line
        f.write("[\n" + ",\n".join(json.dumps(c, ensure_ascii=False) for c in cases) + "\n]\n")
    print(f"perplexity {ppl['perplexity']:.4f} (mean NLL {ppl['mean_nll']:.6f}) over "
          f"{ppl['n_windows']} windows of {ctx}; smallest greedy margin {min(margins):.4f}")
    print(args.prompt + reference["greedy"]["generated_text"])
    print(f"{len(cases)} tokenizer cases")


if __name__ == "__main__":
    main()
