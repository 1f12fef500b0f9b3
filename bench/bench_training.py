#!/usr/bin/env python3
"""Forward + backward through attnfuse.torch against SDPA's (cuDNN, FA2)
and, where it is importable, FlashAttention-4 (flash_attn.cute), in one
process, in turns.

    PYTHONPATH=bundle/python python3 bench/bench_training.py [--quick | --grid]
        [--softcap CAP] [--max-head-dim D] [--no-deterministic]

Per shape (the training issue's rows: bf16, [B, H, N, D]): the time of one
forward and backward (autograd.grad of O against a fixed dO, the forward
inside the timed region), as TFLOP/s = 3.5 x the forward's 4 B H N^2 d
(halved for causal) / time; batches of back-to-back calls, the
implementations in turns (round-robin, best of the rounds). attnfuse runs
in its default (atomics) and deterministic backward. Kernels are compiled
and warmed up before timing. A first line per shape checks that attnfuse's
dQ agrees with cuDNN's. With --softcap CAP (Gemma-2's scores, CAP *
tanh(s / CAP)) the peers are those that compute it: FlashAttention-4 and
FlexAttention (a score_mod under torch.compile); attnfuse's
deterministic backward is its simt kinds there (the tensor-core backward
sums dQ by atomics), and dQ is checked against Flex's.
"""
import argparse
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import attnfuse.torch as aft

SHAPES = [  # B, Hq, Hkv, N, d, causal
    (8, 32, 32, 4096, 64, False),
    (4, 16, 16, 4096, 128, False),
    (4, 16, 16, 4096, 128, True),
    (1, 16, 16, 16384, 128, True),
    (2, 8, 8, 4096, 256, False),
    (1, 32, 8, 8192, 128, True),  # GQA 32/8
]
QUICK = [(2, 8, 8, 1024, 64, False), (2, 8, 8, 1024, 128, True)]
# The training issue's grid (--grid): d in {64, 128, 256}, N in {1k, 4k,
# 16k}, causal and not, 16k tokens of hidden size 2048 (B = 16k / N,
# H = 2048 / d), and the GQA row.
GRID = [(16384 // n, 2048 // d, 2048 // d, n, d, causal)
        for d in (64, 128, 256) for n in (1024, 4096, 16384)
        for causal in (False, True)] + [(1, 32, 8, 8192, 128, True)]


def peers(softcap):
    impls = {}
    if softcap:
        from torch.nn.attention.flex_attention import flex_attention
        flex = torch.compile(flex_attention, dynamic=False)

        def capped(sc, b, h, qi, ki):
            return torch.tanh(sc / softcap) * softcap

        def flex_run(q, k, v, causal):
            mask = None
            if causal:
                from torch.nn.attention.flex_attention import \
                    create_block_mask
                mask = create_block_mask(
                    lambda b, h, qi, ki: qi >= ki, None, None, q.shape[2],
                    k.shape[2], device="cuda")
            return flex(q, k, v, score_mod=capped, block_mask=mask,
                        enable_gqa=q.shape[1] != k.shape[1])
        impls["attnfuse"] = lambda q, k, v, c: aft.attention(
            q, k, v, causal=c, softcap=softcap)
        impls["attnfuse (deterministic)"] = lambda q, k, v, c: \
            aft.attention(q, k, v, causal=c, softcap=softcap,
                          deterministic=True)
        impls["Flex (compiled)"] = flex_run
        impls["_ref"] = "Flex (compiled)"
        _add_fa4(impls)
        return impls

    def sdpa(backend):
        def run(q, k, v, causal):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(
                    q, k, v, is_causal=causal,
                    enable_gqa=q.shape[1] != k.shape[1])
        return run
    impls["attnfuse"] = lambda q, k, v, c: aft.attention(q, k, v, causal=c)
    impls["attnfuse (deterministic)"] = lambda q, k, v, c: aft.attention(
        q, k, v, causal=c, deterministic=True)
    impls["cuDNN (SDPA)"] = sdpa(SDPBackend.CUDNN_ATTENTION)
    impls["FA2 (SDPA flash)"] = sdpa(SDPBackend.FLASH_ATTENTION)
    impls["_ref"] = "cuDNN (SDPA)"
    _add_fa4(impls)
    return impls


def _add_fa4(impls):
    try:
        from flash_attn.cute import flash_attn_func as fa4
        impls["FA4 (flash_attn.cute)"] = "fa4"
        impls["_fa4"] = fa4
    except ImportError:
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--grid", action="store_true",
                    help="the training issue's grid of shapes (GRID)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--softcap", type=float, default=0.0)
    ap.add_argument("--max-head-dim", type=int, default=256,
                    help="only the shapes with d up to this")
    ap.add_argument("--no-deterministic", action="store_true",
                    help="leave attnfuse's deterministic backward out (its "
                    "simt kernels take seconds a call at 16k keys)")
    args = ap.parse_args()
    impls = peers(args.softcap)
    if args.no_deterministic:
        impls.pop("attnfuse (deterministic)")
    fa4 = impls.pop("_fa4", None)
    ref_name = impls.pop("_ref")
    fa4_kw = {"softcap": args.softcap} if args.softcap else {}
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}; "
          f"FA4 {'present' if fa4 else 'not importable here'}")
    for (b, hq, hkv, n, d, causal) in (QUICK if args.quick else
                                       GRID if args.grid else SHAPES):
        if d > args.max_head_dim:
            continue
        g = torch.Generator(device="cuda").manual_seed(0)
        mk = lambda h: torch.randn(b, h, n, d, device="cuda",
                                   dtype=torch.bfloat16, generator=g)
        q, k, v, do = mk(hq), mk(hkv), mk(hkv), mk(hq)
        inputs = [x.requires_grad_() for x in (q, k, v)]
        # FA4 takes [B, N, H, D]: transposed copies, made before timing.
        t_inputs = [x.detach().transpose(1, 2).contiguous().requires_grad_()
                    for x in (q, k, v)]
        t_do = do.transpose(1, 2).contiguous()
        flops = 3.5 * 4 * b * hq * n * n * d * (0.5 if causal else 1.0)
        iters = max(1, min(20, int(2e13 / flops)))

        def step(name):
            if name.startswith("FA4"):
                o = fa4(*t_inputs, causal=causal, **fa4_kw)
                o = o[0] if isinstance(o, tuple) else o
                return torch.autograd.grad(o, t_inputs, t_do)
            o = impls[name](*inputs, causal)
            return torch.autograd.grad(o, inputs, do)

        names = list(impls)
        ref = step(ref_name)
        mine = step("attnfuse")
        err = max((a.float() - r.float()).abs().max().item()
                  for a, r in zip(mine, ref))
        for name in names:  # compile and warm up
            step(name)
        torch.cuda.synchronize()
        best = {name: float("inf") for name in names}
        for _ in range(args.rounds):
            for name in names:
                start, end = torch.cuda.Event(True), torch.cuda.Event(True)
                start.record()
                for _ in range(iters):
                    step(name)
                end.record()
                torch.cuda.synchronize()
                best[name] = min(best[name], start.elapsed_time(end) / iters)
        print(f"B={b} H={hq}/{hkv} N={n} d={d} {'causal' if causal else ''}"
              f"{' softcap ' + str(args.softcap) if args.softcap else ''}"
              f" bf16 fwd+bwd (max |dq,dk,dv - {ref_name}'s| {err:.1e})")
        for name in names:
            ms = best[name]
            print(f"  {name:26s} {ms:9.3f} ms {flops / ms / 1e9:8.1f} "
                  f"TFLOP/s")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
