#!/usr/bin/env python3
"""Write test/Corpus/README.md from test/Corpus/manifest.json (standard library only).

Usage: python3 scripts/corpus/write_readme.py [--corpus test/Corpus] [--baseline FILE]
  --baseline: a text file with `measure.py` output to include as the baseline table.
"""

import argparse
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

INTRO = """# Attention corpus: real frontend exports (issue 10)

Inputs for the raising (`attn-raise-attention`), **not lit tests** (`lit.local.cfg`
discovers nothing here). Every file is committed so that CI needs none of the Python
packages; `manifest.json` gives, per file, the TRUE number of attention chains
(`chains`: layers x attention modules per layer, from the model config), the model and
config, the attention implementation, the export path and the attention kinds.
Negative files (`"negative": true`, `chains` 0) contain nothing that may be fused.

| folder | how it was made |
|---|---|
| `torch-linalg/` | `transformers` model built in code (tiny config, random weights, seed 0) -> `torch.export` -> `torch_mlir.fx.export_and_import(output_type="linalg-on-tensors")` |
| `torch-tosa/` | the same with `output_type="tosa"` |
| `onnx/` | `torch.onnx.export(dynamo=True, opset 18)` -> torch-mlir's ONNX importer (`torch_mlir.extras.onnx_importer`) -> `convert-torch-onnx-to-torch`, `torch-lower-to-backend-contract`, `torch-backend-to-linalg-on-tensors-backend-pipeline` |
| `tflite/` | Keras model -> `tf.lite.TFLiteConverter` -> `tf.mlir.experimental.tflite_to_tosa_bytecode` (TensorFlow 2.18.1) -> `iree-opt` 3.1.0 prints it -> `scripts/corpus/tosa_upgrade.py` rewrites the pre-1.0 TOSA syntax to TOSA 1.0 (mechanical: explicit zero points, shift operand, `tosa.const_shape`, perms attribute) |
| `dynamic/` | runtime sequence length: `torch.export(dynamic_shapes=Dim)` -> torch-mlir linalg-on-tensors (its TOSA backend fails on these graphs), and `torch.onnx.export(dynamic_axes)` -> torch-mlir's ONNX importer (`scripts/corpus/generate_dynamic.py`); chains fuse into `attn.attention` with runtime sizes, and `attnfuse-run --check=fa` runs each file at lengths 1, 5 and 16 (`--dynamic-sizes`) |
| `jax-iree/` | JAX / Flax attention helpers (`jax.nn.dot_product_attention`, `flax.linen.dot_product_attention`, `flax.linen.MultiHeadDotProductAttention`, an einsum softmax) -> `jax.jit(f).lower()` (StableHLO) -> `iree-compile --compile-to=input` (IREE's input pipeline to linalg) -> `util.func`/`util.return` renamed (`scripts/corpus/generate_jax.py`) |
| `onnx-iree/` | `torch.onnx.export(opset 18)` -> `iree-import-onnx` -> `iree-compile --compile-to=input` -> IREE's ABI wrapper removed (`scripts/corpus/generate_iree_onnx.py`) |
| `migraphx/` | **written by us** from MIGraphX / rocMLIR's documented TOSA attention idioms (`scripts/corpus/generate_migraphx.py`); not MIGraphX output. Each file's header says so. |

Regenerate (from the repository root):

```
scripts/corpus/setup-venv.sh                  # torch venv at .venv-corpus (git-ignored), ~5 GB
.venv-corpus/bin/python scripts/corpus/generate.py          # torch-linalg, torch-tosa, onnx
scripts/corpus/setup-venv.sh --tflite         # TensorFlow venv at .venv-corpus-tf, ~1.7 GB
.venv-corpus-tf/bin/python scripts/corpus/generate_tflite.py
python3 scripts/corpus/generate_migraphx.py
.venv-corpus/bin/python scripts/corpus/generate_dynamic.py   # dynamic
scripts/corpus/setup-venv.sh --jax            # JAX/Flax + IREE venv at .venv-corpus-jax
.venv-corpus-jax/bin/python scripts/corpus/generate_jax.py  # jax-iree
.venv-corpus/bin/python scripts/corpus/generate_iree_onnx.py  # onnx-iree (IREE from .venv-corpus-jax)
python3 scripts/corpus/write_readme.py
```

Measure (any Python 3, no packages): `scripts/corpus/measure.py --opt build/bin/attnfuse-opt [--files] [--json]`.

## Export details that matter

* SDPA models are exported under `torch.nn.attention.sdpa_kernel(SDPBackend.MATH)`: with the
  default backend choice (flash attention for CPU) torch's decomposition yields an output with
  strides that a later `view` rejects at batch 2. At batch 1 both give identical IR. The math
  decomposition is the one with `_safe_softmax` and `sqrt(scale)` applied to Q and K.
* Non-persistent buffers (BERT's `position_ids`, RoPE's `inv_freq`) are made persistent before
  export: torch-mlir's `import_frozen_program` only finds buffers in the state dict ("Could not
  find state mapping for buffer").
* Models take `(input_ids, attention_mask)`; without an attention mask, `transformers` looks for
  packed sequences with a `cumsum`, which torch-mlir lowers to `tm_tensor.scan` (not linalg,
  attnfuse-opt cannot parse it). Whisper takes a `decoder_attention_mask` for the same reason.
  BLOOM's ALiBi itself uses `attention_mask.cumsum`, so BLOOM has no `torch-linalg` file.
* BLOOM and Gemma2 have no SDPA form in `transformers` (Gemma2: softcapping), so eager only.
* i1 constants: torch-mlir's MLIR (newer than LLVM 22) prints hex i1 data one byte per
  element, which LLVM 22 rejects ("elements hex data size is invalid"); TF 2.18's MLIR packs
  bits. Both are rewritten as `true`/`false` literals (`scripts/corpus/mlirtext.py`).
* Weights are `dense_resource` blobs at the end of the torch-mlir files (real numbers).
* `jax.nn.dot_product_attention` in f16/bf16 does not lower on the CPU (f16: "precision
  F16_F16_F32 is not supported by dot_general") or through IREE (bf16: its `dot_general`
  carries a `dot_algorithm` IREE does not legalize), so its files are f32; f16/bf16 come from
  Flax and the einsum form. Flax's MultiHeadDotProductAttention weights are inline constants.
* IREE's ONNX import rejects the GPT-2 export ("failed to legalize unresolved target
  materialization ... tensor<1x?x32xf32>"), so `onnx-iree/` has no GPT-2.
* torch-mlir's TOSA backend fails on the `Dim` exports, so `dynamic/` is linalg and ONNX only.
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=os.path.join(REPO, "test", "Corpus"))
    ap.add_argument("--baseline", default=None)
    args = ap.parse_args()
    m = json.load(open(os.path.join(args.corpus, "manifest.json")))
    files = m["files"]
    out = [INTRO]
    out.append("## Package versions\n")
    for key, title in (("generator_versions", "torch / ONNX generator"),
                       ("tflite_generator_versions", "TFLite generator"),
                       ("generator_versions_jax", "JAX / IREE generators")):
        if key in m:
            out.append(f"* {title}: " + ", ".join(f"{k} {v}" for k, v in m[key].items()))
    out.append("* full pins: `scripts/corpus/requirements*.txt`\n")
    if args.baseline:
        out.append("## Baseline measurement\n")
        out.append("```\n" + open(args.baseline).read().rstrip() + "\n```\n")
    by_source = {}
    for rel, e in files.items():
        by_source.setdefault(rel.split("/")[0], []).append((rel, e))
    total = sum(e["chains"] for e in files.values())
    out.append(f"## Files ({len(files)} files, {total} attention chains)\n")
    for src in sorted(by_source):
        rows = by_source[src]
        out.append(f"### {src} ({len(rows)} files, {sum(e['chains'] for _, e in rows)} chains)\n")
        models = {}
        for rel, e in rows:
            models.setdefault(e["model"], []).append((rel, e))
        out.append("| model | config | attention kinds | files (impl, batch) | chains per file |")
        out.append("|---|---|---|---|---|")
        for model, mrows in models.items():
            e0 = mrows[0][1]
            names = ", ".join(f"`{os.path.basename(r)}`" for r, _ in mrows)
            chains = e0["chains"] if len({e['chains'] for _, e in mrows}) == 1 else "varies"
            neg = " (NEGATIVE)" if e0.get("negative") else ""
            out.append(f"| {model}{neg} | {e0['config']} | {e0['kind']} | {names} | {chains} |")
        out.append("")
        out.append(f"Export path: {rows[0][1]['export']}.\n")
    with open(os.path.join(args.corpus, "README.md"), "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    main()
