#!/usr/bin/env python3
"""Generate the attention corpus of real frontend exports (issue 10).

Builds tiny Hugging Face `transformers` models in code (small configs, random
weights, fixed seeds, no hub access) and exports them:

  torch-linalg : torch.export + torch_mlir.fx.export_and_import(output_type="linalg-on-tensors")
  torch-tosa   : the same with output_type="tosa"
  onnx         : torch.onnx.export, torch-mlir's ONNX importer, then
                 torch-onnx -> torch -> linalg-on-tensors with torch-mlir's pipeline

Writes test/Corpus/<source>/<name>.mlir and updates test/Corpus/manifest.json
(file -> expected attention chain count and provenance). README.md in
test/Corpus is written from the manifest.

Usage (after scripts/corpus/setup-venv.sh):
  .venv-corpus/bin/python scripts/corpus/generate.py [--sources torch-linalg,torch-tosa,onnx]
                                                     [--models gpt2,bert,...] [--out test/Corpus]
"""

import argparse
import contextlib
import io
import json
import os
import re
import sys
import time
import traceback

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
import transformers  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

hf_logging.set_verbosity_error()

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mlirtext import i1_hex_to_literal, kept_expectations  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCAB = 64


def seed(s=0):
    torch.manual_seed(s)


class IdsMask(torch.nn.Module):
    """Decoder-only or encoder-only text model: (input_ids, attention_mask) -> last_hidden_state."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
        return out.last_hidden_state


class IdsMaskNoCache(IdsMask):
    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


class Seq2Seq(torch.nn.Module):
    """Encoder-decoder: (input_ids, attention_mask, decoder_input_ids) -> decoder last_hidden_state."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, decoder_input_ids):
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            decoder_input_ids=decoder_input_ids,
            use_cache=False,
        )
        return out.last_hidden_state


class Pixels(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, pixel_values):
        return self.model(pixel_values=pixel_values).last_hidden_state


class Whisper(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_features, decoder_input_ids, decoder_attention_mask):
        # decoder_attention_mask given: without it, transformers' mask code looks for packed
        # sequences with a cumsum, which torch-mlir lowers to tm_tensor.scan (not linalg).
        out = self.model(
            input_features=input_features, decoder_input_ids=decoder_input_ids,
            decoder_attention_mask=decoder_attention_mask, use_cache=False
        )
        return out.last_hidden_state


def ids_mask(batch, seq):
    ids = torch.randint(0, VOCAB, (batch, seq), dtype=torch.int64)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    if batch > 1:
        mask[1, seq - 2 :] = 0  # second sequence right-padded (values are runtime data)
    return ids, mask


def with_impl(cfg, impl):
    cfg._attn_implementation = impl
    cfg.use_cache = False
    return cfg


# ---------------------------------------------------------------------------
# Models. Each entry: key -> dict(
#   build(impl) -> nn.Module (wrapped), inputs(batch) -> tuple,
#   chains: expected attention chains (layers x attention modules per layer),
#   kind: attention kinds, impls: attention implementations to export,
#   config: short text for the README)
# ---------------------------------------------------------------------------


def gpt2(impl):
    from transformers import GPT2Config, GPT2Model

    cfg = GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=VOCAB, n_positions=16,
                     bos_token_id=0, eos_token_id=0)
    return IdsMask(GPT2Model(with_impl(cfg, impl)).eval())


def bert(impl):
    from transformers import BertConfig, BertModel

    cfg = BertConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2,
                     intermediate_size=64, vocab_size=VOCAB, max_position_embeddings=16,
                     pad_token_id=0)
    return IdsMaskNoCache(BertModel(with_impl(cfg, impl), add_pooling_layer=False).eval())


def llama_gqa(impl):
    from transformers import LlamaConfig, LlamaModel

    cfg = LlamaConfig(num_hidden_layers=1, hidden_size=32, intermediate_size=64,
                      num_attention_heads=4, num_key_value_heads=2, vocab_size=VOCAB,
                      max_position_embeddings=32, bos_token_id=0, eos_token_id=0, pad_token_id=0)
    return IdsMask(LlamaModel(with_impl(cfg, impl)).eval())


def mistral_swa(impl):
    from transformers import MistralConfig, MistralModel

    cfg = MistralConfig(num_hidden_layers=1, hidden_size=32, intermediate_size=64,
                        num_attention_heads=4, num_key_value_heads=2, vocab_size=VOCAB,
                        max_position_embeddings=32, sliding_window=4,
                        bos_token_id=0, eos_token_id=0, pad_token_id=0)
    return IdsMask(MistralModel(with_impl(cfg, impl)).eval())


