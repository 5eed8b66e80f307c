"""The LLaMA architecture kvforge runs, in plain PyTorch (no biases anywhere).

Conventions match GGUF llama files so that weights export without any reordering:
  - RMSNorm: x / sqrt(mean(x^2) + eps) * weight.
  - RoPE rotates ADJACENT pairs (x[2i], x[2i+1]) of each head by pos * theta^(-2i/head_dim)
    (GGML's "normal" rope mode, which llama.cpp uses for general.architecture=llama).
    Hugging Face LLaMA rotates halves (x[i], x[i+d/2]) instead, which is why converters
    permute the rows of Q and K; a model trained with adjacent pairs needs no permutation.
  - GQA: n_kv_head key/value heads, each shared by n_head / n_kv_head query heads
    (query head h reads kv head h // (n_head / n_kv_head), as llama.cpp does).
  - SwiGLU feed-forward: down(silu(gate(x)) * up(x)).
  - nn.Linear weights are [out_features, in_features], i.e. GGUF ne0 = in_features.
"""
import dataclasses
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclasses.dataclass
class Config:
    vocab_size: int = 4096
    n_embd: int = 256
    n_layer: int = 4
    n_head: int = 8
    n_kv_head: int = 4
    n_ff: int = 768
    context_length: int = 256
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    tied_output: bool = True  # output projection reuses token_embd (no output.weight)

    @property
    def head_dim(self):
        return self.n_embd // self.n_head


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(cfg, n_pos):
    """cos, sin: [n_pos, head_dim / 2]; entry (p, i) is for angle p * theta^(-2i/head_dim)."""
    freqs = cfg.rope_theta ** (-torch.arange(0, cfg.head_dim, 2, dtype=torch.float64)
                               / cfg.head_dim)
    angles = torch.outer(torch.arange(n_pos, dtype=torch.float64), freqs)
    return angles.cos().float(), angles.sin().float()


def apply_rope(x, cos, sin):
    """x: [batch, heads, seq, head_dim]; rotates each adjacent pair (x[2i], x[2i+1])."""
    x0, x1 = x[..., 0::2], x[..., 1::2]  # [batch, heads, seq, head_dim / 2]
    out = torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1)
    return out.flatten(-2)  # interleave back: out[2i], out[2i+1]


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d = cfg.head_dim
        self.wq = nn.Linear(cfg.n_embd, cfg.n_head * d, bias=False)
        self.wk = nn.Linear(cfg.n_embd, cfg.n_kv_head * d, bias=False)
        self.wv = nn.Linear(cfg.n_embd, cfg.n_kv_head * d, bias=False)
        self.wo = nn.Linear(cfg.n_head * d, cfg.n_embd, bias=False)

    def forward(self, x, cos, sin, mask):
        cfg, (b, t, _) = self.cfg, x.shape
        q = self.wq(x).view(b, t, cfg.n_head, cfg.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, t, cfg.n_kv_head, cfg.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, t, cfg.n_kv_head, cfg.head_dim).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        group = cfg.n_head // cfg.n_kv_head
        k = k.repeat_interleave(group, dim=1)  # [b, n_head, t, head_dim]
        v = v.repeat_interleave(group, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(cfg.head_dim) + mask  # [b, h, t, t]
        out = F.softmax(scores, dim=-1) @ v  # [b, n_head, t, head_dim]
        return self.wo(out.transpose(1, 2).reshape(b, t, -1))


class FeedForward(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.gate = nn.Linear(cfg.n_embd, cfg.n_ff, bias=False)
        self.up = nn.Linear(cfg.n_embd, cfg.n_ff, bias=False)
        self.down = nn.Linear(cfg.n_ff, cfg.n_embd, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attn_norm = RMSNorm(cfg.n_embd, cfg.norm_eps)
        self.attn = Attention(cfg)
        self.ffn_norm = RMSNorm(cfg.n_embd, cfg.norm_eps)
        self.ffn = FeedForward(cfg)

    def forward(self, x, cos, sin, mask):
        x = x + self.attn(self.attn_norm(x), cos, sin, mask)
        return x + self.ffn(self.ffn_norm(x))


class Llama(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.token_embd = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.output_norm = RMSNorm(cfg.n_embd, cfg.norm_eps)
        self.output = None if cfg.tied_output else nn.Linear(cfg.n_embd, cfg.vocab_size,
                                                             bias=False)
        cos, sin = rope_tables(cfg, cfg.context_length)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, tokens):
        """tokens: [batch, seq] with seq <= context_length, positions 0..seq-1.
        Returns logits [batch, seq, vocab]."""
        t = tokens.shape[1]
        mask = torch.full((t, t), float("-inf")).triu(1)  # [t, t] causal
        cos, sin = self.rope_cos[:t], self.rope_sin[:t]
        x = self.token_embd(tokens)
        for block in self.blocks:
            x = block(x, cos, sin, mask)
        x = self.output_norm(x)
        weight = self.token_embd.weight if self.output is None else self.output.weight
        return x @ weight.t()
