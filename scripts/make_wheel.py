#!/usr/bin/env python3
"""Writes the wheel of the attnfuse Python package (no build tools needed:
a wheel is a zip with a .dist-info directory, PEP 427).

    make_wheel.py PACKAGE_DIR LIBRARY OUT_DIR [--version V]

PACKAGE_DIR holds attnfuse/*.py (python-bindings/attnfuse, or the build's
build/python_packages/attnfuse); LIBRARY is the libAttnFuseCAPI.so to put
next to them (the bundle's, linked statically against MLIR/LLVM, for a wheel
that runs where no LLVM is installed: scripts/build-wheel.sh). The package
has no extension module (ctypes over the C API), so the wheel is for any
CPython 3 on linux x86_64: attnfuse-V-py3-none-linux_x86_64.whl. Prints
the wheel's path.
"""
import argparse
import base64
import glob
import hashlib
import os
import zipfile

TAG = "py3-none-linux_x86_64"


def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(
        hashlib.sha256(data).digest()).rstrip(b"=").decode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("package_dir")
    ap.add_argument("library")
    ap.add_argument("out_dir")
    ap.add_argument("--version", default="0.1.0")
    args = ap.parse_args()
    sources = sorted(glob.glob(os.path.join(args.package_dir, "*.py")))
    if not any(os.path.basename(s) == "__init__.py" for s in sources):
        raise SystemExit(f"make_wheel.py: no __init__.py in "
                         f"{args.package_dir}")
    files = [(f"attnfuse/{os.path.basename(s)}", open(s, "rb").read())
             for s in sources]
    with open(args.library, "rb") as f:
        files.append(("attnfuse/libAttnFuseCAPI.so", f.read()))
    info = f"attnfuse-{args.version}.dist-info"
    files.append((f"{info}/METADATA", (
        "Metadata-Version: 2.1\n"
        f"Name: attnfuse\nVersion: {args.version}\n"
        "Summary: attnfuse: an MLIR compiler of fused attention kernels, "
        "from Python and PyTorch (attnfuse.torch)\n"
        "Requires-Python: >=3.8\nRequires-Dist: numpy\n"
        "Provides-Extra: torch\nRequires-Dist: torch; extra == 'torch'\n"
        ).encode()))
    files.append((f"{info}/WHEEL", (
        "Wheel-Version: 1.0\nGenerator: attnfuse make_wheel.py\n"
        f"Root-Is-Purelib: false\nTag: {TAG}\n").encode()))
    files.append((f"{info}/top_level.txt", b"attnfuse\n"))
    record = "".join(f"{name},{digest(data)},{len(data)}\n"
                     for name, data in files) + f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode()))
    os.makedirs(args.out_dir, exist_ok=True)
    path = os.path.join(args.out_dir,
                        f"attnfuse-{args.version}-{TAG}.whl")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files:
            entry = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            entry.external_attr = (0o755 if name.endswith(".so")
                                   else 0o644) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(entry, data)
    print(path)


if __name__ == "__main__":
    main()
