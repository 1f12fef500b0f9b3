#!/usr/bin/env python3
"""attnfuse.torch on the GPU: gradients by FlashAttention's rule, gradcheck,
torch.compile, dropout, errors, the kernel cache.

    PYTHONPATH=bundle/python python3 test/GPU/torch_attention.py [--quick]

Needs torch and a CUDA GPU (the GPU machine: scripts/run-gpu-tests.sh runs
it). Prints one line per check and exits non-zero on any failure.

The rule (FlashAttention's tests, the training issue's "Done when"): for
each of O, dQ, dK, dV, the error of attnfuse's against an f32 reference
must be at most 3x the error of the same computation in eager PyTorch in
the inputs' dtype (plus 1e-5, for errors that are 0 in both), over a sweep
of (Nq, Nk) from (113, 203) to (2048, 2048), head dims 32 to 256, no mask
/ causal / sliding window, MHA / GQA / MQA, dropout 0 and 0.17. With
dropout, the references use attnfuse's own mask, read back through the
forward kernel: with Q = 0 and V one-hot, O = keep / ((1 - p) * visible
keys) (FlashAttention's tests do the same with return_attn_probs).
"""
import math
import os
import random
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

import attnfuse
import attnfuse.torch as aft
from attnfuse import attention_kernels

FAILURES = []