def qwen2_swa(impl):
    from transformers import Qwen2Config, Qwen2Model

    cfg = Qwen2Config(num_hidden_layers=1, hidden_size=32, intermediate_size=64,
                      num_attention_heads=4, num_key_value_heads=1, vocab_size=VOCAB,
                      max_position_embeddings=32, use_sliding_window=True, sliding_window=4,
                      max_window_layers=0, layer_types=["sliding_attention"],
                      bos_token_id=0, eos_token_id=0, pad_token_id=0)
    return IdsMask(Qwen2Model(with_impl(cfg, impl)).eval())


def gemma2_softcap(impl):
    from transformers import Gemma2Config, Gemma2Model

    cfg = Gemma2Config(num_hidden_layers=2, hidden_size=32, intermediate_size=64,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                       vocab_size=VOCAB, max_position_embeddings=32, sliding_window=4,
                       attn_logit_softcapping=50.0, query_pre_attn_scalar=8,
                       layer_types=["sliding_attention", "full_attention"],
                       bos_token_id=0, eos_token_id=0, pad_token_id=0)
    return IdsMask(Gemma2Model(with_impl(cfg, impl)).eval())


def bloom_alibi(impl):
    from transformers import BloomConfig, BloomModel

    cfg = BloomConfig(n_layer=1, hidden_size=32, n_head=4, vocab_size=VOCAB,
                      bos_token_id=0, eos_token_id=0, pad_token_id=0)
    return IdsMask(BloomModel(with_impl(cfg, impl)).eval())


def modernbert_local(impl):
    from transformers import ModernBertConfig, ModernBertModel

    cfg = ModernBertConfig(num_hidden_layers=2, hidden_size=32, intermediate_size=64,
                           num_attention_heads=2, vocab_size=VOCAB, max_position_embeddings=32,
                           global_attn_every_n_layers=2, local_attention=4,
                           pad_token_id=0, bos_token_id=0, eos_token_id=0, cls_token_id=0, sep_token_id=0)
    return IdsMaskNoCache(ModernBertModel(with_impl(cfg, impl)).eval())


def t5(impl):
    from transformers import T5Config, T5Model

    cfg = T5Config(num_layers=1, num_decoder_layers=1, d_model=32, d_kv=8, d_ff=64,
                   num_heads=4, vocab_size=VOCAB, relative_attention_num_buckets=8,
                   relative_attention_max_distance=16, decoder_start_token_id=0,
                   pad_token_id=0, eos_token_id=1)
    return Seq2Seq(T5Model(with_impl(cfg, impl)).eval())


def bart(impl):
    from transformers import BartConfig, BartModel

    cfg = BartConfig(encoder_layers=1, decoder_layers=1, d_model=32, encoder_attention_heads=2,
                     decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                     vocab_size=VOCAB, max_position_embeddings=32, pad_token_id=1,
                     bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
                     forced_eos_token_id=None)
    return Seq2Seq(BartModel(with_impl(cfg, impl)).eval())


def whisper(impl):
    from transformers import WhisperConfig, WhisperModel

    cfg = WhisperConfig(encoder_layers=1, decoder_layers=1, d_model=32, encoder_attention_heads=2,
                        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                        vocab_size=VOCAB, num_mel_bins=8, max_source_positions=8,
                        max_target_positions=16, pad_token_id=0, bos_token_id=0,
                        eos_token_id=0, decoder_start_token_id=0)
    return Whisper(WhisperModel(with_impl(cfg, impl)).eval())


def vit(impl):
    from transformers import ViTConfig, ViTModel

    cfg = ViTConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2,
                    intermediate_size=64, image_size=16, patch_size=4, num_channels=3)
    return Pixels(ViTModel(with_impl(cfg, impl), add_pooling_layer=False).eval())


class Decode(IdsMask):
    """One decode step with a KV cache: the past keys/values are inputs, put into a
    DynamicCache in forward; attention_mask covers past + new token (kv-cache padding)."""

    def forward(self, input_ids, attention_mask, past_k, past_v):
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        cache.update(past_k, past_v, 0)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache,
                         use_cache=True)
        return out.last_hidden_state


