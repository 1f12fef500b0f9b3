#!/usr/bin/env python3
"""The GPU backward of attn.attention_backward against PyTorch's SDPA
backward (cuDNN, FlashAttention-2), in one process, in turns.

  bench_backward.py compile OUT.pkl [VARIANT...]
                              (here: needs the attnfuse package with its C
                               API library and ptxas)
  bench_backward.py run OUT.pkl
                              (on the GPU machine: torch and
                               python-bindings/attnfuse/cuda_launch.py)

A VARIANT is a family with options, `mma_sync`, `simt`, or
`mma_sync:warps=8,block-q=64` (the pipeline options of
attn-lower-to-nvvm-pipeline, commas for spaces); the default is mma_sync
(the family mma=auto picks for the backward on sm_90a) and simt (at the
smallest shape only: it runs at ~6 TFLOP/s). compile writes, per shape and
variant, the cubins and launch configurations of the backward's kernels
(backward_pre, backward, backward_convert: docs/GPU.md's argument orders).
run launches them on random bf16 inputs whose O and lse come from an f32
forward, checks dQ, dK, dV against an f32 autograd reference (max |error|
printed, next to SDPA's own bf16 backward's), and prints milliseconds and
TFLOP/s (2.5 x the forward's 4 B H N^2 d, halved for causal) of each
variant's backward and of SDPA's backward alone (the forward recomputed
outside the timed region), and each of attnfuse's kernels' time over its
roofline (convert-attn-to-gpu's report-cost numbers at the device's
peaks: PEAKS).
"""
import os
import pickle
import re
import sys

# B, H, N, d, causal; bf16.
SHAPES = [(2, 8, 1024, 64, False), (4, 16, 4096, 64, False),
          (4, 16, 4096, 128, False), (4, 16, 4096, 128, True),
          (1, 16, 16384, 128, True)]


def costs(diagnostics):
    """Per kernel name, (tiled GFLOP, MB read once) from convert-attn-to-gpu's
    report-cost remarks (docs/GPU.md, "The cost report")."""
    found = {}
    for d in diagnostics:
        m = re.search(r"cost of (\S+) \(\w+\): ([0-9.e+-]+) GFLOP"
                      r"(?: \(the visible pairs; ([0-9.e+-]+) in the tiles\))?"
                      r".*, ([0-9.e+-]+) MB reading each operand once",
                      d.message)
        if m:
            found[m.group(1)] = (float(m.group(3) or m.group(2)),
                                 float(m.group(4)))
    return found


# Dense bf16 tensor-core TFLOP/s (f32 FMAs for element-wise kernels are not
# the bound there) and HBM GB/s by device name: the roofline of a kernel is
# max(tiled FLOPs / peak, bytes read once / bandwidth).
PEAKS = {"H200": (989.4, 4800.0), "H100": (989.4, 3350.0)}


def roofline_ms(cost, device_name):
    tflops, gbps = next((p for n, p in PEAKS.items() if n in device_name),
                        (0.0, 0.0))
    if not cost or not gbps:
        return 0.0
    gflop, mb = cost
    return max(gflop / tflops, mb / gbps)  # GFLOP / TFLOP/s = ms


def compile_kernels(path, variants):
    import attnfuse
    variants = variants or ["mma_sync", "simt"]
    out = []
    for si, (B, H, N, D, causal) in enumerate(SHAPES):
        t = f"tensor<{B}x{H}x{N}x{D}xbf16>"
        lse = f"tensor<{B}x{H}x{N}xf32>"
        attrs = " {mask = #attn.mask<causal>}" if causal else ""
        src = (f"func.func @b(%q: {t}, %k: {t}, %v: {t}, %o: {t}, %l: {lse},"
               f" %do: {t}) -> ({t}, {t}, {t}) {{\n"
               f"  %a, %b, %c = attn.attention_backward ins(%q, %k, %v : {t},"
               f" {t}, {t}) grad(%o, %l, %do : {t}, {lse}, {t}){attrs} -> "
               f"{t}, {t}, {t}\n  return %a, %b, %c : {t}, {t}, {t}\n}}")
        for variant in variants:
            family, _, opts = variant.partition(":")
            if family == "simt" and si > 0 and variant == "simt" and \
                    not os.environ.get("BENCH_SIMT_ALL"):
                continue
            options = " ".join([f"mma={family}", "format=bin",
                                "report-cost=true"] +
                               [o for o in opts.split(",") if o])
            try:
                result = attnfuse.compile(
                    src, target="cuda",
                    pipeline=f"attn-lower-to-nvvm-pipeline{{{options}}}")
            except attnfuse.CompileError as e:
                # A variant that does not fit a shape (shared memory, ...).
                print(f"skipped {variant} at B={B} H={H} N={N} d={D}: "
                      f"{str(e).splitlines()[-1]}")
                continue
            out.append(((B, H, N, D, causal), variant,
                        [vars(k) for k in result.kernels],
                        costs(result.diagnostics)))
    with open(path, "wb") as f:
        pickle.dump(out, f)


