#!/usr/bin/env python3
"""Decode attention speed on one GPU: attnfuse.torch against its peers.

A script, not a test. For the rows of issue 25 (bf16, GQA with 32 query
heads and 8 KV heads, d = 128, Nq in {1, 16} new tokens against a KV cache
of Nk in {1024, 8192, 32768}, batch B in {1, 8, 64}: 18 rows), times in
one process: attnfuse.torch.attention (kernels compiled through the C API
on the first call and cached), torch SDPA with the cudnn and flash (FA2)
backends (enable_gqa) and FlashAttention-4 (flash_attn.cute, where
importable). Nq = 16 is causal aligned bottom-right (each new token sees
the cache and the new tokens up to itself: FlashAttention's causal); SDPA's
is_causal is aligned top-left, so cuDNN gets the bottom-right mask as a
boolean attn_mask and FA2 gets torch.nn.attention.bias.causal_lower_right,
which runs SDPA's flash kernel with its own (bottom-right) causal flag where
can_use_flash_attention allows it ('–' where not). Nq = 1 has no mask.

GB/s = the bytes of K and V read once (2 * B * Hkv * Nk * d * 2) / the
median time per call (bench_attention.bench: batches of back-to-back calls
after warm-up, so the host's cost of a launch stays out while it is shorter
than the kernel, which it may not be at the smallest rows, a few MB a call);
the implementations of a row are timed in turns (bench_attention.in_turns,
BENCH_ROUNDS rounds, default 3). Inputs are fresh torch.randn per row.
Before timing, every output is checked on batch element 0 against an fp32
reference with FlashAttention's rule (err <= 2 * err of the same reference
in bf16 + 1e-3); a failing implementation is shown WRONG and not timed. A
first line gives the device-to-device copy bandwidth of 1 GiB (bytes read
+ written / time), the ceiling.

usage: PYTHONPATH=bundle/python python3 bench/bench_decode.py
           [--quick] [--only SUBSTR] [--json OUT] [--variant OPTS]...
(--quick: the B = 8 rows; --only: the rows whose name, e.g. b8_nk8192_nq16,
contains SUBSTR; --json: all rows to OUT; --variant: one more attnfuse
column per option string, e.g. "mma=mma_sync kv-splits=8", compiled with
attnfuse.torch.kernel_options; the word "lengths" in it also passes
key_lengths = Nk for every batch (a full cache through the per-batch
lengths path, as flash_attn_with_kvcache's cache_seqlens: what reading
the lengths costs), and "pages=P" reads K and V from a paged cache of
pages of P keys, the pages shuffled, through a block table (with the
lengths), e.g. "lengths", "pages=16" or "pages=64 mma=mma_sync")
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
try:
    import attnfuse.torch as aft
except ImportError:  # not on PYTHONPATH: the source tree's package
    sys.path.insert(0, os.path.join(ROOT, "python-bindings"))
    import attnfuse.torch as aft
sys.path.insert(0, os.path.join(ROOT, "bench"))
from bench_attention import ROUNDS, bench, in_turns  # noqa: E402

HQ, HKV, D = 32, 8, 128
DTYPE = torch.bfloat16
ROWS = [(b, nk, nq) for nq in (1, 16) for nk in (1024, 8192, 32768)
        for b in (1, 8, 64)]
COLS = [("attnfuse", "attnfuse"), ("fa4", "FA4"), ("cudnn", "cuDNN"),
        ("flash", "FA2")]


def copy_bandwidth():
    """GB/s of a device-to-device copy of 1 GiB (read + written)."""
    src = torch.randn(2 ** 29, device="cuda", dtype=DTYPE)
    dst = torch.empty_like(src)
    ms = bench(lambda: dst.copy_(src))
    nbytes = 2 * src.numel() * src.element_size()
    del src, dst
    torch.cuda.empty_cache()
    return nbytes / (ms * 1e-3) / 1e9


def references(q, k, v, mask):
    """Output of batch element 0 [HQ, Nq, D] in fp32, and the same
    computation in bf16 (its error sets the bar)."""
    g = q.shape[1] // k.shape[1]
    qs, ks, vs = q[0], k[0].repeat_interleave(g, 0), v[0].repeat_interleave(
        g, 0)
    outs = []
    for dt in (torch.float32, DTYPE):
        s = (qs.to(dt) @ ks.to(dt).transpose(-1, -2)) / math.sqrt(D)
        if mask is not None:
            s = s.masked_fill(~mask, -math.inf)
        p = torch.softmax(s.float(), -1).to(dt)
        outs.append((p @ vs.to(dt)).float())
    return outs[0], (outs[1] - outs[0]).abs().max().item()


def run_row(b, nk, nq, fa4, variants=()):
    """One row: check, time, return its dict."""
    name = f"b{b}_nk{nk}_nq{nq}"
    q = torch.randn(b, HQ, nq, D, device="cuda", dtype=DTYPE)
    k, v = (torch.randn(b, HKV, nk, D, device="cuda", dtype=DTYPE)
            for _ in range(2))
    causal = nq > 1
    # Bottom-right causal: query i sees key j iff j <= i + nk - nq.
    mask = (torch.ones(nq, nk, dtype=torch.bool, device="cuda").tril(nk - nq)
            if causal else None)
    nbytes = 2 * b * HKV * nk * D * q.element_size()
    row = dict(name=name, B=b, Nk=nk, Nq=nq, Hq=HQ, Hkv=HKV, d=D,
               causal_bottom_right=int(causal), kv_bytes=nbytes)

    # Each returns O as [B, HQ, Nq, D] (a view for FA4).
    impls = {"attnfuse": lambda: aft.attention(
        q, k, v, causal=causal, alignment="bottom_right")}
    full = torch.full((b,), nk, dtype=torch.int32, device="cuda")
    for opts in variants:
        words = opts.split()
        size = next((int(w[6:]) for w in words if w.startswith("pages=")), 0)
        lengths = full if size or "lengths" in words else None
        options = " ".join(w for w in words
                           if w != "lengths" and not w.startswith("pages="))
        kk, vv, table = k, v, None
        if size:
            # Page i of batch b at a shuffled place: K/V [B * Nk / size,
            # Hkv, size, D].
            n = nk // size
            perm = torch.randperm(b * n, device="cuda")
            table = perm.view(b, n).to(torch.int32)
            kk, vv = (torch.empty_like(t.view(b, HKV, n, size, D).permute(
                0, 2, 1, 3, 4).reshape(b * n, HKV, size, D)) for t in (k, v))
            for src, dst in ((k, kk), (v, vv)):
                dst[perm] = src.view(b, HKV, n, size, D).permute(
                    0, 2, 1, 3, 4).reshape(b * n, HKV, size, D)

        def variant_call(options=options, lengths=lengths, kk=kk, vv=vv,
                         table=table):
            with aft.kernel_options(options):
                return aft.attention(q, kk, vv, causal=causal,
                                     alignment="bottom_right",
                                     key_lengths=lengths, block_table=table)
        impls["attnfuse " + opts] = variant_call
    if fa4 is not None:
        tq, tk, tv = (t.transpose(1, 2).contiguous() for t in (q, k, v))

        def fa4_call():
            o = fa4(tq, tk, tv, causal=causal)
            return (o[0] if isinstance(o, tuple) else o).transpose(1, 2)
        impls["fa4"] = fa4_call
    cudnn_mask = mask[None, None] if causal else None

    def cudnn_call():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(
                q, k, v, attn_mask=cudnn_mask, enable_gqa=True)
    impls["cudnn"] = cudnn_call
    flash_mask = None
    if causal:
        # SDPA's flash takes no attn_mask; causal_lower_right calls its
        # kernel with the flash kernel's own causal (bottom-right) where
        # can_use_flash_attention says yes, else another kernel: then '–'.
        try:
            from torch.backends.cuda import SDPAParams, can_use_flash_attention
            from torch.nn.attention.bias import causal_lower_right
            if can_use_flash_attention(SDPAParams(q, k, v, None, 0.0, False,
                                                  True)):
                flash_mask = causal_lower_right(nq, nk)
            else:
                row["flash_skipped"] = "can_use_flash_attention: False"
        except Exception as e:
            row["flash_skipped"] = repr(e)[:200]
    if "flash_skipped" not in row:
        def flash_call():
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return F.scaled_dot_product_attention(
                    q, k, v, attn_mask=flash_mask, enable_gqa=True)
        impls["flash"] = flash_call

    ref, base = references(q, k, v, mask)
    row["bf16_ref_err"] = base
    timed = {}
    for iname, fn in impls.items():
        try:
            t0 = time.time()
            o = fn()  # attnfuse: compiles (or loads) its kernels here
            torch.cuda.synchronize()
            if iname == "attnfuse":
                row["attnfuse_first_call_s"] = time.time() - t0
            err = (o[0].float() - ref).abs().max().item()
        except Exception as e:
            row[iname + "_error"] = repr(e)[:200]
            continue
        ok = err <= 2 * base + 1e-3  # NaN fails too
        row[iname + "_err"], row[iname + "_ok"] = err, ok
        if ok:
            timed[iname] = fn
    errors = {}
    medians = in_turns(timed, ROUNDS, 0.6 / ROUNDS, errors)
    for iname, e in errors.items():
        row[iname + "_error"] = e
    for iname, ms in medians.items():
        row[iname + "_us"] = ms * 1e3
        row[iname] = nbytes / (ms * 1e-3) / 1e9
    return row


def cell(r, key):
    if key in r:
        return f"{r[key]:.0f}"
    if r.get(key + "_ok") is False:
        return "WRONG"
    if key + "_error" in r or "row_error" in r:
        return "error"
    return "–"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="B = 8 rows only")
    ap.add_argument("--only", metavar="SUBSTR",
                    help="rows whose name contains SUBSTR")
    ap.add_argument("--json", metavar="OUT", help="write all rows to OUT")
    ap.add_argument("--variant", action="append", default=[],
                    metavar="OPTS", help="an attnfuse column with these "
                    "pipeline options")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    fa4 = None
    try:
        from flash_attn.cute import flash_attn_func as fa4
    except Exception as e:  # not installed: the other peers only
        print(f"FA4 (flash_attn.cute) not importable: {e!r}"[:200],
              file=sys.stderr)
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}",
          flush=True)
    print(f"device-to-device copy of 1 GiB: {copy_bandwidth():.0f} GB/s "
          "(read + written; the ceiling)", flush=True)
    rows = []
    for b, nk, nq in ROWS:
        if args.quick and b != 8:
            continue
        if args.only and args.only not in f"b{b}_nk{nk}_nq{nq}":
            continue
        try:
            row = run_row(b, nk, nq, fa4, args.variant)
        except Exception as e:  # e.g. out of memory: the next row
            row = dict(name=f"b{b}_nk{nk}_nq{nq}", B=b, Nk=nk, Nq=nq,
                       row_error=repr(e)[:200])
        torch.cuda.empty_cache()  # the row's tensors are gone
        rows.append(row)
        print(json.dumps(row), flush=True)
    cols = [(key, title) for key, title in COLS
            if key != "fa4" or fa4 is not None]
    cols[1:1] = [("attnfuse " + o, o) for o in args.variant]
    peers = [key for key, _ in cols if not key.startswith("attnfuse")]
    print(f"\nGPU: {torch.cuda.get_device_name()}, torch {torch.__version__};"
          f" bf16 decode, GQA {HQ}/{HKV}, d = {D}; GB/s of K and V read "
          "once (median over batches of back-to-back calls)")
    print("| B | Nk | Nq | " + " | ".join(t for _, t in cols) +
          " | best peer | attnfuse / best |")
    print("|---|---|---|" + "---|" * (len(cols) + 2))
    for r in rows:
        cells = [cell(r, key) for key, _ in cols]
        best = max((p for p in peers if p in r), key=lambda p: r[p],
                   default=None)
        title = dict(COLS).get(best)
        best_cell = f"{r[best]:.0f} ({title})" if best else "–"
        ratio = (f"{r['attnfuse'] / r[best]:.2f}"
                 if best and "attnfuse" in r else "–")
        print(f"| {r['B']} | {r['Nk']} | {r['Nq']} | " + " | ".join(cells) +
              f" | {best_cell} | {ratio} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    with torch.no_grad():
        main()
