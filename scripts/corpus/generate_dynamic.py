#!/usr/bin/env python3
"""Attention graphs with a runtime sequence length (issues 25 and 26).

`torch.export` with a `Dim` for the sequence length, through torch-mlir
(linalg-on-tensors; its TOSA backend fails on them), and `torch.onnx.export` with a dynamic axis
through torch-mlir's ONNX importer. The graphs have `?` dimensions; the
raising fuses them into attn.attention with runtime sizes, and the corpus
test runs each at several lengths.

Models: a plain SDPA module (torch.nn.functional.scaled_dot_product_attention,
math backend, optionally causal), an explicit softmax(QK^T * s) V module, and
tiny transformers models of scripts/corpus/generate.py (GPT-2, LLaMA with
GQA, BERT; eager and SDPA).

Writes test/Corpus/dynamic/<source>_<name>.mlir and their manifest entries.
Usage (after scripts/corpus/setup-venv.sh):
  .venv-corpus/bin/python scripts/corpus/generate_dynamic.py [--only NAME,...]
"""
import os
import sys
import tempfile
import traceback

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
from torch.export import Dim  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate  # noqa: E402  (model builders, export helpers, versions)
from corpusio import load_manifest, save_manifest, write_generated  # noqa: E402
from mlirtext import i1_hex_to_literal  # noqa: E402

REPO = generate.REPO


class Sdpa(torch.nn.Module):
    def __init__(self, causal):
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=self.causal)


class Explicit(torch.nn.Module):
    def forward(self, q, k, v):
        s = torch.matmul(q, k.transpose(-1, -2)) * (q.shape[-1] ** -0.5)
        return torch.matmul(torch.softmax(s, dim=-1), v)


def qkv(batch, heads, seq, dim, dtype=torch.float32):
    return tuple(torch.randn(batch, heads, seq, dim, dtype=dtype) for _ in range(3))


SEQ = Dim("seq", min=2, max=4096)
QKV_DYN = ({2: SEQ}, {2: SEQ}, {2: SEQ})

# name -> (model builder, inputs, dynamic_shapes, chains, kind)
MODELS = {
    "sdpa_b1_h4_d64": (lambda: Sdpa(False), lambda: qkv(1, 4, 128, 64), QKV_DYN, 1,
                       "SDPA, runtime sequence length (Dim), head dim 64"),
    "sdpa_causal_b2_h2_d16": (lambda: Sdpa(True), lambda: qkv(2, 2, 16, 16), QKV_DYN, 1,
                              "SDPA is_causal, runtime sequence length (Dim)"),
    "explicit_b1_h2_d32": (lambda: Explicit(), lambda: qkv(1, 2, 32, 32), QKV_DYN, 1,
                           "softmax(Q K^T / sqrt(d)) V written out, runtime sequence length"),
}


def hf_model(model, impl):
    generate.seed(0)
    return generate.MODELS[model]["build"](impl).eval()


def hf_inputs(model):
    generate.seed(1)
    return generate.MODELS[model]["inputs"](1)


def hf_dyn(max_len):
    """input_ids and attention_mask, both [1, seq]."""
    seq = Dim("seq", min=2, max=max_len)
    return ({1: seq}, {1: seq})


# transformers models exported with a runtime length: name in the file ->
# (generate.MODELS key, a name for the family, the longest length the tiny
# config's position table takes; torch.export refuses a wider Dim).
HF_MODELS = {"gpt2": ("gpt2", "GPT-2", 1024), "llama_gqa": ("llama_gqa", "LLaMA (GQA)", 1024),
             "bert": ("bert", "BERT", 16)}


def export_torch(model, inputs, dyn, output_type):
    from torch_mlir import fx

    generate.persist_buffers(model)
    with torch.no_grad(), sdpa_kernel([SDPBackend.MATH]):
        ep = torch.export.export(model, inputs, dynamic_shapes=dyn)
        mod = fx.export_and_import(ep, output_type=output_type, func_name="forward")
    return generate.module_text(mod)


def export_onnx(model, inputs, names, axes, tmp):
    import onnx
    from torch_mlir.extras import onnx_importer
    from torch_mlir.dialects import torch as torch_d
    from torch_mlir.ir import Context
    from torch_mlir.compiler_utils import run_pipeline_with_repro_report

    path = os.path.join(tmp, "m.onnx")
    with torch.no_grad():
        torch.onnx.export(model, inputs, path, opset_version=18, dynamo=False,
                          input_names=names, dynamic_axes=axes)
    proto = onnx.shape_inference.infer_shapes(onnx.load(path), data_prop=True)
    ctx = Context()
    torch_d.register_dialect(ctx)
    info = onnx_importer.ModelInfo(proto)
    m = info.create_module(context=ctx).operation
    onnx_importer.NodeImporter.define_function(info.main_graph, m).import_all()
    run_pipeline_with_repro_report(
        m,
        "builtin.module(func.func(convert-torch-onnx-to-torch), torch-lower-to-backend-contract,"
        " func.func(cse, canonicalize), torch-backend-to-linalg-on-tensors-backend-pipeline)",
        "ONNX -> torch -> linalg-on-tensors")
    return m.get_asm(enable_debug_info=False)


