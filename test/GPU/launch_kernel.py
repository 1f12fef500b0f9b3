#!/usr/bin/env python3
"""Launches one compiled attnfuse kernel once, in a process of its own.

The launcher that scripts/run-compute-sanitizer.sh runs under
compute-sanitizer (test/GPU/sanitize.py drives it): Python, numpy and the CUDA
driver API through ctypes (libcuda.so.1), and nothing else in the process: no
PyTorch, no other kernel, no caching allocator. Every buffer is a
cuMemAlloc of its own, so memcheck knows each tensor's exact bounds, and
every byte the host initializes is written by cuMemcpyHtoD or cuMemsetD8,
which initcheck tracks.

KERNEL_JSON is an artifact of scripts/build-gpu-artifacts.sh (NAME.json next
to NAME.cubin or NAME.ptx). INPUT_DIR holds ARG.npy for every argument of the
kernel that is not an output, by its name in the JSON (q, k, v, bias, keep,
seed): raw element bits (bf16 as uint16, i1 as one byte per element), C order,
of the argument's shape; the seed a 0-d int64. The outputs (o, lse) are
written to OUTPUT_DIR/o.npy and lse.npy (bf16 as uint16). The tensor maps of
a TMA kernel (args of kind "tensormap") are no inputs: the launcher encodes
each from its source buffer's address with cuda_launch.encode_tensor_map
(python-bindings/attnfuse/cuda_launch.py, the encoding every launcher
shares) and copies its 128 bytes with cuMemcpyHtoD into an allocation of its
own (role "tensormap", no guard bands: only the TMA unit reads it, and a
cuMemAlloc is 64-byte aligned as a CUtensorMap must be).

--guard BYTES puts every buffer in the middle of an allocation BYTES larger
on each side. The guard bands of the outputs are filled with 0xff (a NaN in
every float type) and checked after the launch (a stray write fails); those
of the inputs are left unwritten, so that initcheck reports a read past an
input as a read of memory the host never wrote, at an address that
sanitize.py places in that band. --no-fill leaves the outputs' own elements
unwritten too (for initcheck: a kernel that reads an output before writing it
is reported); by default they are filled with 0xff, so that an element the
kernel does not write stays NaN.

Prints one line `ATTNFUSE_BUFFERS <json>` (name, role, the address of each
buffer's first element, its bytes, its allocation and the ranges the host
wrote) before the launch and `ATTNFUSE_LAUNCH ok|error ...` after it.
Exit status: 0 if the launch and the copies back succeeded and the guard
bands are intact, 1 otherwise.

usage: launch_kernel.py KERNEL_JSON INPUT_DIR OUTPUT_DIR [--guard BYTES]
                        [--no-fill]
"""
import argparse
import ctypes
import json
import os
import sys
import time

import numpy as np

# cuda_launch.py imports torch only inside the functions that use it; the
# module itself (not the attnfuse package, which loads the C API library)
# is all this needs.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))), "python-bindings",
    "attnfuse"))
from cuda_launch import (CudaError, TENSOR_MAP_BYTES,  # noqa: E402
                         encode_tensor_map)

ELEMENT_BYTES = {"bf16": 2, "f16": 2, "f32": 4, "f64": 8, "i1": 1, "i8": 1,
                 "i32": 4, "i64": 8}
NUMPY = {"bf16": np.uint16, "f16": np.float16, "f32": np.float32,
         "f64": np.float64, "i1": np.uint8, "i8": np.int8, "i32": np.int32,
         "i64": np.int64}
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

_cuda = None


