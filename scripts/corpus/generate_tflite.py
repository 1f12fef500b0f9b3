#!/usr/bin/env python3
"""TFLite -> TOSA part of the attention corpus (issue 10).

Runs in the TensorFlow venv (scripts/corpus/setup-venv.sh --tflite, default
.venv-corpus-tf), not in the torch one: TensorFlow 2.18.1 pins numpy 2.0 and
protobuf 5.

Path per model:
  Keras model (tiny, random weights, fixed seed) -> tf.lite.TFLiteConverter
  -> tf.mlir.experimental.tflite_to_tosa_bytecode (TensorFlow's own TFL -> TOSA
     legalization; 2.18.1 is the last PyPI release that has it)
  -> iree-opt 3.1.0 (from iree-base-compiler, same TOSA generation) prints it as text
  -> scripts/corpus/tosa_upgrade.py: pre-1.0 TOSA syntax -> TOSA 1.0 (LLVM 22)
  -> test/Corpus/tflite/<name>.mlir, manifest entry.

Usage: .venv-corpus-tf/bin/python scripts/corpus/generate_tflite.py [--out test/Corpus]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from mlirtext import i1_hex_to_literal, kept_expectations  # noqa: E402
from tosa_upgrade import upgrade  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

keras = tf.keras
D = 32


class MhaCausal(keras.Model):
    """Keras MultiHeadAttention, self-attention, use_causal_mask=True."""

    def __init__(self):
        super().__init__()
        self.mha = keras.layers.MultiHeadAttention(num_heads=2, key_dim=16)

    def call(self, x):
        return self.mha(x, x, use_causal_mask=True)


class EncoderBlock(keras.Model):
    """Post-LN encoder block: MHA with a [B, 1, N] padding mask input, LayerNorm, GELU FFN."""

    def __init__(self):
        super().__init__()
        self.mha = keras.layers.MultiHeadAttention(num_heads=2, key_dim=16)
        self.ln1 = keras.layers.LayerNormalization()
        self.ln2 = keras.layers.LayerNormalization()
        self.f1 = keras.layers.Dense(64, activation="gelu")
        self.f2 = keras.layers.Dense(D)

    def call(self, x, m):
        mask = tf.cast(m[:, None, :], tf.bool)
        a = self.mha(x, x, attention_mask=mask)
        h = self.ln1(x + a)
        return self.ln2(h + self.f2(self.f1(h)))


class MhaCross(keras.Model):
    """Keras MultiHeadAttention, cross-attention (5 queries, 9 keys), no mask."""

    def __init__(self):
        super().__init__()
        self.mha = keras.layers.MultiHeadAttention(num_heads=2, key_dim=16)

    def call(self, q, kv):
        return self.mha(q, kv)


class MhaNoMask(keras.Model):
    """Keras MultiHeadAttention, self-attention, 4 heads of 8, odd length 13, no mask."""

    def __init__(self):
        super().__init__()
        self.mha = keras.layers.MultiHeadAttention(num_heads=4, key_dim=8)

    def call(self, x):
        return self.mha(x, x)


class DotAttention(keras.Model):
    """keras.layers.Attention (single-head Luong dot-product, learned scale) on projected q/k/v."""

    def __init__(self):
        super().__init__()
        self.q = keras.layers.Dense(D)
        self.k = keras.layers.Dense(D)
        self.v = keras.layers.Dense(D)
        self.att = keras.layers.Attention(use_scale=True)

    def call(self, x):
        return self.att([self.q(x), self.v(x), self.k(x)])


def spec(shape, dtype=tf.float32):
    return tf.TensorSpec(shape, dtype)


MODELS = {
    "keras_mha_causal": dict(
        cls=MhaCausal, inputs=lambda b: [spec((b, 9, D))], chains=1,
        kind="self-attention, causal mask as an i1 constant, select with -0.7*f32max, scale 1/sqrt(16)",
        config="keras.layers.MultiHeadAttention(num_heads=2, key_dim=16), seq 9"),
    "keras_encoder_block": dict(
        cls=EncoderBlock, inputs=lambda b: [spec((b, 9, D)), spec((b, 9), tf.int32)], chains=1,
        kind="self-attention with a [B,1,N] padding mask input (select), + LayerNorm + GELU FFN",
        config="MultiHeadAttention(2, 16) + LayerNorm + Dense(64, gelu) + Dense(32), seq 9"),
    "keras_mha_cross": dict(
        cls=MhaCross, inputs=lambda b: [spec((b, 5, D)), spec((b, 9, D))], chains=1,
        kind="cross-attention (Nq 5, Nk 9), no mask",
        config="keras.layers.MultiHeadAttention(num_heads=2, key_dim=16), q 5, kv 9"),
    "keras_mha_nomask": dict(
        cls=MhaNoMask, inputs=lambda b: [spec((b, 13, D))], chains=1,
        kind="self-attention, no mask, 4 heads, odd length 13",
        config="keras.layers.MultiHeadAttention(num_heads=4, key_dim=8), seq 13"),
    "keras_dot_attention": dict(
        cls=DotAttention, inputs=lambda b: [spec((b, 11, D))], chains=1,
        kind="single-head dot-product attention (3-D, no heads), learned scalar scale, no mask",
        config="Dense q/k/v(32) + keras.layers.Attention(use_scale=True), seq 11"),
}


def versions():
    import importlib.metadata as md

    return {p: md.version(p) for p in ("tensorflow-cpu", "keras", "iree-base-compiler")}


def export(key, batch, tmp):
    m = MODELS[key]
    tf.keras.utils.set_random_seed(0)
    model = m["cls"]()
    sig = m["inputs"](batch)
    model(*[tf.random.normal(s.shape) if s.dtype == tf.float32 else tf.ones(s.shape, s.dtype)
            for s in sig])
    # A functional Keras model around the subclassed one, converted with from_keras_model
    # (from_concrete_functions leaves some projections as BATCH_MATMUL with a 2-D weight,
    # which TF 2.18's TFL -> TOSA legalization rejects: "'tosa.matmul' op operand #1 must
    # be 3-d").
    ins = [keras.Input(shape=s.shape[1:], batch_size=s.shape[0], dtype=s.dtype) for s in sig]
    fmodel = keras.Model(ins, model(*ins))
    fb = tf.lite.TFLiteConverter.from_keras_model(fmodel).convert()
    tfl = os.path.join(tmp, f"{key}_b{batch}.tflite")
    bc = tfl[:-len(".tflite")] + ".mlirbc"
    with open(tfl, "wb") as f:
        f.write(fb)
    tf.mlir.experimental.tflite_to_tosa_bytecode(tfl, bc, use_external_constant=False)
    iree_opt = shutil.which("iree-opt", path=os.path.dirname(sys.executable)) or "iree-opt"
    text = subprocess.run([iree_opt, bc], check=True, capture_output=True, text=True).stdout
    return i1_hex_to_literal(upgrade(text))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(REPO, "test", "Corpus"))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--batches", default="1,2")
    args = ap.parse_args()
    manifest_path = os.path.join(args.out, "manifest.json")
    manifest = json.load(open(manifest_path)) if os.path.exists(manifest_path) else {"files": {}}
    manifest["tflite_generator_versions"] = versions()
    os.makedirs(os.path.join(args.out, "tflite"), exist_ok=True)
    path_desc = ("Keras -> TFLiteConverter -> tf.mlir.experimental.tflite_to_tosa_bytecode (TF 2.18.1) -> "
                 "iree-opt 3.1.0 text -> scripts/corpus/tosa_upgrade.py (TOSA 1.0 syntax)")
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for key in args.models.split(","):
            for batch in [int(b) for b in args.batches.split(",")]:
                rel = f"tflite/{key}_b{batch}.mlir"
                try:
                    text = export(key, batch, tmp)
                except Exception as e:  # noqa: BLE001
                    failures.append((rel, f"{type(e).__name__}: {e}"))
                    print(f"FAIL {rel}: {e}", file=sys.stderr)
                    continue
                header = (f"// Generated by scripts/corpus/generate_tflite.py: {key}, batch {batch}.\n"
                          f"// {path_desc}.\n// Test input, not a lit test.\n")
                with open(os.path.join(args.out, rel), "w") as f:
                    f.write(header + text)
                m = MODELS[key]
                kept = kept_expectations(manifest["files"].get(rel))
                manifest["files"][rel] = {
                    "model": key, "config": m["config"], "attn_implementation": "keras",
                    "batch": batch, "source": "tflite", "export": path_desc, "chains": m["chains"],
                    "kind": m["kind"], "bytes": len(header) + len(text), **kept,
                }
                print(f"ok   {rel}  {len(text) // 1024} KB")
    manifest["files"] = dict(sorted(manifest["files"].items()))
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    for rel, msg in failures:
        print(f"failed: {rel}: {msg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
