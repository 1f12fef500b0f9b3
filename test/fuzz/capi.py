"""Random call sequences of the C API (include/attnfuse-c/Compiler.h).

A *capi* case is a script: a JSON list of calls of libAttnFuseCAPI.so
(options and their setters, attnfuseCompile, every getter, Run, Destroy)
whose handles are live objects, null, destroyed ones, objects of another
type, a buffer of the caller's or made-up addresses; whose strings are
sources (valid, wrong, empty, NULL with or without a length), entries, chip
strings (real chips, chips without the kernels' instructions, strings that
name no chip) and targets outside the enum; and whose Run arguments are
right or wrong in count, rank, shape, element type, data or size.

`run_script` executes a script in a child process (`capi.py --run SCRIPT
--lib LIB`, over ctypes: a crash kills the child, not the fuzzer). The child
checks the contract of Compiler.h as it goes: an invalid handle gives the
documented empty values, an invalid input a failed compilation or run with
an error that says so, a failed compilation at least one error diagnostic;
a violation exits with status 3 and `contract violation: WHAT`. A crash
(crashes.signature) or a violation is a finding; `minimize` drops calls
while the finding stays.
"""
import argparse
import ctypes
import json
import os
import random
import re
import subprocess
import sys

from crashes import signature

TIMEOUT = 120
VIOLATION = 3

# Chip strings for the CUDA target: real chips (with and without the
# instructions of the kernels: cp.async and mma.sync need sm_80), chips that
# do not exist, and strings that name none.
CHIPS = ["", "sm_90a", "sm_90", "sm_80", "sm_86", "sm_89", "sm_100a",
         "sm_75", "sm_70", "sm_60", "sm_30", "sm_20", "sm_9999", "sm_",
         "sm_-1", "sm_80a", "compute_80", "SM_80", " sm_80", "sm_80 ",
         "sm_80\n", "sm_80,sm_90", "x", "not_a_chip", "sm_90a{}", "\u00e9",
         "sm_" + "9" * 40, "a" * 300]
# Targets as the int the enum is passed as.
TARGETS = [0, 1, 1, 2, 99, -1, 2**31 - 1, -2**31]
# Chips that are real, for which the CUDA target needs ptxas and takes
# seconds: drawn less often.
SLOW_CHIPS = {"", "sm_90a", "sm_90", "sm_80", "sm_86", "sm_89", "sm_100a"}

SOURCES = {
    "f32": """
func.func @attention(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>,
                     %v: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x4xf32>,
      tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return %o : tensor<1x2x8x4xf32>
}
""",
    "f16": """
func.func @attention(%q: tensor<1x2x64x64xf16>, %k: tensor<1x2x64x64xf16>,
                     %v: tensor<1x2x64x64xf16>) -> tensor<1x2x64x64xf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x64x64xf16>,
      tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>) -> tensor<1x2x64x64xf16>
  return %o : tensor<1x2x64x64xf16>
}
""",
    "dynamic": """
func.func @id(%a: tensor<?x?xf32>) -> tensor<?x?xf32> {
  return %a : tensor<?x?xf32>
}
""",
    "scalar": """
func.func @s(%x: f32, %t: tensor<2xi8>) -> tensor<2xi8> {
  return %t : tensor<2xi8>
}
""",
    "memref": "func.func @id(%a: memref<4xf32>) { return }\n",
    "parse_error": "func.func @attention(%q: tensor<1x2x8x4xf32>) {\n  %x = \n",
    "empty": "",
}
ENTRIES = ["attention", "id", "s", "missing", ""]
PIPELINES = ["", "canonicalize", "convert-attn-to-linalg",
             "builtin.module(convert-attn-to-scf{block-q=4 block-k=2})",
             "attn-lower-to-nvvm-pipeline{format=isa}", "no-such-pass",
             "builtin.module(", "convert-attn-to-gpu"]
INTS = [0x1, 0x10, 0xdeadbeef, 0x7fffffffffff, 2**64 - 1]
ELEMENT_BYTES = [2, 2, 4, 8, 1, 1, 2, 4, 8]  # AttnfuseElementType order
RUN_KINDS = ["correct", "correct", "correct", "count", "rank", "element",
             "shape", "null_shape", "null_data", "negative", "overflow",
             "null_args", "negative_count"]


