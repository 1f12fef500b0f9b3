#!/usr/bin/env python3
"""JAX / Flax attention -> StableHLO -> IREE's input pipeline -> linalg (issue 26).

Another framework's standard attention helpers, through another compiler's
input pipeline: each model is `jax.jit(f).lower(...)` (StableHLO text), then
`iree-compile --compile-to=input` (IREE's StableHLO input conversion to
linalg on tensors). IREE wraps the function as `util.func` / `util.return`;
those two names are rewritten to `func.func` / `return` (nothing else is
changed; the file is rejected if any other IREE dialect op remains).

Helpers: `jax.nn.dot_product_attention` (implementation="xla": MHA, GQA with
fewer KV heads, is_causal, a bias, a boolean mask), `flax.linen.dot_product_attention`
(with `flax.linen.make_causal_mask`), `flax.linen.MultiHeadDotProductAttention`
(dense projections, causal / padding masks) and a plain `jax.nn.softmax`
einsum. Tiny sizes and realistic ones (head dim 64-128, sequence 128-1024,
bf16/f16).

Writes test/Corpus/jax-iree/<name>.mlir and their manifest entries.
Usage (venv: scripts/corpus/setup-venv.sh --jax):
  .venv-corpus-jax/bin/python scripts/corpus/generate_jax.py
"""
import os
import re
import sys
import tempfile

import jax
import jax.numpy as jnp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpusio import iree_compile_to_input, load_manifest, save_manifest, write_generated  # noqa: E402
import flax.linen as nn

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IREE = os.path.join(os.path.dirname(sys.executable), "iree-compile")
DT = {"f32": jnp.float32, "f16": jnp.float16, "bf16": jnp.bfloat16}


def sdpa(gqa=1, causal=False, bias=False, mask=False, scale=None):
    def f(q, k, v, *extra):
        kw = {}
        i = 0
        if bias:
            kw["bias"] = extra[i]
            i += 1
        if mask:
            kw["mask"] = extra[i]
        return jax.nn.dot_product_attention(q, k, v, is_causal=causal, scale=scale,
                                            implementation="xla", **kw)
    return f


def flax_fn(causal=False):
    def f(q, k, v):
        m = nn.make_causal_mask(jnp.ones(q.shape[:2], jnp.int32)) if causal else None
        return nn.dot_product_attention(q, k, v, mask=m)
    return f


def einsum_softmax(q, k, v):
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(q.shape[-1]).astype(q.dtype)
    p = jax.nn.softmax(s, axis=-1)
    return jnp.einsum("bhqk,bkhd->bqhd", p, v)


def mha_module(heads, dim, causal, padding, dtype):
    mod = nn.MultiHeadDotProductAttention(num_heads=heads, qkv_features=heads * dim,
                                          dtype=dtype, param_dtype=dtype)

    def build(b, n):
        x = jnp.zeros((b, n, heads * dim), dtype)
        params = mod.init(jax.random.PRNGKey(0), x)

        def f(x, *pm):
            m = None
            if causal:
                m = nn.make_causal_mask(jnp.ones((b, n), jnp.int32))
            if padding:
                pad = nn.make_attention_mask(pm[0], pm[0])
                m = pad if m is None else nn.combine_masks(m, pad)
            return mod.apply(params, x, mask=m)
        args = [x] + ([jnp.ones((b, n), jnp.int32)] if padding else [])
        return f, args
    return build


def qkv(b, nq, nk, h, hkv, d, dt):
    return [jnp.zeros((b, nq, h, d), DT[dt]), jnp.zeros((b, nk, hkv, d), DT[dt]),
            jnp.zeros((b, nk, hkv, d), DT[dt])]


