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
"""
import ctypes
import json
import os

_TORCH_DTYPES = None


def _torch_dtype(name):
    global _TORCH_DTYPES
    import torch
    if _TORCH_DTYPES is None:
        _TORCH_DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16,
                         "f32": torch.float32, "f64": torch.float64,
                         "i1": torch.bool}
    return _TORCH_DTYPES[name]


class CudaError(RuntimeError):
    pass


# The kernels copy 16-byte pieces of Q, K and V rows and load bias elements
# in pairs; a misaligned base would fault on the device (as FlashAttention's
# kernels, they take 16-byte aligned tensors).
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


class AttentionKernel:
    """One compiled attn.attention: call it with torch tensors."""

    def __init__(self, json_path, kernel_index=0):
        import torch
        torch.cuda.init()  # makes PyTorch's primary context current
        torch.zeros(1, device="cuda")
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
        self.inputs = [a for a in self.kernel["args"]
                       if a["name"] not in ("o", "lse")]

    def output_buffers(self, fill=float("nan"), guard=0):
        """(out, lse) filled with `fill`. With guard > 0 each is the middle
        of a buffer `guard` elements longer on both sides (also filled), so
        that a stray write before or after it shows: see guard_intact."""
        import torch
        outs = {}
        for a in self.kernel["args"]:
            if a["name"] in ("o", "lse"):
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
        shapes and dtypes."""
        import torch
        if out is None or lse is None:
            out, lse = self.output_buffers()
        values = list(inputs) + [out, lse]
        if len(values) != len(self.kernel["args"]):
            raise ValueError(f"expected {len(self.kernel['args'])} args")
        holders = []
        for a, v in zip(self.kernel["args"], values):
            if a["kind"] == "memref":
                if (list(v.shape) != a["shape"] or not v.is_contiguous()
                        or v.dtype != _torch_dtype(a["dtype"]) or not v.is_cuda):
                    raise ValueError(
                        f"argument {a['name']}: expected contiguous "
                        f"{a['dtype']} {a['shape']} on the GPU, got "
                        f"{v.dtype} {list(v.shape)}")
                _check_aligned(f"argument {a['name']}", v)
                holders.append(ctypes.c_void_p(v.data_ptr()))
            else:
                holders.append(ctypes.c_int64(int(v)))
        params = (ctypes.c_void_p * len(holders))(
            *[ctypes.cast(ctypes.byref(h), ctypes.c_void_p) for h in holders])
        if stream is None:
            stream = torch.cuda.current_stream().cuda_stream
        g, b = self.kernel["grid"], self.kernel["block"]
        _Driver.check(_Driver.get().cuLaunchKernel(
            self._func, g[0], g[1], g[2], b[0], b[1], b[2],
            self.kernel.get("dynamic_shared_bytes", 0),
            ctypes.c_void_p(stream), params, None), "cuLaunchKernel")
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


def launch(kernel, *args, stream=None):
    """Launches an attnfuse.Kernel (from attnfuse.compile(..., target="cuda"))
    on `args` in its argument order: torch CUDA tensors (contiguous) for
    "ptr" arguments, Python numbers for scalars. Returns nothing; outputs are
    written into the tensors passed for them."""
    import torch
    if len(args) != len(kernel.argument_types):
        raise ValueError(f"{kernel.name} takes {len(kernel.argument_types)} "
                         f"arguments ({kernel.argument_types}), got "
                         f"{len(args)}")
    if -1 in kernel.grid or -1 in kernel.block:
        raise ValueError(f"{kernel.name}: launch sizes are not constants")
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # makes PyTorch's primary context current
    lib = _Driver.get()
    key = (kernel.name, kernel.binary)
    if key not in _LOADED:
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
    func = _LOADED[key][2]
    scalars = {"i64": ctypes.c_int64, "i32": ctypes.c_int32,
               "f32": ctypes.c_float, "f64": ctypes.c_double}
    holders = []
    for i, (t, v) in enumerate(zip(kernel.argument_types, args)):
        if t == "ptr":
            if not (isinstance(v, torch.Tensor) and v.is_cuda
                    and v.is_contiguous()):
                raise ValueError(f"argument {i}: expected a contiguous CUDA "
                                 "tensor")
            _check_aligned(f"argument {i}", v)
            holders.append(ctypes.c_void_p(v.data_ptr()))
        elif t in scalars:
            holders.append(scalars[t](v))
        else:
            raise ValueError(f"argument {i}: unsupported type {t}")
    params = (ctypes.c_void_p * len(holders))(
        *[ctypes.cast(ctypes.byref(h), ctypes.c_void_p) for h in holders])
    if stream is None:
        stream = torch.cuda.current_stream().cuda_stream
    g, b = kernel.grid, kernel.block
    _Driver.check(lib.cuLaunchKernel(func, g[0], g[1], g[2], b[0], b[1], b[2],
                                     kernel.dynamic_shared_memory_bytes,
                                     ctypes.c_void_p(stream), params, None),
                  "cuLaunchKernel")
