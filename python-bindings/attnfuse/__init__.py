"""attnfuse from Python: compile MLIR with attnfuse's pipeline, run on the CPU.

    import attnfuse, numpy as np
    result = attnfuse.compile(text)            # attn-lower-to-cpu-pipeline
    print(result.ir, result.diagnostics)
    fn = attnfuse.jit(text, entry="attention") # + JIT for the host CPU
    out = fn(q, k, v)                          # numpy arrays in and out

The package is pure Python over attnfuse's C API (include/attnfuse-c/),
loaded with ctypes: it has no extension module, so one build imports on any
CPython 3. It loads, in order, $ATTNFUSE_CAPI_LIBRARY, libAttnFuseCAPI.so next
to this file, or ../../lib/libAttnFuseCAPI.so (build and install trees).
bf16 arrays use ml_dtypes.bfloat16 (imported only when needed).
"""

import ctypes
import json
import operator
import os
from typing import List, NamedTuple, Optional, Sequence

import numpy as np

__all__ = ["compile", "jit", "run", "CompileResult", "Executable", "Kernel",
           "Diagnostic", "CompileError", "RunError", "library_path"]


# --- the C API ----------------------------------------------------------------

class _StringRef(ctypes.Structure):
    _fields_ = [("data", ctypes.POINTER(ctypes.c_char)),
                ("length", ctypes.c_size_t)]

    @staticmethod
    def make(text: str) -> "_StringRef":
        data = text.encode("utf-8")
        ref = _StringRef(ctypes.cast(ctypes.c_char_p(data),
                                     ctypes.POINTER(ctypes.c_char)), len(data))
        ref._keep = data  # the bytes must outlive the call
        return ref

    def __str__(self) -> str:
        if not self.length:
            return ""
        return ctypes.string_at(self.data, self.length).decode(
            "utf-8", errors="replace")


class _Diagnostic(ctypes.Structure):
    _fields_ = [("severity", ctypes.c_int), ("location", _StringRef),
                ("message", _StringRef)]


class _Tensor(ctypes.Structure):
    _fields_ = [("elementType", ctypes.c_int), ("rank", ctypes.c_ssize_t),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("data", ctypes.c_void_p)]


class _Kernel(ctypes.Structure):
    _fields_ = [("name", _StringRef), ("binary", _StringRef),
                ("grid", ctypes.c_int64 * 3), ("block", ctypes.c_int64 * 3),
                ("dynamicSharedMemoryBytes", ctypes.c_int64),
                ("numArguments", ctypes.c_ssize_t)]


class _Handle(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_void_p)]


def _find_library() -> str:
    env = os.environ.get("ATTNFUSE_CAPI_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "libAttnFuseCAPI.so"),
                      os.path.join(here, "..", "..", "lib",
                                   "libAttnFuseCAPI.so")):
        if os.path.exists(candidate):
            return os.path.normpath(candidate)
    raise ImportError(
        "attnfuse: cannot find libAttnFuseCAPI.so next to the package or in "
        "../../lib; build attnfuse or set ATTNFUSE_CAPI_LIBRARY")


library_path = _find_library()
_lib = ctypes.CDLL(library_path)


