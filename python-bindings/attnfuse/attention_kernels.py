"""The CUDA kernels of one attention configuration: MLIR, compile, cache.

    from attnfuse.attention_kernels import AttentionConfig, get_kernels
    cfg = AttentionConfig(dtype="bf16", batch=2, heads_q=8, heads_kv=2,
                          seq_q=1024, seq_k=1024, head_dim_qk=64,
                          head_dim_v=64, causal=True)
    forward = get_kernels(cfg, "forward")    # [attnfuse.Kernel]
    backward = get_kernels(cfg, "backward")  # pre-pass, backward, [dQ]

An AttentionConfig is everything that changes the code of the kernels:
element type, sizes, head counts, mask, score modification, bias shape,
dropout, chip. forward_module / backward_module write the `attn.attention`
(with its lse) and `attn.attention_backward` of a configuration as MLIR;
get_kernels compiles them with attnfuse's CUDA pipeline through the C API
(attnfuse.compile(target="cuda"); needs ptxas, not a GPU) and caches the
kernels in memory and on disk.

The disk cache ($ATTNFUSE_CACHE_DIR, default ~/.cache/attnfuse/kernels)
holds one directory per key, the SHA-256 of the C API library's contents,
the chip, the kernel options and the MLIR text: any change of the compiler or of the
configuration is a new key. A directory is written under a temporary name
and renamed into place (atomic on POSIX), so that concurrent processes
compiling the same configuration each see either no entry or a whole one;
the loser of the race keeps its own kernels and drops its copy. Unreadable
entries are recompiled and replaced. A compile error is an
attnfuse.CompileError with the compiler's located diagnostics, and is not
cached.

This module needs neither torch nor a GPU (attnfuse.torch launches the
kernels).
"""
import hashlib
import json
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import attnfuse

__all__ = ["AttentionConfig", "forward_module", "backward_module",
           "get_kernels", "cache_dir", "cache_stats"]

_ELEMENT_TYPES = ("bf16", "f16", "f32")