def driver():
    global _cuda
    if _cuda is None:
        lib = ctypes.CDLL("libcuda.so.1")
        ptr, u64, size = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t
        for name, args in {
            "cuInit": [ctypes.c_uint],
            "cuDeviceGet": [ctypes.POINTER(ctypes.c_int), ctypes.c_int],
            "cuDevicePrimaryCtxRetain": [ctypes.POINTER(ptr), ctypes.c_int],
            "cuDevicePrimaryCtxRelease_v2": [ctypes.c_int],
            "cuCtxSetCurrent": [ptr],
            "cuCtxSynchronize": [],
            "cuModuleLoadData": [ctypes.POINTER(ptr), ptr],
            "cuModuleUnload": [ptr],
            "cuModuleGetFunction": [ctypes.POINTER(ptr), ptr, ctypes.c_char_p],
            "cuFuncSetAttribute": [ptr, ctypes.c_int, ctypes.c_int],
            "cuMemAlloc_v2": [ctypes.POINTER(u64), size],
            "cuMemFree_v2": [u64],
            "cuMemcpyHtoD_v2": [u64, ptr, size],
            "cuMemcpyDtoH_v2": [ptr, u64, size],
            "cuMemsetD8_v2": [u64, ctypes.c_ubyte, size],
            "cuLaunchKernel": [ptr] + [ctypes.c_uint] * 6 +
                              [ctypes.c_uint, ptr, ctypes.POINTER(ptr), ptr],
            "cuGetErrorString": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
        }.items():
            getattr(lib, name).argtypes = args
            getattr(lib, name).restype = ctypes.c_int
        _cuda = lib
    return _cuda