def llama_gqa_decode(impl):
    return Decode(llama_gqa(impl).model)


def decode_inputs(batch, past=12, kv_heads=2, head_dim=8):
    ids = torch.randint(0, VOCAB, (batch, 1), dtype=torch.int64)
    mask = torch.ones(batch, past + 1, dtype=torch.int64)
    if batch > 1:
        mask[1, :3] = 0  # second sequence left-padded
    return (ids, mask, torch.randn(batch, kv_heads, past, head_dim),
            torch.randn(batch, kv_heads, past, head_dim))


def seq2seq_inputs(seq, dec):
    def f(batch):
        ids, mask = ids_mask(batch, seq)
        return ids, mask, torch.randint(0, VOCAB, (batch, dec), dtype=torch.int64)

    return f


MODELS = {
    "gpt2": dict(build=gpt2, inputs=lambda b: ids_mask(b, 9), chains=1,
                 kind="causal + padding mask (additive finfo.min), scale 1/sqrt(d)",
                 config="GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab=64), seq 9"),
    "bert": dict(build=bert, inputs=lambda b: ids_mask(b, 8), chains=1,
                 kind="encoder, padding mask (additive finfo.min)",
                 config="BertConfig(layers=1, hidden=32, heads=2, ffn=64, vocab=64), seq 8"),
    "llama_gqa": dict(build=llama_gqa, inputs=lambda b: ids_mask(b, 11), chains=1,
                      kind="causal + padding, GQA 4 q heads / 2 kv heads (repeat_kv), RoPE",
                      config="LlamaConfig(layers=1, hidden=32, heads=4, kv_heads=2, ffn=64 SwiGLU, vocab=64), seq 11"),
    "gpt2_f16": dict(build=gpt2, inputs=lambda b: ids_mask(b, 9), chains=1, dtype=torch.float16,
                     kind="GPT-2 in float16: causal + padding mask (finfo(f16).min), eager softmax in f16",
                     config="GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab=64), seq 9, model.to(float16)"),
    "llama_gqa_bf16": dict(build=llama_gqa, inputs=lambda b: ids_mask(b, 11), chains=1, dtype=torch.bfloat16,
                           kind="LLaMA GQA 4/2 in bfloat16: eager softmax upcast to f32 then cast back (dtype=float32 softmax)",
                           config="LlamaConfig(layers=1, hidden=32, heads=4, kv_heads=2), seq 11, model.to(bfloat16)"),
    "llama_gqa_decode": dict(build=llama_gqa_decode, inputs=decode_inputs, chains=1,
                             kind="decode step: 1 query, 12 cached + 1 new keys (KV cache as inputs, concatenated), "
                                  "kv padding mask [B, 13], GQA 4/2",
                             config="LlamaConfig(layers=1, hidden=32, heads=4, kv_heads=2), past 12 + 1 token"),
    "mistral_swa": dict(build=mistral_swa, inputs=lambda b: ids_mask(b, 9), chains=1,
                        kind="causal sliding window 4 + padding, GQA 4/2",
                        config="MistralConfig(layers=1, hidden=32, heads=4, kv_heads=2, sliding_window=4), seq 9"),
    "qwen2_swa": dict(build=qwen2_swa, inputs=lambda b: ids_mask(b, 13), chains=1,
                      kind="causal sliding window 4 + padding, MQA 4/1, qkv bias",
                      config="Qwen2Config(layers=1, hidden=32, heads=4, kv_heads=1, use_sliding_window, sliding_window=4), seq 13"),
    "gemma2_softcap": dict(build=gemma2_softcap, inputs=lambda b: ids_mask(b, 9), chains=2,
                           impls=("eager",),
                           kind="layer 0 sliding window 4, layer 1 full causal; tanh logit softcapping 50; GQA 4/2; scale query_pre_attn_scalar^-0.5",
                           config="Gemma2Config(layers=2, hidden=32, heads=4, kv_heads=2, head_dim=8, sliding_window=4, attn_logit_softcapping=50), seq 9"),
    "bloom_alibi": dict(build=bloom_alibi, inputs=lambda b: ids_mask(b, 9), chains=1,
                        impls=("eager",),
                        skip={"torch-linalg": "BLOOM builds its ALiBi positions with attention_mask.cumsum(-1), which "
                                              "torch-mlir lowers to tm_tensor.scan: not linalg, attnfuse-opt cannot parse it"},
                        kind="causal + padding, ALiBi bias (baddbmm)",
                        config="BloomConfig(n_layer=1, hidden=32, n_head=4), seq 9"),
    "modernbert_local": dict(build=modernbert_local, inputs=lambda b: ids_mask(b, 11), chains=2,
                             kind="encoder, layer 0 global (padding), layer 1 local bidirectional window "
                                  "(|q - k| <= 2) + padding; RoPE; GeGLU MLP",
                             config="ModernBertConfig(layers=2, hidden=32, heads=2, global every 2, local_attention=4), seq 11"),
    "t5": dict(build=t5, inputs=seq2seq_inputs(8, 5), chains=3,
               kind="encoder self (rel-pos bias + padding), decoder self (rel-pos bias + causal), cross (padding); no scale",
               config="T5Config(num_layers=1, num_decoder_layers=1, d_model=32, d_kv=8, heads=4, buckets=8), enc seq 8, dec seq 5"),
    "bart": dict(build=bart, inputs=seq2seq_inputs(9, 7), chains=3,
                 kind="encoder self (padding), decoder self (causal), cross (padding)",
                 config="BartConfig(enc/dec layers=1, d_model=32, heads=2, ffn=64), enc seq 9, dec seq 7"),
    "whisper": dict(build=whisper,
                    inputs=lambda b: (torch.randn(b, 8, 16), *ids_mask(b, 5)),
                    chains=3,
                    kind="encoder self (no mask), decoder self (causal + padding), cross (no mask)",
                    config="WhisperConfig(enc/dec layers=1, d_model=32, heads=2, mel=8, frames 16 -> 8), dec seq 5"),
    "vit": dict(build=vit, inputs=lambda b: (torch.randn(b, 3, 16, 16),), chains=1,
                kind="encoder, no mask, 17 tokens (16 patches + CLS)",
                config="ViTConfig(layers=1, hidden=32, heads=2, image 16, patch 4), seq 17"),
}