@dataclass(frozen=True)
class AttentionConfig:
    """One attention as the kernels see it: Q [B, Hq, Nq, Dqk], K
    [B, Hkv, Nk, Dqk], V [B, Hkv, Nk, Dv], O [B, Hq, Nq, Dv].

    layout: how Q, K, V, O (and dO, dQ, dK, dV) lie in memory: "bhnd"
    contiguous as above, or "bnhd" contiguous [B, N, H, D] (projections,
    flash_attn_func), which the kernels read and write in place (the
    modules take [B, N, H, D] tensors and permute them around the op;
    convert-attn-to-gpu folds the permutations into the kernels).

    causal / window: window = (left, right) keys around the (aligned)
    diagonal, -1 for unbounded (FlashAttention's window_size); causal is
    window (-1, 0). alignment: "top_left" (SDPA's is_causal) or
    "bottom_right" (FlashAttention's), docs/Semantics.md. softcap: scores
    become softcap * tanh(score / softcap) (0: none), after the scale.
    bias_shape: the shape of an additive bias broadcast to
    [B, Hq, Nq, Nk] (None: no bias). bias_grad: the backward also returns
    dBias, of the bias's shape (summed over its broadcast dimensions).
    dropout_p: the probability of dropping
    (the kernels take the seed at launch). deterministic: the backward
    sums dQ in a fixed order (bitwise-equal reruns) instead of by f32
    atomics. options: more pipeline options for every kernel (a tuning
    knob: the family, kv-splits, ...; part of the cache key).
    key_lengths: the element type ("i32" or "i64") of per-batch key
    lengths [B] the kernels take at launch (a KV cache's lengths, a padded
    batch: docs/Semantics.md "Key lengths"; None: every batch has Nk
    keys). block_table: the element type of a block table [B, seq_k /
    page_size] over paged K and V [pages, heads_kv, page_size, D]
    (docs/Semantics.md "Paged K/V"; None: K and V are [B, heads_kv, seq_k,
    D])."""
    dtype: str
    batch: int
    heads_q: int
    heads_kv: int
    seq_q: int
    seq_k: int
    head_dim_qk: int
    head_dim_v: int
    causal: bool = False
    window: Tuple[int, int] = (-1, -1)
    alignment: str = "top_left"
    softcap: float = 0.0
    scale: Optional[float] = None
    bias_shape: Optional[Tuple[int, ...]] = None
    bias_grad: bool = False
    dropout_p: float = 0.0
    chip: str = "sm_90a"
    deterministic: bool = False
    options: str = ""
    layout: str = "bhnd"
    key_lengths: Optional[str] = None
    block_table: Optional[str] = None
    page_size: int = 0
    pages: int = 0

    def kernel_options(self, which: str) -> str:
        """attn-lower-to-nvvm-pipeline's options for `which` kernels:
        deterministic mode for the backward, then `options` (e.g.
        "mma=mma_sync kv-splits=8"; docs/Pipelines.md)."""
        det = ("deterministic=true"
               if which == "backward" and self.deterministic else "")
        return " ".join(o for o in (det, self.options) if o)

    def __post_init__(self):
        def fail(why):
            raise ValueError(f"attention configuration: {why}")
        if self.dtype not in _ELEMENT_TYPES:
            fail(f"dtype must be one of {_ELEMENT_TYPES}, got {self.dtype!r}")
        for name in ("batch", "heads_q", "heads_kv", "seq_q", "seq_k",
                     "head_dim_qk", "head_dim_v"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) \
                    or value < 1:
                fail(f"{name} must be a positive integer, got {value!r}")
        if self.heads_q % self.heads_kv:
            fail(f"heads_q = {self.heads_q} is not a multiple of heads_kv = "
                 f"{self.heads_kv} (GQA/MQA share each KV head among the "
                 "same number of query heads)")
        for name in ("key_lengths", "block_table"):
            if getattr(self, name) not in (None, "i32", "i64"):
                fail(f"{name} must be None, 'i32' or 'i64', got "
                     f"{getattr(self, name)!r}")
        if self.block_table and (
                self.page_size < 1 or self.pages < 1 or
                self.seq_k % self.page_size):
            fail(f"a block table needs pages >= 1 of page_size >= 1 keys "
                 f"dividing seq_k = {self.seq_k}, got {self.pages} pages of "
                 f"{self.page_size}")
        if self.layout not in ("bhnd", "bnhd"):
            fail(f"layout must be 'bhnd' or 'bnhd', got {self.layout!r}")
        if self.alignment not in ("top_left", "bottom_right"):
            fail(f"alignment must be 'top_left' or 'bottom_right', got "
                 f"{self.alignment!r}")
        left, right = self.window
        if left < -1 or right < -1:
            fail(f"window sizes are -1 (unbounded) or >= 0, got "
                 f"{self.window}")
        if self.causal and right not in (-1, 0):
            fail(f"causal with a window reaching {right} keys to the right")
        if not self.softcap >= 0 or self.softcap == float("inf"):
            fail(f"softcap must be finite and >= 0, got {self.softcap}")
        if not 0.0 <= self.dropout_p < 1.0:
            fail(f"dropout_p must be in [0, 1), got {self.dropout_p}")
        if self.scale is not None and not abs(self.scale) < float("inf"):
            fail(f"scale must be finite, got {self.scale}")
        if self.bias_grad and self.bias_shape is None:
            fail("bias_grad without a bias")
        if self.bias_shape is not None:
            full = (self.batch, self.heads_q, self.seq_q, self.seq_k)
            shape = tuple(self.bias_shape)
            if not 1 <= len(shape) <= 4 or any(
                    d not in (1, f) for d, f in zip(reversed(shape),
                                                    reversed(full))):
                fail(f"bias of shape {list(shape)} does not broadcast to "
                     f"{list(full)}")

    # The structural mask as the op states it (docs/Semantics.md).
    def _mask(self) -> Dict[str, object]:
        left, right = self.window
        if self.causal:
            right = 0
        if left == -1 and right == -1:
            return {}
        attrs: Dict[str, object] = {}
        if left == -1 and right == 0:
            attrs["mask"] = "#attn.mask<causal>"
        else:
            # An unbounded side reaches every key: Nq + Nk covers any offset.
            reach = self.seq_q + self.seq_k
            attrs["mask"] = "#attn.mask<sliding_window>"
            attrs["window_left"] = str(reach if left == -1 else left)
            attrs["window_right"] = str(reach if right == -1 else right)
        attrs["alignment"] = f"#attn.alignment<{self.alignment}>"
        return attrs

    def _types(self):
        t = self.dtype
        q = f"tensor<{self.batch}x{self.heads_q}x{self.seq_q}x" \
            f"{self.head_dim_qk}x{t}>"
        # K and V: [B, Hkv, Nk, D], or [pages, Hkv, page_size, D] paged.
        rows = (f"{self.pages}x{self.heads_kv}x{self.page_size}"
                if self.block_table else
                f"{self.batch}x{self.heads_kv}x{self.seq_k}")
        k = f"tensor<{rows}x{self.head_dim_qk}x{t}>"
        v = f"tensor<{rows}x{self.head_dim_v}x{t}>"
        o = f"tensor<{self.batch}x{self.heads_q}x{self.seq_q}x" \
            f"{self.head_dim_v}x{t}>"
        lse = f"tensor<{self.batch}x{self.heads_q}x{self.seq_q}xf32>"
        bias = (None if self.bias_shape is None else "tensor<%sx%s>" % (
            "x".join(str(d) for d in self.bias_shape), t))
        return q, k, v, o, lse, bias

    def _operands_and_attributes(self):
        """(extra operand clauses, attribute dictionary, score_mod region)
        shared by the forward and the backward op."""
        *_, bias = self._types()
        clauses = ""
        if bias:
            clauses += f" bias(%bias : {bias})"
        if self.dropout_p:
            clauses += " seed(%seed)"
        if self.key_lengths:
            clauses += (f" key_lengths(%key_lengths : "
                        f"{self._key_lengths_type()})")
        if self.block_table:
            clauses += (f" block_table(%block_table : "
                        f"{self._block_table_type()})")
        attrs = self._mask()
        if self.dropout_p:
            attrs["dropout_p"] = f"{float(self.dropout_p)!r} : f32"
        if self.scale is not None:
            attrs["scale"] = f"{float(self.scale)!r} : f32"
        text = ", ".join(f"{k} = {v}" for k, v in attrs.items())
        region = ""
        if self.softcap:
            region = (
                " score_mod {\n"
                "    ^bb0(%s: f32, %b: index, %h: index, %i: index, "
                "%j: index):\n"
                f"      %cap = arith.constant {float(self.softcap)!r} : f32\n"
                "      %x = arith.divf %s, %cap : f32\n"
                "      %t = math.tanh %x : f32\n"
                "      %y = arith.mulf %t, %cap : f32\n"
                "      attn.yield %y : f32\n"
                "    }")
        return clauses, (" {" + text + "}" if text else ""), region

    def _extra_arguments(self):
        *_, bias = self._types()
        args = ""
        if bias:
            args += f", %bias: {bias}"
        if self.dropout_p:
            args += ", %seed: i64"
        if self.key_lengths:
            args += f", %key_lengths: {self._key_lengths_type()}"
        if self.block_table:
            args += f", %block_table: {self._block_table_type()}"
        return args

    def _key_lengths_type(self) -> str:
        return f"tensor<{self.batch}x{self.key_lengths}>"

    def _block_table_type(self) -> str:
        return (f"tensor<{self.batch}x{self.seq_k // self.page_size}x"
                f"{self.block_table}>")


