"""Crash signatures of attnfuse tools, and the list of known ones.

A tool run is a *crash* when it dies by a signal, prints an LLVM stack dump,
`LLVM ERROR:`, a failed assertion or an uncaught C++ exception (errors
reported as diagnostics with exit status 1 or 2 are not crashes). Its
signature is `KIND: FRAME < FRAME` — the kind (SIGSEGV, LLVM ERROR: message,
assertion, ...) and the first two project frames of the stack trace (frames
outside libLLVM/libMLIR/libc, without argument lists and template
arguments), so that one bug reached from many inputs is one finding.

known-crashes.txt lists known classes, one regular expression per line
(matched with re.search against the signature), `#` comments allowed.
"""
import os
import re
import signal

HERE = os.path.dirname(os.path.abspath(__file__))
KNOWN_FILE = os.path.join(HERE, "known-crashes.txt")

_FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-f]+ (.*)$")
_LIBS = ("/usr/lib/llvm", "libc.so", " ./", "libstdc++", "libgcc", "ld-linux",
         "libLLVM", "libMLIR", "libclang_rt", "/csu/", "sysdeps")


def _strip_nested(text, open_ch, close_ch):
    out, depth = [], 0
    for ch in text:
        if ch == open_ch:
            depth += 1
        elif ch == close_ch and depth:
            depth -= 1
        elif not depth:
            out.append(ch)
    return "".join(out)


_RUNTIME_PREFIXES = ("__interceptor_", "___interceptor_", "__asan",
                     "__sanitizer", "__ubsan")
_RUNTIME = {"memmove", "memcpy", "memset", "new", "delete", "malloc",
            "calloc", "realloc", "free", "operator"}


def simplify_frame(frame):
    """`void ns::f<T>(int) const (file+0x..)` -> `ns::f`; None if unnamed
    or a sanitizer runtime frame (ASan writes `in f(...) file:line`)."""
    frame = re.sub(r"^in ", "", re.sub(r"\s\(BuildId: \w+\)$", "", frame))
    name = re.sub(r"\s\((/|\S+\+0x)[^)]*\)$", "", frame)  # module+offset
    name = re.sub(r"\s\S+:\d+:\d+$", "", name)            # file:line:col
    if name.startswith("(") or not name.strip():
        return None
    name = name.replace("(anonymous namespace)", "anon")
    name = _strip_nested(_strip_nested(name, "(", ")"), "<", ">")
    name = re.sub(r"(\s+(const|volatile|&|&&))+\s*$", "", name)
    name = name.split()[-1] if name.split() else ""
    if name.startswith(_RUNTIME_PREFIXES) or name in _RUNTIME:
        return None
    return name or None


def _first_stack(log):
    """The lines of the first stack trace (a sanitizer report has more: where
    the memory was allocated, freed, ...)."""
    lines, started = [], False
    for line in log.splitlines():
        if _FRAME.match(line):
            started = True
            lines.append(line)
        elif started:
            break
    return lines


def project_frames(log):
    frames = []
    for line in _first_stack(log):
        m = _FRAME.match(line)
        if not m:
            continue
        text = m.group(1)
        if any(lib in text for lib in _LIBS):
            continue
        name = simplify_frame(text)
        if name and not name.endswith(("callback_fn", "main", "_start")):
            frames.append(name)
    return frames


def upstream_frame(log):
    """The first named frame below the signal handler, for crashes that
    never reach a project frame (e.g. the parser's recursion)."""
    for line in _first_stack(log):
        m = _FRAME.match(line)
        if m and not any(x in m.group(1) for x in ("libc.so", " ./", "libstdc++")):
            name = simplify_frame(m.group(1))
            if name and not name.startswith("llvm::sys::"):
                return name
    return None


def signature(returncode, log):
    """The crash signature of a run, or None when it did not crash."""
    kind = None
    m = re.search(r"Assertion `(.*)' failed", log)
    if m:
        kind = "assertion: " + m.group(1)
    elif "LLVM ERROR:" in log:
        msg = log.split("LLVM ERROR:", 1)[1].strip().splitlines()[0]
        kind = "LLVM ERROR: " + re.sub(r"\d+", "N", msg)
    elif "terminate called" in log:
        kind = "uncaught exception: " + re.sub(
            r"\d+", "N", log.split("terminate called", 1)[1].splitlines()[0])
    elif re.search(r"^(ERROR|SUMMARY): (Address|UndefinedBehavior|Leak)"
                   r"Sanitizer", log, re.M):
        m = re.search(r"SUMMARY: (\w+Sanitizer): (\S+)", log)
        kind = f"{m.group(1)}: {m.group(2)}" if m else "sanitizer"
        if kind == "AddressSanitizer: SEGV":  # as without ASan
            kind = "SIGSEGV"
    elif re.search(r"runtime error: ", log):
        m = re.search(r"runtime error: ([^0-9\n]*)", log)
        kind = "UBSan: " + m.group(1).strip()
    elif returncode < 0:
        try:
            kind = signal.Signals(-returncode).name
        except ValueError:
            kind = f"signal {-returncode}"
    elif returncode >= 128 or "Stack dump:" in log:
        kind = f"exit {returncode} with a stack dump"
    if kind is None:
        return None
    frames = project_frames(log)
    if frames:
        return kind + ": " + " < ".join(frames[:2])
    upstream = upstream_frame(log)
    if upstream:
        return kind + ": upstream " + upstream
    # No symbol at all: what the pretty stack trace says it was doing.
    doing = re.findall(r"^\d+\.\s+(?!Program arguments)(.*\S)", log, re.M)
    return kind + (": upstream [" + re.sub(r"\d+", "N", doing[-1]).strip() + "]"
                   if doing else "")


def load_known(path=KNOWN_FILE):
    """The known signatures: one regular expression a line, # comments."""
    pats = []
    if path and os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if line and not line.startswith("#"):
                pats.append(re.compile(line))
    return pats


def is_known(sig, known):
    return any(p.search(sig) for p in known)
