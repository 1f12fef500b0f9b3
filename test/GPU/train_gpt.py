#!/usr/bin/env python3
"""A small GPT trained with attnfuse.torch and with SDPA from the same
initialization: the loss curves must agree within run-to-run noise.

    PYTHONPATH=bundle/python python3 test/GPU/train_gpt.py [--steps N]

4 layers, d_model 256, 4 heads of 64, causal, context 256, char-level, on
text generated here (a seeded Markov chain over a small vocabulary of
words, so the model has something to learn). Runs, all from init seed 0
on the same batches unless said:
  sdpa          F.scaled_dot_product_attention (PyTorch's choice: flash or
                cuDNN)
  sdpa-seed1    SDPA from init seed 1: the run-to-run noise
  attnfuse      attnfuse.torch.attention
  attnfuse-compiled   the same model under torch.compile
bf16 autocast, AdamW. Prints the loss every 50 steps per run and the
tokens/s; fails unless |attnfuse - sdpa| (mean over the last 50 steps) is
at most max(|sdpa-seed1 - sdpa|, 0.02) and the loss fell.
"""
import argparse
import math
import random
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import attnfuse.torch as aft


def make_text(n_chars, seed=0):
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz")
                     for _ in range(rng.randint(2, 7))) for _ in range(60)]
    nxt = {w: rng.sample(words, 4) for w in words}
    w, out, size = rng.choice(words), [], 0
    while size < n_chars:
        out.append(w)
        size += len(w) + 1
        w = rng.choice(nxt[w]) if rng.random() < 0.9 else rng.choice(words)
        if rng.random() < 0.08:
            out.append(".\n")
    return " ".join(out)[:n_chars]


class Attention(nn.Module):
    def __init__(self, d, heads, impl):
        super().__init__()
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.heads, self.impl = heads, impl

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads,
                                   d // self.heads).permute(2, 0, 3, 1, 4)
        if self.impl == "sdpa":
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            o = aft.attention(q, k, v, causal=True)
        return self.proj(o.transpose(1, 2).reshape(b, n, d))


class Block(nn.Module):
    def __init__(self, d, heads, impl):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attention(d, heads, impl)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(),
                                 nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, ctx, impl, d=256, heads=4, layers=4):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads, impl)
                                    for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1],
                                                  device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def train_step(step_fn, opt, data, vocab, g, batch, ctx):
    """One AdamW step on `batch` random windows of `ctx` characters (drawn
    with generator g) under bf16 autocast; returns the loss."""
    starts = torch.randint(0, len(data) - ctx - 1, (batch,), generator=g)
    x = torch.stack([data[s:s + ctx] for s in starts]).cuda()
    y = torch.stack([data[s + 1:s + ctx + 1] for s in starts]).cuda()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = step_fn(x)
    loss = F.cross_entropy(logits.float().view(-1, vocab), y.view(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()


def train(data, vocab, impl, init_seed, steps, compiled, batch=32, ctx=256):
    torch.manual_seed(init_seed)
    model = GPT(vocab, ctx, impl).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    step_fn = torch.compile(model) if compiled else model
    g = torch.Generator().manual_seed(1234)  # the same batches in every run
    losses, tokens, t0 = [], 0, None
    for step in range(steps):
        if step == 10:  # compilation and first-use kernel builds done
            torch.cuda.synchronize()
            t0, tokens = time.perf_counter(), 0
        losses.append(train_step(step_fn, opt, data, vocab, g, batch, ctx))
        tokens += batch * ctx
    torch.cuda.synchronize()
    return losses, tokens / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args()
    text = make_text(400_000)
    chars = sorted(set(text))
    data = torch.tensor([chars.index(c) for c in text], dtype=torch.long)
    runs = {}
    for name, impl, seed, compiled in (
            ("sdpa", "sdpa", 0, False), ("sdpa-seed1", "sdpa", 1, False),
            ("attnfuse", "attnfuse", 0, False),
            ("attnfuse-compiled", "attnfuse", 0, True)):
        runs[name] = train(data, len(chars), impl, seed, args.steps,
                           compiled)
        losses, tps = runs[name]
        curve = " ".join(f"{losses[i]:.3f}" for i in
                         range(0, args.steps, 50)) + f" {losses[-1]:.3f}"
        print(f"{name:18s} {tps / 1e3:8.1f} k tokens/s  loss {curve}",
              flush=True)

    def tail(name):
        losses = runs[name][0]
        return sum(losses[-50:]) / len(losses[-50:])

    noise = abs(tail("sdpa-seed1") - tail("sdpa"))
    bound = max(noise, 0.02)
    ok = True
    for name in ("attnfuse", "attnfuse-compiled"):
        diff = abs(tail(name) - tail("sdpa"))
        step_diff = max(abs(a - b) for a, b in zip(runs[name][0],
                                                   runs["sdpa"][0]))
        fell = runs[name][0][-1] < 0.6 * runs[name][0][0]
        good = diff <= bound and fell and all(
            math.isfinite(x) for x in runs[name][0])
        ok &= good
        print(f"{'PASS' if good else 'FAIL'} {name}: last-50 mean loss "
              f"{tail(name):.4f} vs sdpa {tail('sdpa'):.4f} (|diff| "
              f"{diff:.4f}, bound {bound:.4f} = max(seed noise {noise:.4f}, "
              f"0.02)); largest per-step difference {step_diff:.4f}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
