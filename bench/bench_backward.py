#!/usr/bin/env python3
"""The GPU backward of attn.attention_backward against PyTorch's SDPA
backward (cuDNN, FlashAttention-2), in one process, in turns.

  bench_backward.py compile OUT.pkl   (here: needs the attnfuse package with
                                       its C API library and ptxas)
  bench_backward.py run OUT.pkl       (on the GPU machine: torch and
                                       python-bindings/attnfuse/cuda_launch.py)

compile writes, per shape, the cubins and launch configurations of the
backward's kernels (backward_pre, backward, backward_convert: docs/GPU.md's
argument orders). run launches them on random bf16 inputs whose O and lse
come from an f32 forward, checks dQ, dK, dV against an f32 autograd
reference (max |error| printed), and prints milliseconds and TFLOP/s
(2.5 x the forward's 4 B H N^2 d) of attnfuse's backward and of SDPA's
backward alone (the forward recomputed outside the timed region).
"""
import os
import pickle
import sys

SHAPES = [(2, 8, 1024, 64), (4, 16, 4096, 128)]  # B, H, N, d; bf16, no mask


def compile_kernels(path):
    import attnfuse
    out = []
    for (B, H, N, D) in SHAPES:
        t = f"tensor<{B}x{H}x{N}x{D}xbf16>"
        lse = f"tensor<{B}x{H}x{N}xf32>"
        src = (f"func.func @b(%q: {t}, %k: {t}, %v: {t}, %o: {t}, %l: {lse},"
               f" %do: {t}) -> ({t}, {t}, {t}) {{\n"
               f"  %a, %b, %c = attn.attention_backward ins(%q, %k, %v : {t},"
               f" {t}, {t}) grad(%o, %l, %do : {t}, {lse}, {t}) -> {t}, {t},"
               f" {t}\n  return %a, %b, %c : {t}, {t}, {t}\n}}")
        kernels = attnfuse.compile(src, target="cuda").kernels
        out.append(((B, H, N, D), [vars(k) for k in kernels]))
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
        shapes = pickle.load(f)
    for (B, H, N, D), kernels in shapes:
        pre, bwd, conv = [K(k) for k in kernels]
        g = torch.Generator(device="cuda").manual_seed(0)
        q, k, v, do = (torch.randn(B, H, N, D, device="cuda", generator=g,
                                   dtype=torch.bfloat16) for _ in range(4))
        scale = D ** -0.5
        s = (q.float() @ k.float().transpose(-1, -2)) * scale
        lse = torch.logsumexp(s, -1).contiguous()
        o = (torch.softmax(s, -1) @ v.float()).to(torch.bfloat16).contiguous()
        del s
        di = torch.empty(B, H, N, device="cuda")
        acc = torch.empty(B, H, N, D, device="cuda")
        dq, dk, dv = (torch.empty_like(q) for _ in range(3))

        def ours():
            cuda_launch.launch(pre, do, o, di, acc)
            cuda_launch.launch(bwd, q, k, v, do, lse, di, acc, dk, dv)
            cuda_launch.launch(conv, acc, dq)

        ours()
        torch.cuda.synchronize()
        qf, kf, vf = (x.float().requires_grad_() for x in (q, k, v))
        F.scaled_dot_product_attention(qf, kf, vf).backward(do.float())
        err = [(x.float() - r.grad).abs().max().item()
               for x, r in ((dq, qf), (dk, kf), (dv, vf))]
        del qf, kf, vf
        flops = 2.5 * 4 * B * H * N * N * D
        iters = 3 if N >= 4096 else 10
        rows = [("attnfuse (simt backward)", timed(ours, iters))]
        for name, backend in (("cuDNN", SDPBackend.CUDNN_ATTENTION),
                              ("FA2 (SDPA flash)", SDPBackend.FLASH_ATTENTION)):
            qg, kg, vg = (x.detach().clone().requires_grad_()
                          for x in (q, k, v))
            with sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(qg, kg, vg)
                rows.append((name, timed(
                    lambda: torch.autograd.grad(out, (qg, kg, vg), do,
                                                retain_graph=True), iters)))
        print(f"B={B} H={H} N={N} d={D} bf16: max|err| vs f32 autograd "
              f"dq {err[0]:.1e} dk {err[1]:.1e} dv {err[2]:.1e}")
        for name, ms in rows:
            print(f"  {name:26s} {ms:9.3f} ms {flops / ms / 1e9:8.1f} TFLOP/s")


if __name__ == "__main__":
    {"compile": compile_kernels, "run": run}[sys.argv[1]](sys.argv[2])