# ------------------------------------------------------------- generating

def _string(rng, texts):
    """A string argument: text, or NULL data (with a length or not)."""
    r = rng.random()
    if r < 0.08:
        return {"null": 0}
    if r < 0.14:
        return {"null": rng.choice([1, 5, 2**31])}
    return {"text": rng.choice(texts)}


def _chip(rng):
    chip = rng.choice(CHIPS)
    if chip in SLOW_CHIPS and rng.random() < 0.7:
        chip = rng.choice([c for c in CHIPS if c not in SLOW_CHIPS])
    return chip


def _handle(rng):
    r = rng.random()
    if r < 0.62:  # mostly the latest object of its kind
        return ["obj", rng.choice([-1, -1, -1, 0, 1, 2])]
    if r < 0.75:
        return ["null"]
    if r < 0.85:
        return ["wrong", rng.randrange(4)]
    if r < 0.92:
        return ["foreign"]
    return ["int", rng.choice(INTS)]


# The entry function of each source that has one.
ENTRY_OF = {"f32": "attention", "f16": "attention", "dynamic": "id",
            "scalar": "s"}


def _scenario(rng):
    """Calls that make a compilation worth querying and running: a JIT
    compilation of a matching entry, or a CUDA compilation for a chip."""
    latest = ["obj", -1]
    if rng.random() < 0.6:
        source = rng.choice(sorted(ENTRY_OF))
        steps = [["options_create"],
                 ["set_entry", latest, {"text": ENTRY_OF[source]}]]
        if rng.random() < 0.3:
            steps.append(["set_blocks", latest, rng.choice([64, 4, 1]),
                          rng.choice([64, 2, 1])])
        steps.append(["compile", {"text": source}, latest])
        for _ in range(rng.randint(1, 4)):
            steps.append(["run", latest, rng.choice(RUN_KINDS),
                          rng.randrange(1 << 30)])
        steps.append(["query_run", latest, rng.choice([0, 1, -1])])
        return steps
    chip = _string(rng, [_chip(rng)])
    return [["options_create"],
            ["set_target", latest, rng.choice([1, 1, 1] + TARGETS), chip],
            ["compile", {"text": rng.choice(["f16", "f16", "f32"])}, latest],
            ["query_compilation", latest, rng.choice([0, 1, -1])]]


def random_script(rng):
    steps = []
    # Most scripts start with a compilation worth using, or options.
    if rng.random() < 0.7:
        steps += _scenario(rng)
    elif rng.random() < 0.8:
        steps.append(["options_create"])
    for _ in range(rng.randint(2, 12)):
        r = rng.random()
        if r < 0.12:
            steps.append(["options_create"])
        elif r < 0.40:
            setter = rng.choice(["pipeline", "naive", "blocks", "target",
                                 "target", "entry", "source_name"])
            h = _handle(rng)
            if setter == "pipeline":
                steps.append(["set_pipeline", h, _string(rng, PIPELINES)])
            elif setter == "naive":
                steps.append(["set_naive", h, rng.random() < 0.5])
            elif setter == "blocks":
                steps.append(["set_blocks", h, rng.choice([64, 4, 1, 0, -1]),
                              rng.choice([64, 2, 1, 0, -3])])
            elif setter == "target":
                chip = _string(rng, [_chip(rng)])
                steps.append(["set_target", h, rng.choice(TARGETS), chip])
            elif setter == "entry":
                steps.append(["set_entry", h, _string(rng, ENTRIES)])
            else:
                steps.append(["set_source_name", h,
                              _string(rng, ["<source>", "a.mlir", ""])])
        elif r < 0.62:
            source = _string(rng, sorted(SOURCES))
            steps.append(["compile", source,
                          ["null"] if rng.random() < 0.1 else _handle(rng)])
        elif r < 0.72:
            steps.append(["query_compilation", _handle(rng),
                          rng.choice([0, 1, 2, 3, -1, 7, 2**40])])
        elif r < 0.84:
            steps.append(["run", _handle(rng), rng.choice(RUN_KINDS),
                          rng.randrange(1 << 30)])
        elif r < 0.90:
            steps.append(["query_run", _handle(rng),
                          rng.choice([0, 1, -1, 5])])
        else:
            kind = rng.choice(["options", "compilation", "run"])
            steps.append(["destroy_" + kind, _handle(rng)])
    return steps


