#!/usr/bin/env python3
"""ONNX -> IREE's ONNX importer and input pipeline -> linalg (issue 26).

A second ONNX path, through another compiler: torch models exported with
`torch.onnx.export` (opset 18), imported by `iree-import-onnx`, lowered by
`iree-compile --compile-to=input` (IREE's torch-onnx input conversion to
linalg on tensors). IREE wraps the function in its ABI (`hal.buffer_view`
arguments, `hal.tensor.import` / `hal.tensor.barrier` / `hal.tensor.export`,
an async `util.func` and a synchronous stub): `iree_abi_unwrap` below keeps
the async function with tensor arguments and results in their place
(mechanical; nothing else changes; the file is rejected if another IREE
dialect op remains).

Models: SDPA modules (MHA, causal, GQA through repeat_interleave, cross,
f32 and f16, tiny and realistic sizes) and the tiny transformers models of
generate.py (GPT-2, BERT, ViT, LLaMA GQA; eager and SDPA, batch 1).

Runs in the torch venv (setup-venv.sh) with IREE's tools from the JAX venv:
  .venv-corpus/bin/python scripts/corpus/generate_iree_onnx.py [--iree-bin .venv-corpus-jax/bin]
"""
import argparse
import contextlib
import io
import os
import re
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate  # noqa: E402
from corpusio import iree_compile_to_input, load_manifest, save_manifest, write_generated  # noqa: E402
from mlirtext import i1_hex_to_literal  # noqa: E402

REPO = generate.REPO


class Sdpa(torch.nn.Module):
    def __init__(self, causal=False, groups=1):
        super().__init__()
        self.causal, self.groups = causal, groups

    def forward(self, q, k, v):
        if self.groups > 1:
            k = k.repeat_interleave(self.groups, dim=1)
            v = v.repeat_interleave(self.groups, dim=1)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=self.causal)


def qkv(b, h, hkv, nq, nk, d, dtype=torch.float32):
    return (torch.randn(b, h, nq, d, dtype=dtype), torch.randn(b, hkv, nk, d, dtype=dtype),
            torch.randn(b, hkv, nk, d, dtype=dtype))


SDPA = {
    "sdpa_f32_b1_h2_n16_d16": (lambda: Sdpa(), lambda: qkv(1, 2, 2, 16, 16, 16), "SDPA, f32, B=1 H=2 N=16 D=16"),
    "sdpa_causal_f32_b2_h2_n16_d16": (lambda: Sdpa(True), lambda: qkv(2, 2, 2, 16, 16, 16),
                                      "SDPA is_causal, f32, B=2 H=2 N=16 D=16"),
    "sdpa_gqa_f32_b1_h4_kv2_n16_d16": (lambda: Sdpa(groups=2), lambda: qkv(1, 4, 2, 16, 16, 16),
                                       "SDPA, GQA 4/2 by repeat_interleave, f32, B=1 N=16 D=16"),
    "sdpa_cross_f32_b2_h2_q8_k24_d32": (lambda: Sdpa(), lambda: qkv(2, 2, 2, 8, 24, 32),
                                        "SDPA cross-attention Nq=8 Nk=24, f32, B=2 D=32"),
    "sdpa_f16_b1_h4_n256_d64": (lambda: Sdpa(), lambda: qkv(1, 4, 4, 256, 256, 64, torch.float16),
                                "SDPA, f16, B=1 H=4 N=256 D=64"),
    "sdpa_causal_f16_b1_h2_n512_d128": (lambda: Sdpa(True), lambda: qkv(1, 2, 2, 512, 512, 128, torch.float16),
                                        "SDPA is_causal, f16, B=1 H=2 N=512 D=128"),
    "sdpa_gqa_f32_b2_h8_kv2_n128_d64": (lambda: Sdpa(groups=4), lambda: qkv(2, 8, 2, 128, 128, 64),
                                        "SDPA, GQA 8/2 by repeat_interleave, f32, B=2 N=128 D=64"),
}
HF = ["gpt2", "bert", "vit", "llama_gqa"]


