#!/usr/bin/python3
"""Cross-checks model.py against an independent token-by-token forward pass over the GGUF.

The numpy pass reads the GGUF tensors the way a llama.cpp-style engine does (row r of a
[ne1, ne0] matrix is output feature r; RoPE mode 0 rotates (x[2i], x[2i+1]) by
pos * base^(-2i/n_rot); query head h uses kv head h / (n_head / n_kv_head); a growing KV
cache) and compares its logits at every position with model.py's batched forward.
"""
import argparse

import numpy as np
import torch

from gguf_write import read_gguf
from make_references import load_model


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x) + eps) * w


def rope(x, pos, base):
    """x: [heads, head_dim]."""
    out, d = x.copy(), x.shape[1]
    for i in range(0, d, 2):
        theta = pos * base ** (-i / d)
        c, s = np.cos(theta), np.sin(theta)
        out[:, i] = x[:, i] * c - x[:, i + 1] * s
        out[:, i + 1] = x[:, i] * s + x[:, i + 1] * c
    return out


def forward_all(meta, t, tokens):
    """Logits [len(tokens), vocab], one token at a time with a KV cache (float64)."""
    a = "llama."
    n_layer, n_head = meta[a + "block_count"], meta[a + "attention.head_count"]
    n_kv, eps = meta[a + "attention.head_count_kv"], meta[a + "attention.layer_norm_rms_epsilon"]
    base = meta[a + "rope.freq_base"]
    t = {k: v.astype(np.float64) for k, v in t.items()}
    out_w = t.get("output.weight", t["token_embd.weight"])
    keys = [[] for _ in range(n_layer)]  # [layer][pos] -> [n_kv, head_dim]
    values = [[] for _ in range(n_layer)]
    all_logits = []
    for pos, tok in enumerate(tokens):
        x = t["token_embd.weight"][tok]
        for l in range(n_layer):
            p = f"blk.{l}."
            h = rms_norm(x, t[p + "attn_norm.weight"], eps)
            q = (t[p + "attn_q.weight"] @ h).reshape(n_head, -1)
            k = (t[p + "attn_k.weight"] @ h).reshape(n_kv, -1)
            v = (t[p + "attn_v.weight"] @ h).reshape(n_kv, -1)
            q, k = rope(q, pos, base), rope(k, pos, base)
            keys[l].append(k)
            values[l].append(v)
            head_dim = q.shape[1]
            att = np.zeros_like(q)
            for hd in range(n_head):
                kv = hd // (n_head // n_kv)
                ks = np.stack([kk[kv] for kk in keys[l]])  # [pos + 1, head_dim]
                vs = np.stack([vv[kv] for vv in values[l]])
                s = ks @ q[hd] / np.sqrt(head_dim)
                w = np.exp(s - s.max())
                att[hd] = (w / w.sum()) @ vs
            x = x + t[p + "attn_output.weight"] @ att.reshape(-1)
            h = rms_norm(x, t[p + "ffn_norm.weight"], eps)
            g = t[p + "ffn_gate.weight"] @ h
            x = x + t[p + "ffn_down.weight"] @ (g / (1 + np.exp(-g)) * (t[p + "ffn_up.weight"] @ h))
        all_logits.append(out_w @ rms_norm(x, t["output_norm.weight"], eps))
    return np.stack(all_logits)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--n-tokens", type=int, default=24)
    args = ap.parse_args()
    meta, tensors = read_gguf(args.gguf)
    model, _ = load_model(args.gguf)
    tokens = np.random.default_rng(0).integers(0, model.cfg.vocab_size, args.n_tokens).tolist()
    ref = forward_all(meta, tensors, tokens)
    with torch.no_grad():
        got = model(torch.tensor([tokens]))[0].double().numpy()
    err = np.abs(ref - got).max() / np.abs(ref).max()
    print(f"max |logit difference| / max |logit| = {err:.2e} over {len(tokens)} positions")
    if err > 1e-4:
        raise SystemExit("model.py disagrees with the GGUF-order reference forward pass")


if __name__ == "__main__":
    main()
