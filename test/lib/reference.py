#!/usr/bin/env python3
"""Independent fp64 evaluation of attn.attention, for the lit suite.

Written from the op's definition (include/attnfuse/Dialect/Attn/IR/AttnOps.td)
with numpy only, sharing no code with the compiler. Two subcommands:

  gen    writes input .npy files (arg<i>.npy) for `attnfuse-run --inputs=`.
  check  reads the inputs and results of an `attnfuse-run` execution
         (--dump-inputs / --dump-outputs) and compares every result with an
         fp64 evaluation; with --dropout-stats it also checks the dropout mask
         statistically (kept fraction, scaling of the kept probabilities).
         With --backward the results are (O, dQ, dK, dV) of a function that
         runs attn.attention then attn.attention_backward with dO = input 3.
  gradcheck  compares (dQ, dK, dV) results (an fp64 evaluation, from
         attnfuse-run --dump-f64) with central finite differences of
         L = sum(O * dO) through this file's fp64 forward.

Exit status 0 iff every check passes; one summary line per check.
"""
import argparse
import math
import os
import sys

import numpy as np

# Default tolerances per result dtype: |out - ref| <= atol + rtol * |ref|.
# The reference lowering accumulates in f32 and rounds once to the output type.
TOLERANCES = {"f32": (2e-5, 2e-4), "f16": (2e-4, 2 ** -9), "bf16": (2e-3, 2 ** -7),
              "f64": (1e-12, 1e-10)}

PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85
MASK32 = np.uint64(0xFFFFFFFF)


def philox4x32(seed, c0, c1, c2, c3):
    """Philox4x32-10, counter (c0, c1, c2, c3), key (seed lo, seed hi): the
    four output words (uint64 arrays holding 32-bit values)."""
    seed = int(seed) & 0xFFFFFFFFFFFFFFFF
    c0, c1, c2, c3 = (np.asarray(x, dtype=np.uint64) & MASK32
                      for x in (c0, c1, c2, c3))
    c0, c1, c2, c3 = np.broadcast_arrays(c0, c1, c2, c3)
    k0, k1 = seed & 0xFFFFFFFF, seed >> 32
    for rnd in range(10):
        if rnd:
            k0 = (k0 + PHILOX_W0) & 0xFFFFFFFF
            k1 = (k1 + PHILOX_W1) & 0xFFFFFFFF
        p0 = np.uint64(PHILOX_M0) * c0
        p1 = np.uint64(PHILOX_M1) * c2
        hi0, lo0 = p0 >> np.uint64(32), p0 & MASK32
        hi1, lo1 = p1 >> np.uint64(32), p1 & MASK32
        c0, c1, c2, c3 = (hi1 ^ c1 ^ np.uint64(k0), lo1,
                          hi0 ^ c3 ^ np.uint64(k1), lo0)
    return c0, c1, c2, c3