# Models also exported through ONNX (eager and sdpa, batch 1 and 2).
ONNX_MODELS = ["gpt2", "bert", "llama_gqa", "mistral_swa", "t5", "bart", "vit", "llama_gqa_decode"]

TORCH_SOURCES = {"torch-linalg": "linalg-on-tensors", "torch-tosa": "tosa"}


def versions():
    import importlib.metadata as md

    out = {}
    for p in ["torch", "torch-mlir", "transformers", "onnx", "onnxscript"]:
        try:
            out[p] = md.version(p)
        except md.PackageNotFoundError:
            pass
    return out


def module_text(module):
    # Full text, weights included (as dense_resource blobs at the end).
    return module.operation.get_asm(enable_debug_info=False)


def persist_buffers(model):
    # torch-mlir's import_frozen_program looks buffers up in the state dict;
    # non-persistent buffers (BERT's position_ids, RoPE's inv_freq) are not there.
    for m in model.modules():
        m._non_persistent_buffers_set.clear()
    return model


def export_torch(model, inputs, output_type):
    from torch_mlir import fx

    persist_buffers(model)
    # SDPA: the math backend. With the default choice (flash attention for CPU) torch's
    # decomposition gives an output with strides that a later `view` rejects at batch > 1
    # ("Cannot view a tensor with shape [2, 9, 32] and strides (32, 64, 1)"); at batch 1
    # both choices export the same IR.
    with torch.no_grad(), sdpa_kernel([SDPBackend.MATH]):
        mod = fx.export_and_import(model, *inputs, output_type=output_type, func_name="forward")
    return module_text(mod)


def export_onnx(model, inputs, name, tmpdir):
    import onnx
    from torch_mlir.extras import onnx_importer
    from torch_mlir.dialects import torch as torch_d
    from torch_mlir.ir import Context
    from torch_mlir.compiler_utils import run_pipeline_with_repro_report

    path = os.path.join(tmpdir, name + ".onnx")
    with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()):
        torch.onnx.export(model, inputs, path, opset_version=18, dynamo=True, external_data=False,
                          optimize=True)
    model_proto = onnx.load(path)
    model_proto = onnx.shape_inference.infer_shapes(model_proto, data_prop=True)
    ctx = Context()
    torch_d.register_dialect(ctx)
    info = onnx_importer.ModelInfo(model_proto)
    m = info.create_module(context=ctx).operation
    imp = onnx_importer.NodeImporter.define_function(info.main_graph, m)
    imp.import_all()
    run_pipeline_with_repro_report(
        m,
        "builtin.module(func.func(convert-torch-onnx-to-torch), torch-lower-to-backend-contract,"
        " func.func(cse, canonicalize), torch-backend-to-linalg-on-tensors-backend-pipeline)",
        "ONNX -> torch -> linalg-on-tensors",
    )
    return m.get_asm(enable_debug_info=False)


