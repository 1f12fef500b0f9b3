"""attnfuse's fused attention as a PyTorch operator, with autograd.

    import attnfuse.torch as aft
    o = aft.attention(q, k, v, causal=True)            # q, k, v [B, H, N, D]
    o = aft.flash_attn_func(q, k, v, causal=True)      # q, k, v [B, N, H, D]
    o.sum().backward()                                 # attnfuse's backward

`attention` is called as F.scaled_dot_product_attention is (the is_causal
of SDPA is top-left aligned); `flash_attn_func` as flash_attn's (causal and
windows bottom-right aligned, [B, N, H, D]). Both take GQA/MQA by head
counts (K/V with fewer heads), a scale, a sliding window, a softcap, an
additive bias (broadcast to [B, Hq, Nq, Nk]) and dropout, in bf16, f16 or
f32 on CUDA.

Two custom operators (torch.library) do the work:
`attnfuse::attention_forward` (q, k, v, ...) -> (o, lse) and
`attnfuse::attention_backward` (do, q, k, v, o, lse, ...) -> (dq, dk, dv);
the forward's autograd saves O and lse and calls the backward, which
recomputes the probabilities from Q, K and lse (FlashAttention's backward;
the attn.attention_backward kernels). Both have fake implementations, so
torch.compile traces them without graph breaks. The kernels of each
configuration are compiled on first use through attnfuse's C API and
cached in memory and on disk (attnfuse.attention_kernels); a compile error
is an attnfuse.CompileError with the compiler's located diagnostics.

Dropout draws a seed per call from `generator` (default: torch's default
CPU generator, so torch.manual_seed makes runs repeatable); the backward
regenerates the forward's mask from the same seed.

deterministic=True: the backward's reruns are bitwise equal (dQ summed in
a fixed order by a kernel of its own; the default adds dQ by f32 atomics).

Layouts: Q, K, V (O, dO) that are all contiguous [B, H, N, D], or all
transposed views of contiguous [B, N, H, D] (flash_attn_func's, and what a
projection's view(B, N, H, D).transpose(1, 2) gives), are read in place,
and O, dQ, dK, dV are written in the same layout; others are copied to
contiguous [B, H, N, D] first.

The bias may require grad: the backward kernels then also write dBias (of
the bias's shape, summed over its broadcast dimensions; a broadcast bias by
f32 atomics, so not with deterministic=True).
"""
import os
from typing import Optional, Tuple

import torch

from . import attention_kernels as _kernels
from . import cuda_launch as _launch

__all__ = ["attention", "flash_attn_func", "flash_attn_with_kvcache",
           "kernel_options"]

# attnfuse::attention_forward's flags after q, k, v, bias, seed: causal,
# window_left, window_right, alignment, softcap, scale, dropout_p,
# deterministic (the backward's options).
_FLAGS = 8
# The element types of key lengths and block tables, as AttentionConfig
# names them.
_INDEX_TYPES = {torch.int32: "i32", torch.int64: "i64"}
_DTYPES = {torch.bfloat16: "bf16", torch.float16: "f16",
           torch.float32: "f32"}

# More attn-lower-to-nvvm-pipeline options for the kernels compiled from
# here on (kernel_options).
_options = ""


class kernel_options:
    """A context manager (and a setter, on entry) of more pipeline options
    for the kernels that calls in its scope compile or take from the cache,
    e.g. `with attnfuse.torch.kernel_options("mma=mma_sync kv-splits=8"):`
    (docs/Pipelines.md's attn-lower-to-nvvm-pipeline options; they are part
    of the cache key). A tuning knob: the defaults are chosen per shape."""

    def __init__(self, options: str):
        self.options = options

    def __enter__(self):
        global _options
        self.saved, _options = _options, self.options
        return self

    def __exit__(self, *exc):
        global _options
        _options = self.saved


def _chip(device: torch.device) -> str:
    """The chip to compile for: $ATTNFUSE_CHIP, else the device's
    (sm_90a on sm_90: the wgmma kernels need the arch-specific target)."""
    chip = os.environ.get("ATTNFUSE_CHIP")
    if chip:
        return chip
    major, minor = torch.cuda.get_device_capability(device)
    return f"sm_{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")