# Random123's kat_vectors for philox4x32-10: counter, key (k0, k1), output.
PHILOX_KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((0xffffffff,) * 4, (0xffffffff, 0xffffffff),
     (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344),
     (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]


def philox_known_answers():
    """Whether philox4x32 reproduces Random123's known-answer vectors."""
    return all(
        tuple(int(w) for w in philox4x32(k0 | (k1 << 32), *ctr)) == out
        for ctr, (k0, k1), out in PHILOX_KNOWN_ANSWERS)


def dropout_word(seed, b, h, q, k):
    """The 16 dropout bits of element (b, h, q, k): half k % 2 (low, high)
    of output word (k // 8) % 4 of Philox for counter
    (4 (k // 32) + (k // 2) % 4, q, h, b) (docs/Semantics.md)."""
    k = np.asarray(k, dtype=np.uint64)
    one, two, three = np.uint64(1), np.uint64(2), np.uint64(3)
    counter = (np.uint64(4) * (k >> np.uint64(5))) + ((k >> one) & three)
    words = philox4x32(seed, counter, q, h, b)
    word = np.choose(((k >> three) & three).astype(np.int64), words)
    return (word >> (np.uint64(16) * (k & one))) & np.uint64(0xFFFF)


def dropout_threshold(p):
    """floor(p * 2^16) of the op's dropout_p, an f32 attribute: p is rounded
    to f32 first, as the compiler reads it (0.5569 -> 0.55690002441406250,
    threshold 36497, not the 36496 of the double 0.5569)."""
    return math.floor(float(np.float32(p)) * 65536.0)


def dropout_scale(p):
    """Z of a kept element: f32(1 / (1 - p)) with p the f32 dropout_p."""
    return float(np.float32(1.0 / (1.0 - float(np.float32(p)))))


def dropout_bits(seed, shape):
    """The dropout word of every (b, h, q, k) of a [B, H, Nq, Nk] score."""
    B, H, Nq, Nk = shape
    b, h, q, k = np.meshgrid(np.arange(B), np.arange(H), np.arange(Nq),
                             np.arange(Nk), indexing="ij")
    return dropout_word(seed, b, h, q, k)


def dropout_keep(seed, p, shape):
    return dropout_bits(seed, shape) >= np.uint64(dropout_threshold(p))


def attention_f64(a, Q, K, V, bias=None, keep=None, seed=None):
    """Returns (O, lse, P) in fp64, P before dropout."""
    Q, K, V = (x.astype(np.float64) for x in (Q, K, V))
    B, Hq, Nq, D = Q.shape
    Hkv, Nk = K.shape[1], K.shape[2]
    G = Hq // Hkv
    K = np.repeat(K, G, axis=1)
    V = np.repeat(V, G, axis=1)
    scale = a.scale if a.scale is not None else 1.0 / math.sqrt(D)
    S = np.einsum("bhqd,bhkd->bhqk", Q, K) * scale
    S, _ = score_fn(a, S)
    if bias is not None:
        S = S + bias.astype(np.float64)
    visible = np.ones((Nq, Nk), dtype=bool)
    if a.mask != "none":
        off = Nk - Nq if a.align == "bottom_right" else 0
        rel = np.arange(Nk)[None, :] - (np.arange(Nq)[:, None] + off)
        left, right = (math.inf, 0) if a.mask == "causal" else a.window
        visible = (rel >= -left) & (rel <= right)
    visible = np.broadcast_to(visible, S.shape)
    if keep is not None:
        visible = visible & np.broadcast_to(keep.astype(bool), S.shape)
    S = np.where(visible, S, -np.inf)
    m = S.max(axis=-1, keepdims=True)
    m = np.where(m == -np.inf, 0.0, m)
    E = np.exp(S - m)
    l = E.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        P = np.where(l > 0, E / np.where(l > 0, l, 1.0), 0.0)
        lse = (m + np.log(l))[..., 0]
    Pd = P
    if a.dropout:
        Pd = np.where(dropout_keep(seed, a.dropout, P.shape),
                      P * dropout_scale(a.dropout), 0.0)
    O = np.einsum("bhqk,bhkd->bhqd", Pd, V)
    return O, lse, P


def score_fn(a, S):
    """score_mod with its derivative: (mod(S), d mod / d S)."""
    if a.softcap:
        t = np.tanh(S / a.softcap)
        return a.softcap * t, 1.0 - t * t
    return S, np.ones_like(S)


def attention_backward_f64(a, Q, K, V, dO, bias=None, keep=None, seed=None):
    """Analytic gradients of L = sum(O * dO) in fp64: (dQ, dK, dV)."""
    Q, K, V, dO = (x.astype(np.float64) for x in (Q, K, V, dO))
    B, Hq, Nq, D = Q.shape
    Hkv = K.shape[1]
    G = Hq // Hkv
    Kr, Vr = np.repeat(K, G, axis=1), np.repeat(V, G, axis=1)
    scale = a.scale if a.scale is not None else 1.0 / math.sqrt(D)
    _, _, P = attention_f64(a, Q, K, V, bias, keep, seed)
    Z = np.ones_like(P)
    if a.dropout:
        Z = np.where(dropout_keep(seed, a.dropout, P.shape),
                     dropout_scale(a.dropout), 0.0)
    dV = np.einsum("bhqk,bhqe->bhke", P * Z, dO)
    dP = np.einsum("bhqe,bhke->bhqk", dO, Vr) * Z
    Di = (P * dP).sum(axis=-1, keepdims=True)
    _, dmod = score_fn(a, np.einsum("bhqd,bhkd->bhqk", Q, Kr) * scale)
    dS = P * (dP - Di) * dmod * scale
    dQ = np.einsum("bhqk,bhkd->bhqd", dS, Kr)
    dK = np.einsum("bhqk,bhqd->bhkd", dS, Q)
    fold = lambda x: x.reshape(B, Hkv, G, *x.shape[2:]).sum(axis=2)
    return dQ, fold(dK), fold(dV)


def load(path):
    x = np.load(path)
    return x


def compare(name, out, ref, dtype, atol, rtol):
    out = out.astype(np.float64)
    if out.shape != ref.shape:
        print(f"reference: {name}: FAIL shape {out.shape} != {ref.shape}")
        return False
    both_inf = np.isinf(out) & np.isinf(ref) & (np.sign(out) == np.sign(ref))
    err = np.where(both_inf, 0.0, np.abs(out - ref))
    err = np.where(np.isnan(err), np.inf, err)
    bound = atol + rtol * np.where(np.isinf(ref), 0.0, np.abs(ref))
    ok = bool(np.all(err <= bound))
    worst = float(np.max(err / bound)) if err.size else 0.0
    print(f"reference: {name} ({dtype}): {'PASS' if ok else 'FAIL'} "
          f"max_abs={float(err.max()) if err.size else 0.0:.3e} "
          f"worst_err/bound={worst:.3f}")
    return ok


def load_inputs(a):
    args = {}
    for i in range(64):
        p = os.path.join(a.inputs, f"arg{i}.npy")
        if not os.path.exists(p):
            break
        args[i] = load(p)
    bias = args[a.bias] if a.bias is not None else None
    keep = args[a.keep] if a.keep is not None else None
    seed = int(args[a.seed]) if a.seed is not None else None
    return args, bias, keep, seed


def result(a, i):
    return load(os.path.join(a.outputs, f"result{i}.npy"))


def cmd_check(a):
    args, bias, keep, seed = load_inputs(a)
    Q, K, V = args[a.q], args[a.k], args[a.v]
    O_ref, lse_ref, P = attention_f64(a, Q, K, V, bias, keep, seed)
    atol, rtol = TOLERANCES[a.dtype]
    atol = a.atol if a.atol is not None else atol
    rtol = a.rtol if a.rtol is not None else rtol
    ok = compare("result0 (O)", result(a, 0), O_ref, a.dtype, atol, rtol)
    if a.backward:
        grads = attention_backward_f64(a, Q, K, V, args[3], bias, keep, seed)
        for i, (name, ref) in enumerate(zip(("dQ", "dK", "dV"), grads), 1):
            # Gradients sum over more terms: FlashAttention's tests allow
            # them 1.5x the forward's tolerance relative to their scale.
            bound_scale = max(1.0, float(np.abs(ref).max()))
            ok &= compare(f"result{i} ({name})", result(a, i), ref, a.dtype,
                          atol * bound_scale, rtol * 1.5)
    if a.lse:
        ok &= compare("result1 (lse)",
                      load(os.path.join(a.outputs, "result1.npy")), lse_ref,
                      "f32", *TOLERANCES["f32"])
    if a.expect_empty_rows:
        empty = int(np.sum(np.isneginf(lse_ref)))
        print(f"reference: {empty} fully masked rows")
        ok &= empty > 0
    if a.dropout_stats:
        ok &= dropout_stats(a, load(os.path.join(a.outputs, "result0.npy")), P,
                            seed)
    return 0 if ok else 1


def dropout_stats(a, O, P, seed):
    """With V = identity (Dv = Nk), O is the dropped-out P itself."""
    p = a.dropout
    O = O.astype(np.float64)
    if O.shape != P.shape:
        print("reference: dropout-stats needs V = identity (Dv == Nk)")
        return False
    kept = O != 0
    live = P > 1e-30
    frac = float(kept[live].mean())
    n = int(live.sum())
    sigma = math.sqrt(p * (1 - p) / n)
    frac_ok = abs(frac - (1 - p)) <= 5 * sigma + 1e-12
    scale_err = np.abs(O[kept] - P[kept] / (1 - p)) / (P[kept] / (1 - p))
    scale_ok = bool(np.all(scale_err <= a.rtol if a.rtol else scale_err <= 1e-4))
    same_mask = bool(np.all(kept[live] == dropout_keep(seed, p, P.shape)[live]))
    print(f"reference: dropout p={p}: kept fraction {frac:.4f} over {n} "
          f"(expected {1 - p:.4f} +- {5 * sigma:.4f}) "
          f"{'PASS' if frac_ok else 'FAIL'}; kept scaled by 1/(1-p) "
          f"max_rel_err={float(scale_err.max()):.2e} "
          f"{'PASS' if scale_ok else 'FAIL'}; mask == Philox4x32-10 "
          f"{'PASS' if same_mask else 'FAIL'}")
    return frac_ok and scale_ok and same_mask


def cmd_gradcheck(a):
    """Central differences of L = sum(O * dO) in fp64, one input at a time."""
    args, bias, keep, seed = load_inputs(a)
    Q, K, V, dO = (args[i].astype(np.float64) for i in (a.q, a.k, a.v, 3))
    eps = 1e-6
    ok = True
    for i, (name, x) in enumerate((("dQ", Q), ("dK", K), ("dV", V)), 1):
        grad = np.zeros_like(x)
        flat, gflat = x.reshape(-1), grad.reshape(-1)
        for j in range(flat.size):
            saved = flat[j]
            losses = []
            for delta in (eps, -eps):
                flat[j] = saved + delta
                O, _, _ = attention_f64(a, Q, K, V, bias, keep, seed)
                losses.append(float((O * dO).sum()))
            flat[j] = saved
            gflat[j] = (losses[0] - losses[1]) / (2 * eps)
        ok &= compare(f"result{i} ({name}) vs finite differences",
                      result(a, i), grad, "f64", 1e-7, 1e-6)
    return 0 if ok else 1


def cmd_gen(a):
    rng = np.random.default_rng(a.seed)
    os.makedirs(a.dir, exist_ok=True)
    for spec in a.arg:
        idx, kind, shape, dtype = spec.split(":")
        shape = tuple(int(s) for s in shape.split("x")) if shape else ()
        if kind == "normal":
            x = rng.standard_normal(shape)
        elif kind == "identity":
            x = np.broadcast_to(np.eye(shape[-2], shape[-1]), shape)
        elif kind == "bool":
            x = rng.random(shape) < 0.8
        elif kind.startswith("int="):
            x = np.array(int(kind[4:]))
        else:
            raise SystemExit(f"unknown kind {kind}")
        np.save(os.path.join(a.dir, f"arg{idx}.npy"),
                np.array(x, dtype=dtype, order="C"))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen", help="write input .npy files")
    g.add_argument("--dir", required=True)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--arg", action="append", default=[],
                   help="INDEX:KIND:SHAPE:DTYPE, KIND in normal, identity, "
                        "bool, int=N; SHAPE like 1x2x8x16 (empty for scalars)")
    c = sub.add_parser("check", help="compare results with fp64")
    c.add_argument("--inputs", required=True)
    c.add_argument("--outputs", required=True)
    c.add_argument("--dtype", choices=sorted(TOLERANCES), default="f32")
    c.add_argument("--q", type=int, default=0)
    c.add_argument("--k", type=int, default=1)
    c.add_argument("--v", type=int, default=2)
    c.add_argument("--bias", type=int)
    c.add_argument("--keep", type=int)
    c.add_argument("--seed", type=int, help="argument index of the seed")
    c.add_argument("--scale", type=float)
    c.add_argument("--mask", choices=["none", "causal", "sliding_window"],
                   default="none")
    c.add_argument("--align", choices=["top_left", "bottom_right"],
                   default="top_left")
    c.add_argument("--window", type=int, nargs=2, metavar=("LEFT", "RIGHT"))
    c.add_argument("--softcap", type=float)
    c.add_argument("--dropout", type=float, default=0.0)
    c.add_argument("--dropout-stats", action="store_true")
    c.add_argument("--lse", action="store_true", help="result1 is the lse")
    c.add_argument("--backward", action="store_true",
                   help="results are (O, dQ, dK, dV); input 3 is dO")
    c.add_argument("--expect-empty-rows", action="store_true")
    c.add_argument("--atol", type=float)
    c.add_argument("--rtol", type=float)
    g2 = sub.add_parser("gradcheck", parents=[], help="finite differences")
    for action in c._actions[1:]:
        g2._add_action(action)
    a = ap.parse_args()
    if a.cmd == "gen":
        return cmd_gen(a)
    return cmd_check(a) if a.cmd == "check" else cmd_gradcheck(a)


if __name__ == "__main__":
    sys.exit(main())
