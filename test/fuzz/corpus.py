"""Random pass sequences and attribute/shape mutants over the test corpus.

The corpus is every .mlir file under test/ (split at `// -----` as
-split-input-file does). A *passes* case runs one corpus chunk through 1-5
random passes of attnfuse-opt (attnfuse's, with random options, and the
upstream passes its pipelines use); a *mutate* case first mutates the chunk
(a shape dimension, element type, attribute value, integer literal, line or
SSA name changed everywhere or once) and runs it through random passes, or
through attnfuse-run. Errors are fine; crashes (crashes.signature) are
findings, and `minimize` shrinks the pass list and the text of a crashing
case while it keeps its signature.
"""
import os
import random
import re
import resource
import subprocess

from capi import CHIPS
from crashes import signature

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT = 60
MEMORY_LIMIT = 4 << 30  # attnfuse-run of a mutant with huge shapes


def load_corpus(root=os.path.join(ROOT, "test")):
    chunks = []
    for d, _, files in sorted(os.walk(root)):
        if os.sep + "fuzz" in d:
            continue
        for f in sorted(files):
            if f.endswith(".mlir"):
                text = open(os.path.join(d, f)).read()
                for i, chunk in enumerate(re.split(r"^// -----.*$", text, flags=re.M)):
                    if "func.func" in chunk or "attn." in chunk:
                        chunks.append((os.path.relpath(os.path.join(d, f), ROOT) + f"#{i}", chunk))
    return chunks


def _block(rng):
    return rng.choice([0, 1, 2, 3, 7, 16, 32, 64, 128, -1, 1 << 31])


def _chip(rng):
    """The main chips half the time, else any chip string (capi.CHIPS: chips
    without the kernels' instructions, strings that name no chip, the empty
    one)."""
    if rng.random() < 0.5:
        return rng.choice(["sm_90a", "sm_80"])
    return rng.choice(CHIPS)


PASSES = [
    lambda r: "--canonicalize", lambda r: "--cse", lambda r: "--symbol-dce",
    lambda r: "--sccp", lambda r: "--inline", lambda r: "--loop-invariant-code-motion",
    lambda r: "--convert-attn-to-linalg",
    lambda r: f"--convert-attn-to-scf=block-q={_block(r)} block-k={_block(r)}",
    lambda r: "--convert-attn-to-scf",
    lambda r: "--convert-attn-to-gpu=mma=" + r.choice(["simt", "mma_sync"]) +
    r.choice(["", f" block-q={_block(r)}", f" block-k={_block(r)}",
              f" chunk={_block(r)}", f" warps={r.choice([1, 4, 8, 16])}",
              f" stages={r.choice([0, 1, 2, 4, 9])}",
              f" threads-per-row={_block(r)}", " lazy-rescale",
              f" chip={_chip(r)}", " approx-score-mod=false",
              " deterministic=true"]),
    lambda r: "--attn-raise-attention=report=" + r.choice(["none", "remarks", "errors"]),
    lambda r: "--attn-decompose-aggregates",
    lambda r: "--attn-expand-inference-operands",
    lambda r: "--linalg-fuse-elementwise-ops",
    lambda r: "--one-shot-bufferize=bufferize-function-boundaries",
    lambda r: "--attn-lower-to-cpu-pipeline" + r.choice(
        ["", "=naive", f"=block-q={_block(r)} block-k={_block(r)}"]),
    lambda r: f"--attn-lower-to-nvvm-pipeline=format=isa chip={_chip(r)}" + r.choice(
        ["", " naive", " mma=simt", f" block-k={_block(r)}"]),
    lambda r: "--canonicalize=top-down=false",
]


def random_passes(rng):
    return [rng.choice(PASSES)(rng) for _ in range(rng.randint(1, 5))]


# ------------------------------------------------------------------ mutants

_TYPE = re.compile(r"tensor<((?:\d+x)*)(\w+)>")
INTS = [0, 1, 2, 3, 5, 16, 17, 255, 256, 1 << 16, (1 << 31) - 1, 1 << 31,
        (1 << 32) + 1, (1 << 62), (1 << 63) - 1, -1]
FLOATS = ["0.0", "-0.0", "1.0", "-1.0", "0.5", "0.999", "1.0", "2.0", "1.0e-30",
          "1.0e30", "0x7FC00000", "0x7F800000", "0xFF800000"]
ELTYPES = ["f16", "bf16", "f32", "f64", "i1", "i8", "i32", "f8E4M3FN", "index"]


def _replace_nth(text, pattern, rng, fn):
    ms = list(re.finditer(pattern, text))
    if not ms:
        return None
    m = rng.choice(ms)
    return text[:m.start()] + fn(m) + text[m.end():]


