"""Checks that an object file compiled by attnfuse's host JIT imports only
symbols that the JIT registers itself (the names given) or that libc and libm
export: `jit_imports.py LLVM_NM OBJECT NAME...`. Prints each import and where
it comes from; exits 1 if one comes from nowhere else (a runtime builtin of
libgcc or compiler-rt that a machine may lack)."""
import subprocess
import sys


def mapped_library(stem):
    """The path of the shared library `stem` (libc.so, libm.so) mapped into
    this process (Python links both)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if path.rsplit("/", 1)[-1].startswith(stem):
                return path
    raise SystemExit("no %s mapped into this process" % stem)


def exports(nm, library):
    out = subprocess.run([nm, "-D", "--defined-only", "--format=just-symbols",
                          library], capture_output=True, text=True, check=True)
    return {line.split("@")[0] for line in out.stdout.split()}


def main():
    nm, obj, *registered = sys.argv[1:]
    libc = exports(nm, mapped_library("libc.so"))
    libm = exports(nm, mapped_library("libm.so"))
    out = subprocess.run([nm, "--undefined-only", "--format=just-symbols", obj],
                         capture_output=True, text=True, check=True)
    bad = 0
    for name in sorted(set(out.stdout.split())):
        where = ("registered" if name in registered else
                 "libc" if name in libc else "libm" if name in libm else None)
        print("import %s: %s" % (name, where or "UNRESOLVED ELSEWHERE"))
        bad += where is None
    print("%d imports from nowhere else" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