def check(status, what):
    if status != 0:
        msg = ctypes.c_char_p()
        driver().cuGetErrorString(status, ctypes.byref(msg))
        raise CudaError(f"{what} failed: {status} "
                        f"({msg.value.decode() if msg.value else '?'})")


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kernel_json")
    ap.add_argument("input_dir")
    ap.add_argument("output_dir")
    ap.add_argument("--guard", type=int, default=0,
                    help="bytes of guard band on each side of every buffer "
                         "(a multiple of 256 keeps the buffers aligned)")
    ap.add_argument("--no-fill", action="store_true",
                    help="leave the outputs' elements unwritten before the "
                         "launch")
    a = ap.parse_args()
    meta = json.load(open(a.kernel_json))
    if len(meta["kernels"]) != 1:
        raise SystemExit(f"{a.kernel_json}: expected one kernel, found "
                         f"{len(meta['kernels'])}")
    kernel = meta["kernels"][0]
    here = os.path.dirname(os.path.abspath(a.kernel_json))
    binary = os.path.join(here, meta["binary"].replace(".ptx", ".cubin"))
    if not os.path.exists(binary):
        binary = os.path.join(here, meta["binary"])
    image = open(binary, "rb").read()
    if binary.endswith(".ptx"):
        image += b"\0"

    cu = driver()
    check(cu.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    module, func = ctypes.c_void_p(), ctypes.c_void_p()
    buf = ctypes.create_string_buffer(image, len(image))
    check(cu.cuModuleLoadData(ctypes.byref(module), buf), "cuModuleLoadData")
    check(cu.cuModuleGetFunction(ctypes.byref(func), module,
                                 kernel["name"].encode()), "cuModuleGetFunction")
    dyn = kernel.get("dynamic_shared_bytes", 0)
    if dyn > 48 * 1024:
        check(cu.cuFuncSetAttribute(
            func, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dyn),
            "cuFuncSetAttribute")

    guard = a.guard
    buffers, holders = [], [None] * len(kernel["args"])
    starts = {}  # argument index -> device address, for the tensor maps
    for index, arg in enumerate(kernel["args"]):
        name = arg["name"]
        if arg["kind"] == "tensormap":  # after the buffers: see below
            continue
        if arg["kind"] != "memref":  # the dropout seed
            value = np.load(os.path.join(a.input_dir, name + ".npy"))
            holders[index] = ctypes.c_int64(int(value))
            continue
        n = 1
        for d in arg["shape"]:
            n *= d
        nbytes = n * ELEMENT_BYTES[arg["dtype"]]
        alloc = ctypes.c_uint64()
        check(cu.cuMemAlloc_v2(ctypes.byref(alloc), nbytes + 2 * guard),
              f"cuMemAlloc({name})")
        start = alloc.value + guard
        output = name in ("o", "lse")
        written = []
        if output:
            if guard:
                check(cu.cuMemsetD8_v2(alloc.value, 0xFF, guard), "cuMemsetD8")
                check(cu.cuMemsetD8_v2(start + nbytes, 0xFF, guard), "cuMemsetD8")
                written += [[alloc.value, start], [start + nbytes, start + nbytes + guard]]
            if not a.no_fill:
                check(cu.cuMemsetD8_v2(start, 0xFF, nbytes), "cuMemsetD8")
                written.append([start, start + nbytes])
        else:
            host = np.ascontiguousarray(
                np.load(os.path.join(a.input_dir, name + ".npy")))
            want = np.dtype(NUMPY[arg["dtype"]])
            if host.dtype == np.bool_ and want == np.uint8:
                host = host.astype(np.uint8)
            if host.dtype != want or list(host.shape) != arg["shape"]:
                raise SystemExit(f"{name}.npy: expected {want} {arg['shape']}, "
                                 f"got {host.dtype} {list(host.shape)}")
            check(cu.cuMemcpyHtoD_v2(start, host.ctypes.data, nbytes),
                  f"cuMemcpyHtoD({name})")
            written.append([start, start + nbytes])
        buffers.append(dict(name=name, role="output" if output else "input",
                            dtype=arg["dtype"], shape=arg["shape"],
                            start=start, bytes=nbytes, alloc=alloc.value,
                            alloc_bytes=nbytes + 2 * guard, written=written))
        holders[index] = ctypes.c_uint64(start)
        starts[index] = start
    for index, arg in enumerate(kernel["args"]):
        if arg["kind"] != "tensormap":
            continue
        name = arg["name"]
        data = encode_tensor_map(arg, starts[arg["source"]])
        alloc = ctypes.c_uint64()
        check(cu.cuMemAlloc_v2(ctypes.byref(alloc), TENSOR_MAP_BYTES),
              f"cuMemAlloc({name})")
        check(cu.cuMemcpyHtoD_v2(alloc.value, data, TENSOR_MAP_BYTES),
              f"cuMemcpyHtoD({name})")
        buffers.append(dict(name=name, role="tensormap", dtype="i8",
                            shape=[TENSOR_MAP_BYTES], start=alloc.value,
                            bytes=TENSOR_MAP_BYTES, alloc=alloc.value,
                            alloc_bytes=TENSOR_MAP_BYTES,
                            written=[[alloc.value,
                                      alloc.value + TENSOR_MAP_BYTES]],
                            source=kernel["args"][arg["source"]]["name"]))
        holders[index] = ctypes.c_uint64(alloc.value)
    print("ATTNFUSE_BUFFERS " + json.dumps(buffers), flush=True)

    params = (ctypes.c_void_p * len(holders))(
        *[ctypes.cast(ctypes.byref(h), ctypes.c_void_p) for h in holders])
    g, b = kernel["grid"], kernel["block"]
    t = time.time()
    status = 0
    try:
        check(cu.cuLaunchKernel(func, g[0], g[1], g[2], b[0], b[1], b[2], dyn,
                                None, params, None), "cuLaunchKernel")
        check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    except CudaError as e:
        print(f"ATTNFUSE_LAUNCH error {e}", flush=True)
        return 1
    ms = (time.time() - t) * 1e3

    os.makedirs(a.output_dir, exist_ok=True)
    guards_ok = True
    for buf_ in buffers:
        if buf_["role"] != "output":
            continue
        raw = np.empty(buf_["alloc_bytes"], dtype=np.uint8)
        check(cu.cuMemcpyDtoH_v2(raw.ctypes.data, buf_["alloc"], raw.nbytes),
              f"cuMemcpyDtoH({buf_['name']})")
        if guard:
            bands = np.concatenate([raw[:guard], raw[guard + buf_["bytes"]:]])
            if not np.all(bands == 0xFF):
                guards_ok = False
                print(f"ATTNFUSE_GUARD {buf_['name']}: "
                      f"{int(np.sum(bands != 0xFF))} bytes of its guard bands "
                      f"written", flush=True)
        data = raw[guard:guard + buf_["bytes"]].view(NUMPY[buf_["dtype"]])
        np.save(os.path.join(a.output_dir, buf_["name"] + ".npy"),
                data.reshape(buf_["shape"]))
    for buf_ in buffers:
        check(cu.cuMemFree_v2(buf_["alloc"]), "cuMemFree")
    check(cu.cuModuleUnload(module), "cuModuleUnload")
    cu.cuDevicePrimaryCtxRelease_v2(dev)
    print(f"ATTNFUSE_LAUNCH ok {kernel['name']} grid={g} block={b} "
          f"shared={dyn} ms={ms:.1f} guards={'ok' if guards_ok else 'WRITTEN'}",
          flush=True)
    return status if guards_ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except CudaError as e:
        print(f"ATTNFUSE_LAUNCH error {e}", flush=True)
        sys.exit(1)
