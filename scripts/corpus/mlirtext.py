"""Text fixes shared by the corpus generators (no dependency beyond the standard library)."""

import re

I1_HEX_RE = re.compile(r'dense<"0x([0-9A-Fa-f]*)"> : tensor<((?:\d+x)*)i1>')


def _nested(vals, shape):
    if not shape:
        return vals[0]
    if len(shape) == 1:
        return "[" + ", ".join(vals) + "]"
    step = len(vals) // shape[0]
    return "[" + ", ".join(_nested(vals[i * step:(i + 1) * step], shape[1:])
                           for i in range(shape[0])) + "]"


def i1_hex_to_literal(text):
    """Rewrite hex-encoded i1 dense constants as true/false literals.

    torch-mlir's MLIR (newer than LLVM 22) prints an i1 tensor constant as hex with one
    byte per element; LLVM 22's parser rejects it ("elements hex data size is invalid
    for provided type"). The literal form means the same in both versions."""

    def repl(m):
        data = bytes.fromhex(m.group(1))
        dims = [int(d) for d in m.group(2).split("x") if d]
        n = 1
        for d in dims:
            n *= d
        if len(data) == n:
            bits = [b != 0 for b in data]
        elif len(data) == 1:  # splat
            bits = [data[0] != 0] * n
        elif len(data) == (n + 7) // 8:  # packed bits, little-endian within a byte
            bits = [(data[i // 8] >> (i % 8)) & 1 == 1 for i in range(n)]
        else:
            return m.group(0)
        vals = ["true" if b else "false" for b in bits]
        if all(v == vals[0] for v in vals):
            lit = vals[0]
        else:
            lit = _nested(vals, dims)
        return f"dense<{lit}> : tensor<{m.group(2)}i1>"

    return I1_HEX_RE.sub(repl, text)


# Manifest fields written by hand (expectations of the corpus lit tests, see
# test/Corpus/lit.local.cfg): a regenerated entry keeps them.
EXPECTATION_FIELDS = ("fused", "not_fused_because", "structural", "lse", "int_bound",
                      "int_bound_because")


def kept_expectations(old_entry):
    """The hand-written expectation fields of a manifest entry being rewritten."""
    return {k: v for k, v in (old_entry or {}).items() if k in EXPECTATION_FIELDS}
