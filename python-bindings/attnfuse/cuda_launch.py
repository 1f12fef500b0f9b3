"""Launch attnfuse's compiled CUDA kernels from Python, without MLIR.

scripts/build-gpu-artifacts.sh writes, per attention configuration, a cubin
and a JSON description (kernel name, grid, block, shared memory, argument
layout). This module loads the cubin with the CUDA driver API through ctypes
(libcuda.so.1: cuModuleLoadData, cuModuleGetFunction, cuFuncSetAttribute,
cuLaunchKernel) and launches it on PyTorch tensors (their data_ptr) on
PyTorch's current stream. Kernel arguments follow MLIR's bare-pointer calling
convention: each memref is one pointer to a contiguous row-major buffer, the
dropout seed an i64.

    k = AttentionKernel("path/to/config.json")
    o, lse = k(q, k_, v)                      # plus bias, keep, seed if any

or, for a kernel compiled in the same process by attnfuse.compile(...,
target="cuda") (an attnfuse.Kernel):

    launch(kernel, q, k_, v, o, lse)          # in the kernel's argument order

Kernels that load Q, K and V by TMA (the wgmma family where the rows allow)
also take, after lse, a pointer per operand to a CUtensorMap in device
memory. The caller never passes those: the launchers encode each map from
its source tensor's address (encode_tensor_map, cuTensorMapEncodeTiled) and
copy it to the device (device_tensor_map), once per source address.
test/GPU/launch_kernel.py, which runs without PyTorch, encodes through the
same encode_tensor_map (this module imports torch only inside functions).
"""
import ctypes
import functools
import json
import os

_TORCH_DTYPES = None


def _torch_dtype(name):
    global _TORCH_DTYPES
    import torch
    if _TORCH_DTYPES is None:
        _TORCH_DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16,
                         "f32": torch.float32, "f64": torch.float64,
                         "i1": torch.bool, "i32": torch.int32,
                         "i64": torch.int64}
    return _TORCH_DTYPES[name]


class CudaError(RuntimeError):
    pass


# The kernels copy 16-byte pieces of Q, K and V rows and load bias elements
# in pairs; a misaligned base would fault on the device (as FlashAttention's
# kernels, they take 16-byte aligned tensors). cuTensorMapEncodeTiled also
# wants a 16-byte aligned global address.
ALIGNMENT = 16


def _check_aligned(what, tensor):
    if tensor.data_ptr() % ALIGNMENT:
        raise ValueError(f"{what}: the data pointer {tensor.data_ptr():#x} is "
                         f"not {ALIGNMENT}-byte aligned (a view at an offset?"
                         " pass .clone())")


class _Driver:
    _lib = None

    @classmethod
    def get(cls):
        if cls._lib is None:
            lib = ctypes.CDLL("libcuda.so.1")
            for fn, args in {
                "cuInit": [ctypes.c_uint],
                "cuModuleLoadData": [ctypes.POINTER(ctypes.c_void_p),
                                     ctypes.c_void_p],
                "cuModuleGetFunction": [ctypes.POINTER(ctypes.c_void_p),
                                        ctypes.c_void_p, ctypes.c_char_p],
                "cuFuncSetAttribute": [ctypes.c_void_p, ctypes.c_int,
                                       ctypes.c_int],
                "cuFuncGetAttribute": [ctypes.POINTER(ctypes.c_int),
                                       ctypes.c_int, ctypes.c_void_p],
                "cuLaunchKernel": [ctypes.c_void_p] + [ctypes.c_uint] * 6 +
                                  [ctypes.c_uint, ctypes.c_void_p,
                                   ctypes.POINTER(ctypes.c_void_p),
                                   ctypes.POINTER(ctypes.c_void_p)],
                "cuGetErrorString": [ctypes.c_int,
                                     ctypes.POINTER(ctypes.c_char_p)],
                "cuCtxGetCurrent": [ctypes.POINTER(ctypes.c_void_p)],
            }.items():
                getattr(lib, fn).argtypes = args
                getattr(lib, fn).restype = ctypes.c_int
            cls._lib = lib
            cls.check(lib.cuInit(0), "cuInit")
        return cls._lib

    @classmethod
    def check(cls, status, what):
        if status != 0:
            msg = ctypes.c_char_p()
            cls._lib.cuGetErrorString(status, ctypes.byref(msg))
            raise CudaError(f"{what} failed: {status} "
                            f"({msg.value.decode() if msg.value else '?'})")


CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_FUNC_ATTRIBUTE_NUM_REGS = 4


# --- tensor maps (TMA) ---------------------------------------------------------

# CUtensorMapDataType, CUtensorMapSwizzle and CUtensorMapL2promotion
# (cuda.h); the specs count swizzle and L2 promotion in bytes.
CU_TENSOR_MAP_DATA_TYPE = {"f16": 6, "f32": 7, "bf16": 9}
CU_TENSOR_MAP_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}
CU_TENSOR_MAP_L2_PROMOTION = {0: 0, 64: 1, 128: 2, 256: 3}
CU_TENSOR_MAP_INTERLEAVE_NONE = 0
CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0  # out-of-bounds elements read as zeros
TENSOR_MAP_BYTES = 128  # sizeof(CUtensorMap)
TENSOR_MAP_ALIGNMENT = 64  # alignof(CUtensorMap), in host and device memory
_TENSOR_MAP_ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4}

_encode_lib = None


def _tensor_map_driver():
    """libcuda.so.1 with only what encoding needs declared, on a handle of
    its own: test/GPU/launch_kernel.py (and the stand-in driver of the lit
    tests, which lacks _Driver's cuFuncGetAttribute) encode through here
    without _Driver."""
    global _encode_lib
    if _encode_lib is None:
        lib = ctypes.CDLL("libcuda.so.1")
        u32p = ctypes.POINTER(ctypes.c_uint32)
        u64p = ctypes.POINTER(ctypes.c_uint64)
        for fn, args in {
            "cuInit": [ctypes.c_uint],
            "cuTensorMapEncodeTiled": [
                ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32,
                ctypes.c_void_p, u64p, u64p, u32p, u32p, ctypes.c_int,
                ctypes.c_int, ctypes.c_int, ctypes.c_int],
            "cuGetErrorString": [ctypes.c_int,
                                 ctypes.POINTER(ctypes.c_char_p)],
        }.items():
            getattr(lib, fn).argtypes = args
            getattr(lib, fn).restype = ctypes.c_int
        # Driver calls before cuInit fail with CUDA_ERROR_NOT_INITIALIZED;
        # cuInit is idempotent, so a process that did it already is fine.
        status = lib.cuInit(0)
        if status != 0:
            raise CudaError(f"cuInit failed: {status} "
                            f"({_error_string(lib, status)})")
        _encode_lib = lib
    return _encode_lib


def _error_string(lib, status):
    msg = ctypes.c_char_p()
    lib.cuGetErrorString(status, ctypes.byref(msg))
    return msg.value.decode() if msg.value else "?"


