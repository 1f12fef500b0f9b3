#!/usr/bin/env python3
"""Forward attention throughput on one GPU: attnfuse against PyTorch's peers.

A script, not a test. For each 'bench' configuration of bench/gpu_configs.py
(bf16, d in {64, 128, 256}, N in {1k, 4k, 16k}, B*N = 16k
tokens, H = 2048/d, causal in {0, 1}; d in {72, 80, 96} at 4k; f16
d = 40, B = 2, H = 8 at 4k, Stable Diffusion's; GQA prefill; bias,
softcap, dropout and a sliding window against the peers that have them;
'variant' configurations: attnfuse alone, the mma_sync family and other
kernel configurations), compiled beforehand by scripts/build-gpu-artifacts.sh,
times in one process: attnfuse's kernel (launched through
python-bindings/attnfuse/cuda_launch.py), torch SDPA with the flash (FA2),
cudnn and efficient backends, FlashAttention-4 (flash_attn.cute, where
importable: ../shared/tools/README.md), FlexAttention under torch.compile, and naive
eager PyTorch (matmul, fp32 softmax, matmul; N <= 4096 only: at 16k the
score matrix takes 17-34 GB). TFLOP/s = 4*B*H*N^2*d (x0.5 causal) / the
median time per call of batches of back-to-back calls after warm-up (see
bench(): the GPU's time, not the host's cost of a launch, which the JSON
rows give apart for attnfuse and cuDNN as *_one_call_ms), on fresh random
inputs; the implementations of a row are timed in turns (BENCH_ROUNDS
rounds, default 3, the median of each). Every
output is checked against an fp32 reference on the first (b, h) slice with
FlashAttention's rule (err <= 2 * err of naive eager, or of SDPA-flash
where naive is not run, + 1e-3) before timing; with dropout the peers'
own random masks differ from attnfuse's, so they are timed unchecked.
TFLOP/s of a sliding window count its visible pairs. The last column is
attnfuse's time over the roofline time of its cost report (report-cost,
NAME.cost: 1.0 is the bound). The tensor maps of a
kernel that loads by TMA are encoded and copied to the device on its first
launch on a configuration's tensors (cuda_launch caches them by address):
the timed launches do neither.

usage: bench_attention.py [ARTIFACTS] [--json OUT] [--no-flex]
                          [--attnfuse-only] [--no-variants] [--only SUBSTR]
       bench_attention.py [ARTIFACTS] --ab SUFFIX
(--only: the configurations whose name contains SUBSTR, e.g. _lazy;
--attnfuse-only: no peers, for comparing attnfuse's own variants; --ab:
each bench configuration's kernel against its variant NAME+SUFFIX, timed
alternately on the same inputs, speed ratio B/A as time A / time B)
"""
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python-bindings", "attnfuse"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "test", "GPU"))
from cuda_launch import AttentionKernel  # noqa: E402

FLEX_BUDGET_S = float(os.environ.get("FLEX_BUDGET_S", "300"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))