def iree_abi_unwrap(text):
    """The async function of IREE's ABI with tensor arguments and results."""
    lines = text.split("\n")
    start = next(i for i, l in enumerate(lines) if re.match(r"\s*util\.func public @\S+\$async\(", l))
    end = next(i for i in range(start + 1, len(lines)) if re.match(r"^  }\s*$", lines[i]))
    body = lines[start + 1:end]
    name = re.search(r"@(\S+)\$async", lines[start]).group(1)
    args, alias, results, kept = {}, {}, [], []
    for l in body:
        m = re.match(r"\s*(%[\w.]+) = hal\.tensor\.import wait\(%\w+\) => (%arg\d+) : !hal\.buffer_view -> (.*)$", l)
        if m:
            args[int(m.group(2)[4:])] = m.group(3)
            alias[m.group(1)] = m.group(2)
            continue
        m = re.match(r"\s*(%[\w.]+)(?::\d+)? = hal\.tensor\.barrier join\((.*) : (.*)\) => %\w+ : !hal\.fence$", l)
        if m:
            vals = [v.strip() for v in m.group(2).split(",")]
            if len(vals) == 1:
                alias[m.group(1)] = vals[0]
            else:
                for i, v in enumerate(vals):
                    alias[f"{m.group(1)}#{i}"] = v
            continue
        m = re.match(r"\s*(%[\w.#]+) = hal\.tensor\.export (%[\w.#]+) : (\S+) -> !hal\.buffer_view$", l)
        if m:
            alias[m.group(1)] = (m.group(2), m.group(3))
            continue
        m = re.match(r"(\s*)util\.return (.*) : (.*)$", l)
        if m:
            outs = [alias[v.strip()] for v in m.group(2).split(",")]
            results = [(alias.get(v, v), t) for v, t in outs]
            kept.append(f"{m.group(1)}return {', '.join(v for v, _ in results)} : "
                        f"{', '.join(t for _, t in results)}")
            continue
        kept.append(l)
    out = "\n".join(kept)
    for k in sorted((k for k, v in alias.items() if isinstance(v, str)), key=len, reverse=True):
        out = re.sub(re.escape(k) + r"(?![\w.#])", alias[k], out)
    sig = ", ".join(f"%arg{i}: {args[i]}" for i in sorted(args))
    res = ", ".join(t for _, t in results)
    head = "\n".join(l for l in lines[:start] if not l.strip().startswith("util.func"))
    text = (f"{head}\n  func.func @{name}({sig}) -> ({res}) {{\n{out}\n  }}\n}}\n")
    foreign = sorted(set(re.findall(r"\b(util|flow|hal|iree_\w+|torch)\.[a-z_]+", text)))
    if foreign:
        raise RuntimeError(f"IREE dialect ops left: {foreign}")
    return text


def to_linalg(model, inputs, iree_bin, tmp):
    onnx_path = os.path.join(tmp, "m.onnx")
    with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        torch.onnx.export(model, inputs, onnx_path, opset_version=18, dynamo=False)
    imported = os.path.join(tmp, "m.mlir")
    lowered = os.path.join(tmp, "m_in.mlir")
    subprocess.run([os.path.join(iree_bin, "iree-import-onnx"), onnx_path, "-o", imported],
                   check=True, capture_output=True, text=True)
    lowered_text = iree_compile_to_input(os.path.join(iree_bin, "iree-compile"), imported, lowered)
    return iree_abi_unwrap(lowered_text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iree-bin", default=os.path.join(REPO, ".venv-corpus-jax", "bin"))
    args = ap.parse_args()
    out = os.path.join(REPO, "test", "Corpus")
    manifest_path, manifest = load_manifest(out)
    files = manifest["files"]
    ver = subprocess.run([os.path.join(args.iree_bin, "iree-compile"), "--version"],
                         capture_output=True, text=True).stdout.split("\n")[0]
    jobs = []
    for name, (build, inputs, kind) in SDPA.items():
        jobs.append((name, build, inputs, kind, 1))
    for key in HF:
        spec = generate.MODELS[key]
        for impl in ("eager", "sdpa"):
            jobs.append((f"{key}_{impl}_b1",
                         lambda spec=spec, impl=impl: (generate.seed(0), spec["build"](impl).eval())[1],
                         lambda spec=spec: (generate.seed(1), spec["inputs"](1))[1],
                         f"transformers {spec['config']}, {impl}: {spec['kind']}", spec["chains"]))
    os.makedirs(os.path.join(out, "onnx-iree"), exist_ok=True)
    for name, build, inputs, kind, chains in jobs:
        rel = f"onnx-iree/{name}.mlir"
        try:
            torch.manual_seed(0)
            with tempfile.TemporaryDirectory() as tmp:
                text = i1_hex_to_literal(to_linalg(build(), inputs(), args.iree_bin, tmp))
        except Exception as e:
            msg = getattr(e, "stderr", "") or str(e)
            print("FAIL", rel, type(e).__name__, str(msg).strip().splitlines()[:2])
            continue
        header = (f"// Generated by scripts/corpus/generate_iree_onnx.py: {name}.\n// {kind}.\n"
                  f"// torch.onnx.export (opset 18) -> iree-import-onnx -> iree-compile --compile-to=input "
                  f"({ver.strip()}) -> IREE's ABI wrapper removed.\n// Test input, not a lit test.\n")
        write_generated(out, files, rel, header, text, {
            "model": name, "config": kind, "attn_implementation": "onnx-iree",
            "batch": int(re.search(r"_b(\d+)", name).group(1)), "source": "onnx-iree",
            "export": "torch.onnx.export + iree-import-onnx + iree-compile --compile-to=input",
            "chains": chains, "kind": kind})
    save_manifest(manifest_path, manifest, files)
    return 0


if __name__ == "__main__":
    sys.exit(main())
