#!/usr/bin/env python3
"""Sweep of the tiled attention lowering against fp64, forward and backward.

Generates one function per configuration (attn.attention, then
attn.attention_backward on a random dO), runs it with
`attnfuse-run --check=fa` (FlashAttention's rule: the error of the tiled
pipeline against an fp64 evaluation is at most twice the error of the
reference lowering in the same dtype, plus a small floor), and prints one
line per configuration. Exit status 0 iff every configuration passes.

The configurations cover each value of every swept dimension at least once:
Nq, Nk in {1, 17, 64, 113, 256, 1000}; D in {16, 64, 96, 128, 256}; Dqk != Dv;
GQA 4:1 and MQA; causal (both alignments), sliding window, bias, keep mask,
softcap and dropout; f32, f16 and bf16.
"""
import argparse
import subprocess
import sys
import tempfile
import os

# (dtype, B, Hq, Hkv, Nq, Nk, Dqk, Dv, features)
CONFIGS = [
    ("f32", 1, 2, 2, 1, 1, 16, 16, ""),
    ("f32", 1, 2, 2, 17, 113, 16, 64, "causal"),
    ("bf16", 1, 4, 1, 64, 17, 64, 64, "causal_br"),
    ("f16", 2, 4, 1, 113, 256, 96, 64, "window"),
    ("bf16", 1, 4, 4, 256, 64, 128, 128, "bias"),
    ("f16", 1, 8, 2, 17, 1000, 64, 96, "keep"),
    ("f32", 1, 4, 1, 113, 17, 256, 16, "softcap"),
    ("bf16", 1, 2, 1, 64, 113, 64, 64, "dropout"),
    ("f16", 1, 1, 1, 1000, 1, 16, 16, "causal_br"),
    ("bf16", 1, 4, 1, 1000, 1000, 64, 64, "causal"),
    ("f32", 1, 2, 1, 256, 256, 128, 96, "causal,bias,softcap,dropout"),
    ("bf16", 1, 2, 2, 113, 113, 256, 256, "window,keep"),
    ("f16", 1, 2, 2, 113, 203, 40, 40, "causal_br,softcap"),
    ("bf16", 1, 2, 1, 1023, 1024, 128, 128, "causal_br"),
    ("f16", 1, 4, 2, 1024, 1023, 59, 59, "window,dropout"),
]


def mlir_type(shape, dtype):
    return "tensor<" + "x".join(str(s) for s in shape) + "x" + dtype + ">"


def make_function(dtype, B, Hq, Hkv, Nq, Nk, D, Dv, features):
    feats = set(f for f in features.split(",") if f)
    q, k = mlir_type([B, Hq, Nq, D], dtype), mlir_type([B, Hkv, Nk, D], dtype)
    v, o = mlir_type([B, Hkv, Nk, Dv], dtype), mlir_type([B, Hq, Nq, Dv], dtype)
    lse = mlir_type([B, Hq, Nq], "f32")
    args = [f"%q: {q}", f"%k: {k}", f"%v: {v}", f"%do: {o}"]
    operands, attrs = "", []
    if "bias" in feats:
        bt = mlir_type([Hq, Nq, Nk], "f32")
        args.append(f"%bias: {bt}")
        operands += f" bias(%bias : {bt})"
    if "keep" in feats:
        kt = mlir_type([B, 1, 1, Nk], "i1")
        args.append(f"%keep: {kt}")
        operands += f" keep(%keep : {kt})"
    if "dropout" in feats:
        args.append("%seed: i64")
        operands += " seed(%seed)"
        attrs.append("dropout_p = 0.15 : f32")
    if "causal" in feats:
        attrs.append("mask = #attn.mask<causal>")
    if "causal_br" in feats:
        attrs += ["mask = #attn.mask<causal>",
                  "alignment = #attn.alignment<bottom_right>"]
    if "window" in feats:
        attrs += ["mask = #attn.mask<sliding_window>", "window_left = 40",
                  "window_right = 7"]
    attr_dict = (" {" + ", ".join(attrs) + "}") if attrs else ""
    region = ""
    if "softcap" in feats:
        region = """ score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 4.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      }"""
    return f"""func.func @f({", ".join(args)}) -> ({o}, {q}, {k}, {v}) {{
  %o, %lse = attn.attention ins(%q, %k, %v : {q}, {k}, {v}){operands}{attr_dict}{region}
      -> {o}, {lse}
  %dq, %dk, %dv = attn.attention_backward ins(%q, %k, %v : {q}, {k}, {v})
      grad(%o, %lse, %do : {o}, {lse}, {o}){operands}{attr_dict}{region}
      -> {q}, {k}, {v}
  return %o, %dq, %dk, %dv : {o}, {q}, {k}, {v}
}}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--attnfuse-run", required=True)
    ap.add_argument("--shard", default="0/1", help="I/N: run every Nth config")
    ap.add_argument("--pipeline-options", default="block-q=64 block-k=64")
    a = ap.parse_args()
    index, count = (int(x) for x in a.shard.split("/"))
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for n, config in enumerate(CONFIGS):
            if n % count != index:
                continue
            path = os.path.join(tmp, f"case{n}.mlir")
            with open(path, "w") as f:
                f.write(make_function(*config))
            cmd = [a.attnfuse_run, path, "--check=fa", f"--seed={n}",
                   f"--pipeline-options={a.pipeline_options}"]
            run = subprocess.run(cmd, capture_output=True, text=True)
            ok = run.returncode == 0
            failures += not ok
            summary = (run.stdout.strip() or run.stderr.strip()).splitlines()
            print(f"{'PASS' if ok else 'FAIL'} {config}: "
                  f"{summary[-1] if summary else ''}", flush=True)
    print(f"sweep: {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