class _Layout:
    """The [B, N, H, D] argument types of a "bnhd" configuration and the
    linalg.transpose ops between them and the op's [B, H, N, D] (identity
    for "bhnd")."""

    def __init__(self, cfg: AttentionConfig):
        self.permuted = cfg.layout == "bnhd"
        self.lines: List[str] = []

    def outer(self, t: str) -> str:
        """The memory type of the op's [B, H, N, D] type t."""
        if not self.permuted:
            return t
        dims = t[len("tensor<"):-1].split("x")
        dims[1], dims[2] = dims[2], dims[1]
        return "tensor<" + "x".join(dims) + ">"

    def permute(self, name: str, src: str, dst: str) -> str:
        """%name (of type src) as type dst."""
        if not self.permuted:
            return f"%{name}"
        self.lines.append(
            f"  %{name}_e = tensor.empty() : {dst}\n"
            f"  %{name}_t = linalg.transpose ins(%{name} : {src}) "
            f"outs(%{name}_e : {dst}) permutation = [0, 2, 1, 3]\n")
        return f"%{name}_t"

    def take(self) -> str:
        text, self.lines = "".join(self.lines), []
        return text


def forward_module(cfg: AttentionConfig) -> str:
    """`@forward(q, k, v, [bias], [seed], [key_lengths]) -> (o, lse)`: one
    attn.attention (Q, K, V, O in the configuration's layout)."""
    q, k, v, o, lse, _ = cfg._types()
    clauses, attrs, region = cfg._operands_and_attributes()
    lay = _Layout(cfg)
    Q, K, V, O = (lay.outer(t) for t in (q, k, v, o))
    qa, ka, va = (lay.permute(n, lay.outer(t), t)
                  for n, t in (("q", q), ("k", k), ("v", v)))
    head = lay.take()
    oa = lay.permute("o", o, O)
    return (
        f"func.func @forward(%q: {Q}, %k: {K}, %v: {V}"
        f"{cfg._extra_arguments()}) -> ({O}, {lse}) {{\n{head}"
        f"  %o, %lse = attn.attention ins({qa}, {ka}, {va} : {q}, {k}, {v})"
        f"{clauses}{attrs}{region} -> {o}, {lse}\n{lay.take()}"
        f"  return {oa}, %lse : {O}, {lse}\n}}\n")


