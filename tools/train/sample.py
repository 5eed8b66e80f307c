#!/usr/bin/python3
"""Prints continuations of a prompt sampled from a GGUF model with model.py (temperature and
top-k sampling, fixed seed); for looking at what the model learned, not a reference."""
import argparse

import sentencepiece as spm
import torch

from make_references import load_model


@torch.no_grad()
def sample(model, ids, n, temperature, top_k, gen, eos):
    ids = list(ids)
    for _ in range(n):
        logits = model(torch.tensor([ids[-model.cfg.context_length:]]))[0, -1] / temperature
        values, indices = torch.topk(logits, top_k)
        token = int(indices[torch.multinomial(torch.softmax(values, -1), 1, generator=gen)])
        if token == eos:
            break
        ids.append(token)
    return ids


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--tokenizer", required=True, help="SentencePiece .model")
    ap.add_argument("--prompt", default="In the beginning God created")
    ap.add_argument("-n", type=int, default=80, help="tokens per sample")
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--top-k", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(1)
    sp = spm.SentencePieceProcessor(model_file=args.tokenizer)
    model, _ = load_model(args.gguf)
    gen = torch.Generator().manual_seed(args.seed)
    prompt = [sp.bos_id()] + sp.encode(args.prompt)
    for _ in range(args.samples):
        ids = sample(model, prompt, args.n, args.temperature, args.top_k, gen, sp.eos_id())
        print(sp.decode(ids[1:]) + "\n")


if __name__ == "__main__":
    main()