def has_foreign_dialects(text):
    bad = []
    for d in ("tm_tensor.", "torch.", "torch_c.", "ml_program.", "stablehlo."):
        if (" " + d) in text or ("= " + d) in text:
            bad.append(d.rstrip("."))
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(REPO, "test", "Corpus"))
    ap.add_argument("--sources", default="torch-linalg,torch-tosa,onnx")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--batches", default="1,2")
    ap.add_argument("--impls", default="eager,sdpa")
    args = ap.parse_args()

    out = args.out
    manifest_path = os.path.join(out, "manifest.json")
    manifest = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
    files = manifest.setdefault("files", {})
    manifest["generator_versions"] = versions()

    tmpdir = os.path.join(REPO, ".corpus-tmp")
    os.makedirs(tmpdir, exist_ok=True)
    failures = []
    sources = [s for s in args.sources.split(",") if s]
    for key in [m for m in args.models.split(",") if m]:
        spec = MODELS[key]
        for impl in spec.get("impls", ("eager", "sdpa")):
            if impl not in args.impls.split(","):
                continue
            for batch in [int(b) for b in args.batches.split(",")]:
                for source in sources:
                    if source == "onnx" and key not in ONNX_MODELS:
                        continue
                    if source in spec.get("skip", {}):
                        print(f"skip {source}/{key}_{impl}_b{batch}: {spec['skip'][source]}")
                        continue
                    name = f"{key}_{impl}_b{batch}"
                    rel = f"{source}/{name}.mlir"
                    t0 = time.time()
                    try:
                        seed(0)
                        model = spec["build"](impl).eval()
                        seed(1)
                        inputs = spec["inputs"](batch)
                        if "dtype" in spec:
                            model = model.to(spec["dtype"])
                            inputs = tuple(x.to(spec["dtype"]) if x.is_floating_point() else x
                                           for x in inputs)
                        if source in TORCH_SOURCES:
                            text = export_torch(model, inputs, TORCH_SOURCES[source])
                            path_desc = (f"torch.export + torch_mlir.fx.export_and_import("
                                         f"output_type=\"{TORCH_SOURCES[source]}\")")
                        elif source == "onnx":
                            text = export_onnx(model, inputs, f"{key}_{impl}_b{batch}", tmpdir)
                            path_desc = ("torch.onnx.export(dynamo=True, opset 18) + torch_mlir onnx_importer"
                                         " + convert-torch-onnx-to-torch + torch-backend-to-linalg-on-tensors")
                        else:
                            raise ValueError(source)
                    except Exception as e:  # keep going; report at the end
                        msg = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                        failures.append((rel, msg))
                        print(f"FAIL {rel}: {msg}", file=sys.stderr)
                        traceback.print_exc(limit=3, file=sys.stderr)
                        continue
                    text = i1_hex_to_literal(text)
                    foreign = has_foreign_dialects(text)
                    os.makedirs(os.path.join(out, source), exist_ok=True)
                    header = (f"// Generated by scripts/corpus/generate.py: {key}, attn_implementation={impl}, "
                              f"batch {batch}.\n// {path_desc}.\n// Test input, not a lit test.\n")
                    with open(os.path.join(out, rel), "w") as f:
                        f.write(header + text)
                    kept = kept_expectations(files.get(rel))
                    files[rel] = {
                        "model": key,
                        "config": spec["config"],
                        "attn_implementation": impl,
                        "batch": batch,
                        "source": source,
                        "export": path_desc,
                        "chains": spec["chains"],
                        "kind": spec["kind"],
                        "bytes": len(header) + len(text),
                        **kept,
                    }
                    if foreign:
                        files[rel]["foreign_dialects"] = foreign
                    print(f"ok   {rel}  {len(text) // 1024} KB  {time.time() - t0:.1f}s"
                          + (f"  (contains {foreign})" if foreign else ""))
    manifest["files"] = dict(sorted(files.items()))
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    if failures:
        print(f"\n{len(failures)} export(s) failed:")
        for rel, msg in failures:
            print(f"  {rel}: {msg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