def run(path):
    import torch
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..",
                                    "python-bindings", "attnfuse"))
    import cuda_launch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F

    class K:
        def __init__(self, d):
            self.__dict__.update(d)

    def timed(fn, iters):
        fn()
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record()
        for _ in range(iters):
            fn()
        b.record()
        torch.cuda.synchronize()
        return a.elapsed_time(b) / iters

    with open(path, "rb") as f:
        entries = pickle.load(f)
    shapes = []
    for shape, variant, kernels, *cost in entries:
        if not shapes or shapes[-1][0] != shape:
            shapes.append((shape, []))
        shapes[-1][1].append((variant, kernels, cost[0] if cost else {}))
    device = torch.cuda.get_device_name()
    for (B, H, N, D, causal), variants in shapes:
        g = torch.Generator(device="cuda").manual_seed(0)
        q, k, v, do = (torch.randn(B, H, N, D, device="cuda", generator=g,
                                   dtype=torch.bfloat16) for _ in range(4))
        scale = D ** -0.5
        # O and lse from an f32 forward, by query chunks (no B H N^2 f32).
        o = torch.empty_like(q)
        lse = torch.empty(B, H, N, device="cuda")
        for c0 in range(0, N, 1024):
            s = (q[:, :, c0:c0 + 1024].float() @
                 k.float().transpose(-1, -2)) * scale
            if causal:
                rows = torch.arange(c0, min(N, c0 + 1024), device="cuda")
                s.masked_fill_(torch.arange(N, device="cuda")[None, :] >
                               rows[:, None], float("-inf"))
            lse[:, :, c0:c0 + 1024] = torch.logsumexp(s, -1)
            o[:, :, c0:c0 + 1024] = (torch.softmax(s, -1) @ v.float()).to(
                torch.bfloat16)
            del s
        di = torch.empty(B, H, N, device="cuda")
        acc = torch.empty(B, H, N, D, device="cuda")
        # The f32 autograd reference (where it fits: N <= 4k).
        ref = None
        if N <= 4096:
            qf, kf, vf = (x.float().requires_grad_() for x in (q, k, v))
            F.scaled_dot_product_attention(
                qf, kf, vf, is_causal=causal).backward(do.float())
            ref = (qf.grad, kf.grad, vf.grad)
            del qf, kf, vf
        flops = 2.5 * 4 * B * H * N * N * D * (0.5 if causal else 1.0)
        iters = 20 if N >= 4096 else 50
        print(f"B={B} H={H} N={N} d={D} bf16 causal={causal}:")
        rows = []
        for variant, kernels, cost in variants:
            pre, bwd, conv = [K(x) for x in kernels]
            dq, dk, dv = (torch.full_like(q, float("nan")) for _ in range(3))

            def ours():
                cuda_launch.launch(pre, do, o, di, acc)
                cuda_launch.launch(bwd, q, k, v, do, lse, di, acc, dk, dv)
                cuda_launch.launch(conv, acc, dq)

            ours()
            torch.cuda.synchronize()
            err = ""
            if ref is not None:
                e = [(x.float() - r).abs().max().item()
                     for x, r in zip((dq, dk, dv), ref)]
                err = f"max|err| dq {e[0]:.1e} dk {e[1]:.1e} dv {e[2]:.1e}"
            it = 1 if variant.startswith("simt") and N >= 4096 else iters
            # The three kernels alone (the pre-pass, the backward, the dQ
            # conversion), in ms.
            parts = [timed(lambda: cuda_launch.launch(pre, do, o, di, acc),
                           it),
                     timed(lambda: cuda_launch.launch(bwd, q, k, v, do, lse,
                                                      di, acc, dk, dv), it),
                     timed(lambda: cuda_launch.launch(conv, acc, dq), it)]
            err += " (pre %.3f, bwd %.3f, dq %.3f ms)" % tuple(parts)
            # Measured / roofline (each kernel's report-cost numbers at the
            # device's peaks), per kernel.
            roof = [roofline_ms(cost.get(kern.name), device)
                    for kern in (pre, bwd, conv)]
            if all(roof):
                err += " measured/roofline %.2f, %.2f, %.2f" % tuple(
                    m / r for m, r in zip(parts, roof))
            rows.append((f"attnfuse {variant} ({bwd.grid[0]}x{bwd.grid[1]}"
                         f" CTAs, {bwd.block[0]} thr)", timed(ours, it), err))
        for name, backend in (("cuDNN", SDPBackend.CUDNN_ATTENTION),
                              ("FA2 (SDPA flash)", SDPBackend.FLASH_ATTENTION)):
            qg, kg, vg = (x.detach().clone().requires_grad_()
                          for x in (q, k, v))
            with sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(qg, kg, vg,
                                                     is_causal=causal)
                grads = torch.autograd.grad(out, (qg, kg, vg), do,
                                            retain_graph=True)
                err = ""
                if ref is not None:
                    e = [(x.float() - r).abs().max().item()
                         for x, r in zip(grads, ref)]
                    err = (f"max|err| dq {e[0]:.1e} dk {e[1]:.1e} "
                           f"dv {e[2]:.1e}")
                rows.append((name, timed(
                    lambda: torch.autograd.grad(out, (qg, kg, vg), do,
                                                retain_graph=True), iters),
                    err))
            del out, grads, qg, kg, vg
        for name, ms, err in rows:
            print(f"  {name:44s} {ms:9.3f} ms {flops / ms / 1e9:8.1f} "
                  f"TFLOP/s  {err}")
        del q, k, v, do, o, lse, di, acc, ref
        torch.cuda.empty_cache()


if __name__ == "__main__":
    if sys.argv[1] == "compile":
        compile_kernels(sys.argv[2], sys.argv[3:])
    else:
        run(sys.argv[2])
