#!/usr/bin/env python3
"""Inputs with NaN and infinities for nan_inf_semantics.mlir, and the check
of what docs/Semantics.md says the results are.

  gen DIR    writes DIR/arg0.npy .. arg3.npy (Q, K, V, bias) and
             DIR/bwd/arg0.npy .. arg3.npy (Q, K, V, dO) for the backward test.
  check DIR  reads DIR/result0.npy (O) and DIR/result1.npy (lse).
  check-bwd DIR  reads DIR/result0.npy .. result2.npy (dQ, dK, dV).

Q [1, 2, 4, 4], K [1, 2, 6, 4], V [1, 2, 6, 3], bias [1, 2, 4, 6], causal
(top-left): row q sees keys 0..q, so keys 4 and 5 are hidden from every row.
"""
import os
import sys

import numpy as np

inf, nan = np.inf, np.nan


def gen(d):
    rng = np.random.default_rng(7)
    q = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    k = rng.standard_normal((1, 2, 6, 4)).astype(np.float32)
    v = rng.standard_normal((1, 2, 6, 3)).astype(np.float32)
    bias = np.zeros((1, 2, 4, 6), np.float32)
    # Head 0.
    bias[0, 0, 0, 0] = -inf   # row 0 sees no key: O = 0, lse = -inf
    bias[0, 0, 1, 0] = nan    # row 1: a NaN score, O = lse = NaN
    bias[0, 0, 2, 1] = inf    # row 2: a +inf score, O = lse = NaN
    v[0, 0, 3, 0] = inf       # key 3, seen by row 3 only: O[3, 0] = +inf
    v[0, 0, 4, :] = nan       # hidden keys: nothing, whatever V holds
    v[0, 0, 5, :] = inf
    k[0, 0, 5, :] = nan       # a hidden key's NaN score is hidden too
    bias[0, 0, :, 4] = nan    # ... and so is its NaN bias
    # Head 1.
    k[0, 1, 1, 2] = nan       # key 1 seen by rows 1..3: NaN rows
    v[0, 1, 4, :] = -inf
    v[0, 1, 5, 1] = nan
    os.makedirs(d, exist_ok=True)
    for i, a in enumerate((q, k, v, bias)):
        np.save(os.path.join(d, f"arg{i}.npy"), a)
    # Backward: the hidden keys' V and K are non-finite; dO finite.
    qb = rng.standard_normal((1, 1, 4, 4)).astype(np.float32)
    kb = rng.standard_normal((1, 1, 6, 4)).astype(np.float32)
    vb = rng.standard_normal((1, 1, 6, 3)).astype(np.float32)
    kb[0, 0, 5, :] = nan
    vb[0, 0, 4, :] = inf
    vb[0, 0, 5, :] = nan
    dob = rng.standard_normal((1, 1, 4, 3)).astype(np.float32)
    os.makedirs(os.path.join(d, "bwd"), exist_ok=True)
    for i, a in enumerate((qb, kb, vb, dob)):
        np.save(os.path.join(d, "bwd", f"arg{i}.npy"), a)


def expect(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    return bool(cond)


def check(d):
    o = np.load(os.path.join(d, "result0.npy"))[0]
    lse = np.load(os.path.join(d, "result1.npy"))[0]
    ok = True
    ok &= expect(np.all(o[0, 0] == 0) and lse[0, 0] == -inf,
                 "a row that sees no key: O = 0, lse = -inf")
    ok &= expect(np.all(np.isnan(o[0, 1])) and np.isnan(lse[0, 1]),
                 "a NaN score: O = lse = NaN")
    ok &= expect(np.all(np.isnan(o[0, 2])) and np.isnan(lse[0, 2]),
                 "a +inf score: O = lse = NaN")
    ok &= expect(o[0, 3, 0] == inf and np.all(np.isfinite(o[0, 3, 1:])) and
                 np.isfinite(lse[0, 3]),
                 "+inf in a visible V row: that column is +inf, the rest finite")
    ok &= expect(np.all(np.isfinite(o[1, 0])) and np.isfinite(lse[1, 0]),
                 "hidden keys with NaN/-inf in V contribute nothing")
    ok &= expect(np.all(np.isnan(o[1, 1:])) and np.all(np.isnan(lse[1, 1:])),
                 "a NaN in a visible K row: the rows that see it are NaN")
    return ok


def check_bwd(d):
    ok = True
    for i, name in enumerate(("dQ", "dK", "dV")):
        g = np.load(os.path.join(d, f"result{i}.npy"))
        finite = np.isfinite(g[0, 0, :4]) if name != "dQ" else np.isfinite(g)
        ok &= expect(np.all(finite),
                     f"{name}: hidden keys' non-finite K and V add nothing")
    return ok


if __name__ == "__main__":
    cmd, d = sys.argv[1], sys.argv[2]
    if cmd == "gen":
        gen(d)
    else:
        sys.exit(0 if (check if cmd == "check" else check_bwd)(d) else 1)