def backward_module(cfg: AttentionConfig) -> str:
    """`@backward(q, k, v, o, lse, do, [bias], [seed], [key_lengths]) ->
    (dq, dk, dv [, dbias])`: one attn.attention_backward (all but lse and
    the bias in the configuration's layout). Paged K/V have no backward
    (attn.attention_backward takes no block table)."""
    if cfg.block_table:
        raise ValueError("attention configuration: paged K/V (block_table) "
                         "have no backward")
    q, k, v, o, lse, bias = cfg._types()
    clauses, attrs, region = cfg._operands_and_attributes()
    lay = _Layout(cfg)
    Q, K, V, O = (lay.outer(t) for t in (q, k, v, o))
    qa, ka, va, oa, da = (lay.permute(n, lay.outer(t), t)
                          for n, t in (("q", q), ("k", k), ("v", v),
                                       ("o", o), ("do", o)))
    head = lay.take()
    results = [lay.permute(n, t, lay.outer(t))
               for n, t in (("dq", q), ("dk", k), ("dv", v))]
    names, types, outer = "%dq, %dk, %dv", [q, k, v], [Q, K, V]
    if cfg.bias_grad:
        names += ", %dbias"
        types.append(bias)
        outer.append(bias)
        results.append("%dbias")
    return (
        f"func.func @backward(%q: {Q}, %k: {K}, %v: {V}, %o: {O}, "
        f"%lse: {lse}, %do: {O}{cfg._extra_arguments()}) -> "
        f"({', '.join(outer)}) {{\n{head}"
        f"  {names} = attn.attention_backward ins({qa}, {ka}, {va} : "
        f"{q}, {k}, {v}) grad({oa}, %lse, {da} : {o}, {lse}, {o}){clauses}"
        f"{attrs}{region} -> {', '.join(types)}\n{lay.take()}"
        f"  return {', '.join(results)} : {', '.join(outer)}\n}}\n")