def write_failing_onnx():
    """test/Pipelines/Inputs/bert_onnx_dynamic_axis.mlir: BERT's TorchScript
    ONNX export with a dynamic sequence axis, whose imported graph fails its
    own broadcast check at every length (a pipeline test: it must stop at
    that check, not run past it)."""
    model = hf_model("bert", "eager")
    text = export_onnx(model, hf_inputs("bert"), ["input_ids", "attention_mask"],
                       {"input_ids": {1: "seq"}, "attention_mask": {1: "seq"}},
                       tempfile.mkdtemp())
    path = os.path.join(REPO, "test", "Pipelines", "Inputs", "bert_onnx_dynamic_axis.mlir")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("// Generated by scripts/corpus/generate_dynamic.py --failing-onnx: transformers\n"
                f"// BERT ({generate.MODELS['bert']['config']}), eager, torch.onnx.export(opset 18,\n"
                "// dynamo=False, dynamic_axes seq) + torch_mlir onnx_importer +\n"
                "// torch-backend-to-linalg-on-tensors. Test input, not a lit test.\n")
        f.write(text)
    print("wrote", path)
    return 0


def main():
    out = os.path.join(REPO, "test", "Corpus")
    manifest_path, manifest = load_manifest(out)
    files = manifest["files"]
    jobs = []
    for name, (build, inputs, dyn, chains, kind) in MODELS.items():
        # TOSA: torch-mlir's torch-backend-to-tosa-backend-pipeline fails on these
        # graphs (torch-mlir 20261001), so linalg-on-tensors only.
        for source, ot in (("linalg", "linalg-on-tensors"),):
            jobs.append((f"{source}_{name}", chains, kind,
                         f"torch.export(dynamic_shapes=Dim seq) + torch_mlir.fx.export_and_import("
                         f"output_type=\"{ot}\")",
                         lambda b=build, i=inputs, d=dyn, o=ot: export_torch(b().eval(), i(), d, o)))
        jobs.append((f"onnx_{name}", chains, kind,
                     "torch.onnx.export(opset 18, dynamic_axes seq) + torch_mlir onnx_importer"
                     " + torch-backend-to-linalg-on-tensors",
                     lambda b=build, i=inputs: export_onnx(
                         b().eval(), i(), ["q", "k", "v"], {n: {2: "seq"} for n in "qkv"},
                         tempfile.mkdtemp())))
    for name, (key, family, max_len) in HF_MODELS.items():
        for impl in ("eager", "sdpa"):
            config = generate.MODELS[key]["config"]
            chains = generate.MODELS[key]["chains"]
            jobs.append((f"linalg_{name}_{impl}_b1", chains,
                         f"transformers {family} ({config}), {impl}, runtime sequence length (Dim)",
                         "torch.export(dynamic_shapes=Dim seq) + torch_mlir.fx.export_and_import("
                         "output_type=\"linalg-on-tensors\")",
                         lambda k=key, i=impl, n=max_len: export_torch(
                             hf_model(k, i), hf_inputs(k), hf_dyn(n), "linalg-on-tensors")))
    # The TorchScript ONNX exports of these models with a dynamic axis are not
    # in the corpus: their reshapes leave the head count a runtime size (not
    # fused, with a remark), and the imported graphs fail their own broadcast
    # size checks at every length (docs/Raising.md). (The pipeline's crash on
    # them, upstream expand-strided-metadata, is fixed by
    # attn-lower-dynamic-expand-shapes.)
    if "--failing-onnx" in sys.argv:
        return write_failing_onnx()
    only = None
    if "--only" in sys.argv:
        only = set(sys.argv[sys.argv.index("--only") + 1].split(","))
        jobs = [j for j in jobs if j[0] in only]
    failures = []
    os.makedirs(os.path.join(out, "dynamic"), exist_ok=True)
    for name, chains, kind, how, fn in jobs:
        rel = f"dynamic/{name}.mlir"
        try:
            torch.manual_seed(0)
            text = i1_hex_to_literal(fn())
        except Exception as e:
            failures.append((rel, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"))
            traceback.print_exc(limit=2)
            continue
        if "?" not in text.split("{-#")[0]:
            failures.append((rel, "no dynamic dimension in the export"))
            continue
        header = (f"// Generated by scripts/corpus/generate_dynamic.py: {name}.\n// {how}.\n"
                  "// Test input, not a lit test.\n")
        write_generated(out, files, rel, header, text, {
            "model": name, "config": kind, "attn_implementation": "dynamic",
            "batch": 1 if "_b1" in name else 2, "source": "dynamic", "export": how,
            "chains": chains, "dynamic": True, "kind": kind},
            keep_expectations=False)
    save_manifest(manifest_path, manifest, files)
    for rel, msg in failures:
        print("FAIL", rel, msg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
