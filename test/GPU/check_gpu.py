#!/usr/bin/env python3
"""Checks attnfuse's CUDA attention kernels on a GPU (run on the GPU machine).

For every 'check' configuration of bench/gpu_configs.py, compiled beforehand by
scripts/build-gpu-artifacts.sh into ARTIFACTS (default .gpu-artifacts), draws
fresh random inputs, poisons the outputs with NaN, launches the kernel through
python-bindings/attnfuse/cuda_launch.py and compares with an fp64 evaluation of
attn.attention's definition (test/lib/reference.py's semantics) using
FlashAttention's rule: max|O - ref| <= 2 * max|O_naive - ref| + 1e-4, where
O_naive is the same definition evaluated in the input dtype by PyTorch; lse
within 1e-3 of the fp64 value (-inf exactly where every key is hidden); no
element left unwritten. Dropout also checks the kept fraction.

Also: the outputs lie inside NaN guard bands (--guard elements on each side,
default 4096) that must stay untouched (no stray write), and with --reruns R
the kernel runs R more times on the same inputs and must give bitwise the same
O and lse (forward determinism). Each configuration also launches once on a
Q that is 4 bytes into its buffer, which the launcher must refuse
(cuda_launch.ALIGNMENT) rather than fault on. Kernels that load by TMA take
tensor maps besides (args of kind "tensormap" in NAME.json), which the
launcher encodes from Q, K and V; the result's tensor_maps counts them.

--role ROLE checks the configurations of that role (default check; `sweep`:
FlashAttention's shape grid, bench/gpu_configs.py SWEEP), --family F only
those of one kernel family (gpu_configs.FAMILIES). A configuration whose
compile failed with a diagnostic (NAME.unsupported, role sweep) counts as
unsupported. Prints pass/fail/unsupported counts per family; exit status 1 on
any failure.

Dropout: the references keep (q, k) iff its 16 Philox bits (half k % 2 of
word (k / 8) % 4 of counter (4 (k / 32) + (k / 2) % 4, q, h, b)) >=
floor(p * 2^16) with p the op's f32 dropout_p, as the kernels do
(docs/Semantics.md); the
result also gives the seed and, where the mask of the double p differs
(double_p_flips), the kernel's error against the reference of that mask
(err_double_p) -- the rule this script had before. --only NAMES and
--dropout-seed S,S,... rerun chosen configurations with chosen seeds.

usage: check_gpu.py [ARTIFACTS] [--role ROLE] [--family F] [--guard N]
                    [--reruns R] [--json OUT] [--only NAMES]
                    [--dropout-seed SEEDS]
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python-bindings", "attnfuse"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "test", "lib"))
from cuda_launch import AttentionKernel, guard_intact  # noqa: E402
import gpu_configs  # noqa: E402
import reference as fp64_reference  # noqa: E402

DT = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
def dropout_masks(seed, p, shape):
    """attn.attention's dropout mask (Philox4x32-10, test/lib/reference.py:
    kept iff its 16 bits r >= floor(p * 2^16) with p the op's f32
    dropout_p), and the mask that the double p gives (kept iff r >=
    floor(double(p) * 2^16)), which this script used before: the two differ
    where r falls between the thresholds (1 of 2^16 values for p = 0.5569,
    none for most p), and there the kernel, which follows the op, would be
    measured against a reference that kept what it drops."""
    r = fp64_reference.dropout_bits(seed, shape)
    keep = r >= np.uint64(fp64_reference.dropout_threshold(p))
    double_p = r >= np.uint64(math.floor(p * 65536.0))
    return torch.from_numpy(keep), torch.from_numpy(double_p)


def structural_visible(c):
    Nq, Nk = c["Nq"], c["Nk"]
    off = Nk - Nq if c["align"] == "bottom_right" else 0
    if c["mask"] == "none":
        return None
    left, right = (math.inf, 0) if c["mask"] == "causal" else c["window"]
    d = (torch.arange(Nk)[None, :] - (torch.arange(Nq)[:, None] + off)).double()
    return (d >= -left) & (d <= right)


def reference(c, q, k, v, bias, keep, dkeep, dtype):
    """attn.attention's definition evaluated in `dtype` (f64 or the input
    dtype): returns (O, lse)."""
    G = c["Hq"] // c["Hkv"]
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    k = k.repeat_interleave(G, dim=1)
    v = v.repeat_interleave(G, dim=1)
    scale = 1.0 / math.sqrt(c["D"])
    s = (q @ k.transpose(-1, -2)) * scale
    if c["score_mod"] == "softcap":
        cap = c.get("softcap", gpu_configs.SOFTCAP)
        s = torch.tanh(s / cap) * cap
    if bias is not None:
        s = s + bias.to(dtype)
    vis = structural_visible(c)
    hide = torch.zeros(s.shape, dtype=torch.bool, device=s.device)
    if vis is not None:
        hide |= ~vis.to(s.device)
    if keep is not None:
        hide |= ~keep
    s = s.masked_fill(hide, -math.inf)
    m = s.amax(-1, keepdim=True)
    m = torch.where(m == -math.inf, torch.zeros_like(m), m)
    e = torch.exp(s - m)
    l = e.sum(-1, keepdim=True)
    p = torch.where(l > 0, e / l, torch.zeros_like(e))
    if dkeep is not None:
        # Z = f32(1 / (1 - p)) for p the f32 dropout_p (docs/Semantics.md).
        z = fp64_reference.dropout_scale(c["dropout"])
        p = torch.where(dkeep, p * z, torch.zeros_like(p))
    o = p @ v
    lse = (m + torch.log(l)).squeeze(-1)
    return o, lse


def bits(t):
    return t.view({2: torch.int16, 4: torch.int32}[t.element_size()])


def run_config(c, art, gen, guard=0, reruns=0, dropout_seed=None):
    dev = "cuda"
    dt = DT[c["dtype"]]
    kern = AttentionKernel(os.path.join(art, c["name"] + ".json"))
    B, Hq, Hkv, Nq, Nk, D, Dv = (c[x] for x in
                                 ("B", "Hq", "Hkv", "Nq", "Nk", "D", "Dv"))
    q = torch.randn(B, Hq, Nq, D, generator=gen, device=dev).to(dt)
    k = torch.randn(B, Hkv, Nk, D, generator=gen, device=dev).to(dt)
    v = torch.randn(B, Hkv, Nk, Dv, generator=gen, device=dev).to(dt)
    inputs = [q, k, v]
    bias = keep = dkeep = None
    if c["bias"]:
        bias = torch.randn(gpu_configs.side_shape(c, c["bias"][1]),
                           generator=gen, device=dev).to(DT[c["bias"][0]])
        inputs.append(bias)
    if c["keep"]:
        keep = torch.rand(gpu_configs.side_shape(c, c["keep"]),
                          generator=gen, device=dev) < 0.8
        inputs.append(keep.contiguous())
    seed = dkeep_double = None
    if c["dropout"]:
        seed = int(torch.randint(0, 2**62, (1,), generator=gen,
                                 device=dev).item())
        if dropout_seed is not None:
            seed = dropout_seed
        inputs.append(seed)
        dkeep, dkeep_double = dropout_masks(seed, c["dropout"], (B, Hq, Nq, Nk))
        dkeep, dkeep_double = dkeep.to(dev), dkeep_double.to(dev)
    out, lse = kern.output_buffers(fill=float("nan"), guard=guard)
    kern(*inputs, out=out, lse=lse)
    torch.cuda.synchronize()
    guards_ok = guard_intact(out, guard) and guard_intact(lse, guard)
    same = True
    for _ in range(reruns):
        out2, lse2 = kern.output_buffers(fill=float("nan"), guard=guard)
        kern(*inputs, out=out2, lse=lse2)
        torch.cuda.synchronize()
        same &= bool(torch.equal(bits(out), bits(out2)) and
                     torch.equal(bits(lse), bits(lse2)))
        guards_ok &= guard_intact(out2, guard) and guard_intact(lse2, guard)
    # An input 4 bytes into its buffer (misaligned for the 16-byte copies,
    # the paired bias loads and a tensor map's global address) is refused
    # before any launch and before any tensor map is encoded from it.
    shifted = torch.zeros(q.numel() + 8, dtype=dt,
                          device=dev)[2:2 + q.numel()].view(q.shape)
    try:
        kern(shifted, *inputs[1:], out=out, lse=lse)
        refuses_misaligned = False
    except ValueError:
        refuses_misaligned = True
    ref_o, ref_lse = reference(c, q, k, v, bias, keep, dkeep, torch.float64)
    naive_o, _ = reference(c, q, k, v, bias, keep, dkeep, dt)
    diff = (out.double() - ref_o).abs()
    err = diff.max().item()
    # Where: [b, h, q, e] of the largest error (one row or everywhere).
    err_at = [int(i) for i in np.unravel_index(int(diff.argmax().item()),
                                               tuple(diff.shape))]
    err_naive = (naive_o.double() - ref_o).abs().max().item()
    tol = 2 * err_naive + 1e-4
    unwritten = int(torch.isnan(out).sum().item() + torch.isnan(lse).sum().item())
    empty = ref_lse == -math.inf
    lse_ok = bool(torch.equal(lse.double()[empty], ref_lse[empty]))
    finite = ~empty
    lse_err = ((lse.double()[finite] - ref_lse[finite]).abs().max().item()
               if finite.any() else 0.0)
    ok = (err <= tol and unwritten == 0 and lse_ok and lse_err <= 1e-3
          and guards_ok and same and refuses_misaligned)
    res = dict(name=c["name"], err=err, err_at=err_at, err_naive=err_naive,
               tol=tol,
               lse_err=lse_err, empty_rows=int(empty.sum().item()),
               unwritten=unwritten, regs=kern.num_regs,
               tensor_maps=sum(a.get("kind") == "tensormap"
                               for a in kern.kernel["args"]),
               guards_ok=guards_ok,
               deterministic=same, refuses_misaligned=refuses_misaligned,
               ok=ok)
    if dkeep is not None:
        res["seed"] = seed
        res["kept_fraction"] = dkeep.double().mean().item()
        # Where the double-p mask differs (see dropout_masks): the error the
        # kernel had against the reference of the double p, and where.
        flips = (dkeep != dkeep_double).nonzero().tolist()
        res["double_p_flips"] = flips[:8]
        if flips:
            old_o, _ = reference(c, q, k, v, bias, keep, dkeep_double,
                                 torch.float64)
            diff = (out.double() - old_o).abs()
            res["err_double_p"] = diff.max().item()
            res["err_double_p_at"] = [int(i) for i in np.unravel_index(
                int(diff.argmax().item()), tuple(diff.shape))]
        res["ok"] = ok and abs(res["kept_fraction"] - (1 - c["dropout"])) < 0.01
    return res


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("artifacts", nargs="?",
                    default=os.path.join(ROOT, ".gpu-artifacts"))
    ap.add_argument("--role", default="check")
    ap.add_argument("--family", choices=sorted(gpu_configs.FAMILIES))
    ap.add_argument("--guard", type=int, default=4096)
    ap.add_argument("--reruns", type=int, default=0)
    ap.add_argument("--json")
    ap.add_argument("--only", help="comma-separated configuration names")
    ap.add_argument("--dropout-seed",
                    help="comma-separated dropout seeds: each dropout "
                         "configuration runs once per seed (default: one "
                         "random seed)")
    a = ap.parse_args()
    art = a.artifacts
    manifest = json.load(open(os.path.join(art, "manifest.json")))
    gen = torch.Generator(device="cuda")
    gen.manual_seed(int.from_bytes(os.urandom(4), "little"))
    only = set(a.only.split(",")) if a.only else None
    seeds = ([int(x) for x in a.dropout_seed.split(",")]
             if a.dropout_seed else [None])
    results = []
    for c in manifest:
        fam = gpu_configs.family(c)
        if c["role"] != a.role or (a.family and fam != a.family):
            continue
        if only and c["name"] not in only:
            continue
        for seed in seeds if c["dropout"] else [None]:
            if os.path.exists(os.path.join(art, c["name"] + ".unsupported")):
                r = dict(name=c["name"], unsupported=True, ok=True)
            else:
                try:
                    r = run_config(c, art, gen, a.guard, a.reruns, seed)
                except Exception as e:  # report and go on
                    r = dict(name=c["name"], ok=False, error=repr(e))
            r["family"] = fam
            results.append(r)
            print(json.dumps(r), flush=True)
    print(f"\n{'config':34} {'max|O-ref|':>11} {'2x naive+1e-4':>13} "
          f"{'lse err':>9} {'regs':>4}  result")
    for r in results:
        if "error" in r:
            print(f"{r['name']:34} ERROR {r['error']}")
            continue
        if r.get("unsupported"):
            print(f"{r['name']:34} unsupported")
            continue
        why = "" if r["ok"] else "".join(
            [" (guard band written)"] * (not r["guards_ok"]) +
            [" (reruns differ)"] * (not r["deterministic"]) +
            [" (misaligned input launched)"] * (not r["refuses_misaligned"]))
        print(f"{r['name']:34} {r['err']:11.2e} {r['tol']:13.2e} "
              f"{r['lse_err']:9.1e} {r['regs']:4}  "
              f"{'PASS' if r['ok'] else 'FAIL'}{why}")
    for fam in gpu_configs.FAMILIES:
        rs = [r for r in results if r["family"] == fam]
        unsup = sum(bool(r.get("unsupported")) for r in rs)
        passed = sum(r["ok"] for r in rs) - unsup
        print(f"family {fam}: {passed} pass, {len(rs) - passed - unsup} fail, "
              f"{unsup} unsupported")
    n_ok = sum(r["ok"] for r in results)
    print(f"{n_ok}/{len(results)} configurations pass")
    if a.json:
        json.dump(results, open(a.json, "w"), indent=1)
    return 0 if results and n_ok == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