def mutate_once(text, rng):
    kind = rng.randrange(10)
    if kind == 0:  # one shape dimension, everywhere it has this value
        dims = sorted({d for m in _TYPE.finditer(text) for d in m.group(1).split("x") if d})
        if not dims:
            return None
        old, new = rng.choice(dims), str(rng.choice(INTS[:10] + [7, 64]))
        return re.sub(r"(?<=[<x])" + old + r"(?=x)", new, text)
    if kind == 1:  # one dimension of one type
        return _replace_nth(text, r"(?<=[<x])\d+(?=x)", rng,
                            lambda m: str(rng.choice(INTS)))
    if kind == 2:  # an element type, everywhere
        old = rng.choice(["f16", "bf16", "f32", "i1"])
        return re.sub(r"(?<=x)" + old + r"(?=>)", rng.choice(ELTYPES), text)
    if kind == 3:  # an integer attribute
        return _replace_nth(text, r"(?<== )-?\d+(?= :|,|\})", rng,
                            lambda m: str(rng.choice(INTS)))
    if kind == 4:  # a float attribute or constant
        return _replace_nth(text, r"-?\d+\.\d+(e[-+]?\d+)?(?= : f)", rng,
                            lambda m: rng.choice(FLOATS))
    if kind == 5:  # mask / alignment
        return _replace_nth(text, r"#attn\.(mask|alignment)<\w+>", rng,
                            lambda m: "#attn." + m.group(1) + "<" + rng.choice(
                                ["none", "causal", "sliding_window", "top_left",
                                 "bottom_right"]) + ">")
    lines = text.splitlines(keepends=True)
    if kind == 6 and lines:  # drop a line
        del lines[rng.randrange(len(lines))]
        return "".join(lines)
    if kind == 7 and lines:  # duplicate a line
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        return "".join(lines)
    if kind == 8:  # one use of a value replaced by another
        names = sorted(set(re.findall(r"%[\w]+", text)))
        if len(names) < 2:
            return None
        a, b = rng.sample(names, 2)
        return _replace_nth(text, re.escape(a) + r"\b(?! =)", rng, lambda m: b)
    # an attribute dropped or added
    return _replace_nth(text, r"\{[^{}]*\}", rng, lambda m: rng.choice([
        "{}", m.group(0)[:-1] + ", dropout_p = 0.5 : f32}",
        m.group(0)[:-1] + ", window_left = 3, window_right = 0}",
        m.group(0)[:-1] + ", scale = 0.0 : f32}"]))


def mutate(text, rng):
    for _ in range(rng.randint(1, 3)):
        text = mutate_once(text, rng) or text
    return text


# ------------------------------------------------------------------ running

def _limit_memory():
    if "ASAN_OPTIONS" in os.environ:  # ASan reserves terabytes of shadow
        return
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_tool(cmd, timeout=TIMEOUT):
    """(crash signature or None, output)."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                           timeout=timeout, preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired:
        return "timeout", ""
    out = r.stdout[-20000:] + r.stderr
    return signature(r.returncode, out), out


def command(bin_dir, path, action):
    """action: a list of attnfuse-opt flags, or ['run'] for attnfuse-run."""
    if action == ["run"]:
        return [os.path.join(bin_dir, "attnfuse-run"), path, "--check=naive"]
    return [os.path.join(bin_dir, "attnfuse-opt"), path, *action, "-o", os.devnull]


def run_text(text, action, bin_dir, path):
    with open(path, "w") as f:
        f.write(text)
    return run_tool(command(bin_dir, path, action))


def small_enough_to_run(text):
    """attnfuse-run's naive reference is O(Nq * Nk): keep executions quick
    (huge shapes are still compiled by the passes)."""
    for m in _TYPE.finditer(text):
        dims = [int(d) for d in m.group(1).split("x") if d]
        n = 1
        for d in dims:
            n *= d
        if n > 1 << 16 or (dims and max(dims) > 1 << 11):
            return False
    return True


def random_case(chunks, rng, mutating):
    name, text = rng.choice(chunks)
    if mutating:
        text = mutate(text, rng)
        # Exported models gather from their tables at indices their inputs
        # give (token ids): with random inputs, or a mutated bounds check,
        # the program itself reads out of bounds. Their mutants are compiled,
        # not run.
        exported = name.startswith(os.path.join("test", "Corpus") + os.sep)
        run = (rng.random() < 0.15 and not exported and
               small_enough_to_run(text))
        action = ["run"] if run else random_passes(rng)
    else:
        action = random_passes(rng)
    return name, text, action


def minimize(text, action, sig, bin_dir, path, budget=150):
    """Drops passes, then lines (in halving chunks), keeping `sig`."""
    runs = [0]

    def same(t, a):
        runs[0] += 1
        return run_text(t, a, bin_dir, path)[0] == sig

    if action != ["run"]:
        i = 0
        while i < len(action) and len(action) > 1 and runs[0] < budget:
            shorter = action[:i] + action[i + 1:]
            if same(text, shorter):
                action = shorter
            else:
                i += 1
    lines = text.splitlines(keepends=True)
    lines = [l for l in lines if not l.lstrip().startswith("//")] \
        if same("".join(l for l in lines if not l.lstrip().startswith("//")), action) else lines
    n = max(1, len(lines) // 2)
    while n >= 1 and runs[0] < budget:
        i, changed = 0, False
        while i < len(lines) and runs[0] < budget:
            candidate = lines[:i] + lines[i + n:]
            if candidate and same("".join(candidate), action):
                lines, changed = candidate, True
            else:
                i += n
        if not changed:
            n //= 2
    return "".join(lines), action
