"""Inputs and the exact expected results of attnfuse-run-float-conversions.mlir.

gen DIR: writes x.npy (f32: every bf16 upper half with the low halves that
decide its rounding, and f16 rounding cases), y.npy (f64: ties, values just
off ties that a rounding through f32 would turn into ties, subnormals,
overflow), h.npy (every f16 bit pattern), b.npy (every bf16 bit pattern).
check IN OUT: compares result<i>.npy of the function with conversions that
round once, to nearest, ties to even (ml_dtypes, numpy, and exact rational
arithmetic for f64 to bf16), NaN matching NaN.
"""
import math
import os
import sys
from fractions import Fraction

import ml_dtypes
import numpy as np


def f32_inputs():
    upper = np.arange(1 << 16, dtype=np.uint32) << 16
    # bf16 rounding: below, at and above the tie, and the extremes.
    low = np.array([0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF],
                   dtype=np.uint32)
    bf16_cases = (upper[:, None] | low[None, :]).ravel()
    # f16 rounding: every f16-representable f32 upper part (the 13 bits an
    # f16 drops below it varied at and around the tie).
    rng = np.random.default_rng(0)
    words = rng.integers(0, 1 << 32, size=1 << 17, dtype=np.uint64).astype(
        np.uint32)
    drop = np.array([0x0000, 0x0FFF, 0x1000, 0x1001, 0x1FFF], dtype=np.uint32)
    f16_cases = ((words[:, None] & ~np.uint32(0x1FFF)) | drop[None, :]).ravel()
    return np.concatenate([bf16_cases, f16_cases]).view(np.float32)


def f64_inputs():
    rng = np.random.default_rng(1)
    values = []
    # Ties of bf16 (8 bits of precision) and f16 (11), and values off them by
    # less than an f32 rounding: rounding through f32 first would make them
    # ties and round them the wrong way.
    for p in (8, 11):
        for e in range(-30, 20):
            for m in range(1 << (p - 1), 1 << p, 7):
                tie = (m + 0.5) * 2.0 ** (e - (p - 1))
                for off in (0.0, 2.0 ** -40, -(2.0 ** -40), 2.0 ** -30):
                    values.append(tie * (1 + off))
    values += list(rng.standard_normal(4096) * 10.0 ** rng.uniform(-9, 6, 4096))
    values += [0.0, -0.0, 6.0e-8, 3.0e-8, 2.9e-8, 65504.0, 65519.99, 65520.0,
               3.4e38, 3.3961e38, 3.3962e38, 1e39, -1e39, 9.2e-41, 1e-45,
               float("inf"), float("-inf"), float("nan")]
    return np.array(values, dtype=np.float64)


def round_once(x, p, emin, emax):
    """x rounded to p bits of precision (normals from 2^emin, largest
    exponent emax), to nearest, ties to even, from its exact value."""
    if math.isnan(x) or math.isinf(x) or x == 0:
        return x
    _, e = math.frexp(abs(x))
    quantum = Fraction(2) ** (max(e - 1, emin) - (p - 1))
    r = round(Fraction(abs(x)) / quantum) * quantum  # ties to even
    largest = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    value = math.inf if r > largest else float(r)
    return math.copysign(value, x)


def same(actual, expected):
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    nan = np.isnan(expected)
    ok = (np.isnan(actual) == nan) & (nan | (actual == expected)) & (
        nan | (np.signbit(actual) == np.signbit(expected)))
    return ok


def main():
    mode, *dirs = sys.argv[1:]
    if mode == "gen":
        out = dirs[0]
        os.makedirs(out, exist_ok=True)
        np.save(os.path.join(out, "x.npy"), f32_inputs())
        np.save(os.path.join(out, "y.npy"), f64_inputs())
        np.save(os.path.join(out, "h.npy"),
                np.arange(1 << 16, dtype=np.uint16).view(np.float16))
        np.save(os.path.join(out, "b.npy"), np.arange(1 << 16, dtype=np.uint16))
        return 0
    inputs, outputs = dirs
    x = np.load(os.path.join(inputs, "x.npy"))
    y = np.load(os.path.join(inputs, "y.npy"))
    h = np.load(os.path.join(inputs, "h.npy"))
    b = np.load(os.path.join(inputs, "b.npy"))
    expected = [
        ("f32 -> bf16", x, x.astype(ml_dtypes.bfloat16)),
        ("f32 -> f16", x, x.astype(np.float16)),
        ("f64 -> bf16", y, [round_once(v, 8, -126, 127) for v in y]),
        ("f64 -> f16", y, [round_once(v, 11, -14, 15) for v in y]),
        ("f16 -> f32", h, h.astype(np.float32)),
        ("bf16 -> f32", b, (b.astype(np.uint32) << 16).view(np.float32)),
        ("f16 -> f64", h, h.astype(np.float64)),
    ]
    failed = False
    for i, (name, source, want) in enumerate(expected):
        got = np.load(os.path.join(outputs, "result%d.npy" % i))
        ok = same(got, want)
        bad = np.flatnonzero(~ok)
        print("%s: %d of %d exact" % (name, ok.sum(), ok.size))
        for j in bad[:5]:
            print("  %r -> %r, expected %r" % (source[j], got[j],
                                               np.float64(want[j])))
        failed |= bad.size > 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