def _config(q, k, v, bias, layout, causal, window_left, window_right,
            alignment, softcap, scale, dropout_p, deterministic,
            bias_grad=False, key_lengths=None, block_table=None
            ) -> _kernels.AttentionConfig:
    # block_table: (element type, entries per batch) of paged K/V.
    paged = block_table is not None
    return _kernels.AttentionConfig(
        dtype=_DTYPES[q.dtype], batch=q.shape[0], heads_q=q.shape[1],
        heads_kv=k.shape[1],
        seq_q=q.shape[2],
        seq_k=block_table[1] * k.shape[2] if paged else k.shape[2],
        head_dim_qk=q.shape[3], head_dim_v=v.shape[3], causal=causal,
        window=(window_left, window_right), alignment=alignment,
        softcap=softcap, scale=scale,
        bias_shape=None if bias is None else tuple(bias.shape),
        bias_grad=bias_grad, dropout_p=dropout_p, chip=_chip(q.device),
        deterministic=deterministic, options=_options, layout=layout,
        key_lengths=key_lengths,
        block_table=block_table[0] if paged else None,
        page_size=k.shape[2] if paged else 0,
        pages=k.shape[0] if paged else 0)


def _in_layout(t: torch.Tensor, layout: str) -> bool:
    """Whether t ([B, H, N, D]) lies in memory as `layout` says: "bhnd"
    contiguous, "bnhd" a transposed view of a contiguous [B, N, H, D]."""
    return (t.transpose(1, 2) if layout == "bnhd" else t).is_contiguous()


def _layout(*tensors: torch.Tensor) -> str:
    """The layout the kernels read `tensors` ([B, H, N, D] each) in, without
    a copy where all lie alike: "bnhd" where each is a transposed view of a
    contiguous [B, N, H, D] (projections, flash_attn_func), else "bhnd"
    (those not contiguous are copied)."""
    if all(_in_layout(t, "bnhd") for t in tensors) and \
            not all(_in_layout(t, "bhnd") for t in tensors):
        return "bnhd"
    return "bhnd"


def _ready(t: Optional[torch.Tensor],
           layout: str = "bhnd") -> Optional[torch.Tensor]:
    """t as the kernels read it: in `layout` (a copy if it is not),
    16-byte aligned."""
    if t is None:
        return None
    if not _in_layout(t, layout):
        t = (t.transpose(1, 2).contiguous().transpose(1, 2)
             if layout == "bnhd" else t.contiguous())
    return t if t.data_ptr() % _launch.ALIGNMENT == 0 else \
        _empty_like(t, t.shape, layout).copy_(t)