def report(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def visible(nq, nk, causal, window, alignment, device):
    left, right = window
    if causal:
        right = 0
    off = nk - nq if alignment == "bottom_right" else 0
    i = torch.arange(nq, device=device)[:, None]
    j = torch.arange(nk, device=device)[None, :]
    d = j - (i + off)
    ok = torch.ones(nq, nk, dtype=torch.bool, device=device)
    if left >= 0:
        ok &= d >= -left
    if right >= 0:
        ok &= d <= right
    return ok


def reference(q, k, v, *, causal=False, window=(-1, -1),
              alignment="top_left", softcap=0.0, scale=None, bias=None,
              keep=None, dropout_p=0.0, dtype=torch.float32):
    """Attention as eager PyTorch computes it, every op in `dtype`."""
    q, k, v = (x.to(dtype) for x in (q, k, v))
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    s = (q @ k.transpose(-1, -2)) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    if bias is not None:
        s = s + bias.to(dtype)
    s = s.masked_fill(~visible(q.shape[2], k.shape[2], causal, window,
                               alignment, q.device), float("-inf"))
    p = torch.softmax(s, -1).nan_to_num(0.0)  # rows that see no key: 0
    if keep is not None:
        p = p * keep.to(dtype) / (1 - dropout_p)
    return p @ v


def read_keep(cfg_args, seed, shape_q, nk, hkv, dtype, dropout_p):
    """The keep mask [B, Hq, Nq, Nk] of attnfuse's forward for `seed`:
    Q = 0 makes P uniform over the visible keys, V one-hot per 64 keys
    makes O read P * keep / (1 - p) back."""
    b, hq, nq, d = shape_q
    causal, wl, wr, alignment = cfg_args
    q = torch.zeros(b, hq, nq, d, dtype=dtype, device="cuda")
    k = torch.zeros(b, hkv, nk, d, dtype=dtype, device="cuda")
    keep = torch.zeros(b, hq, nq, nk, dtype=torch.bool, device="cuda")
    for j0 in range(0, nk, 64):
        v = torch.zeros(b, hkv, nk, 64, dtype=dtype, device="cuda")
        cols = torch.arange(j0, min(nk, j0 + 64), device="cuda")
        v[:, :, cols, cols - j0] = 1
        o, _ = torch.ops.attnfuse.attention_forward(
            q, k, v, None, seed, causal, wl, wr, alignment, 0.0, None,
            dropout_p, False)
        keep[..., j0:j0 + len(cols)] = o[..., :len(cols)] > 0
    return keep


def sweep(quick):
    rng = random.Random(0)
    seqs = [(113, 203), (128, 217), (256, 512), (512, 256), (108, 256),
            (1024, 1024), (2048, 2048)]
    dims = [32, 64, 96, 128, 256]
    masks = [("none", False, (-1, -1)), ("causal", True, (-1, -1)),
             ("window", False, (64, 32))]
    heads = [("MHA", 4, 4), ("GQA", 4, 2), ("MQA", 4, 1)]
    cases = []
    for (nq, nk) in seqs:
        for d in dims:
            for mask in masks:
                for h in heads:
                    for p in (0.0, 0.17):
                        cases.append((nq, nk, d, mask, h, p))
    rng.shuffle(cases)
    # Every value of every axis appears; the rest of the grid is sampled.
    return cases[:12] if quick else cases[:48]


def check_case(nq, nk, d, mask, heads, p, dtype, deterministic=False):
    name, causal, window = mask
    hname, hq, hkv = heads
    b = 2
    g = torch.Generator(device="cuda").manual_seed(nq * 7 + nk + d)
    q = torch.randn(b, hq, nq, d, device="cuda", dtype=dtype, generator=g)
    k = torch.randn(b, hkv, nk, d, device="cuda", dtype=dtype, generator=g)
    v = torch.randn(b, hkv, nk, d, device="cuda", dtype=dtype, generator=g)
    do = torch.randn(b, hq, nq, d, device="cuda", dtype=dtype, generator=g)
    alignment = "bottom_right"
    seed = torch.tensor(1234 + nq, dtype=torch.int64) if p else None
    qa, ka, va = (x.clone().requires_grad_() for x in (q, k, v))
    o, _ = torch.ops.attnfuse.attention_forward(
        qa, ka, va, None, seed, causal, window[0], window[1], alignment, 0.0,
        None, p, deterministic)
    ours = [o] + list(torch.autograd.grad(o, (qa, ka, va), do))
    keep = (read_keep((causal, window[0], window[1], alignment), seed,
                      (b, hq, nq, d), nk, hkv, dtype, p) if p else None)
    results = {}
    for ref_dtype in (torch.float32, dtype):
        qr, kr, vr = (x.clone().requires_grad_() for x in (q, k, v))
        out = reference(qr, kr, vr, causal=causal, window=window,
                        alignment=alignment, keep=keep, dropout_p=p,
                        dtype=ref_dtype)
        grads = torch.autograd.grad(out, (qr, kr, vr), do.to(ref_dtype))
        results[ref_dtype] = [out.float()] + [x.float() for x in grads]
    ok, parts = True, []
    for label, mine, ref, eager in zip(("o", "dq", "dk", "dv"), ours,
                                       results[torch.float32],
                                       results[dtype]):
        err = (mine.float() - ref).abs().max().item()
        bound = 3 * (eager - ref).abs().max().item() + 1e-5
        ok &= err <= bound and math.isfinite(err)
        parts.append(f"{label} {err:.1e}/{bound:.1e}")
    report(ok, f"grad {dtype} Nq={nq} Nk={nk} d={d} {name} {hname} p={p}"
           f"{' deterministic' if deterministic else ''}: " + " ".join(parts))


def check_deterministic():
    """deterministic=True: 100 backward reruns bitwise equal; the atomics'
    reruns for comparison; the cost of each."""
    g = torch.Generator(device="cuda").manual_seed(5)
    b, hq, hkv, n, d = 2, 8, 2, 1024, 64
    q = torch.randn(b, hq, n, d, device="cuda", dtype=torch.bfloat16,
                    generator=g)
    k, v = (torch.randn(b, hkv, n, d, device="cuda", dtype=torch.bfloat16,
                        generator=g) for _ in range(2))
    do = torch.randn(b, hq, n, d, device="cuda", dtype=torch.bfloat16,
                     generator=g)
    line = []
    for det in (True, False):
        o, lse = torch.ops.attnfuse.attention_forward(
            q, k, v, None, None, True, -1, -1, "top_left", 0.0, None, 0.0,
            det)
        run = lambda: torch.ops.attnfuse.attention_backward(
            do, q, k, v, o, lse, None, None, True, -1, -1, "top_left", 0.0,
            None, 0.0, det)
        first = run()
        differ = 0
        for _ in range(99 if det else 19):
            again = run()
            differ += any(not torch.equal(a.view(torch.int16),
                                          c.view(torch.int16))
                          for a, c in zip(first, again))
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(True), torch.cuda.Event(True)
        start.record()
        for _ in range(10):
            run()
        end.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(end) / 10
        line.append((det, differ, ms))
    (_, det_differ, det_ms), (_, at_differ, at_ms) = line
    report(det_differ == 0,
           f"deterministic=True: 100 backward reruns, {det_differ} differ "
           f"bitwise ({det_ms:.2f} ms); atomics: {at_differ} of 20 differ "
           f"({at_ms:.2f} ms); B={b} H={hq}/{hkv} N={n} d={d} causal bf16")


def check_gradcheck():
    g = torch.Generator(device="cuda").manual_seed(1)
    for causal, window in ((False, (-1, -1)), (True, (-1, -1)),
                           (False, (3, 2))):
        q = torch.randn(1, 2, 9, 16, device="cuda", generator=g)
        k = torch.randn(1, 1, 13, 16, device="cuda", generator=g)
        v = torch.randn(1, 1, 13, 16, device="cuda", generator=g)
        args = [x.requires_grad_() for x in (q, k, v)]
        fn = lambda q, k, v: aft.attention(q, k, v, causal=causal,
                                           window=window, softcap=4.0,
                                           alignment="bottom_right")
        try:
            ok = torch.autograd.gradcheck(fn, args, eps=1e-3, atol=2e-3,
                                          rtol=2e-3, nondet_tol=1e-5)
        except Exception as e:  # gradcheck raises with the mismatch
            print(str(e)[:2000])
            ok = False
        report(ok, f"gradcheck f32 GQA 2/1 Nq=9 Nk=13 d=16 softcap "
               f"causal={causal} window={window}")


def check_compile():
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = torch.nn.Linear(256, 3 * 256)

        def forward(self, x):
            b, n, _ = x.shape
            q, k, v = self.qkv(x).view(b, n, 3, 4, 64).unbind(2)
            o = aft.flash_attn_func(q, k, v, causal=True, softcap=20.0)
            return o.reshape(b, n, 256)

    torch.manual_seed(0)
    m = Block().cuda().to(torch.bfloat16)
    x = torch.randn(2, 300, 256, device="cuda", dtype=torch.bfloat16)
    eager = m(x)
    ge = torch.autograd.grad(eager.float().square().sum(),
                             list(m.parameters()))
    torch._dynamo.reset()
    compiled = torch.compile(m, fullgraph=True)
    out = compiled(x)
    gc = torch.autograd.grad(out.float().square().sum(),
                             list(m.parameters()))
    err = max((out.float() - eager.float()).abs().max().item(),
              *[(a.float() - b.float()).abs().max().item() /
                max(b.float().abs().max().item(), 1e-6)
                for a, b in zip(gc, ge)])
    report(err < 2e-2, f"torch.compile(fullgraph=True) of a causal softcap "
           f"block, forward and backward: max difference to eager {err:.1e}")
    explanation = torch._dynamo.explain(m)(x)
    report(explanation.graph_break_count == 0,
           f"torch._dynamo.explain: {explanation.graph_break_count} graph "
           "breaks")


def check_flash_layout_and_features():
    g = torch.Generator(device="cuda").manual_seed(2)
    b, nq, nk, hq, hkv, d = 2, 200, 333, 8, 2, 128
    q = torch.randn(b, nq, hq, d, device="cuda", dtype=torch.bfloat16,
                    generator=g)
    k = torch.randn(b, nk, hkv, d, device="cuda", dtype=torch.bfloat16,
                    generator=g)
    v = torch.randn(b, nk, hkv, d, device="cuda", dtype=torch.bfloat16,
                    generator=g)
    bias = torch.randn(1, hq, nq, nk, device="cuda", dtype=torch.bfloat16,
                       generator=g)
    o = aft.flash_attn_func(q, k, v, causal=True, window_size=(100, 0),
                            softmax_scale=0.1, softcap=15.0)
    ref = reference(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                    causal=True, window=(100, 0), alignment="bottom_right",
                    softcap=15.0, scale=0.1).transpose(1, 2)
    err = (o.float() - ref).abs().max().item()
    report(err < 2e-2, f"flash_attn_func [B,N,H,D] GQA 8/2 causal window "
           f"(100, 0) scale softcap: max|err| {err:.1e}")
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    o2 = aft.attention(qt, kt, vt, bias=bias)
    ref2 = reference(qt, kt, vt, bias=bias)
    err2 = (o2.float() - ref2).abs().max().item()
    report(err2 < 2e-2, f"attention with a [1,H,Nq,Nk] bias, GQA: max|err| "
           f"{err2:.1e}")
    o3, lse = aft.attention(qt, kt, vt, return_lse=True)
    s = (qt.float() @ kt.float().repeat_interleave(4, 1).transpose(-1, -2))
    lse_ref = torch.logsumexp(s * d ** -0.5, -1)
    err3 = (lse - lse_ref).abs().max().item()
    report(err3 < 1e-3 and not lse.requires_grad,
           f"return_lse: max|err| {err3:.1e}, not differentiable")
    sdpa = F.scaled_dot_product_attention(qt, kt, vt, is_causal=True,
                                          enable_gqa=True)
    err4 = (aft.attention(qt, kt, vt, causal=True).float() -
            sdpa.float()).abs().max().item()
    report(err4 < 2e-2, f"causal=True matches SDPA's is_causal (top-left): "
           f"max|diff| {err4:.1e}")


def check_layouts_in_place():
    """Q, K, V as transposed views of contiguous [B, N, H, D]
    (flash_attn_func's layout) are read in place and O, dQ, dK, dV written
    in the same layout (contiguous [B, N, H, D] results, no transposing
    copies); mixed layouts are copied and still right."""
    g = torch.Generator(device="cuda").manual_seed(5)
    b, nq, nk, hq, hkv, d = 2, 211, 333, 8, 2, 64
    for dtype, tol in ((torch.bfloat16, 3e-2), (torch.float32, 2e-3)):
        q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=dtype,
                               generator=g).requires_grad_()
                   for n, h in ((nq, hq), (nk, hkv), (nk, hkv)))
        do = torch.randn(b, nq, hq, d, device="cuda", dtype=dtype,
                         generator=g)
        o = aft.flash_attn_func(q, k, v, causal=True)
        o.backward(do)
        qr, kr, vr = (x.detach().float().transpose(1, 2).requires_grad_()
                      for x in (q, k, v))
        ref = reference(qr, kr, vr, causal=True,
                        alignment="bottom_right").transpose(1, 2)
        ref.backward(do.float())
        err = max((o.float() - ref).abs().max().item(),
                  *[(x.grad.float() - y.grad.transpose(1, 2)).abs().max()
                    .item() for x, y in ((q, qr), (k, kr), (v, vr))])
        layout = aft._layout(*(x.transpose(1, 2) for x in (q, k, v)))
        in_place = layout == "bnhd" and o.is_contiguous() and all(
            x.grad.is_contiguous() for x in (q, k, v))
        report(err < tol and in_place,
               f"[B,N,H,D] in place ({dtype}, GQA 8/2, causal, tails): "
               f"layout {layout}, O/dQ/dK/dV contiguous [B,N,H,D]: "
               f"{in_place}, max|err| of O, dQ, dK, dV {err:.1e}")
    # Mixed: Q [B, N, H, D], K and V [B, H, N, D] contiguous: copies.
    q = torch.randn(b, nq, hq, d, device="cuda", dtype=torch.bfloat16,
                    generator=g).transpose(1, 2)
    k, v = (torch.randn(b, hkv, nk, d, device="cuda", dtype=torch.bfloat16,
                        generator=g) for _ in range(2))
    o = aft.attention(q, k, v)
    err = (o.float() - reference(q, k, v)).abs().max().item()
    report(err < 2e-2 and aft._layout(q, k, v) == "bhnd",
           f"mixed layouts (Q [B,N,H,D], K, V [B,H,N,D]) copied: max|err| "
           f"{err:.1e}")