def _declare(name, restype, *argtypes):
    fn = getattr(_lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


_H, _S, _b, _i = _Handle, _StringRef, ctypes.c_bool, ctypes.c_ssize_t
_optionsCreate = _declare("attnfuseCompileOptionsCreate", _H)
_optionsDestroy = _declare("attnfuseCompileOptionsDestroy", None, _H)
_optionsSetPipeline = _declare("attnfuseCompileOptionsSetPipeline", None,
                               _H, _S)
_optionsSetNaive = _declare("attnfuseCompileOptionsSetNaive", None, _H, _b)
_optionsSetBlockSizes = _declare("attnfuseCompileOptionsSetBlockSizes", None,
                                 _H, ctypes.c_int64, ctypes.c_int64)
_optionsSetEntry = _declare("attnfuseCompileOptionsSetEntry", None, _H, _S)
_optionsSetTarget = _declare("attnfuseCompileOptionsSetTarget", None, _H,
                             ctypes.c_int, _S)
_optionsSetKernelOptions = _declare("attnfuseCompileOptionsSetKernelOptions",
                                   None, _H, _S)
_optionsSetSourceName = _declare("attnfuseCompileOptionsSetSourceName", None,
                                 _H, _S)
_compile = _declare("attnfuseCompile", _H, _S, _H)
_compilationDestroy = _declare("attnfuseCompilationDestroy", None, _H)
_compilationSucceeded = _declare("attnfuseCompilationSucceeded", _b, _H)
_compilationGetIR = _declare("attnfuseCompilationGetIR", _S, _H)
_compilationGetNumKernels = _declare("attnfuseCompilationGetNumKernels", _i,
                                     _H)
_compilationGetKernel = _declare("attnfuseCompilationGetKernel", _Kernel, _H,
                                 _i)
_compilationGetKernelArgumentType = _declare(
    "attnfuseCompilationGetKernelArgumentType", _S, _H, _i, _i)
_compilationGetKernelArgumentName = _declare(
    "attnfuseCompilationGetKernelArgumentName", _S, _H, _i, _i)
_compilationGetKernelTensorMaps = _declare(
    "attnfuseCompilationGetKernelTensorMaps", _S, _H, _i)
_compilationGetNumDiagnostics = _declare(
    "attnfuseCompilationGetNumDiagnostics", _i, _H)
_compilationGetDiagnostic = _declare("attnfuseCompilationGetDiagnostic",
                                     _Diagnostic, _H, _i)
_compilationIsExecutable = _declare("attnfuseCompilationIsExecutable", _b, _H)
_compilationGetNumInputs = _declare("attnfuseCompilationGetNumInputs", _i, _H)
_compilationGetInputType = _declare("attnfuseCompilationGetInputType",
                                    _Tensor, _H, _i)
_compilationIsScalarInput = _declare("attnfuseCompilationIsScalarInput", _b,
                                     _H, _i)
_compilationGetNumResults = _declare("attnfuseCompilationGetNumResults", _i,
                                     _H)
_compilationGetResultType = _declare("attnfuseCompilationGetResultType",
                                     _Tensor, _H, _i)
_compilationRun = _declare("attnfuseCompilationRun", _H, _H, _i,
                           ctypes.POINTER(_Tensor))
_runDestroy = _declare("attnfuseRunDestroy", None, _H)
_runSucceeded = _declare("attnfuseRunSucceeded", _b, _H)
_runGetError = _declare("attnfuseRunGetError", _S, _H)
_runGetNumResults = _declare("attnfuseRunGetNumResults", _i, _H)
_runGetResult = _declare("attnfuseRunGetResult", _Tensor, _H, _i)
_elementTypeGetByteSize = _declare("attnfuseElementTypeGetByteSize", _i,
                                   ctypes.c_int)

# AttnfuseElementType, in enum order.
_ELEMENT_NAMES = ["f16", "bf16", "f32", "f64", "i1", "i8", "i16", "i32", "i64"]
_SEVERITIES = ["error", "warning", "note", "remark"]


def _bfloat16():
    try:
        import ml_dtypes
    except ImportError as e:
        raise TypeError("bf16 needs the ml_dtypes package") from e
    return np.dtype(ml_dtypes.bfloat16)


def _numpy_dtype(element: int) -> np.dtype:
    name = _ELEMENT_NAMES[element]
    if name == "bf16":
        return _bfloat16()
    return np.dtype({"f16": np.float16, "f32": np.float32, "f64": np.float64,
                     "i1": np.bool_, "i8": np.int8, "i16": np.int16,
                     "i32": np.int32, "i64": np.int64}[name])


def _element_of(dtype: np.dtype) -> Optional[int]:
    """The AttnfuseElementType of a numpy dtype (unsigned ints map to the
    signless type of their width), or None."""
    if dtype.name == "bfloat16":
        return _ELEMENT_NAMES.index("bf16")
    if dtype == np.bool_:
        return _ELEMENT_NAMES.index("i1")
    if dtype.kind == "f" and dtype.itemsize in (2, 4, 8):
        return _ELEMENT_NAMES.index("f%d" % (8 * dtype.itemsize))
    if dtype.kind in "iu" and dtype.itemsize in (1, 2, 4, 8):
        return _ELEMENT_NAMES.index("i%d" % (8 * dtype.itemsize))
    return None


def _type_string(t: _Tensor, scalar: bool) -> str:
    name = _ELEMENT_NAMES[t.elementType]
    if scalar:
        return name
    dims = ["?" if t.shape[d] < 0 else str(t.shape[d]) for d in range(t.rank)]
    return "tensor<%s>" % "x".join(dims + [name])


# --- results ------------------------------------------------------------------

class Diagnostic(NamedTuple):
    """One diagnostic: severity is "error", "warning", "note" or "remark";
    location is "file:line:col" when known."""
    severity: str
    location: str
    message: str

    def __str__(self) -> str:
        where = self.location + ": " if self.location else ""
        return "%s%s: %s" % (where, self.severity, self.message)


class CompileError(Exception):
    """Parsing, the pipeline or the JIT failed; .diagnostics says why."""

    def __init__(self, diagnostics: List[Diagnostic]):
        self.diagnostics = diagnostics
        super().__init__("attnfuse compilation failed:\n" +
                         "\n".join(str(d) for d in diagnostics))


class RunError(Exception):
    """A call of a compiled function was rejected or failed."""


class Kernel:
    """A GPU kernel of a CUDA compilation: its cubin and how to launch it.
    `argument_types` are LLVM types in order: "ptr" for a tensor's base
    address (memrefs are passed bare), "i64", "f32", ... for scalars.
    `tensor_maps` describes the arguments that are pointers to CUtensorMaps
    (kernels that load by TMA), one dict each: "argument" (its index in
    argument_types), "source" (the index of the tensor it views), "dtype",
    "dims" and "box" (elements, outermost first), "swizzle" and
    "l2_promotion" (bytes); [] for other kernels. The launcher builds those
    from their sources: attnfuse.cuda_launch.launch() runs the kernel on
    torch tensors, given the other arguments. `argument_names` are the
    arguments' roles ("q", "k", "v", "o", "lse", "do", "dq_accum", ...,
    "tmap_q" for a tensor map; docs/GPU.md), [] for a kernel that
    convert-attn-to-gpu did not make: cuda_launch.launch_named() takes the
    arguments by these names."""

    def __init__(self, name, binary, grid, block, dynamic_shared_memory_bytes,
                 argument_types, tensor_maps=None, argument_names=None):
        self.name = name
        self.binary = binary
        self.grid = grid
        self.block = block
        self.dynamic_shared_memory_bytes = dynamic_shared_memory_bytes
        self.argument_types = argument_types
        self.tensor_maps = list(tensor_maps or [])
        self.argument_names = list(argument_names or [])

    def __repr__(self) -> str:
        maps = (", tensor_maps=%s" % self.tensor_maps if self.tensor_maps
                else "")
        return ("Kernel(%s, %d bytes, grid=%s, block=%s, smem=%d, args=%s%s)" %
                (self.name, len(self.binary), self.grid, self.block,
                 self.dynamic_shared_memory_bytes, self.argument_types, maps))


class CompileResult:
    """The IR after the pipeline, the diagnostics emitted on the way, and
    (CUDA target) the kernels."""

    def __init__(self, ir: str, diagnostics: List[Diagnostic],
                 kernels: Optional[List[Kernel]] = None):
        self.ir = ir
        self.diagnostics = diagnostics
        self.kernels = kernels or []

    @property
    def remarks(self) -> List[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "remark"]

    def __str__(self) -> str:
        return self.ir


def _argument_names(handle, kernel: int, count: int) -> List[str]:
    names = [str(_compilationGetKernelArgumentName(handle, kernel, a))
             for a in range(count)]
    return names if any(names) else []


def _kernels(handle) -> List[Kernel]:
    kernels = []
    for i in range(_compilationGetNumKernels(handle)):
        k = _compilationGetKernel(handle, i)
        kernels.append(Kernel(
            str(k.name), ctypes.string_at(k.binary.data, k.binary.length),
            tuple(k.grid), tuple(k.block), int(k.dynamicSharedMemoryBytes),
            [str(_compilationGetKernelArgumentType(handle, i, a))
             for a in range(k.numArguments)],
            json.loads(str(_compilationGetKernelTensorMaps(handle, i)) or
                       "[]"),
            _argument_names(handle, i, k.numArguments)))
    return kernels


_TARGETS = {"cpu": 0, "cuda": 1}


def _int64(name: str, value) -> int:
    """`value` as a C int64_t: an integer (not a float or a bool), in range;
    ctypes would silently keep its low 64 bits (2**64 + 16 became 16)."""
    if isinstance(value, bool):
        raise TypeError("%s must be an integer, got bool" % name)
    value = operator.index(value)  # TypeError for floats, strings, ...
    if not -2**63 <= value < 2**63:
        raise OverflowError("%s = %d does not fit in a 64-bit integer" %
                            (name, value))
    return value


def _check_str(name: str, value, optional: bool = False) -> None:
    """TypeError unless `value` is a str (or None if `optional`): the C API
    takes UTF-8 text, and anything else failed inside ctypes, or with an
    AttributeError ('int' object has no attribute 'encode')."""
    if isinstance(value, str) or (optional and value is None):
        return
    raise TypeError("%s must be a str%s, got %s" %
                    (name, " or None" if optional else "",
                     type(value).__name__))


def _check_bool(name: str, value) -> None:
    """TypeError unless `value` is a bool (numpy's included): bool() would
    take any object, "no" and [0] included."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError("%s must be a bool, got %s" %
                        (name, type(value).__name__))


def _compile_handle(source: str, pipeline: Optional[str], naive: bool,
                    block_q: int, block_k: int, entry: Optional[str],
                    source_name: str, target: str = "cpu", chip: str = "",
                    kernel_options: str = ""):
    if not isinstance(source, str):
        raise TypeError("source must be MLIR text (str), got %s" %
                        type(source).__name__)
    _check_str("pipeline", pipeline, optional=True)
    _check_bool("naive", naive)
    block_q, block_k = _int64("block_q", block_q), _int64("block_k", block_k)
    _check_str("entry", entry, optional=True)
    _check_str("source_name", source_name)
    _check_str("target", target)
    _check_str("chip", chip)
    _check_str("kernel_options", kernel_options)
    if target not in _TARGETS:
        raise ValueError("target must be one of %s, got %r" %
                         (sorted(_TARGETS), target))
    options = _optionsCreate()
    try:
        if pipeline:
            _optionsSetPipeline(options, _S.make(pipeline))
        _optionsSetNaive(options, bool(naive))
        _optionsSetBlockSizes(options, block_q, block_k)
        if entry:
            _optionsSetEntry(options, _S.make(entry))
        _optionsSetSourceName(options, _S.make(source_name))
        _optionsSetTarget(options, _TARGETS[target], _S.make(chip))
        if kernel_options:
            _optionsSetKernelOptions(options, _S.make(kernel_options))
        handle = _compile(_S.make(source), options)
    finally:
        _optionsDestroy(options)
    diagnostics = []
    for i in range(_compilationGetNumDiagnostics(handle)):
        d = _compilationGetDiagnostic(handle, i)
        diagnostics.append(Diagnostic(_SEVERITIES[d.severity],
                                      str(d.location), str(d.message)))
    if not _compilationSucceeded(handle):
        _compilationDestroy(handle)
        raise CompileError(diagnostics)
    return handle, CompileResult(str(_compilationGetIR(handle)), diagnostics,
                                 _kernels(handle))


def compile(source: str, *, pipeline: Optional[str] = None,
            naive: bool = False, block_q: int = 64, block_k: int = 64,
            source_name: str = "<source>", target: str = "cpu",
            chip: str = "", kernel_options: str = "") -> CompileResult:
    """Runs attnfuse's CPU pipeline (attn-lower-to-cpu-pipeline with `naive`,
    `block_q`, `block_k`), its CUDA pipeline (`target="cuda"`,
    attn-lower-to-nvvm-pipeline for `chip`, default sm_90a; needs ptxas, not
    a GPU; `kernel_options` are that pipeline's options, e.g.
    "deterministic=true", docs/Passes) or the textual pass `pipeline` on the
    module `source`; returns the IR, the diagnostics (remarks included) and,
    for CUDA, the kernels. Raises CompileError with the diagnostics on
    failure."""
    handle, result = _compile_handle(source, pipeline, naive, block_q,
                                     block_k, None, source_name, target, chip,
                                     kernel_options)
    _compilationDestroy(handle)
    return result


class Executable:
    """A function JIT-compiled for the host CPU. Call it with numpy arrays
    (and Python numbers for scalar arguments); it returns a numpy array, or a
    tuple of them when the function has several results."""

    def __init__(self, handle, result: CompileResult, entry: str):
        self._handle = handle
        self.entry = entry
        self.ir = result.ir
        self.diagnostics = result.diagnostics
        self._inputs = []
        for i in range(_compilationGetNumInputs(handle)):
            t = _compilationGetInputType(handle, i)
            self._inputs.append(
                (t.elementType, [t.shape[d] for d in range(t.rank)],
                 bool(_compilationIsScalarInput(handle, i)),
                 _type_string(t, _compilationIsScalarInput(handle, i))))
        self.result_types = [
            _type_string(_compilationGetResultType(handle, i), False)
            for i in range(_compilationGetNumResults(handle))]

    @property
    def input_types(self) -> List[str]:
        return [t[3] for t in self._inputs]

    def __del__(self):
        handle, self._handle = getattr(self, "_handle", None), None
        if handle is not None and _compilationDestroy is not None:
            _compilationDestroy(handle)

    def __call__(self, *args):
        if len(args) != len(self._inputs):
            raise RunError("'%s' takes %d arguments (%s), got %d" %
                           (self.entry, len(self._inputs),
                            ", ".join(self.input_types), len(args)))
        arrays, tensors = [], (_Tensor * max(1, len(args)))()
        for i, (arg, (element, shape, scalar, text)) in enumerate(
                zip(args, self._inputs)):
            if isinstance(arg, np.ndarray) or (
                    not scalar and isinstance(arg, np.generic)):
                array = np.asarray(arg)
                got = _element_of(array.dtype)
                if got != element:
                    raise RunError(
                        "argument %d of '%s' must be %s, got a numpy array "
                        "of dtype %s" % (i, self.entry, text, array.dtype))
            elif scalar and isinstance(arg, (bool, int, float, np.generic)):
                array = np.asarray(arg, dtype=_numpy_dtype(element))
            else:
                raise RunError("argument %d of '%s' must be %s as a numpy "
                               "array, got %s" %
                               (i, self.entry, text, type(arg).__name__))
            if not array.flags.c_contiguous:  # (ascontiguousarray makes 0-d 1-d)
                array = array.copy(order="C")
            arrays.append(array)
            dims = (ctypes.c_int64 * max(1, array.ndim))(*array.shape)
            arrays.append(dims)
            tensors[i] = _Tensor(element, array.ndim, dims,
                                 array.ctypes.data_as(ctypes.c_void_p))
        run = _compilationRun(self._handle, len(args), tensors)
        try:
            if not _runSucceeded(run):
                raise RunError(str(_runGetError(run)))
            results = []
            for i in range(_runGetNumResults(run)):
                t = _runGetResult(run, i)
                dtype = _numpy_dtype(t.elementType)
                shape = tuple(t.shape[d] for d in range(t.rank))
                nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
                data = ctypes.string_at(t.data, nbytes) if nbytes else b""
                results.append(
                    np.frombuffer(data, dtype=dtype).reshape(shape).copy())
        finally:
            _runDestroy(run)
        return results[0] if len(results) == 1 else tuple(results)


def jit(source: str, entry: str, *, pipeline: Optional[str] = None,
        naive: bool = False, block_q: int = 64, block_k: int = 64,
        source_name: str = "<source>") -> Executable:
    """Compiles `source` like compile() and JIT-compiles the function `entry`
    (ranked tensors and scalars in, ranked tensors out) for the host CPU."""
    _check_str("entry", entry)
    if not entry:
        raise ValueError("entry must name a function of the module, got ''")
    handle, result = _compile_handle(source, pipeline, naive, block_q,
                                     block_k, entry, source_name)
    return Executable(handle, result, entry)


def run(source: str, entry: str, *args, **options):
    """jit(source, entry, **options)(*args)."""
    return jit(source, entry, **options)(*args)