def _empty_like(t: torch.Tensor, shape, layout: str,
                dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """An empty [B, H, N, D] tensor of `shape` in `layout`."""
    if layout == "bnhd":
        b, h, n, d = shape
        return t.new_empty((b, n, h, d), dtype=dtype).transpose(1, 2)
    return t.new_empty(shape, dtype=dtype)


def _seed_value(seed: Optional[torch.Tensor]) -> int:
    return 0 if seed is None else int(seed.item())


class _Launches:
    """The kernels of one call signature, prepared to launch
    (cuda_launch.PreparedLaunch each), and the split forward's number of
    key splits (its grid z; 0 without split keys)."""

    def __init__(self, kernels):
        self.launches = [_launch.PreparedLaunch(k) for k in kernels]
        # Split keys (kv-splits): the split forward's f32 partials, of its
        # grid z splits at batch index s * B + b, which the combine kernel
        # (grid z 1) merges (docs/GPU.md).
        self.splits = next((k.grid[2] for k in kernels
                            if "o_partial" in k.argument_names
                            and "q" in k.argument_names), 0)
        # dBias summed by atomics into an f32 accumulator (a bias shared by
        # several scores; convert-attn-to-gpu's BiasGradient).
        self.accumulates_bias = any("dbias_accum" in k.argument_names
                                    for k in kernels)

    def run(self, values, device) -> None:
        index = device.index if device.index is not None else \
            torch.cuda.current_device()
        if index != torch.cuda.current_device():
            with torch.cuda.device(index):
                return self.run(values, device)
        stream = _current_stream(index)
        for launch in self.launches:
            launch(values, stream)


def _current_stream(index: int) -> int:
    """The CUstream handle of PyTorch's current stream on device `index`."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(index)
    return torch.cuda.current_stream(index).cuda_stream


# The prepared kernels by call signature: everything _config reads, so that
# a repeated call neither writes the MLIR again nor hashes it.
_prepared = {}


def _launches(which, q, k, v, bias, *flags) -> _Launches:
    """The prepared `which` ("forward", "backward") kernels of a call; flags
    are _config's arguments after the bias (the layout first)."""
    key = (which, q.shape, k.shape, v.shape, q.dtype, q.device,
           None if bias is None else bias.shape, flags, _options,
           os.environ.get("ATTNFUSE_CHIP"))
    found = _prepared.get(key)
    if found is None:
        cfg = _config(q, k, v, bias, *flags)
        found = _prepared[key] = _Launches(_kernels.get_kernels(cfg, which))
    return found


def _forward_kernels(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
             bias: Optional[torch.Tensor], seed: Optional[torch.Tensor],
             causal: bool, window_left: int, window_right: int,
             alignment: str, softcap: float, scale: Optional[float],
             dropout_p: float, deterministic: bool,
             key_lengths: Optional[torch.Tensor] = None,
             block_table: Optional[torch.Tensor] = None
             ) -> Tuple[torch.Tensor, torch.Tensor]:
    layout = _layout(q, k, v)
    q, k, v = (_ready(t, layout) for t in (q, k, v))
    bias, key_lengths, block_table = (_ready(t) for t in
                                      (bias, key_lengths, block_table))
    launches = _launches(
        "forward", q, k, v, bias, layout, causal, window_left, window_right,
        alignment, softcap, scale, dropout_p, deterministic, False,
        _INDEX_TYPES.get(getattr(key_lengths, "dtype", None)),
        None if block_table is None else
        (_INDEX_TYPES[block_table.dtype], block_table.shape[1]))
    o = _empty_like(q, q.shape[:3] + (v.shape[3],), layout)
    lse = q.new_empty(q.shape[:3], dtype=torch.float32)
    values = {"q": q, "k": k, "v": v, "bias": bias,
              "seed": _seed_value(seed), "key_lengths": key_lengths,
              "block_table": block_table, "o": o, "lse": lse}
    if launches.splits:
        values["o_partial"] = o.new_empty(
            (launches.splits * o.shape[0],) + tuple(o.shape[1:]),
            dtype=torch.float32)
        values["lse_partial"] = lse.new_empty(
            (launches.splits * lse.shape[0],) + tuple(lse.shape[1:]))
    launches.run(values, q.device)
    return o, lse


_forward = torch.library.custom_op(
    "attnfuse::attention_forward", mutates_args=(),
    device_types="cuda")(_forward_kernels)


@_forward.register_fake
def _(q, k, v, bias, seed, causal, window_left, window_right, alignment,
      softcap, scale, dropout_p, deterministic, key_lengths=None,
      block_table=None):
    return (_empty_like(q, q.shape[:3] + (v.shape[3],), _layout(q, k, v)),
            q.new_empty(q.shape[:3], dtype=torch.float32))


def _backward_kernels(do: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
              v: torch.Tensor, o: torch.Tensor, lse: torch.Tensor,
              bias: Optional[torch.Tensor], seed: Optional[torch.Tensor],
              causal: bool, window_left: int, window_right: int,
              alignment: str, softcap: float, scale: Optional[float],
              dropout_p: float, deterministic: bool, bias_grad: bool
              ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                         torch.Tensor]:
    """dQ, dK, dV and dBias (of the bias's shape; an empty tensor without
    bias_grad)."""
    # (dO, often a broadcast or a fresh tensor, follows the inputs' layout.)
    layout = _layout(q, k, v, o)
    do, q, k, v, o = (_ready(t, layout) for t in (do, q, k, v, o))
    lse, bias = _ready(lse), _ready(bias)
    launches = _launches("backward", q, k, v, bias, layout, causal,
                         window_left, window_right, alignment, softcap, scale,
                         dropout_p, deterministic, bias_grad)
    # The f32 accumulator of the atomics (none in deterministic mode); for
    # f32 in [B, H, N, D] it is dQ (the backward has no conversion kernel).
    dq_accum = (None if deterministic
                else q.new_empty(q.shape, dtype=torch.float32))
    dq = (dq_accum if dq_accum is not None and q.dtype == torch.float32
          and layout == "bhnd" else _empty_like(q, q.shape, layout))
    dk, dv = (_empty_like(t, t.shape, layout) for t in (k, v))
    dbias = (bias.new_empty(bias.shape) if bias_grad else q.new_empty(0))
    dbias_accum = None
    if launches.accumulates_bias:
        dbias_accum = (dbias if dbias.dtype == torch.float32
                       else dbias.new_empty(dbias.shape, dtype=torch.float32))
    launches.run({"q": q, "k": k, "v": v, "o": o, "lse": lse, "do": do,
                  "bias": bias, "seed": _seed_value(seed),
                  "di": q.new_empty(q.shape[:3], dtype=torch.float32),
                  "dq_accum": dq_accum, "dq": dq, "dk": dk, "dv": dv,
                  "dbias": dbias, "dbias_accum": dbias_accum},
                 q.device)
    return dq, dk, dv, dbias


_backward = torch.library.custom_op(
    "attnfuse::attention_backward", mutates_args=(),
    device_types="cuda")(_backward_kernels)


@_backward.register_fake
def _(do, q, k, v, o, lse, bias, seed, causal, window_left, window_right,
      alignment, softcap, scale, dropout_p, deterministic, bias_grad):
    # In the layout the kernels write them in (as _backward_kernels).
    layout = _layout(q, k, v, o)
    dbias = bias.new_empty(bias.shape) if bias_grad else q.new_empty(0)
    if layout == "bhnd" and q.dtype == torch.float32 and not deterministic:
        return (q.new_empty(q.shape), k.new_empty(k.shape),
                v.new_empty(v.shape), dbias)
    return tuple(_empty_like(t, t.shape, layout) for t in (q, k, v)) + (
        dbias,)


def _setup_context(ctx, inputs, output):
    # The flags (causal ... deterministic), then the key lengths and block
    # table where given, which take no gradient (_check refuses them where
    # one is needed).
    q, k, v, bias, seed, *options = inputs
    options = options[:_FLAGS]
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse, bias, seed)
    ctx.options = options
    ctx.inputs = len(inputs)
    ctx.mark_non_differentiable(lse)