def encode_tensor_map(spec, address):
    """The 128 bytes of the CUtensorMap for a TMA view of the contiguous
    tensor at device address `address`, by cuTensorMapEncodeTiled.

    `spec` is a tensor-map description as bench/extract_kernels.py writes
    it in a kernel's args ("kind": "tensormap") and as
    attnfuse.Kernel.tensor_maps holds it: "dtype" (f16, bf16, f32), "dims"
    (the source's shape), "box" (elements per copy) and, for a strided view
    of the buffer at `address`, "strides" (elements), all outermost
    dimension first, "swizzle" and "l2_promotion" in bytes. Raises
    CudaError with the driver's message if the driver refuses it."""
    dtype, dims, box = spec["dtype"], list(spec["dims"]), list(spec["box"])
    if dtype not in CU_TENSOR_MAP_DATA_TYPE:
        raise ValueError(f"tensor map: unsupported element type {dtype}")
    if spec["swizzle"] not in CU_TENSOR_MAP_SWIZZLE:
        raise ValueError(f"tensor map: swizzle of {spec['swizzle']} bytes")
    if spec["l2_promotion"] not in CU_TENSOR_MAP_L2_PROMOTION:
        raise ValueError(f"tensor map: L2 promotion of "
                         f"{spec['l2_promotion']} bytes")
    if len(dims) != len(box) or not 1 <= len(dims) <= 5:
        raise ValueError(f"tensor map: dims {dims} and box {box} must have "
                         "the same rank, 1 to 5")
    rank = len(dims)
    # The driver's arrays are innermost dimension first; globalStrides has
    # the byte strides of dimensions 1 .. rank-1 (dimension 0's is the
    # element size): a strided view's ("strides", in elements, outermost
    # first: Q, K, V read in place in [B, N, H, D]), else the contiguous
    # tensor's.
    size = _TENSOR_MAP_ELEMENT_BYTES[dtype]
    view = list(spec.get("strides") or [])
    if view:
        if len(view) != rank or view[-1] != 1:
            raise ValueError(f"tensor map: strides {view} for dims {dims}")
        strides = [size * s for s in reversed(view[:-1])]
    else:
        strides, stride = [], size
        for d in reversed(dims[1:]):
            stride *= d
            strides.append(stride)
    u32, u64 = ctypes.c_uint32, ctypes.c_uint64
    c_dims = (u64 * rank)(*reversed(dims))
    c_strides = (u64 * max(1, rank - 1))(*strides)
    c_box = (u32 * rank)(*reversed(box))
    c_elem = (u32 * rank)(*[1] * rank)
    # A CUtensorMap is 64-byte aligned: encode into an aligned spot of a
    # larger buffer.
    raw = ctypes.create_string_buffer(TENSOR_MAP_BYTES + TENSOR_MAP_ALIGNMENT)
    at = -ctypes.addressof(raw) % TENSOR_MAP_ALIGNMENT
    spot = ctypes.addressof(raw) + at
    lib = _tensor_map_driver()
    status = lib.cuTensorMapEncodeTiled(
        ctypes.c_void_p(spot), CU_TENSOR_MAP_DATA_TYPE[dtype], rank,
        ctypes.c_void_p(address), c_dims, c_strides, c_box, c_elem,
        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE[spec["swizzle"]],
        CU_TENSOR_MAP_L2_PROMOTION[spec["l2_promotion"]],
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if status != 0:
        raise CudaError(
            f"cuTensorMapEncodeTiled failed: {status} "
            f"({_error_string(lib, status)}) for {dtype} dims {dims} box "
            f"{box} swizzle {spec['swizzle']} l2_promotion "
            f"{spec['l2_promotion']} at {address:#x}")
    return raw.raw[at:at + TENSOR_MAP_BYTES]


def _check_tensor_map_source(what, spec, tensor):
    """A source tensor must hold the elements the map describes: the map,
    not the tensor, says how far TMA reads."""
    n = 1
    for d in spec["dims"]:
        n *= d
    if tensor.numel() != n or tensor.dtype != _torch_dtype(spec["dtype"]):
        raise ValueError(
            f"{what}: its tensor map describes {spec['dtype']} "
            f"{list(spec['dims'])}, got {tensor.dtype} {list(tensor.shape)}")


def device_tensor_map(spec, tensor, stream=None):
    """encode_tensor_map(spec, tensor.data_ptr()) in a new uint8 CUDA tensor
    on tensor's device (the caching allocator's blocks are 512-byte aligned),
    copied on `stream` (a CUstream handle; default the current stream) so
    that kernels launched on it after this call see it."""
    import torch
    data = encode_tensor_map(spec, tensor.data_ptr())
    host = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    ctx = (torch.cuda.stream(torch.cuda.ExternalStream(
        stream, device=tensor.device)) if stream is not None
        else torch.cuda.device(tensor.device))
    with ctx:
        dev = host.to(tensor.device)
    assert dev.data_ptr() % TENSOR_MAP_ALIGNMENT == 0
    return dev


class _TensorMapCache:
    """Device copies of tensor maps by (spec, source address, device): a map
    depends on nothing else, so a benchmark's repeated launches on the same
    tensors neither encode nor copy again, and a new tensor at a freed
    one's address rightly reuses its map. Holds the device tensors alive;
    when a launch's maps would take it past LIMIT entries, it synchronizes
    the device and starts over first, so that no launch in flight (nor the
    one being prepared) reads a freed map."""
    LIMIT = 64

    def __init__(self):
        self._maps = {}

    @staticmethod
    def _key(spec, tensor):
        return (spec["dtype"], tuple(spec["dims"]),
                tuple(spec.get("strides") or ()), tuple(spec["box"]),
                spec["swizzle"], spec["l2_promotion"], tensor.data_ptr(),
                tensor.device.index)

    def device_maps(self, pairs, stream=None):
        """The device tensors of the maps of [(spec, source tensor)], in
        order; the new ones are copied on `stream`."""
        keys = [self._key(spec, t) for spec, t in pairs]
        missing = {k for k in keys if k not in self._maps}
        if missing and len(self._maps) + len(missing) > self.LIMIT:
            import torch
            torch.cuda.synchronize()
            self._maps.clear()
        for key, (spec, t) in zip(keys, pairs):
            if key not in self._maps:
                self._maps[key] = device_tensor_map(spec, t, stream)
        return [self._maps[k] for k in keys]


def _memref_holder(a, v):
    """The pointer to the tensor `v` passed for the JSON argument `a` (a
    memref: contiguous, on the GPU, of its shape and dtype, aligned)."""
    if (list(v.shape) != a["shape"] or not v.is_contiguous()
            or v.dtype != _torch_dtype(a["dtype"]) or not v.is_cuda):
        raise ValueError(
            f"argument {a['name']}: expected contiguous "
            f"{a['dtype']} {a['shape']} on the GPU, got "
            f"{v.dtype} {list(v.shape)}")
    _check_aligned(f"argument {a['name']}", v)
    return ctypes.c_void_p(v.data_ptr())


def _i64_holder(v):
    """A scalar argument of the JSON (the dropout seed): an i64."""
    return ctypes.c_int64(int(v))


def _pointer_holder(i):
    """For argument `i` of type "ptr" of an attnfuse.Kernel: the pointer to
    its tensor (a contiguous, aligned CUDA tensor)."""
    def holder(v):
        import torch
        if not (isinstance(v, torch.Tensor) and v.is_cuda
                and v.is_contiguous()):
            raise ValueError(f"argument {i}: expected a contiguous CUDA "
                             "tensor")
        _check_aligned(f"argument {i}", v)
        return ctypes.c_void_p(v.data_ptr())
    return holder


_SCALARS = {"i64": ctypes.c_int64, "i32": ctypes.c_int32,
            "f32": ctypes.c_float, "f64": ctypes.c_double}


def _scalar_holder(i, t):
    """For argument `i` of scalar type `t` of an attnfuse.Kernel: its value
    as that C type."""
    def holder(v):
        if t not in _SCALARS:
            raise ValueError(f"argument {i}: unsupported type {t}")
        return _SCALARS[t](v)
    return holder


def _launch(func, grid, block, shared_bytes, params, values, tensor_maps,
            stream=None, check_sources=False):
    """Launches the loaded CUfunction `func` on `stream` (a CUstream handle;
    default PyTorch's current stream), checking every value: the launcher
    of launch() and AttentionKernel (PreparedLaunch is the unchecked one of
    callers that built the values themselves).

    `params` describes every kernel argument in order: a callable that turns
    the value passed for it into its ctypes holder (checking the value), or,
    for a tensor-map argument, its spec (encode_tensor_map's, with "source":
    the index among all the arguments of the tensor it views). `values` are
    the passed arguments, in order, the tensor maps left out. Every passed
    value is checked before any tensor map is built; with check_sources, each
    map's source must also be a tensor of the elements the map describes.
    The maps' device copies come from `tensor_maps` (a _TensorMapCache)."""
    import torch
    if stream is None:
        stream = torch.cuda.current_stream().cuda_stream
    passed = [i for i, p in enumerate(params) if callable(p)]
    by_index = dict(zip(passed, values))
    holders = [params[i](by_index[i]) if callable(params[i]) else None
               for i in range(len(params))]
    maps = [(i, p) for i, p in enumerate(params) if not callable(p)]
    if check_sources:
        for i, m in maps:
            source = by_index.get(m["source"])
            if not isinstance(source, torch.Tensor):
                raise ValueError(f"tensor map argument {i}: its source, "
                                 f"argument {m['source']}, is not a tensor")
            _check_tensor_map_source(f"argument {m['source']}", m, source)
    devs = tensor_maps.device_maps(
        [(m, by_index[m["source"]]) for _, m in maps], stream)
    for (i, _), dev in zip(maps, devs):
        holders[i] = ctypes.c_void_p(dev.data_ptr())
    c_params = (ctypes.c_void_p * len(holders))(
        *[ctypes.cast(ctypes.byref(h), ctypes.c_void_p) for h in holders])
    _Driver.check(_Driver.get().cuLaunchKernel(
        func, grid[0], grid[1], grid[2], block[0], block[1], block[2],
        shared_bytes, ctypes.c_void_p(stream), c_params, None),
        "cuLaunchKernel")


class AttentionKernel:
    """One compiled attn.attention: call it with torch tensors."""

    def __init__(self, json_path, kernel_index=0):
        _ensure_context()
        with open(json_path) as f:
            self.meta = json.load(f)
        self.kernel = self.meta["kernels"][kernel_index]
        # The cubin when there is one; else the PTX, which the driver
        # compiles for the GPU at hand (e.g. sm_80 PTX on an sm_90 GPU).
        binary = os.path.join(os.path.dirname(json_path),
                              self.meta["binary"].replace(".ptx", ".cubin"))
        if not os.path.exists(binary):
            binary = os.path.join(os.path.dirname(json_path),
                                  self.meta["binary"])
        with open(binary, "rb") as f:
            self._image = f.read()
        self.binary_kind = "cubin" if binary.endswith(".cubin") else "ptx"
        lib = _Driver.get()
        self._module = ctypes.c_void_p()
        # PTX is NUL-terminated text for cuModuleLoadData.
        buf = ctypes.create_string_buffer(
            self._image, len(self._image) + (self.binary_kind == "ptx"))
        _Driver.check(lib.cuModuleLoadData(ctypes.byref(self._module), buf),
                      "cuModuleLoadData")
        self._func = ctypes.c_void_p()
        _Driver.check(lib.cuModuleGetFunction(
            ctypes.byref(self._func), self._module,
            self.kernel["name"].encode()), "cuModuleGetFunction")
        dyn = self.kernel.get("dynamic_shared_bytes", 0)
        if dyn > 48 * 1024:
            _Driver.check(lib.cuFuncSetAttribute(
                self._func, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                dyn), "cuFuncSetAttribute")
        regs = ctypes.c_int()
        _Driver.check(lib.cuFuncGetAttribute(
            ctypes.byref(regs), CU_FUNC_ATTRIBUTE_NUM_REGS, self._func),
            "cuFuncGetAttribute")
        self.num_regs = regs.value
        # What the caller passes: not the outputs, and not the tensor maps,
        # which launch builds.
        self.inputs = [a for a in self.kernel["args"]
                       if a["name"] not in ("o", "lse")
                       and a.get("kind") != "tensormap"]
        self._tensor_maps = _TensorMapCache()

    def output_buffers(self, fill=float("nan"), guard=0):
        """(out, lse) filled with `fill`. With guard > 0 each is the middle
        of a buffer `guard` elements longer on both sides (also filled), so
        that a stray write before or after it shows: see guard_intact."""
        import torch
        outs = {}
        for a in self.kernel["args"]:
            if a["name"] in ("o", "lse") and a.get("kind") == "memref":
                n = 1
                for d in a["shape"]:
                    n *= d
                buf = torch.full([n + 2 * guard], fill,
                                 dtype=_torch_dtype(a["dtype"]), device="cuda")
                outs[a["name"]] = buf[guard:guard + n].view(a["shape"])
        return outs["o"], outs["lse"]

    def launch(self, *inputs, out=None, lse=None, stream=None):
        """Launches on (inputs..., out, lse); allocates out/lse when absent.
        Inputs in the order of the JSON's args (q, k, v, [bias], [keep],
        [seed]); tensors must be contiguous, on the GPU, of the compiled
        shapes and dtypes. The tensor maps of a TMA kernel (args of kind
        "tensormap", after lse) are not passed: they are encoded from their
        source tensors and copied to the device on the first launch on
        those tensors' addresses, then reused."""
        if out is None or lse is None:
            out, lse = self.output_buffers()
        values = list(inputs) + [out, lse]
        passed = [a for a in self.kernel["args"] if a.get("kind") != "tensormap"]
        if len(values) != len(passed):
            raise ValueError(f"expected {len(passed)} args ("
                             f"{', '.join(a['name'] for a in passed)})")
        params = [a if a.get("kind") == "tensormap"
                  else functools.partial(_memref_holder, a)
                  if a["kind"] == "memref" else _i64_holder
                  for a in self.kernel["args"]]
        _launch(self._func, self.kernel["grid"], self.kernel["block"],
                self.kernel.get("dynamic_shared_bytes", 0), params, values,
                self._tensor_maps, stream)
        return out, lse

    __call__ = launch


def guard_intact(t, guard, fill=float("nan")):
    """Whether the `guard` elements around an output_buffers view still hold
    `fill` (bitwise, so NaN compares equal to NaN)."""
    import torch
    if guard == 0:
        return True
    base = t._base if t._base is not None else t
    start = t.storage_offset() - base.storage_offset()
    bands = torch.cat([base[start - guard:start],
                       base[start + t.numel():start + t.numel() + guard]])
    ref = torch.full_like(bands, fill)
    bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[bands.element_size()]
    return bool(torch.equal(bands.view(bits), ref.view(bits)))


_LOADED = {}
_TENSOR_MAPS = _TensorMapCache()
_CONTEXT_READY = False


def _ensure_context():
    """Makes PyTorch's primary context current (once per process)."""
    global _CONTEXT_READY
    if not _CONTEXT_READY:
        import torch
        torch.cuda.init()
        torch.zeros(1, device="cuda")
        _CONTEXT_READY = True


def _current_context() -> int:
    """The current CUcontext (PyTorch's primary context of the current
    device; made current first if there is none)."""
    ctx = ctypes.c_void_p()
    _Driver.check(_Driver.get().cuCtxGetCurrent(ctypes.byref(ctx)),
                  "cuCtxGetCurrent")
    if not ctx.value:
        _ensure_context()
        _Driver.check(_Driver.get().cuCtxGetCurrent(ctypes.byref(ctx)),
                      "cuCtxGetCurrent")
    return ctx.value


def _load(kernel, context=None):
    """The CUfunction of an attnfuse.Kernel in `context` (default: the
    current one), its module loaded once per context: a module and its
    functions belong to the context that loaded them (one per GPU)."""
    key = (context or _current_context(), kernel.name, kernel.binary)
    if key not in _LOADED:
        lib = _Driver.get()
        module, func = ctypes.c_void_p(), ctypes.c_void_p()
        image = ctypes.create_string_buffer(kernel.binary, len(kernel.binary))
        _Driver.check(lib.cuModuleLoadData(ctypes.byref(module), image),
                      "cuModuleLoadData")
        _Driver.check(lib.cuModuleGetFunction(ctypes.byref(func), module,
                                              kernel.name.encode()),
                      "cuModuleGetFunction")
        if kernel.dynamic_shared_memory_bytes > 48 * 1024:
            _Driver.check(lib.cuFuncSetAttribute(
                func, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                kernel.dynamic_shared_memory_bytes), "cuFuncSetAttribute")
        _LOADED[key] = (module, image, func)
    return _LOADED[key][2]


def launch(kernel, *args, stream=None):
    """Launches an attnfuse.Kernel (from attnfuse.compile(..., target="cuda"))
    on `args` in its argument order: torch CUDA tensors (contiguous) for
    "ptr" arguments, Python numbers for scalars. The tensor-map arguments of
    a TMA kernel (kernel.tensor_maps) are left out of `args`: launch encodes
    each from its source tensor (its "source" counts all the kernel's
    arguments) and passes a device copy in its place. Returns nothing;
    outputs are written into the tensors passed for them."""
    missing = [a for a in ("name", "binary", "grid", "block",
                           "dynamic_shared_memory_bytes", "argument_types")
               if not hasattr(kernel, a)]
    if missing:  # (this module is also imported without the package)
        raise TypeError(f"kernel must be an attnfuse.Kernel, got "
                        f"{type(kernel).__name__} (no {', '.join(missing)})")
    maps = {m["argument"]: m for m in getattr(kernel, "tensor_maps", [])}
    passed = [i for i in range(len(kernel.argument_types)) if i not in maps]
    if len(args) != len(passed):
        raise ValueError(
            f"{kernel.name} takes {len(passed)} arguments "
            f"({[kernel.argument_types[i] for i in passed]})"
            + (f" and {len(maps)} tensor maps that launch() builds"
               if maps else "") + f", got {len(args)}")
    if -1 in kernel.grid or -1 in kernel.block:
        raise ValueError(f"{kernel.name}: launch sizes are not constants")
    _ensure_context()
    func = _load(kernel)
    params = [maps[i] if i in maps
              else _pointer_holder(i) if t == "ptr" else _scalar_holder(i, t)
              for i, t in enumerate(kernel.argument_types)]
    _launch(func, kernel.grid, kernel.block, kernel.dynamic_shared_memory_bytes,
            params, args, _TENSOR_MAPS, stream, check_sources=True)


class PreparedLaunch:
    """The launch of one attnfuse.Kernel with argument names, prepared once
    for callers that launch it many times on values they built themselves
    (attnfuse.torch: every tensor in the layout, aligned and of the shape
    the kernel was compiled for, since these are part of its cache key).
    The parameter array (ctypes holders, a pointer to each) is built on
    construction, the module loaded by the first launch in each context
    (one per GPU); a launch sets the holders' values from `values` (by
    argument name, as launch_named) and calls cuLaunchKernel: no per-call checks of shapes, dtypes or alignment (use
    launch_named for values nobody checked). Tensor maps come from the
    module's cache, looked up again only when their sources' addresses
    change (the device copies in use are held here, alive even when the
    cache starts over). Thread-safe (a lock around the shared holders)."""

    def __init__(self, kernel):
        import threading
        if not getattr(kernel, "argument_names", None):
            raise ValueError(f"{kernel.name}: the kernel does not name its "
                             "arguments")
        if -1 in kernel.grid or -1 in kernel.block:
            raise ValueError(f"{kernel.name}: launch sizes are not constants")
        self.kernel = kernel
        # The CUfunction by context, loaded by the first launch in each
        # (one per GPU a process launches on).
        self._funcs = {}
        maps = {m["argument"]: m for m in kernel.tensor_maps}
        self._holders, self._pointers, self._scalars = [], [], []
        self._maps = []  # (holder index, spec, source argument name)
        for i, (t, name) in enumerate(zip(kernel.argument_types,
                                          kernel.argument_names)):
            if i in maps:
                h = ctypes.c_void_p()
                self._maps.append((i, maps[i],
                                   kernel.argument_names[maps[i]["source"]]))
            elif t == "ptr":
                h = ctypes.c_void_p()
                self._pointers.append((h, name))
            elif t in _SCALARS:
                h = _SCALARS[t]()
                self._scalars.append((h, name))
            else:
                raise ValueError(f"{kernel.name}: argument {i}: unsupported "
                                 f"type {t}")
            self._holders.append(h)
        self._params = (ctypes.c_void_p * len(self._holders))(
            *[ctypes.cast(ctypes.byref(h), ctypes.c_void_p)
              for h in self._holders])
        self._map_sources = None
        self._lock = threading.Lock()
        self._launch = _Driver.get().cuLaunchKernel

    def __call__(self, values, stream):
        """Launches on the CUstream handle `stream` (an int)."""
        k = self.kernel
        context = _current_context()
        func = self._funcs.get(context)
        if func is None:
            func = self._funcs[context] = _load(k, context)
        with self._lock:
            for h, name in self._pointers:
                h.value = values[name].data_ptr()
            for h, name in self._scalars:
                h.value = values[name]
            if self._maps:
                sources = tuple(values[n].data_ptr() for _, _, n in self._maps)
                if sources != self._map_sources:
                    devs = _TENSOR_MAPS.device_maps(
                        [(spec, values[n]) for _, spec, n in self._maps],
                        stream)
                    for (i, _, _), dev in zip(self._maps, devs):
                        self._holders[i].value = dev.data_ptr()
                    # (Held here too: the cache may drop them.)
                    self._map_sources, self._map_devices = sources, devs
            status = self._launch(func, k.grid[0], k.grid[1], k.grid[2],
                                  k.block[0], k.block[1], k.block[2],
                                  k.dynamic_shared_memory_bytes,
                                  ctypes.c_void_p(stream), self._params, None)
        _Driver.check(status, "cuLaunchKernel")


def launch_named(kernel, values, stream=None):
    """launch(kernel, ...) with the arguments taken by name from the dict
    `values` (kernel.argument_names: "q", "lse", "dq_accum", ...; the
    tensor maps, "tmap_*", are built by launch). A missing name is a
    ValueError naming it; names the kernel does not take are ignored, so
    that one dict serves the kernels of a backward."""
    names = getattr(kernel, "argument_names", None)
    if not names:
        raise ValueError(f"{getattr(kernel, 'name', kernel)}: the kernel "
                         "does not name its arguments")
    maps = {m["argument"] for m in getattr(kernel, "tensor_maps", [])}
    passed = [n for i, n in enumerate(names) if i not in maps]
    missing = [n for n in passed if n not in values]
    if missing:
        raise ValueError(f"{kernel.name}: no value for argument(s) "
                         f"{', '.join(missing)} (it takes {', '.join(passed)})")
    launch(kernel, *[values[n] for n in passed], stream=stream)