# name -> (builder returning (f, args), chains, kind)
def models():
    out = {}

    def add(name, f, args, kind, chains=1):
        out[name] = (lambda f=f, args=args: (f, args), chains, kind)

    # jax.nn.dot_product_attention in f16/bf16 does not lower on the CPU (f16:
    # "precision F16_F16_F32 is not supported by dot_general") or through
    # IREE (bf16: its dot_general carries a dot_algorithm IREE does not
    # legalize): f32 only; f16/bf16 through flax and einsum.
    add("sdpa_f32_b1_n16_h2_d16", sdpa(), qkv(1, 16, 16, 2, 2, 16, "f32"),
        "jax.nn.dot_product_attention, f32, B=1 N=16 H=2 D=16")
    add("einsum_softmax_f16_b1_n16_h2_d16", einsum_softmax, qkv(1, 16, 16, 2, 2, 16, "f16"),
        "jnp.einsum + jax.nn.softmax + jnp.einsum, f16, B=1 N=16 H=2 D=16")
    add("sdpa_f32_b2_n16_h2_d16", sdpa(), qkv(2, 16, 16, 2, 2, 16, "f32"),
        "jax.nn.dot_product_attention, f32, B=2 N=16 H=2 D=16")
    add("sdpa_causal_f32_b2_n256_h4_d64", sdpa(causal=True), qkv(2, 256, 256, 4, 4, 64, "f32"),
        "jax.nn.dot_product_attention is_causal, f32, B=2 N=256 H=4 D=64")
    add("sdpa_gqa_f32_b1_n512_h8_kv2_d128", sdpa(), qkv(1, 512, 512, 8, 2, 128, "f32"),
        "jax.nn.dot_product_attention GQA 8/2 (K/V with fewer heads), f32, B=1 N=512 D=128")
    add("sdpa_gqa_causal_f32_b2_n16_h4_kv2_d16", sdpa(causal=True), qkv(2, 16, 16, 4, 2, 16, "f32"),
        "jax.nn.dot_product_attention GQA 4/2 is_causal, f32, B=2 N=16 D=16")
    add("sdpa_cross_f32_b2_q8_k24_h2_d32", sdpa(), qkv(2, 8, 24, 2, 2, 32, "f32"),
        "jax.nn.dot_product_attention cross-attention Nq=8 Nk=24, f32, B=2 D=32")
    add("sdpa_bias_f32_b1_n16_h2_d16", sdpa(bias=True),
        qkv(1, 16, 16, 2, 2, 16, "f32") + [jnp.zeros((1, 2, 16, 16), jnp.float32)],
        "jax.nn.dot_product_attention with a bias [B,H,N,N], f32")
    add("sdpa_mask_f32_b2_n16_h2_d16", sdpa(mask=True),
        qkv(2, 16, 16, 2, 2, 16, "f32") + [jnp.zeros((2, 1, 16, 16), jnp.bool_)],
        "jax.nn.dot_product_attention with a boolean mask [B,1,N,N] argument, f32")
    add("flax_dpa_f16_b1_n1024_h2_d64", flax_fn(), qkv(1, 1024, 1024, 2, 2, 64, "f16"),
        "flax.linen.dot_product_attention, f16, B=1 N=1024 H=2 D=64")
    add("flax_dpa_f32_b2_n16_h2_d16", flax_fn(), qkv(2, 16, 16, 2, 2, 16, "f32"),
        "flax.linen.dot_product_attention, f32, B=2 N=16 H=2 D=16")
    add("flax_dpa_causal_bf16_b1_n128_h4_d64", flax_fn(causal=True), qkv(1, 128, 128, 4, 4, 64, "bf16"),
        "flax.linen.dot_product_attention + make_causal_mask, bf16, B=1 N=128 H=4 D=64")
    add("einsum_softmax_f32_b1_n16_h2_d16", einsum_softmax, qkv(1, 16, 16, 2, 2, 16, "f32"),
        "jnp.einsum + jax.nn.softmax + jnp.einsum, f32, B=1 N=16 H=2 D=16")
    add("einsum_softmax_bf16_b2_n256_h4_d64", einsum_softmax, qkv(2, 256, 256, 4, 4, 64, "bf16"),
        "jnp.einsum + jax.nn.softmax + jnp.einsum, bf16, B=2 N=256 H=4 D=64")
    for name, heads, dim, causal, padding, dt, b, n in (
            ("flax_mha_f32_b2_n16_h2_d16", 2, 16, False, False, "f32", 2, 16),
            ("flax_mha_causal_f32_b1_n16_h2_d16", 2, 16, True, False, "f32", 1, 16),
            ("flax_mha_padding_f32_b2_n16_h2_d16", 2, 16, False, True, "f32", 2, 16),
            ("flax_mha_causal_bf16_b1_n128_h2_d64", 2, 64, True, False, "bf16", 1, 128)):
        out[name] = (lambda heads=heads, dim=dim, causal=causal, padding=padding, dt=dt, b=b, n=n:
                     mha_module(heads, dim, causal, padding, DT[dt])(b, n), 1,
                     f"flax.linen.MultiHeadDotProductAttention({heads} heads, qkv_features "
                     f"{heads * dim}){', causal mask' if causal else ''}"
                     f"{', padding mask' if padding else ''}, {dt}, B={b} N={n}")
    return out


def to_linalg(stablehlo):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "in.mlir")
        dst = os.path.join(tmp, "out.mlir")
        with open(src, "w") as f:
            f.write(stablehlo)
        text = iree_compile_to_input(IREE, src, dst)
    text = re.sub(r"\butil\.func public\b", "func.func", text)
    text = re.sub(r"\butil\.func\b", "func.func", text)
    text = re.sub(r"\butil\.return\b", "return", text)
    foreign = sorted(set(re.findall(r"\b(util|flow|hal|iree_\w+|stablehlo)\.[a-z_]+", text)))
    if foreign:
        raise RuntimeError(f"IREE dialect ops left: {foreign}")
    return text


def main():
    out = os.path.join(REPO, "test", "Corpus")
    manifest_path, manifest = load_manifest(out)
    files = manifest["files"]
    import importlib.metadata as md
    vers = {p: md.version(p) for p in ("jax", "jaxlib", "flax", "iree-base-compiler")}
    manifest.setdefault("generator_versions_jax", vers)
    manifest["generator_versions_jax"] = vers
    os.makedirs(os.path.join(out, "jax-iree"), exist_ok=True)
    for name, (build, chains, kind) in models().items():
        rel = f"jax-iree/{name}.mlir"
        try:
            f, args = build()
            text = to_linalg(jax.jit(f).lower(*args).as_text())
        except Exception as e:  # report and go on
            print("FAIL", rel, type(e).__name__, str(e).splitlines()[:3])
            continue
        header = (f"// Generated by scripts/corpus/generate_jax.py: {name}.\n"
                  f"// {kind}.\n// jax.jit(f).lower() (StableHLO) -> iree-compile --compile-to=input "
                  f"(IREE {vers['iree-base-compiler']}) -> util.func/util.return renamed.\n"
                  "// Test input, not a lit test.\n")
        write_generated(out, files, rel, header, text, {
            "model": name, "config": kind, "attn_implementation": "jax",
            "batch": int(re.search(r"_b(\d+)_", name).group(1)), "source": "jax-iree",
            "export": "jax.jit.lower (StableHLO) + iree-compile --compile-to=input",
            "chains": chains, "kind": kind})
    save_manifest(manifest_path, manifest, files)
    return 0


if __name__ == "__main__":
    sys.exit(main())