def _gradients_by(backward):
    """The autograd formula, with `backward` the backward operator or its
    kernels."""
    def gradients(ctx, do, _dlse):
        q, k, v, o, lse, bias, seed = ctx.saved_tensors
        bias_grad = ctx.needs_input_grad[3]
        dq, dk, dv, dbias = backward(do, q, k, v, o, lse, bias, seed,
                                     *ctx.options, bias_grad)
        return (dq, dk, dv, dbias if bias_grad else None) + \
            (None,) * (ctx.inputs - 4)
    return gradients


torch.library.register_autograd("attnfuse::attention_forward",
                                _gradients_by(_backward),
                                setup_context=_setup_context)


class _EagerAttention(torch.autograd.Function):
    """The custom operators' computation and autograd without their
    dispatch (tens of microseconds a call, as much as a decode kernel):
    what an eager call runs. torch.compile traces the custom operators."""

    @staticmethod
    def forward(ctx, *inputs):
        output = _forward_kernels(*inputs)
        _setup_context(ctx, inputs, output)
        return output

    backward = staticmethod(_gradients_by(_backward_kernels))


def _check(q, k, v, bias, window, dropout_p, generator, key_lengths=None,
           block_table=None):
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise ValueError(f"attnfuse.torch: {name} must be a 4-d tensor, "
                             f"got {getattr(t, 'shape', type(t).__name__)}")
        if t.dtype not in _DTYPES:
            raise TypeError(f"attnfuse.torch: {name} is {t.dtype}; the "
                            "kernels take bf16, f16 or f32")
        if not t.is_cuda:
            raise ValueError(f"attnfuse.torch: {name} is on {t.device}, not "
                             "a CUDA device")
    if len({q.dtype, k.dtype, v.dtype}) != 1:
        raise TypeError(f"attnfuse.torch: q, k, v must have one dtype, got "
                        f"{q.dtype}, {k.dtype}, {v.dtype}")
    if len({q.device, k.device, v.device}) != 1:
        raise ValueError("attnfuse.torch: q, k, v are on different devices")
    (b, hq, _, d), (bk, hkv, nk, dk), (bv, hv, nv, _) = (q.shape, k.shape,
                                                          v.shape)
    # Paged: K and V are [pages, Hkv, page_size, D], any number of pages.
    if (bk if block_table is None else b, dk) != (b, d) or \
            (bv, hv, nv) != (bk, hkv, nk):
        raise ValueError(
            f"attnfuse.torch: q {list(q.shape)}, k {list(k.shape)}, v "
            f"{list(v.shape)} do not fit [B, Hq, Nq, D], "
            + ("[pages, Hkv, page_size, D], [pages, Hkv, page_size, Dv]"
               if block_table is not None else
               "[B, Hkv, Nk, D], [B, Hkv, Nk, Dv]")
            + " (after the layout's transpose)")
    if bias is not None:
        if not isinstance(bias, torch.Tensor) or bias.dtype != q.dtype \
                or bias.device != q.device:
            raise TypeError(f"attnfuse.torch: the bias must be a {q.dtype} "
                            f"tensor on {q.device}")
    if len(window) != 2:
        raise ValueError(f"attnfuse.torch: window is (left, right), got "
                         f"{window}")
    if generator is not None and not dropout_p:
        raise ValueError("attnfuse.torch: a generator without dropout_p")
    if key_lengths is not None:
        if not isinstance(key_lengths, torch.Tensor) or \
                key_lengths.dtype not in _INDEX_TYPES or \
                tuple(key_lengths.shape) != (b,) or \
                key_lengths.device != q.device:
            raise ValueError(
                f"attnfuse.torch: key_lengths must be an int32 or int64 "
                f"tensor of shape [{b}] on {q.device}, got "
                f"{getattr(key_lengths, 'dtype', type(key_lengths).__name__)}"
                f" {list(getattr(key_lengths, 'shape', []))}")
    if block_table is not None and (
            not isinstance(block_table, torch.Tensor) or
            block_table.dtype not in _INDEX_TYPES or block_table.dim() != 2
            or block_table.shape[0] != b or block_table.shape[1] < 1 or
            block_table.device != q.device):
        raise ValueError(
            f"attnfuse.torch: block_table must be an int32 or int64 tensor "
            f"of shape [{b}, pages per sequence] on {q.device}, got "
            f"{getattr(block_table, 'dtype', type(block_table).__name__)} "
            f"{list(getattr(block_table, 'shape', []))}")
    if (key_lengths is not None or block_table is not None) and \
            torch.is_grad_enabled() and any(
                t is not None and t.requires_grad for t in (q, k, v, bias)):
        raise ValueError(
            "attnfuse.torch: key_lengths and block_table take no gradient "
            "yet (the GPU backward kernels do not read them); hide padded "
            "keys with a bias of -inf instead, or run under "
            "torch.no_grad()")