def bench(fn, min_reps=5, max_reps=50, target_s=0.6, one_call=False):
    """Median milliseconds per fn() call on the GPU: batches of about 2 ms of
    calls between one pair of CUDA events, with one call queued before the
    first event, so that the GPU runs the batch back to back and the host's
    cost of a launch (Python, the framework's dispatch, the driver) stays
    out of the number as long as it is shorter than the kernel. one_call:
    one call between the events, the GPU idle until its launch arrives (the
    host's cost included)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()

    def per_call(n):
        if not one_call:
            fn()
        s, e = torch.cuda.Event(True), torch.cuda.Event(True)
        s.record()
        for _ in range(n):
            fn()
        e.record()
        torch.cuda.synchronize()
        return s.elapsed_time(e) / n

    est = per_call(1)
    n = 1 if one_call else max(1, round(2.0 / max(est, 1e-3)))
    reps = int(min(max_reps, max(min_reps, target_s * 1e3 / (est * n))))
    return statistics.median(per_call(n) for _ in range(reps))


def in_turns(fns, rounds, target_s, errors=None):
    """Median milliseconds per call of each of `fns` (name: fn), timed in
    turns (`rounds` rounds of bench(fn, target_s=target_s) each): the GPU's
    clocks drift within a long run, so that one timing of each, seconds or
    minutes apart, would favour whichever ran first. With `errors`, a
    function that raises is dropped and its error recorded there."""
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name in list(times):
            try:
                times[name].append(bench(fns[name], target_s=target_s))
            except Exception as e:
                if errors is None:
                    raise
                errors[name] = repr(e)[:200]
                del times[name]
    return {name: statistics.median(ts) for name, ts in times.items()}


def ref_slice(q, k, v, causal):
    """fp32 reference of (b, h) = (0, 0)."""
    qs, ks, vs = (x[0, 0].float() for x in (q, k, v))
    s = (qs @ ks.T) / math.sqrt(q.shape[-1])
    if causal:
        n = s.shape[0]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool,
                                     device=s.device).triu(1), -math.inf)
    return torch.softmax(s, -1) @ vs


def feature_inputs(c, q, k, v):
    """The side inputs of a configuration with bias/dropout/score_mod, and
    the fp32 reference of its (b, h) = (0, 0) slice (test/GPU/check_gpu.py's
    evaluation of attn.attention's definition)."""
    import check_gpu
    import gpu_configs
    extra, bias, dkeep = [], None, None
    if c["bias"]:
        bias = torch.randn(gpu_configs.side_shape(c, c["bias"][1]),
                           device="cuda").to(check_gpu.DT[c["bias"][0]])
        extra.append(bias)
    if c["dropout"]:
        seed = int(torch.randint(0, 2**62, (1,)).item())
        extra.append(seed)
        dkeep = check_gpu.dropout_masks(seed, c["dropout"],
                                        (1, 1, c["Nq"], c["Nk"]))[0].cuda()
    one = dict(c, B=1, Hq=1, Hkv=1)
    ref, _ = check_gpu.reference(
        one, q[:1, :1], k[:1, :1], v[:1, :1],
        None if bias is None else bias[:1, :1], None, dkeep, torch.float32)
    return extra, ref[0, 0]


def roofline_ms(art, name):
    """The roofline time of configuration `name` from its cost report
    (NAME.cost, scripts/build-gpu-artifacts.sh), in ms; None without one."""
    import re
    try:
        text = open(os.path.join(art, name + ".cost")).read()
    except OSError:
        return None
    m = re.search(r"roofline ([0-9.eE+-]+) us", text)
    return float(m.group(1)) * 1e-3 if m else None


def ab(art, suffix, rounds=5):
    """attnfuse's default kernel of each bench configuration (A) against its
    variant NAME+suffix (B) on the same inputs, timed alternately (in_turns,
    `rounds` each; identical kernels timed minutes apart differed by 10%).
    Prints the medians and B/A."""
    manifest = json.load(open(os.path.join(art, "manifest.json")))
    print(f"| config | A (default) | B ({suffix}) | B/A |")
    print("|---|---|---|---|")
    for c in manifest:
        pa = os.path.join(art, c["name"] + ".json")
        pb = os.path.join(art, c["name"] + suffix + ".json")
        if c["role"] != "bench" or not (os.path.exists(pa) and
                                        os.path.exists(pb)):
            continue
        B, H, Hkv, N, d = c["B"], c["Hq"], c["Hkv"], c["Nq"], c["D"]
        dtype = {"f16": torch.float16}.get(c["dtype"], torch.bfloat16)
        q = torch.randn(B, H, N, d, device="cuda", dtype=dtype)
        k, v = (torch.randn(B, Hkv, N, d, device="cuda", dtype=dtype)
                for _ in range(2))
        extra = feature_inputs(c, q, k, v)[0] if (
            c["bias"] or c["dropout"]) else []
        fns = {}
        for name, path in (("A", pa), ("B", pb)):
            kern = AttentionKernel(path)
            out, lse = kern.output_buffers()
            fns[name] = (lambda kern=kern, out=out, lse=lse:
                         kern(q, k, v, *extra, out=out, lse=lse))
        medians = in_turns(fns, rounds, target_s=0.2)
        ta, tb = medians["A"], medians["B"]
        print(f"| {c['name']} | {ta:.4f} ms | {tb:.4f} ms | {ta / tb:.3f} |",
              flush=True)


def main():
    if "--ab" in sys.argv:
        suffix = sys.argv[sys.argv.index("--ab") + 1]
        rest = [a for a in sys.argv[1:] if not a.startswith("--")
                and a != suffix]
        ab(rest[0] if rest else os.path.join(ROOT, ".gpu-artifacts"), suffix)
        return
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    out_json = None
    if "--json" in sys.argv:
        out_json = sys.argv[sys.argv.index("--json") + 1]
        args = [a for a in args if a != out_json]
    art = args[0] if args else os.path.join(ROOT, ".gpu-artifacts")
    use_flex = "--no-flex" not in sys.argv
    peers = "--attnfuse-only" not in sys.argv
    only = None
    if "--only" in sys.argv:
        only = sys.argv[sys.argv.index("--only") + 1]
        args = [a for a in args if a != only]
        art = args[0] if args else os.path.join(ROOT, ".gpu-artifacts")
    manifest = json.load(open(os.path.join(art, "manifest.json")))
    torch.backends.cuda.matmul.allow_tf32 = False
    flex = create_block_mask = None
    if use_flex:
        from torch.nn.attention.flex_attention import (create_block_mask,
                                                       flex_attention)
        from torch import _dynamo
        _dynamo.config.cache_size_limit = 64
        flex = torch.compile(flex_attention, dynamic=False)
    fa4 = None
    if peers:
        try:
            from flash_attn.cute import flash_attn_func as fa4
        except Exception as e:  # not installed: the other peers only
            print(f"FA4 (flash_attn.cute) not importable: {e!r}"[:200],
                  file=sys.stderr)
    t_start = time.time()
    rows = []
    for c in manifest:
        if c["role"] not in ("bench", "variant"):
            continue
        if c["role"] == "variant" and "--no-variants" in sys.argv:
            continue
        if only is not None and only not in c["name"]:
            continue
        if not os.path.exists(os.path.join(art, c["name"] + ".json")):
            print(f"{c['name']}: not built (ONLY= in build-gpu-artifacts.sh?)",
                  file=sys.stderr)
            continue
        B, H, Hkv, N, d = c["B"], c["Hq"], c["Hkv"], c["Nq"], c["D"]
        causal = c["mask"] == "causal"
        window = c["window"] if c["mask"] == "sliding_window" else None
        # Visible (query, key) pairs: all, the lower triangle, or the
        # band k - q in [-left, right] (Nq = Nk).
        pairs = N * N * (0.5 if causal else 1.0)
        if window:
            left, right = window
            pairs = sum(min(N - 1, qi + right) - max(0, qi - left) + 1
                        for qi in range(N))
        flops = 4 * B * H * pairs * d
        dtype = {"f16": torch.float16}.get(c["dtype"], torch.bfloat16)
        q = torch.randn(B, H, N, d, device="cuda", dtype=dtype)
        k, v = (torch.randn(B, Hkv, N, d, device="cuda", dtype=dtype)
                for _ in range(2))
        kern = AttentionKernel(os.path.join(art, c["name"] + ".json"))
        out, lse = kern.output_buffers()
        featured = bool(c["bias"] or c["dropout"] or c["score_mod"] or
                        window or Hkv != H)
        extra, ref = (feature_inputs(c, q, k, v) if featured else
                      ([], ref_slice(q, k, v, causal)))
        bias = extra[0] if c["bias"] else None
        # The peers that compute the same function: SDPA's backends take
        # GQA, an additive bias (not FA2) and dropout (with their own
        # random masks: timed, not checked); FlexAttention takes GQA, the
        # bias and the softcap as score_mod and the masks as block masks.
        sdpa_ok = not (window or c["score_mod"])
        flex_ok = not c["dropout"]

        def sdpa(backend):
            kw = dict(is_causal=causal, enable_gqa=Hkv != H,
                      dropout_p=c["dropout"] or 0.0)
            if bias is not None:
                kw["attn_mask"] = bias

            def f():
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, **kw)
            return f

        def naive():
            s = (q @ k.transpose(-1, -2)).float() / math.sqrt(d)
            if causal:
                s = s.masked_fill(torch.ones(N, N, dtype=torch.bool,
                                             device="cuda").triu(1), -math.inf)
            return torch.softmax(s, -1).to(q.dtype) @ v

        impls = {"attnfuse": lambda: kern(q, k, v, *extra, out=out,
                                          lse=lse)[0]}
        if sdpa_ok:
            impls.update(flash=sdpa(SDPBackend.FLASH_ATTENTION),
                         cudnn=sdpa(SDPBackend.CUDNN_ATTENTION),
                         efficient=sdpa(SDPBackend.EFFICIENT_ATTENTION))
        if c["role"] == "bench" and peers:
            # FlashAttention-4 (flash_attn.cute, where importable): causal,
            # window, softcap and GQA, no bias or dropout; [B, N, H, D]
            # copies made before timing.
            if fa4 is not None and not (bias is not None or c["dropout"]):
                tq, tk, tv = (t.transpose(1, 2).contiguous()
                              for t in (q, k, v))
                fa4_kw = dict(causal=causal)
                if window:
                    fa4_kw["window_size"] = tuple(window)
                if c["score_mod"] == "softcap":
                    fa4_kw["softcap"] = c["softcap"]

                def fa4_call(tq=tq, tk=tk, tv=tv, kw=fa4_kw):
                    o = fa4(tq, tk, tv, **kw)
                    return (o[0] if isinstance(o, tuple) else o)
                impls["fa4"] = lambda: fa4_call().transpose(1, 2)
            if (use_flex and flex_ok and
                    time.time() - t_start < FLEX_BUDGET_S):
                mask_mod = None
                if causal:
                    def mask_mod(b, h, qi, ki):
                        return qi >= ki
                elif window:
                    def mask_mod(b, h, qi, ki):
                        return ((ki - qi >= -window[0]) &
                                (ki - qi <= window[1]))
                bm = (create_block_mask(mask_mod, None, None, N, N,
                                        device="cuda")
                      if mask_mod else None)
                score_mod = None
                if c["score_mod"] == "softcap":
                    cap = c["softcap"]

                    def score_mod(sc, b, h, qi, ki):
                        return torch.tanh(sc / cap) * cap
                elif bias is not None:
                    def score_mod(sc, b, h, qi, ki):
                        return sc + bias[0, h, qi, ki]
                impls["flex"] = lambda: flex(q, k, v, score_mod=score_mod,
                                             block_mask=bm,
                                             enable_gqa=Hkv != H)
            if N <= 4096 and not featured:
                impls["naive"] = naive
        else:
            impls = {"attnfuse": impls["attnfuse"]}
        out.fill_(float("nan"))
        row = dict(name=c["name"], d=d, N=N, B=B, H=H, causal=int(causal))
        errs = {}
        for name, fn in impls.items():
            try:
                o = fn()
                torch.cuda.synchronize()
                errs[name] = (o[0, 0].float() - ref).abs().max().item()
                if name == "attnfuse":
                    row["attnfuse_nan"] = int(torch.isnan(o).sum().item())
                if name == "attnfuse" and not featured:
                    row["attnfuse_vs_flash"] = (
                        o.float() - sdpa(SDPBackend.FLASH_ATTENTION)().float()
                    ).abs().max().item()
            except Exception as e:
                row[name + "_error"] = repr(e)[:200]
        # FlashAttention's rule: the error of the same-dtype naive
        # computation (SDPA-flash's where naive is not run) sets the bar.
        base = errs.get("naive", 1e-2 if c["dropout"] else
                        errs.get("flash", 1e-2))
        timed = {}
        for name in impls:
            if name not in errs:
                continue
            ok = errs[name] <= 2 * base + 1e-3 and not (
                name == "attnfuse" and row["attnfuse_nan"])
            if c["dropout"] and name != "attnfuse":
                ok = True  # another dropout mask: timed, not checked
            row[name + "_err"] = errs[name]
            row[name + "_ok"] = ok
            if ok:
                timed[name] = impls[name]
        errors = {}
        medians = in_turns(timed, ROUNDS, 0.6 / ROUNDS, errors)
        for name, e in errors.items():
            row[name + "_error"] = e
        for name, ms in medians.items():
            row[name + "_ms"] = ms
            row[name] = flops / (ms * 1e-3) / 1e12
        # Measured / the compiler's roofline time (report-cost: the larger
        # of the FLOPs at the peak rate and each operand read once at the
        # peak bandwidth; 1.0 is the bound).
        roofline = roofline_ms(art, c["name"])
        if roofline and "attnfuse_ms" in row:
            row["roofline_ms"] = roofline
            row["attnfuse_vs_roofline"] = row["attnfuse_ms"] / roofline
            # What one call takes with the host's launch cost in it.
            if name in ("attnfuse", "cudnn"):
                row[name + "_one_call_ms"] = bench(impls[name], target_s=0.1,
                                                   one_call=True)
        del q, k, v, out, lse
        torch.cuda.empty_cache()
        rows.append(row)
        print(json.dumps(row), flush=True)
    cols = ["attnfuse", "fa4", "naive", "flash", "cudnn", "efficient",
            "flex"]
    print(f"\nGPU: {torch.cuda.get_device_name()}, torch {torch.__version__}; "
          "bf16 forward TFLOP/s (median over batches of back-to-back calls)")
    print("| d | N | B | H | causal | " + " | ".join(cols) +
          " | attnfuse / roofline |")
    print("|---|---|---|---|---|" + "---|" * (len(cols) + 1))
    for r in rows:
        cells = []
        for cname in cols:
            if cname in r:
                cells.append(f"{r[cname]:.1f}")
            elif r.get(cname + "_ok") is False:
                cells.append("WRONG")
            elif cname + "_error" in r:
                cells.append("error")
            else:
                cells.append("–")
        variant = r["name"].split(f"_c{r['causal']}", 1)[1].lstrip("_")
        extra = f" ({variant})" if variant else ""
        vs = r.get("attnfuse_vs_roofline")
        cells.append(f"{vs:.2f}" if vs else "–")
        print(f"| {r['d']} | {r['N']} | {r['B']} | {r['H']} | {r['causal']}"
              f"{extra} | " + " | ".join(cells) + " |")
    if out_json:
        json.dump(rows, open(out_json, "w"), indent=1)


if __name__ == "__main__":
    main()