# --- the cache -------------------------------------------------------------

_MODULES = {"forward": forward_module, "backward": backward_module}
_memory: Dict[str, List[attnfuse.Kernel]] = {}
_lock = threading.Lock()
_library_digest: Optional[str] = None
_stats = {"memory": 0, "disk": 0, "compiled": 0}


def cache_dir() -> str:
    """Where compiled kernels are kept: $ATTNFUSE_CACHE_DIR, or
    ~/.cache/attnfuse/kernels."""
    return os.environ.get("ATTNFUSE_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "attnfuse", "kernels")


def cache_stats() -> Dict[str, int]:
    """How get_kernels answered so far in this process: from memory, from
    the disk cache, or by compiling."""
    return dict(_stats)


def _compiler_digest() -> str:
    """The SHA-256 of the C API library: the compiler the kernels came
    from (a rebuilt library is another compiler)."""
    global _library_digest
    if _library_digest is None:
        h = hashlib.sha256()
        with open(attnfuse.library_path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        _library_digest = h.hexdigest()
    return _library_digest


def _key(text: str, chip: str, options: str) -> str:
    h = hashlib.sha256()
    for part in (_compiler_digest(), chip, options, text):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


_FIELDS = ("name", "grid", "block", "dynamic_shared_memory_bytes",
           "argument_types", "argument_names", "tensor_maps")


def _write(entry: str, kernels: List[attnfuse.Kernel]) -> None:
    root = os.path.dirname(entry)
    os.makedirs(root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=root)
    try:
        meta = []
        for i, k in enumerate(kernels):
            with open(os.path.join(tmp, f"{i}.cubin"), "wb") as f:
                f.write(k.binary)
            meta.append({name: getattr(k, name) for name in _FIELDS})
        with open(os.path.join(tmp, "kernels.json"), "w") as f:
            json.dump(meta, f)
        try:
            os.rename(tmp, entry)
        except OSError:
            if not os.path.isdir(entry):
                raise
            # Another process put the same kernels there first.
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _read(entry: str) -> Optional[List[attnfuse.Kernel]]:
    try:
        with open(os.path.join(entry, "kernels.json")) as f:
            meta = json.load(f)
        kernels = []
        for i, m in enumerate(meta):
            with open(os.path.join(entry, f"{i}.cubin"), "rb") as f:
                binary = f.read()
            kernels.append(attnfuse.Kernel(
                m["name"], binary, tuple(m["grid"]), tuple(m["block"]),
                m["dynamic_shared_memory_bytes"], m["argument_types"],
                m["tensor_maps"], m["argument_names"]))
        return kernels
    except (OSError, ValueError, KeyError, TypeError):
        return None


def get_kernels(cfg: AttentionConfig, which: str) -> List[attnfuse.Kernel]:
    """The kernels of cfg's `which` ("forward": one kernel; "backward": the
    pre-pass, the backward and, unless dQ is f32, its conversion), in launch
    order, from memory, the disk cache or the compiler."""
    if which not in _MODULES:
        raise ValueError(f"which must be 'forward' or 'backward', got "
                         f"{which!r}")
    text = _MODULES[which](cfg)
    options = cfg.kernel_options(which)
    key = _key(text, cfg.chip, options)
    with _lock:
        if key in _memory:
            _stats["memory"] += 1
            return _memory[key]
        entry = os.path.join(cache_dir(), key[:2], key)
        kernels = _read(entry) if os.path.isdir(entry) else None
        if kernels is not None:
            _stats["disk"] += 1
        else:
            kernels = attnfuse.compile(
                text, target="cuda", chip=cfg.chip, kernel_options=options,
                source_name=f"attnfuse.attention_kernels:{which}").kernels
            _stats["compiled"] += 1
            if os.path.isdir(entry):  # unreadable: replace it
                shutil.rmtree(entry, ignore_errors=True)
            try:
                _write(entry, kernels)
            except OSError:
                pass  # a read-only or full cache costs a recompile, no more
        _memory[key] = kernels
        return kernels