def _attention(q, k, v, *, causal, window, alignment, softcap, scale, bias,
               dropout_p, generator, return_lse, deterministic,
               key_lengths=None, block_table=None):
    """q, k, v in [B, H, N, D] (k, v [pages, H, page_size, D] paged)."""
    _check(q, k, v, bias, window, dropout_p, generator, key_lengths,
           block_table)
    seed = None
    if dropout_p:
        seed = torch.randint(0, 2 ** 62, (), dtype=torch.int64,
                             generator=generator,
                             device=generator.device if generator is not None
                             else "cpu")
    args = (q, k, v, bias, seed, bool(causal), int(window[0]),
            int(window[1]), alignment, float(softcap or 0.0),
            None if scale is None else float(scale), float(dropout_p),
            bool(deterministic), key_lengths, block_table)
    if torch.compiler.is_compiling():
        o, lse = _forward(*args)
    elif torch.is_grad_enabled() and any(
            t is not None and t.requires_grad for t in (q, k, v, bias)):
        o, lse = _EagerAttention.apply(*args)
    else:
        o, lse = _forward_kernels(*args)
    return (o, lse) if return_lse else o


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *,
              causal: bool = False, window: Tuple[int, int] = (-1, -1),
              alignment: str = "top_left", softcap: Optional[float] = None,
              scale: Optional[float] = None,
              bias: Optional[torch.Tensor] = None, dropout_p: float = 0.0,
              generator: Optional[torch.Generator] = None,
              return_lse: bool = False, deterministic: bool = False,
              key_lengths: Optional[torch.Tensor] = None,
              block_table: Optional[torch.Tensor] = None):
    """softmax(mask(softcap(scale * q k^T) + bias)) v with dropout, as
    SDPA computes it, in one fused kernel; q [B, Hq, Nq, Dqk], k
    [B, Hkv, Nk, Dqk], v [B, Hkv, Nk, Dv] with Hq a multiple of Hkv.

    causal: keys after the query's (top-left aligned by default, as SDPA's
    is_causal). window: (left, right) keys around the aligned diagonal, -1
    unbounded. scale: default 1/sqrt(Dqk). softcap: softcap *
    tanh(s / softcap) of the scaled scores s. bias: added after the
    softcap, broadcast to [B, Hq, Nq, Nk]. return_lse: also the f32 row
    log-sum-exp [B, Hq, Nq] (not differentiable). deterministic: a backward
    whose reruns are bitwise equal (dQ summed in a fixed order by a kernel
    of its own, not by atomics). key_lengths: int32/int64 [B], batch b
    attends to its first clamp(key_lengths[b], 0, Nk) keys (a KV cache
    filled to different lengths; with alignment "bottom_right" the last
    query sees the batch's last key); a row that sees no key gets O = 0
    and lse = -inf; the keys past a length are never read, whatever they
    hold (forward only: no gradient). block_table: int32/int64 [B, P] over
    paged k, v [pages, Hkv, page_size, D]: key position j of batch b is
    slot j mod page_size of page block_table[b, j // page_size] (Nk = P *
    page_size; an id out of range hides its page's keys; forward only).
    Returns O [B, Hq, Nq, Dv]."""
    return _attention(q, k, v, causal=causal, window=window,
                      alignment=alignment, softcap=softcap, scale=scale,
                      bias=bias, dropout_p=dropout_p, generator=generator,
                      return_lse=return_lse, deterministic=deterministic,
                      key_lengths=key_lengths, block_table=block_table)