def check_decode():
    """Decode as a server runs it: one new token per sequence (and 16, as
    speculative decoding has them, causal bottom-right) over a long GQA
    cache: by default (the query heads packed into rows of their K/V head,
    the mask by position), unpacked on the split mma_sync forward (the split
    forward's f32 partials, which this op sizes from the split kernel's
    grid, and the combine kernel) and with explicit splits, against fp32."""
    g = torch.Generator(device="cuda").manual_seed(5)
    b, hq, hkv, nk, d = 4, 32, 8, 8192, 128
    k, v = (torch.randn(b, hkv, nk, d, device="cuda", dtype=torch.bfloat16,
                        generator=g) for _ in range(2))
    for nq in (1, 16):
        q = torch.randn(b, hq, nq, d, device="cuda", dtype=torch.bfloat16,
                        generator=g)
        ref = reference(q, k, v, causal=True, alignment="bottom_right")
        s = q.float() @ k.float().repeat_interleave(hq // hkv, 1).transpose(
            -1, -2) * d ** -0.5
        rows = torch.arange(nq, device="cuda")[:, None]
        cols = torch.arange(nk, device="cuda")[None, :]
        s = s.masked_fill(cols > rows + nk - nq, float("-inf"))
        lse_ref = torch.logsumexp(s, -1)
        for opts in ("", "mma=mma_sync pack-gqa=false",
                     "mma=mma_sync kv-splits=7"):
            with aft.kernel_options(opts):
                o, lse = aft.attention(q, k, v, causal=True,
                                       alignment="bottom_right",
                                       return_lse=True)
            err = (o.float() - ref).abs().max().item()
            lse_err = (lse - lse_ref).abs().max().item()
            report(err < 1e-2 and lse_err < 1e-3,
                   f"decode GQA 32/8 Nq {nq} Nk {nk} "
                   f"[{opts or 'defaults'}]: max|err| {err:.1e}, "
                   f"lse {lse_err:.1e}")