# ------------------------------------------------------------- running

def library_path(bin_dir):
    return os.path.normpath(os.path.join(bin_dir, "..", "lib",
                                         "libAttnFuseCAPI.so"))


def command(lib, path):
    return [sys.executable, os.path.abspath(__file__), "--run", path,
            "--lib", lib]


def run_script(script, lib, path):
    """(finding signature or None, output) of `script` run in a child."""
    with open(path, "w") as f:
        json.dump(script, f)
    try:
        r = subprocess.run(command(lib, path), capture_output=True, text=True,
                           errors="replace", timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return "timeout", ""
    out = r.stdout[-20000:] + r.stderr
    sig = signature(r.returncode, out)
    if sig:
        return sig, out
    if r.returncode == VIOLATION:
        m = re.search(r"contract violation: (.*)", out)
        return "contract: " + re.sub(r"\d+", "N", m.group(1) if m else "?"), out
    if r.returncode != 0:  # a Python error of the child itself
        lines = out.strip().splitlines()
        return "child failed: " + re.sub(r"\d+", "N",
                                         lines[-1] if lines else ""), out
    return None, out


def minimize(script, sig, lib, path, budget=60):
    """Drops calls (one at a time, from the end) while `sig` stays."""
    runs = 0
    i = len(script) - 1
    while i >= 0 and runs < budget:
        shorter = script[:i] + script[i + 1:]
        runs += 1
        if shorter and run_script(shorter, lib, path)[0] == sig:
            script = shorter
        i -= 1
    return script


# ------------------------------------------------------------- the child

class Violation(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Violation(what)


class _Ref(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("length", ctypes.c_size_t)]


class _Handle(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_void_p)]


class _Diagnostic(ctypes.Structure):
    _fields_ = [("severity", ctypes.c_int), ("location", _Ref),
                ("message", _Ref)]


class _Tensor(ctypes.Structure):
    _fields_ = [("elementType", ctypes.c_int), ("rank", ctypes.c_ssize_t),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("data", ctypes.c_void_p)]


class _Kernel(ctypes.Structure):
    _fields_ = [("name", _Ref), ("binary", _Ref),
                ("grid", ctypes.c_int64 * 3), ("block", ctypes.c_int64 * 3),
                ("dynamicSharedMemoryBytes", ctypes.c_int64),
                ("numArguments", ctypes.c_ssize_t)]


def _text(ref):
    if not ref.data or not ref.length:
        return ""
    return ctypes.string_at(ref.data, ref.length).decode("utf-8", "replace")


class Child:
    """Executes a script against the library and checks Compiler.h."""

    def __init__(self, lib_path):
        lib = ctypes.CDLL(lib_path)
        H, S, i, b = _Handle, _Ref, ctypes.c_ssize_t, ctypes.c_bool

        def fn(name, res, *args):
            f = getattr(lib, "attnfuse" + name)
            f.restype, f.argtypes = res, list(args)
            return f
        self.optionsCreate = fn("CompileOptionsCreate", H)
        self.optionsDestroy = fn("CompileOptionsDestroy", None, H)
        self.setPipeline = fn("CompileOptionsSetPipeline", None, H, S)
        self.setNaive = fn("CompileOptionsSetNaive", None, H, b)
        self.setBlocks = fn("CompileOptionsSetBlockSizes", None, H,
                            ctypes.c_int64, ctypes.c_int64)
        self.setTarget = fn("CompileOptionsSetTarget", None, H, ctypes.c_int,
                            S)
        self.setEntry = fn("CompileOptionsSetEntry", None, H, S)
        self.setSourceName = fn("CompileOptionsSetSourceName", None, H, S)
        self.compile = fn("Compile", H, S, H)
        self.cDestroy = fn("CompilationDestroy", None, H)
        self.cSucceeded = fn("CompilationSucceeded", b, H)
        self.cIR = fn("CompilationGetIR", S, H)
        self.cNumDiagnostics = fn("CompilationGetNumDiagnostics", i, H)
        self.cDiagnostic = fn("CompilationGetDiagnostic", _Diagnostic, H, i)
        self.cExecutable = fn("CompilationIsExecutable", b, H)
        self.cNumInputs = fn("CompilationGetNumInputs", i, H)
        self.cInput = fn("CompilationGetInputType", _Tensor, H, i)
        self.cScalar = fn("CompilationIsScalarInput", b, H, i)
        self.cNumResults = fn("CompilationGetNumResults", i, H)
        self.cResult = fn("CompilationGetResultType", _Tensor, H, i)
        self.cNumKernels = fn("CompilationGetNumKernels", i, H)
        self.cKernel = fn("CompilationGetKernel", _Kernel, H, i)
        self.cArgType = fn("CompilationGetKernelArgumentType", S, H, i, i)
        self.cTensorMaps = fn("CompilationGetKernelTensorMaps", S, H, i)
        self.run = fn("CompilationRun", H, H, i, ctypes.POINTER(_Tensor))
        self.rDestroy = fn("RunDestroy", None, H)
        self.rSucceeded = fn("RunSucceeded", b, H)
        self.rError = fn("RunGetError", S, H)
        self.rNumResults = fn("RunGetNumResults", i, H)
        self.rResult = fn("RunGetResult", _Tensor, H, i)
        # Every object made, by kind: {"ptr", "live", ...model}.
        self.objects = {"options": [], "compilation": [], "run": []}
        # A buffer of ours passed as a handle: the library must not touch it.
        self.foreign = ctypes.create_string_buffer(b"\x5a" * 256, 256)
        self.keep = []  # buffers that must outlive a call

    # -- handles
    def live(self, kind, ptr):
        """The live object of `kind` at `ptr`, or None (what the library's
        own set says; a destroyed object's address may be reused)."""
        for o in self.objects[kind]:
            if o["live"] and o["ptr"] == ptr:
                return o
        return None

    def handle(self, spec, kind):
        """(_Handle, the live object it names or None)."""
        if spec[0] == "null":
            ptr = 0
        elif spec[0] in ("obj", "wrong"):
            kinds = [kind] if spec[0] == "obj" else [
                k for k in self.objects if k != kind]
            pool = [o for k in kinds for o in self.objects[k]]
            ptr = pool[spec[1] % len(pool)]["ptr"] if pool else 0
        elif spec[0] == "foreign":
            ptr = ctypes.addressof(self.foreign)
        else:
            ptr = spec[1]
        return _Handle(ptr or None), self.live(kind, ptr)

    def string(self, spec, texts=None):
        if "null" in spec:
            return _Ref(None, spec["null"]), None
        text = texts[spec["text"]] if texts else spec["text"]
        data = ctypes.create_string_buffer(text.encode("utf-8"))
        self.keep.append(data)
        return _Ref(ctypes.addressof(data), len(text.encode("utf-8"))), text

    # -- checks of an invalid or a live compilation
    def diagnostics(self, h):
        out = []
        for i in range(self.cNumDiagnostics(h)):
            d = self.cDiagnostic(h, i)
            expect(d.message.data is not None,
                   "a diagnostic in range has a null message")
            out.append((d.severity, _text(d.message)))
        return out

    def check_invalid_compilation(self, h):
        expect(not self.cSucceeded(h), "an invalid compilation succeeded")
        expect(self.cIR(h).length == 0, "an invalid compilation has IR")
        expect(self.cNumDiagnostics(h) == 0,
               "an invalid compilation has diagnostics")
        expect(self.cDiagnostic(h, 0).message.data is None,
               "an invalid compilation's diagnostic 0 is not null")
        expect(not self.cExecutable(h), "an invalid compilation is executable")
        expect(self.cNumInputs(h) == 0 and self.cNumResults(h) == 0,
               "an invalid compilation has a signature")
        expect(self.cInput(h, 0).rank == -1 and self.cResult(h, 0).rank == -1,
               "an invalid compilation's types are not invalid")
        expect(not self.cScalar(h, 0), "an invalid compilation has a scalar")
        expect(self.cNumKernels(h) == 0, "an invalid compilation has kernels")
        expect(self.cKernel(h, 0).numArguments == -1,
               "an invalid compilation's kernel 0 is not invalid")
        expect(self.cArgType(h, 0, 0).data is None and
               self.cTensorMaps(h, 0).data is None,
               "an invalid compilation's kernel strings are not null")

    def check_compilation(self, h, pos):
        n = self.cNumDiagnostics(h)
        self.diagnostics(h)
        if not 0 <= pos < n:
            expect(self.cDiagnostic(h, pos).message.data is None,
                   "a diagnostic out of range is not null")
        executable = self.cExecutable(h)
        expect(executable or (self.cNumInputs(h) == 0 and
                              self.cNumResults(h) == 0),
               "a compilation without a function has a signature")
        for i in range(self.cNumInputs(h)):
            t = self.cInput(h, i)
            expect(t.rank >= 0 and (t.rank == 0 or t.shape),
                   "an input type in range is invalid")
        for get, num in ((self.cInput, self.cNumInputs(h)),
                         (self.cResult, self.cNumResults(h))):
            if not 0 <= pos < num:
                expect(get(h, pos).rank == -1,
                       "a type out of range is not invalid")
        k = self.cNumKernels(h)
        for i in range(k):
            kernel = self.cKernel(h, i)
            expect(kernel.numArguments >= 0, "a kernel in range is invalid")
            for a in range(kernel.numArguments):
                expect(self.cArgType(h, i, a).data is not None,
                       "a kernel argument type in range is null")
        if not 0 <= pos < k:
            expect(self.cKernel(h, pos).numArguments == -1,
                   "a kernel out of range is not invalid")
            expect(self.cTensorMaps(h, pos).data is None,
                   "tensor maps out of range are not null")

    def check_invalid_run(self, h):
        expect(not self.rSucceeded(h), "an invalid run succeeded")
        expect("invalid run handle" in _text(self.rError(h)),
               "an invalid run's error does not say so")
        expect(self.rNumResults(h) == 0, "an invalid run has results")
        expect(self.rResult(h, 0).rank == -1,
               "an invalid run's result 0 is not invalid")

    # -- calls
    def step(self, s):
        op = s[0]
        if op == "options_create":
            h = self.optionsCreate()
            expect(h.ptr, "attnfuseCompileOptionsCreate returned null")
            self.objects["options"].append(dict(
                ptr=h.ptr, live=True, target=0, chip="", entry="",
                blocks=(64, 64), invalid=set()))
            return
        if op.startswith("set_"):
            h, o = self.handle(s[1], "options")
            if op == "set_naive":
                self.setNaive(h, s[2])
            elif op == "set_blocks":
                self.setBlocks(h, s[2], s[3])
                if o:
                    o["blocks"] = (s[2], s[3])
            elif op == "set_target":
                ref, text = self.string(s[3])
                self.setTarget(h, s[2], ref)
                if o:
                    self.model_string(o, "chip", ref, text)
                    if s[2] in (0, 1):
                        o["invalid"].discard("target")
                        o["target"] = s[2]
                    else:
                        o["invalid"].add("target")
            else:
                name = {"set_pipeline": "pipeline", "set_entry": "entry",
                        "set_source_name": "source name"}[op]
                ref, text = self.string(s[2])
                {"set_pipeline": self.setPipeline, "set_entry": self.setEntry,
                 "set_source_name": self.setSourceName}[op](h, ref)
                if o:
                    self.model_string(o, name, ref, text)
            return
        if op == "compile":
            return self.do_compile(s)
        if op == "query_compilation":
            h, c = self.handle(s[1], "compilation")
            if c:
                self.check_compilation(h, s[2])
            else:
                self.check_invalid_compilation(h)
            return
        if op == "run":
            return self.do_run(s)
        if op == "query_run":
            h, r = self.handle(s[1], "run")
            if not r:
                return self.check_invalid_run(h)
            n = self.rNumResults(h)
            expect(self.rSucceeded(h) or n == 0, "a failed run has results")
            for i in range(n):
                expect(self.rResult(h, i).rank >= 0,
                       "a run result in range is invalid")
            if not 0 <= s[2] < n:
                expect(self.rResult(h, s[2]).rank == -1,
                       "a run result out of range is not invalid")
            return
        if op.startswith("destroy_"):
            kind = op[len("destroy_"):]
            h, o = self.handle(s[1], kind)
            {"options": self.optionsDestroy, "compilation": self.cDestroy,
             "run": self.rDestroy}[kind](h)
            if o:
                o["live"] = False
            return
        raise ValueError("unknown step " + op)

    @staticmethod
    def model_string(o, name, ref, text):
        if ref.data is None and ref.length:
            o["invalid"].add(name)
            return
        o["invalid"].discard(name)
        if name in ("chip", "entry"):
            o[name] = text or ""

    def do_compile(self, s):
        source, text = self.string(s[1], SOURCES)
        h, o = self.handle(s[2], "options")
        c = self.compile(source, h)
        expect(c.ptr, "attnfuseCompile returned null")
        expect(self.live("compilation", c.ptr) is None,
               "attnfuseCompile returned a live compilation's address")
        self.objects["compilation"].append(dict(ptr=c.ptr, live=True))
        diags = self.diagnostics(c)
        errors = [m for sev, m in diags if sev == 0]
        ok = self.cSucceeded(c)
        print(f"  -> compilation succeeded {ok}, executable "
              f"{self.cExecutable(c)}, kernels {self.cNumKernels(c)}; "
              f"errors {errors}", flush=True)
        if not ok:
            expect(errors and all(errors),
                   "a failed compilation has no error message")
        must_fail = []
        if text is None:
            must_fail.append("the source is a null string")
        if h.ptr and not o:
            must_fail.append("invalid options handle")
        if o:
            must_fail += ["invalid " + name for name in sorted(o["invalid"])]
            if min(o["blocks"]) <= 0:
                must_fail.append("block sizes must be positive")
            # (An invalid string leaves the option's previous value.)
            if o["target"] == 1 and o["entry"]:
                must_fail.append("the CUDA target cannot JIT-compile")
            if o["target"] == 0 and o["chip"]:
                must_fail.append("given for the CPU target")
        for what in must_fail:
            expect(not ok, "compiled despite: " + what)
            expect(any(what in m for m in errors),
                   "no error says: " + what)
        if ok and o and o["entry"] and o["target"] == 0:
            expect(self.cExecutable(c),
                   "a compilation with an entry is not executable")
        self.check_compilation(c, 0)

    def do_run(self, s):
        h, c = self.handle(s[1], "compilation")
        kind, rng = s[2], random.Random(s[3])
        if not c:
            r = self.run(h, 0, None)
            self.record_run(r)
            expect(not self.rSucceeded(r) and "invalid compilation handle" in
                   _text(self.rError(r)),
                   "a run of an invalid compilation does not say so")
            return
        args, wrong = self.arguments(h, kind, rng)
        n = len(args)
        if kind == "null_args":
            r = self.run(h, max(1, n), None)
            wrong = True
        elif kind == "negative_count":
            r = self.run(h, -1 - rng.randrange(3), None)
            wrong = True
        else:
            array = (_Tensor * max(1, n))(*args)
            r = self.run(h, n, array)
        self.record_run(r)
        ok, error = self.rSucceeded(r), _text(self.rError(r))
        print(f"  -> run succeeded {ok}: {error}", flush=True)
        if not self.cExecutable(h):
            expect(not ok, "a run without a function succeeded")
        elif wrong:
            expect(not ok and error, "a run with wrong arguments succeeded")
        else:
            expect(ok, "a run with right arguments failed: " +
                   re.sub(r"\d+", "N", error))
            expect(self.rNumResults(r) == self.cNumResults(h),
                   "a run has the wrong number of results")
        if not ok:
            expect(error, "a failed run has no error")

    def record_run(self, r):
        expect(r.ptr, "attnfuseCompilationRun returned null")
        self.objects["run"].append(dict(ptr=r.ptr, live=True))

    def tensor(self, element, shape, data=True):
        n = 1
        for d in shape:
            n *= d
        dims = (ctypes.c_int64 * max(1, len(shape)))(*shape)
        nbytes = max(1, n * ELEMENT_BYTES[element])
        buf = ctypes.create_string_buffer(nbytes)
        if element == 4:  # i1: one byte, 0 or 1
            ctypes.memset(buf, 1, nbytes)
        self.keep += [dims, buf]
        return _Tensor(element, len(shape), dims,
                       ctypes.addressof(buf) if data else None)

    def arguments(self, h, kind, rng):
        """(the tensors of a run, whether they are wrong)."""
        inputs = []
        for i in range(self.cNumInputs(h)):
            t = self.cInput(h, i)
            inputs.append((t.elementType, [t.shape[d] for d in range(t.rank)]))
        shapes = [[d if d >= 0 else rng.randint(0, 3) for d in s]
                  for _, s in inputs]
        args = [self.tensor(e, s) for (e, _), s in zip(inputs, shapes)]
        if kind in ("correct", "null_args", "negative_count") or not inputs:
            return args, False
        i = rng.randrange(len(inputs))
        element, want = inputs[i]
        if kind == "count":
            if rng.random() < 0.5:
                return args[:-1], True
            return args + [args[0]], True
        if kind == "rank":
            shape = shapes[i] + [1] if rng.random() < 0.5 or not shapes[i] \
                else shapes[i][:-1]
            args[i] = self.tensor(element, shape)
            return args, True
        if kind == "element":
            other = rng.choice([e for e in range(9) if e != element] +
                               [9, 99, -1])
            if 0 <= other < 9:
                args[i] = self.tensor(other, shapes[i])
            else:
                args[i].elementType = other
            return args, True
        if kind == "shape":
            static = [d for d, w in enumerate(want) if w >= 0]
            if not static:
                return args, False
            d = rng.choice(static)
            shape = list(shapes[i])
            shape[d] += 1
            args[i] = self.tensor(element, shape)
            return args, True
        if kind == "null_shape":
            if not want:
                return args, False
            args[i].shape = None
            return args, True
        if kind == "null_data":
            n = 1
            for d in shapes[i]:
                n *= d
            if n == 0:
                return args, False
            args[i].data = None
            return args, True
        if kind == "negative":
            if not want:
                return args, False
            args[i].shape[rng.randrange(len(want))] = -rng.choice([1, 2, 2**62])
            return args, True
        if kind == "overflow":
            dynamic = [d for d, w in enumerate(want) if w < 0]
            if not dynamic:
                return args, False
            # More bytes than int64_t counts: no buffer can be that large
            # (a size that fits would be a claim about our small buffer).
            if len(dynamic) == 1 and ELEMENT_BYTES[element] == 1:
                return args, False  # 2**62 bytes do not overflow
            for d in dynamic:
                args[i].shape[d] = 2**62
            return args, True
        raise ValueError("unknown run kind " + kind)

    def finish(self):
        for kind, destroy in (("run", self.rDestroy),
                              ("compilation", self.cDestroy),
                              ("options", self.optionsDestroy)):
            for o in self.objects[kind]:
                if o["live"]:
                    destroy(_Handle(o["ptr"]))
                    o["live"] = False
        expect(self.foreign.raw == b"\x5a" * 256,
               "a foreign handle's memory was written")


def child_main(script_path, lib):
    child = Child(lib)
    script = json.load(open(script_path))
    try:
        for n, step in enumerate(script):
            print(f"{n}: {json.dumps(step)}", flush=True)
            child.step(step)
        child.finish()
    except Violation as v:
        print(f"contract violation: {v}", flush=True)
        return VIOLATION
    print("ok", flush=True)
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, help="a script (JSON)")
    ap.add_argument("--lib", required=True, help="libAttnFuseCAPI.so")
    a = ap.parse_args()
    sys.exit(child_main(a.run, a.lib))