def flash_attn_func(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                    dropout_p: float = 0.0,
                    softmax_scale: Optional[float] = None,
                    causal: bool = False,
                    window_size: Tuple[int, int] = (-1, -1),
                    softcap: float = 0.0, deterministic: bool = False,
                    return_lse: bool = False,
                    generator: Optional[torch.Generator] = None):
    """flash_attn.flash_attn_func's calling convention: q [B, Nq, Hq, D],
    k, v [B, Nk, Hkv, D]; causal and windows aligned bottom-right (the last
    query sees the last key). Q, K, V contiguous [B, N, H, D] are read in
    place. Returns O [B, Nq, Hq, Dv] (contiguous where they are) and, with
    return_lse, lse [B, Hq, Nq]."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise ValueError(f"attnfuse.torch: {name} must be a 4-d tensor "
                             "[B, N, H, D]")
    out = _attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                     causal=causal, window=window_size,
                     alignment="bottom_right", softcap=softcap,
                     scale=softmax_scale, bias=None, dropout_p=dropout_p,
                     generator=generator, return_lse=return_lse,
                     deterministic=deterministic)
    if return_lse:
        return out[0].transpose(1, 2), out[1]
    return out.transpose(1, 2)


def flash_attn_with_kvcache(q: torch.Tensor, k_cache: torch.Tensor,
                            v_cache: torch.Tensor,
                            cache_seqlens: Optional[torch.Tensor] = None,
                            block_table: Optional[torch.Tensor] = None,
                            softmax_scale: Optional[float] = None,
                            causal: bool = False,
                            window_size: Tuple[int, int] = (-1, -1),
                            softcap: float = 0.0,
                            return_softmax_lse: bool = False):
    """flash_attn.flash_attn_with_kvcache's calling convention for decode
    over a cache that already holds the new tokens' keys: q [B, Nq, Hq, D],
    k_cache, v_cache [B, Nk, Hkv, D], cache_seqlens int32/int64 [B] (or
    None: every cache full); with block_table [B, P], paged caches
    [pages, page_size, Hkv, D]; causal and windows aligned bottom-right at
    each batch's length (FlashAttention's). Read in place; no gradient.
    Returns O [B, Nq, Hq, Dv] and, with return_softmax_lse, lse
    [B, Hq, Nq]."""
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise ValueError(f"attnfuse.torch: {name} must be a 4-d tensor "
                             "[B, N, H, D]")
    out = _attention(q.transpose(1, 2), k_cache.transpose(1, 2),
                     v_cache.transpose(1, 2), causal=causal,
                     window=window_size, alignment="bottom_right",
                     softcap=softcap, scale=softmax_scale, bias=None,
                     dropout_p=0.0, generator=None,
                     return_lse=return_softmax_lse, deterministic=False,
                     key_lengths=cache_seqlens, block_table=block_table)
    if return_softmax_lse:
        return out[0].transpose(1, 2), out[1]
    return out.transpose(1, 2)