def check_key_lengths():
    """Decode over caches filled to different lengths (key_lengths, as
    flash_attn_with_kvcache's cache_seqlens): each batch against fp32
    attention over its own first L keys (a row that sees none: O = 0, lse
    = -inf), on the default kernels, the split mma_sync forward, unpacked
    and simt; NaN in the cache past each length changes nothing (bitwise);
    FlashAttention's [B, N, H, D] convention; torch.compile; the errors."""
    g = torch.Generator(device="cuda").manual_seed(11)
    b, hq, hkv, nk, d = 4, 32, 8, 4096, 128
    lens = torch.tensor([4096, 1, 0, 2500], dtype=torch.int32, device="cuda")
    k, v = (torch.randn(b, hkv, nk, d, device="cuda", dtype=torch.bfloat16,
                        generator=g) for _ in range(2))
    past = torch.arange(nk, device="cuda")[None, None, :, None] >= \
        lens.long()[:, None, None, None]
    kn, vn = (t.masked_fill(past, float("nan")) for t in (k, v))
    for nq in (1, 16):
        q = torch.randn(b, hq, nq, d, device="cuda", dtype=torch.bfloat16,
                        generator=g)
        refs, lse_refs = [], []
        for i, n in enumerate(lens.tolist()):
            qi, ki, vi = q[i:i + 1], k[i:i + 1, :, :n], v[i:i + 1, :, :n]
            refs.append(reference(qi, ki, vi, causal=True,
                                  alignment="bottom_right"))
            s = qi.float() @ ki.float().repeat_interleave(
                hq // hkv, 1).transpose(-1, -2) * d ** -0.5
            s = s.masked_fill(~visible(nq, n, True, (-1, -1), "bottom_right",
                                       "cuda"), float("-inf"))
            lse_refs.append(torch.logsumexp(s, -1))
        ref, lse_ref = torch.cat(refs), torch.cat(lse_refs)
        for opts in ("", "mma=mma_sync kv-splits=5", "pack-gqa=false",
                     "mma=simt"):
            with aft.kernel_options(opts):
                o, lse = aft.attention(q, k, v, causal=True,
                                       alignment="bottom_right",
                                       return_lse=True, key_lengths=lens)
                o2, lse2 = aft.attention(q, kn, vn, causal=True,
                                         alignment="bottom_right",
                                         return_lse=True, key_lengths=lens)
            err = (o.float() - ref).abs().max().item()
            both = torch.isfinite(lse_ref)
            lse_err = (lse - lse_ref)[both].abs().max().item()
            empty = bool((lse[~both] == float("-inf")).all())
            same = torch.equal(o, o2) and torch.equal(lse, lse2)
            report(err < 1e-2 and lse_err < 1e-3 and empty and same,
                   f"key_lengths {lens.tolist()} Nq {nq} GQA 32/8 Nk {nk} "
                   f"[{opts or 'defaults'}]: max|err| {err:.1e}, lse "
                   f"{lse_err:.1e}, rows without keys -inf {empty}, NaN "
                   f"past the lengths bitwise the same {same}")
    # The same caches in pages of 64 keys, the pages shuffled (a block
    # table), on the default kernels and the split mma_sync forward; and
    # pages of 256 through flash_attn_with_kvcache's paged convention.
    ps, per = 64, nk // 64
    perm = torch.randperm(b * per, generator=torch.Generator().manual_seed(3))
    table = perm.view(b, per).to(device="cuda", dtype=torch.int32)

    def paged(t, size):
        n = nk // size
        pages = t.view(b, hkv, n, size, d).permute(0, 2, 1, 3, 4).reshape(
            b * n, hkv, size, d)
        out = torch.empty_like(pages)
        out[perm if size == ps else perm256] = pages
        return out
    perm256 = torch.randperm(b * (nk // 256),
                             generator=torch.Generator().manual_seed(4))
    kp, vp = paged(k, ps), paged(v, ps)
    for opts in ("", "mma=mma_sync kv-splits=5"):
        with aft.kernel_options(opts):
            o, lse = aft.attention(q, kp, vp, causal=True,
                                   alignment="bottom_right", return_lse=True,
                                   key_lengths=lens, block_table=table)
        err = (o.float() - ref).abs().max().item()
        both = torch.isfinite(lse_ref)
        lse_err = (lse - lse_ref)[both].abs().max().item()
        report(err < 1e-2 and lse_err < 1e-3,
               f"paged K/V (pages of {ps}, shuffled) with key_lengths Nq "
               f"{nq} [{opts or 'defaults'}]: max|err| {err:.1e}, lse "
               f"{lse_err:.1e}")
    k256, v256 = (paged(t, 256).transpose(1, 2).contiguous() for t in (k, v))
    table256 = perm256.view(b, nk // 256).to(device="cuda")
    got = aft.flash_attn_with_kvcache(
        q.transpose(1, 2).contiguous(), k256, v256, cache_seqlens=lens,
        block_table=table256, causal=True)
    err = (got.transpose(1, 2).float() - ref).abs().max().item()
    report(err < 1e-2, f"flash_attn_with_kvcache, paged caches [pages, 256, "
           f"Hkv, D], int64 table, Nq {nq}: max|err| {err:.1e}")
    # A decode loop over one cache capacity: every length, one compilation
    # (the lengths are launch arguments, not part of the kernels).
    before = attention_kernels.cache_stats()["compiled"]
    q1 = q[:, :, :1]
    for n in (1, 7, 64, 1000, 2049, 4096):
        aft.attention(q1, k, v, causal=True, alignment="bottom_right",
                      key_lengths=torch.full((b,), n, dtype=torch.int32,
                                             device="cuda"))
    compiled = attention_kernels.cache_stats()["compiled"] - before
    report(compiled <= 1, f"decode over one cache at 6 lengths (1 ... 4096): "
           f"{compiled} compilation(s)")
    # FlashAttention's convention, int64 lengths, and torch.compile.
    q = torch.randn(b, 16, hq, d, device="cuda", dtype=torch.bfloat16,
                    generator=g)
    kc, vc = (t.transpose(1, 2).contiguous() for t in (k, v))
    want = aft.attention(q.transpose(1, 2), k, v, causal=True,
                         alignment="bottom_right", key_lengths=lens)
    got = aft.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=lens.long(),
                                      causal=True)
    compiled = torch.compile(
        lambda q, kc, vc, n: aft.flash_attn_with_kvcache(
            q, kc, vc, cache_seqlens=n, causal=True), fullgraph=True)
    got_c = compiled(q, kc, vc, lens)
    err = max((got.transpose(1, 2).float() - want.float()).abs().max().item(),
              (got_c.float() - got.float()).abs().max().item())
    report(err < 1e-2, f"flash_attn_with_kvcache [B, N, H, D], int64 "
           f"cache_seqlens, torch.compile: max difference {err:.1e}")
    for bad, why in ((lens.float(), "float lengths"),
                     (lens[:2], "lengths of another batch")):
        try:
            aft.attention(q.transpose(1, 2), k, v, key_lengths=bad)
            report(False, f"key_lengths: {why} accepted")
        except ValueError as e:
            report("key_lengths must be" in str(e),
                   f"key_lengths: {why} refused: {e}")
    try:
        aft.attention(q.transpose(1, 2).detach().requires_grad_(), k, v,
                      key_lengths=lens)
        report(False, "key_lengths with a gradient accepted")
    except ValueError as e:
        report("no gradient" in str(e),
               f"key_lengths with a gradient refused: {e}")


def check_errors():
    q = torch.randn(1, 2, 64, 64, device="cuda", dtype=torch.bfloat16)
    # A bias that requires grad gets dBias (refused before 2026-12-07).
    bias = torch.zeros(1, 2, 64, 64, device="cuda", dtype=torch.bfloat16,
                       requires_grad=True)
    aft.attention(q, q, q, bias=bias).float().sum().backward()
    report(bias.grad is not None and bias.grad.shape == bias.shape,
           "a bias that requires grad gets its gradient")
    for bad, what in ((lambda: aft.attention(q, q[:, :, :, :32], q),
                       "Dqk of K differs from Q's"),
                      (lambda: aft.attention(q, q[:, :1].expand(1, 3, 64, 64)
                                             .contiguous(), q[:, :1]
                                             .expand(1, 3, 64, 64)
                                             .contiguous()),
                       "Hq not a multiple of Hkv"),
                      (lambda: aft.attention(q.double(), q.double(),
                                             q.double()), "f64")):
        try:
            bad()
            report(False, f"{what}: no error")
        except (ValueError, TypeError, attnfuse.CompileError,
                RuntimeError) as e:
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            report(not isinstance(e, RuntimeError) or "attnfuse" in str(e),
                   f"{what}: {type(e).__name__}: {first[:160]}")
    os.environ["ATTNFUSE_CHIP"] = "sm_70"
    try:
        aft.attention(q, q, q)
        report(False, "compiling for sm_70 fails")
    except attnfuse.CompileError as e:
        located = [x for x in e.diagnostics if x.severity == "error"
                   and x.location]
        report(bool(located) and "sm_70" in str(e),
               f"a compile error is an attnfuse.CompileError with a located "
               f"diagnostic: {located[0] if located else e}")
    finally:
        del os.environ["ATTNFUSE_CHIP"]


CACHE_CHILD = """
import sys, torch, attnfuse.torch as aft
from attnfuse import attention_kernels as ak
q = torch.randn(1, 4, 96, 64, device="cuda", dtype=torch.bfloat16)
aft.attention(q, q, q, causal=True).sum().item()
print(ak.cache_stats()["compiled"], ak.cache_stats()["disk"])
"""


def check_cache():
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, ATTNFUSE_CACHE_DIR=cache)
        # Two processes at once on an empty cache, then a third.
        runs = [subprocess.Popen([sys.executable, "-c", CACHE_CHILD],
                                 env=env, stdout=subprocess.PIPE, text=True)
                for _ in range(2)]
        outs = [r.communicate()[0].split() for r in runs]
        ok = all(r.returncode == 0 for r in runs)
        third = subprocess.run([sys.executable, "-c", CACHE_CHILD], env=env,
                               capture_output=True, text=True)
        entries = sum(len(files) for _, _, files in os.walk(cache))
        report(ok and third.returncode == 0 and third.stdout.split() ==
               ["0", "1"] and not any(f.startswith(".tmp") for f in
                                      os.listdir(cache)),
               f"disk cache: two concurrent processes (compiled, from disk) "
               f"{outs}, a third {third.stdout.split()}, {entries} files")


def check_bias_gradient():
    """dBias (bias.requires_grad): shapes that the kernels store (the
    scores' shape) or sum by atomics (broadcast over batch, heads, queries),
    with GQA and masks, against the f32 reference under FlashAttention's rule;
    gradcheck in f32 on small shapes; deterministic mode with a full bias
    bitwise equal on reruns, with a broadcast one a located compile error;
    torch.compile's gradients equal eager's."""
    g = torch.Generator(device="cuda").manual_seed(11)
    b, hq, hkv, nq, nk, d = 2, 4, 2, 113, 203, 64
    dtype = torch.bfloat16
    q = torch.randn(b, hq, nq, d, device="cuda", dtype=dtype, generator=g)
    k = torch.randn(b, hkv, nk, d, device="cuda", dtype=dtype, generator=g)
    v = torch.randn(b, hkv, nk, d, device="cuda", dtype=dtype, generator=g)
    do = torch.randn(b, hq, nq, d, device="cuda", dtype=dtype, generator=g)
    for shape in ((b, hq, nq, nk), (1, hq, nq, nk), (b, 1, 1, nk), (nq, nk)):
        for causal in (False, True):
            bias = torch.randn(shape, device="cuda", dtype=dtype,
                               generator=g)
            qa, ka, va, ba = (x.clone().requires_grad_()
                              for x in (q, k, v, bias))
            o = aft.attention(qa, ka, va, causal=causal, bias=ba,
                              alignment="bottom_right")
            ours = [o] + list(torch.autograd.grad(o, (qa, ka, va, ba), do))
            results = {}
            for ref_dtype in (torch.float32, dtype):
                qr, kr, vr, br = (x.clone().to(ref_dtype).requires_grad_()
                                  for x in (q, k, v, bias))
                out = reference(qr, kr, vr, causal=causal, bias=br,
                                alignment="bottom_right", dtype=ref_dtype)
                grads = torch.autograd.grad(out, (qr, kr, vr, br),
                                            do.to(ref_dtype))
                results[ref_dtype] = [out.float()] + [x.float()
                                                      for x in grads]
            ok, parts = True, []
            for label, mine, ref, eager in zip(
                    ("o", "dq", "dk", "dv", "dbias"), ours,
                    results[torch.float32], results[dtype]):
                err = (mine.float() - ref).abs().max().item()
                bound = 3 * (eager - ref).abs().max().item() + 1e-5
                ok &= (err <= bound and math.isfinite(err)
                       and mine.shape == ref.shape)
                parts.append(f"{label} {err:.1e}/{bound:.1e}")
            report(ok, f"dbias {dtype} bias {list(shape)} Nq={nq} Nk={nk} "
                   f"GQA 4/2 causal={causal}: " + " ".join(parts))

    # gradcheck (f32) through Q, K, V and the bias, full and broadcast.
    for shape in ((1, 2, 9, 13), (9, 13), (1, 1, 1, 13)):
        qs = torch.randn(1, 2, 9, 16, device="cuda", generator=g)
        ks = torch.randn(1, 1, 13, 16, device="cuda", generator=g)
        vs = torch.randn(1, 1, 13, 16, device="cuda", generator=g)
        bs = torch.randn(shape, device="cuda", generator=g)
        args = [x.requires_grad_() for x in (qs, ks, vs, bs)]
        fn = lambda q, k, v, bias: aft.attention(
            q, k, v, causal=True, bias=bias, softcap=4.0,
            alignment="bottom_right")
        try:
            ok = torch.autograd.gradcheck(fn, args, eps=1e-3, atol=2e-3,
                                          rtol=2e-3, nondet_tol=1e-5)
        except Exception as e:
            print(str(e)[:2000])
            ok = False
        report(ok, f"gradcheck f32 with dbias, bias {list(shape)}")

    # Deterministic mode: a full bias's dBias is stored (bitwise reruns); a
    # broadcast one's would need atomics: a compile error naming the op.
    bias = torch.randn(b, hq, nq, nk, device="cuda", dtype=dtype,
                       generator=g)
    runs = []
    for _ in range(3):
        qa, ka, va, ba = (x.clone().requires_grad_() for x in (q, k, v, bias))
        o = aft.attention(qa, ka, va, causal=True, bias=ba,
                          deterministic=True)
        runs.append(torch.autograd.grad(o, (qa, ka, va, ba), do))
    same = all(torch.equal(x, y) for run in runs[1:]
               for x, y in zip(runs[0], run))
    report(same, "dbias deterministic=True: 3 reruns bitwise equal")
    try:
        ba = torch.randn(1, hq, nq, nk, device="cuda", dtype=dtype,
                         generator=g).requires_grad_()
        qa = q.clone().requires_grad_()
        o = aft.attention(qa, k, v, bias=ba, deterministic=True)
        torch.autograd.grad(o, (qa, ba), do)
        report(False, "dbias deterministic=True with a broadcast bias: no "
               "error")
    except Exception as e:
        report("cannot compute the gradient of a broadcast bias" in str(e),
               "dbias deterministic=True with a broadcast bias: "
               f"{type(e).__name__}")

    # torch.compile: the same gradients, no graph breaks.
    def step(q, k, v, bias):
        return aft.attention(q, k, v, causal=True, bias=bias) * 2
    counts = torch._dynamo.utils.counters
    counts.clear()
    compiled = torch.compile(step, fullgraph=True)
    bias = torch.randn(1, hq, nq, nk, device="cuda", dtype=dtype,
                       generator=g)
    grads = []
    for fn in (step, compiled):
        qa, ka, va, ba = (x.clone().requires_grad_() for x in (q, k, v, bias))
        grads.append(torch.autograd.grad(fn(qa, ka, va, ba),
                                         (qa, ka, va, ba), do))
    close = all(torch.allclose(x.float(), y.float(), atol=2e-2, rtol=2e-2)
                for x, y in zip(*grads))
    report(close and not counts["graph_break"],
           "dbias under torch.compile(fullgraph=True): gradients as eager")


def guarded(fn, *args):
    """fn(*args); an exception is one failed check, not the end."""
    try:
        fn(*args)
    except Exception as e:
        last = str(e).strip().splitlines()
        report(False, f"{fn.__name__}{args}: {type(e).__name__}: "
               f"{last[-1] if last else ''}"[:400])


def main():
    quick = "--quick" in sys.argv
    for case in sweep(quick):
        guarded(check_case, *case, torch.bfloat16)
    for case in sweep(True)[:4]:
        guarded(check_case, *case, torch.float16)
    for case in sweep(True)[:6]:
        guarded(check_case, *case, torch.bfloat16, True)
    for check in (check_deterministic, check_gradcheck, check_bias_gradient,
                  check_flash_layout_and_features, check_layouts_in_place,
                  check_decode, check_key_lengths,
                  check_compile, check_errors, check_cache):
        guarded(check)
    print(f"{len(FAILURES)} failure(s)")
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
