"""Random valid attn.attention / attn.attention_backward programs, run
differentially on the CPU.

A case is a JSON-able configuration (`random_config`): dtype, shapes (sizes
of 1 and ragged tails, GQA and MQA), mask kind and alignment, window bounds,
scale, bias and keep mask with random broadcast shapes, dropout, a random
score_mod expression over the score and its coordinates built from the
differentiable op set of docs/Semantics.md, forward only or forward +
backward, and the tiled lowering's block sizes. `run_case` renders it
(`render`), draws its inputs with numpy and checks

1. the tiled pipeline against the reference lowering and fp64 with
   `attnfuse-run --check=fa` (FlashAttention's rule);
2. for the backward, the fp64 gradients against central finite differences of
   the fp64 *forward*: directional derivatives along a random direction per
   Q, K and V, from one extra attnfuse-run of a function (`render_fd`) that
   evaluates L = sum(O * dO) at x + eps*u and x - eps*u. Its arguments are f64
   and truncated inside to the op's dtype, a truncation the fp64 evaluation
   drops, so the perturbation reaches the f64 forward exactly. The forward
   and the derivative code of the reference lowering are separate, so a wrong
   score_mod derivative shows here. (`attnfuse-run --check=fd`, where the
   build has it, is run as well.)

A failing case is shrunk (`shrink`) to a smaller configuration that fails the
same way. Only numpy is needed.
"""
import copy
import json
import math
import os
import random
import re
import subprocess

import numpy as np

from crashes import signature

DTYPES = ["f32", "f16", "bf16"]
SIZES = [1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 32, 33, 48, 64, 65, 100]
HEAD_DIMS = [1, 2, 3, 4, 7, 8, 15, 16, 17, 32, 33, 64]
BLOCKS = [1, 2, 3, 4, 5, 8, 16, 17, 32, 64]
FD_EPS = 1e-6
TIMEOUT = 120

# ---------------------------------------------------------------- score_mod
# A tree of lists: ["s"], ["c", x], ["coord", name, slope], ["un", op, x],
# ["bin", op, x, y], ["sel", cond, x, y] with cond ["cmpf", pred, x, y] or
# ["cmpi", pred, name, name]. Every node has an interval bound so that the
# generated function stays finite (no log of a negative, no exp overflow).

UNARY = ["neg", "tanh", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs",
         "sin", "cos", "trunc_f16", "trunc_bf16"]
BINARY = ["add", "sub", "mul", "div", "max", "min"]
COORDS = ["b", "h", "q", "k", "k-q", "q-k"]
LIMIT = 1e5  # |score_mod| stays below this


def _guard_positive(x, bx, rng):
    """|x| + c, c in [0.25, 2]: the argument of log, sqrt, rsqrt."""
    c = round(rng.uniform(0.25, 2.0), 3)
    return ["bin", "add", ["un", "abs", x], ["c", c]], (c, max(map(abs, bx)) + c)


def random_expr(rng, depth, s_bound, coord_bound):
    """(tree, (lo, hi)) with |values| <= hi bounded."""
    r = rng.random()
    if depth <= 0 or r < 0.25:
        r2 = rng.random()
        if r2 < 0.7:
            return ["s"], (-s_bound, s_bound)
        if r2 < 0.85:
            c = round(rng.uniform(-3, 3), 3)
            return ["c", c], (c, c)
        slope = round(rng.uniform(-0.5, 0.5), 3)
        m = abs(slope) * coord_bound
        return ["coord", rng.choice(COORDS), slope], (-m, m)
    if r < 0.55:
        op = rng.choice(UNARY)
        x, (lo, hi) = random_expr(rng, depth - 1, s_bound, coord_bound)
        m = max(abs(lo), abs(hi))
        if op == "neg":
            return ["un", op, x], (-hi, -lo)
        if op == "tanh":
            return ["un", op, x], (-1.0, 1.0)
        if op in ("sin", "cos"):
            return ["un", op, x], (-1.0, 1.0)
        if op == "abs":
            return ["un", op, x], (0.0, m)
        if op in ("exp", "exp2"):
            if hi > 10:  # keep it finite: exp(tanh(x) * 4)
                x, hi = ["bin", "mul", ["un", "tanh", x], ["c", 4.0]], 4.0
            return ["un", op, x], (0.0, math.exp(hi) if op == "exp" else 2 ** hi)
        if op in ("log", "log2", "sqrt", "rsqrt"):
            g, (glo, ghi) = _guard_positive(x, (lo, hi), rng)
            if op == "sqrt":
                return ["un", op, g], (0.0, math.sqrt(ghi))
            if op == "rsqrt":
                return ["un", op, g], (0.0, 1 / math.sqrt(glo))
            return ["un", op, g], (math.log(glo) * 2, math.log(ghi) * 2)
        if op.startswith("trunc"):
            if m > 6e4:
                return x, (lo, hi)
            return ["un", op, x], (lo - 1e-2 * m, hi + 1e-2 * m)
    if r < 0.85:
        op = rng.choice(BINARY)
        x, bx = random_expr(rng, depth - 1, s_bound, coord_bound)
        y, by = random_expr(rng, depth - 1, s_bound, coord_bound)
        mx, my = max(map(abs, bx)), max(map(abs, by))
        if op == "add":
            return ["bin", op, x, y], (bx[0] + by[0], bx[1] + by[1])
        if op == "sub":
            return ["bin", op, x, y], (bx[0] - by[1], bx[1] - by[0])
        if op in ("max", "min"):
            f = max if op == "max" else min
            return ["bin", op, x, y], (f(bx[0], by[0]), f(bx[1], by[1]))
        if op == "mul":
            if mx * my > LIMIT:
                return x, bx
            return ["bin", op, x, y], (-mx * my, mx * my)
        # div: y / (|x| + c)
        g, (glo, _) = _guard_positive(x, bx, rng)
        return ["bin", "div", y, g], (-my / glo, my / glo)
    x, bx = random_expr(rng, depth - 1, s_bound, coord_bound)
    y, by = random_expr(rng, depth - 1, s_bound, coord_bound)
    if rng.random() < 0.5:
        a, _ = random_expr(rng, depth - 1, s_bound, coord_bound)
        b, _ = random_expr(rng, 0, s_bound, coord_bound)
        cond = ["cmpf", rng.choice(["olt", "ogt", "oge", "ole"]), a, b]
    else:
        cond = ["cmpi", rng.choice(["slt", "sge", "eq", "ne"]),
                rng.choice(COORDS[:4]), rng.choice(COORDS[:4])]
    return ["sel", cond, x, y], (min(bx[0], by[0]), max(bx[1], by[1]))


def bound_of(tree, s_bound, coord_bound):
    """Re-derives a (loose) bound of a tree, for shrunk trees."""
    k = tree[0]
    if k == "s":
        return s_bound
    if k == "c":
        return abs(tree[1])
    if k == "coord":
        return abs(tree[2]) * coord_bound
    if k == "un":
        b = bound_of(tree[2], s_bound, coord_bound)
        return {"tanh": 1, "sin": 1, "cos": 1, "exp": math.exp(min(b, 700)),
                "exp2": 2 ** min(b, 1000)}.get(tree[1], b + 1)
    if k == "bin":
        b1 = bound_of(tree[2], s_bound, coord_bound)
        b2 = bound_of(tree[3], s_bound, coord_bound)
        return b1 * b2 if tree[1] in ("mul", "div") else b1 + b2
    return max(bound_of(tree[2], s_bound, coord_bound),
               bound_of(tree[3], s_bound, coord_bound))


class _Emitter:
    UN = {"neg": "arith.negf", "tanh": "math.tanh", "exp": "math.exp",
          "exp2": "math.exp2", "log": "math.log", "log2": "math.log2",
          "sqrt": "math.sqrt", "rsqrt": "math.rsqrt", "abs": "math.absf",
          "sin": "math.sin", "cos": "math.cos"}
    BIN = {"add": "arith.addf", "sub": "arith.subf", "mul": "arith.mulf",
           "div": "arith.divf", "max": "arith.maximumf",
           "min": "arith.minimumf"}

    def __init__(self):
        self.lines, self.n = [], 0

    def new(self, text):
        self.n += 1
        name = f"%t{self.n}"
        self.lines.append(f"        {name} = {text}")
        return name

    def coord(self, name):
        args = {"b": "%b", "h": "%h", "q": "%i", "k": "%j"}
        if name in args:
            return args[name]
        a, b = ("%j", "%i") if name == "k-q" else ("%i", "%j")
        return self.new(f"arith.subi {a}, {b} : index")

    def emit(self, t):
        k = t[0]
        if k == "s":
            return "%s"
        if k == "c":
            return self.new(f"arith.constant {float(t[1])!r} : f32")
        if k == "coord":
            i = self.new(f"arith.index_cast {self.coord(t[1])} : index to i64")
            f = self.new(f"arith.sitofp {i} : i64 to f32")
            c = self.new(f"arith.constant {float(t[2])!r} : f32")
            return self.new(f"arith.mulf {f}, {c} : f32")
        if k == "un":
            x = self.emit(t[2])
            if t[1].startswith("trunc_"):
                ty = t[1][len("trunc_"):]
                y = self.new(f"arith.truncf {x} : f32 to {ty}")
                return self.new(f"arith.extf {y} : {ty} to f32")
            return self.new(f"{self.UN[t[1]]} {x} : f32")
        if k == "bin":
            x, y = self.emit(t[2]), self.emit(t[3])
            return self.new(f"{self.BIN[t[1]]} {x}, {y} : f32")
        cond = t[1]
        if cond[0] == "cmpf":
            a, b = self.emit(cond[2]), self.emit(cond[3])
            c = self.new(f"arith.cmpf {cond[1]}, {a}, {b} : f32")
        else:
            c = self.new(f"arith.cmpi {cond[1]}, {self.coord(cond[2])}, "
                         f"{self.coord(cond[3])} : index")
        x, y = self.emit(t[2]), self.emit(t[3])
        return self.new(f"arith.select {c}, {x}, {y} : f32")


def render_region(tree):
    if tree is None:
        return ""
    e = _Emitter()
    out = e.emit(tree)
    if out == "%s":  # yield a value computed in the region
        zero = e.new("arith.constant 0.0 : f32")
        out = e.new(f"arith.addf %s, {zero} : f32")
    body = "\n".join(e.lines)
    return (" score_mod {\n"
            "      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):\n"
            f"{body}\n        attn.yield {out} : f32\n      }}")


# ------------------------------------------------------------- configurations

def side_shape(full, spec):
    """A broadcastable shape: rank len(spec) <= 4, `spec[i]` true = full."""
    tail = full[len(full) - len(spec):]
    return [d if keep else 1 for d, keep in zip(tail, spec)]


def random_config(rng):
    c = dict(dtype=rng.choice(DTYPES), B=rng.choice([1, 1, 2]),
             Hkv=rng.choice([1, 1, 2, 3]), G=rng.choice([1, 1, 2, 3, 4]),
             Nq=rng.choice(SIZES), Nk=rng.choice(SIZES),
             D=rng.choice(HEAD_DIMS), Dv=None,
             mask=rng.choice(["none", "causal", "sliding_window"]),
             align=rng.choice(["top_left", "bottom_right"]), window=None,
             scale=None, bias=None, keep=None, dropout=0.0, score_mod=None,
             backward=rng.random() < 0.6, lse=rng.random() < 0.5,
             blocks=None, amp=[1.0, 1.0, 1.0], input_seed=rng.randrange(2**31))
    c["Dv"] = c["D"] if rng.random() < 0.5 else rng.choice(HEAD_DIMS)
    # Keep the fp64 evaluation and the finite differences quick.
    while c["B"] * c["Hkv"] * c["G"] * c["Nq"] * c["Nk"] * (c["D"] + c["Dv"]) > 3e5:
        c["Nq"], c["Nk"] = max(1, c["Nq"] // 2), max(1, c["Nk"] // 2)
    if c["mask"] == "sliding_window":
        n = max(c["Nq"], c["Nk"]) + 2
        c["window"] = [rng.choice([0, 1, rng.randrange(n)]),
                       rng.choice([0, 1, rng.randrange(n)])]
    if rng.random() < 0.3:
        c["scale"] = rng.choice([0.05, 0.3, 1.0, 2.0, -0.5])
    full = [c["B"], c["Hkv"] * c["G"], c["Nq"], c["Nk"]]
    if rng.random() < 0.35:
        rank = rng.randrange(0, 5)
        c["bias"] = dict(spec=[rng.random() < 0.6 for _ in range(rank)],
                         dtype=rng.choice(["f32", "f16", "bf16"]),
                         neg_inf=rng.random() < 0.2)
    if rng.random() < 0.3:
        rank = rng.randrange(0, 5)
        c["keep"] = dict(spec=[rng.random() < 0.6 for _ in range(rank)],
                         p=rng.choice([0.0, 0.3, 0.8, 1.0]))
    if rng.random() < 0.25:
        c["dropout"] = rng.choice([0.1, 0.17, 0.5, 0.9])
    c["amp"] = [rng.choice([0.25, 1.0, 2.0]) for _ in range(3)]
    scale = c["scale"] if c["scale"] is not None else 1 / math.sqrt(c["D"])
    s_bound = abs(scale) * c["D"] * 9 * c["amp"][0] * c["amp"][1]
    if rng.random() < 0.6:
        c["score_mod"], _ = random_expr(rng, rng.randrange(1, 5), s_bound,
                                        max(full))
    if rng.random() < 0.7:
        c["blocks"] = [rng.choice(BLOCKS), rng.choice(BLOCKS)]
    del full
    return c


def features(c):
    """The non-default features of a configuration, for signatures."""
    f = [c["dtype"]]
    f += [n for n in ("bias", "keep", "score_mod", "blocks", "scale", "window")
          if c[n] is not None]
    f += ["dropout"] * bool(c["dropout"]) + ["backward"] * c["backward"]
    f += [c["mask"]] * (c["mask"] != "none")
    f += ["gqa"] * (c["G"] > 1)
    return ",".join(f)


def _t(shape, ty):
    return "tensor<" + "".join(f"{d}x" for d in shape) + ty + ">"


def shapes(c):
    Hq = c["Hkv"] * c["G"]
    full = [c["B"], Hq, c["Nq"], c["Nk"]]
    return dict(q=[c["B"], Hq, c["Nq"], c["D"]], k=[c["B"], c["Hkv"], c["Nk"], c["D"]],
                v=[c["B"], c["Hkv"], c["Nk"], c["Dv"]], o=[c["B"], Hq, c["Nq"], c["Dv"]],
                lse=[c["B"], Hq, c["Nq"]],
                bias=side_shape(full, c["bias"]["spec"]) if c["bias"] else None,
                keep=side_shape(full, c["keep"]["spec"]) if c["keep"] else None)


def _op_parts(c, names):
    """(operand clauses, attribute dict, region) shared by every attention
    op of a case; `names` maps bias/keep/seed to SSA names."""
    sh = shapes(c)
    extra = ""
    if c["bias"]:
        extra += f" bias({names['bias']} : {_t(sh['bias'], c['bias']['dtype'])})"
    if c["keep"]:
        extra += f" keep({names['keep']} : {_t(sh['keep'], 'i1')})"
    if c["dropout"]:
        extra += f" seed({names['seed']})"
    attrs = []
    if c["mask"] != "none":
        attrs.append(f"mask = #attn.mask<{c['mask']}>")
    if c["align"] != "top_left" and c["mask"] != "none":
        attrs.append(f"alignment = #attn.alignment<{c['align']}>")
    if c["window"]:
        attrs += [f"window_left = {c['window'][0]}",
                  f"window_right = {c['window'][1]}"]
    if c["dropout"]:
        attrs.append(f"dropout_p = {c['dropout']} : f32")
    if c["scale"] is not None:
        attrs.append(f"scale = {float(c['scale'])!r} : f32")
    attr = (" {" + ", ".join(attrs) + "}") if attrs else ""
    return extra, attr, render_region(c["score_mod"])


def _side_args(c, sh):
    args = []
    if c["bias"]:
        args.append(("bias", _t(sh["bias"], c["bias"]["dtype"])))
    if c["keep"]:
        args.append(("keep", _t(sh["keep"], "i1")))
    if c["dropout"]:
        args.append(("seed", "i64"))
    return args


def render(c):
    """The function @f under test: (q, k, v, [do], [bias], [keep], [seed]) ->
    (O, [lse], [dQ, dK, dV])."""
    sh, dt = shapes(c), c["dtype"]
    q, k, v, o = (_t(sh[n], dt) for n in "qkvo")
    lse = _t(sh["lse"], "f32")
    args = [("q", q), ("k", k), ("v", v)]
    if c["backward"]:
        args.append(("do", o))
    args += _side_args(c, sh)
    extra, attr, region = _op_parts(c, {n: "%" + n for n in ("bias", "keep", "seed")})
    with_lse = c["backward"] or c["lse"]
    res, rtypes = ["%o"], [o]
    if with_lse:
        res.append("%lse"); rtypes.append(lse)
    body = (f"  {', '.join(res)} = attn.attention ins(%q, %k, %v : {q}, {k}, {v})"
            f"{extra}{attr}{region} -> {', '.join(rtypes)}\n")
    if c["backward"]:
        body += (f"  %dq, %dk, %dv = attn.attention_backward ins(%q, %k, %v : {q}, {k}, {v})"
                 f" grad(%o, %lse, %do : {o}, {lse}, {o}){extra}{attr}{region}"
                 f" -> {q}, {k}, {v}\n")
        res += ["%dq", "%dk", "%dv"]; rtypes += [q, k, v]
    sig = ", ".join(f"%{n}: {t}" for n, t in args)
    return (f"func.func @f({sig}) -> ({', '.join(rtypes)}) {{\n{body}"
            f"  return {', '.join(res)} : {', '.join(rtypes)}\n}}\n")


_ID = "affine_map<(a, b, c, d) -> (a, b, c, d)>"


def render_fd(c):
    """@fd(q0, k0, v0, qp, qm, kp, km, vp, vm, do : f64, [bias, keep, seed])
    -> six tensor<f64>: L = sum(O * dO) with Q, K, V in turn at x +- eps u."""
    sh, dt = shapes(c), c["dtype"]
    lines, n = [], [0]

    def trunc(name, shape):
        n[0] += 1
        src, e, out = _t(shape, "f64"), f"%e{n[0]}", f"%x{n[0]}"
        conv = "%w = arith.truncf %a : f64 to f32\n"
        if dt != "f32":
            conv += f"    %y = arith.truncf %w : f32 to {dt}\n"
        last = "%y" if dt != "f32" else "%w"
        lines.append(
            f"  {e} = tensor.empty() : {_t(shape, dt)}\n"
            f"  {out} = linalg.generic {{indexing_maps = [{_ID}, {_ID}], "
            f"iterator_types = [\"parallel\", \"parallel\", \"parallel\", \"parallel\"]}}"
            f" ins(%{name} : {src}) outs({e} : {_t(shape, dt)}) {{\n"
            f"  ^bb0(%a: f64, %b: {dt}):\n    {conv}    linalg.yield {last} : {dt}\n"
            f"  }} -> {_t(shape, dt)}\n")
        return out

    xs = {}
    for name, key in (("q0", "q"), ("k0", "k"), ("v0", "v"), ("qp", "q"),
                      ("qm", "q"), ("kp", "k"), ("km", "k"), ("vp", "v"),
                      ("vm", "v")):
        xs[name] = trunc(name, sh[key])
    q, k, v, o = (_t(sh[x], dt) for x in "qkvo")
    extra, attr, region = _op_parts(c, {x: "%" + x for x in ("bias", "keep", "seed")})
    red = "affine_map<(a, b, c, d) -> ()>"
    results = []
    for i, (qn, kn, vn) in enumerate((("qp", "k0", "v0"), ("qm", "k0", "v0"),
                                      ("q0", "kp", "v0"), ("q0", "km", "v0"),
                                      ("q0", "k0", "vp"), ("q0", "k0", "vm"))):
        ext = ("%x = arith.extf %a : f32 to f64" if dt == "f32" else
               f"%w = arith.extf %a : {dt} to f32\n    %x = arith.extf %w : f32 to f64")
        lines.append(
            f"  %o{i} = attn.attention ins({xs[qn]}, {xs[kn]}, {xs[vn]} : {q}, {k}, {v})"
            f"{extra}{attr}{region} -> {o}\n"
            f"  %z{i} = tensor.empty() : tensor<f64>\n"
            f"  %f{i} = linalg.fill ins(%zero : f64) outs(%z{i} : tensor<f64>) -> tensor<f64>\n"
            f"  %l{i} = linalg.generic {{indexing_maps = [{_ID}, {_ID}, {red}], "
            f"iterator_types = [\"reduction\", \"reduction\", \"reduction\", \"reduction\"]}}"
            f" ins(%o{i}, %do : {o}, {_t(sh['o'], 'f64')}) outs(%f{i} : tensor<f64>) {{\n"
            f"  ^bb0(%a: {dt}, %g: f64, %c: f64):\n    {ext}\n"
            f"    %p = arith.mulf %x, %g : f64\n    %r = arith.addf %p, %c : f64\n"
            f"    linalg.yield %r : f64\n  }} -> tensor<f64>\n")
        results.append(f"%l{i}")
    args = [(x, _t(sh[x[0]], "f64")) for x in
            ("q0", "k0", "v0", "qp", "qm", "kp", "km", "vp", "vm")]
    args.append(("do", _t(sh["o"], "f64")))
    args += _side_args(c, sh)
    sig = ", ".join(f"%{a}: {t}" for a, t in args)
    f64s = ", ".join(["tensor<f64>"] * 6)
    return (f"func.func @fd({sig}) -> ({f64s}) {{\n"
            f"  %zero = arith.constant 0.0 : f64\n" + "".join(lines) +
            f"  return {', '.join(results)} : {f64s}\n}}\n")


# ------------------------------------------------------------------ running

def make_inputs(c, directory):
    """Writes arg<i>.npy for @f; returns the list of paths."""
    rng = np.random.default_rng(c["input_seed"])
    sh = shapes(c)
    normal = lambda shape, amp: np.asarray(np.clip(rng.standard_normal(shape), -3, 3) * amp)
    arrays = [normal(sh["q"], c["amp"][0]), normal(sh["k"], c["amp"][1]),
              normal(sh["v"], c["amp"][2])]
    if c["backward"]:
        arrays.append(normal(sh["o"], 1.0))
    if c["bias"]:
        b = normal(sh["bias"], 1.0)
        if c["bias"]["neg_inf"]:
            b[rng.random(b.shape) < 0.3] = -np.inf
        arrays.append(b)
    if c["keep"]:
        arrays.append(rng.random(sh["keep"]) < c["keep"]["p"])
    if c["dropout"]:
        arrays.append(np.array(rng.integers(-2**63, 2**63 - 1), dtype=np.int64))
    os.makedirs(directory, exist_ok=True)
    paths = []
    for i, a in enumerate(arrays):
        p = os.path.join(directory, f"arg{i}.npy")
        np.save(p, a.astype(np.float32) if a.dtype == np.float64 else a)
        paths.append(p)
    return paths


def run_tool(cmd, timeout=TIMEOUT):
    """(returncode, combined output); a timeout is returncode None."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           errors="replace")
        return r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired:
        return None, "timeout"


def classify(rc, out):
    """None if the run passed; else a signature string."""
    if rc is None:
        return "timeout"
    crash = signature(rc, out)
    if crash:
        return "crash: " + crash
    if rc == 0:
        return None
    if rc == 1:
        bad = failing_results(out)
        return "mismatch " + ",".join(name for name, _ in bad or [("?", "")])
    m = re.search(r"error: (.*)", out)
    msg = m.group(1) if m else out.strip().splitlines()[-1] if out.strip() else ""
    return "error: " + re.sub(r"\d+", "N", msg)[:160]


def failing_results(out):
    """[(result name, why)] of a FAIL summary line of attnfuse-run."""
    m = re.search(r"check=\w+: FAIL(.*)", out)
    bad = []
    for part in (m.group(1).split(";") if m else []):
        fields = dict(re.findall(r"(\w+)=([-+0-9.e]+|inf|nan)", part))
        name = part.split()[0]
        if "naive reference is off" in part:
            bad.append((name, "reference"))
        elif "mismatches" in fields or "nan" in fields or "ref_nan" in fields or (
                "bound" in fields and float(fields["max_abs"]) > float(fields["bound"])):
            bad.append((name, "error"))
    return bad


def _fd_check(c, bin_dir, case_dir, used, grads):
    """Directional finite differences of the f64 forward; None or signature."""
    rng = np.random.default_rng(c["input_seed"] + 1)
    x0 = [np.load(os.path.join(used, f"arg{i}.npy")).astype(np.float64) for i in range(3)]
    dO = np.load(os.path.join(used, "arg3.npy")).astype(np.float64)
    us = [rng.standard_normal(x.shape) for x in x0]
    args = list(x0)
    for x, u in zip(x0, us):
        args += [x + FD_EPS * u, x - FD_EPS * u]
    args.append(dO)
    fd_in = os.path.join(case_dir, "fd_in")
    os.makedirs(fd_in, exist_ok=True)
    paths = []
    for i, a in enumerate(args):
        paths.append(os.path.join(fd_in, f"arg{i}.npy"))
        np.save(paths[-1], a)
    n_side = len([1 for x in ("bias", "keep") if c[x]]) + bool(c["dropout"])
    for j in range(n_side):
        paths.append(os.path.join(used, f"arg{4 + j}.npy"))
    with open(os.path.join(case_dir, "fd.mlir"), "w") as f:
        f.write(render_fd(c))
    out_dir = os.path.join(case_dir, "fd_out")
    rc, out = run_tool([os.path.join(bin_dir, "attnfuse-run"),
                        os.path.join(case_dir, "fd.mlir"), "--check=none",
                        "--inputs=" + ",".join(paths), "--dump-f64=" + out_dir])
    bad = classify(rc, out)
    if bad:
        return "fd-run " + bad
    L = [float(np.load(os.path.join(out_dir, f"result{i}.npy"))) for i in range(6)]
    failed = []
    for i, name in enumerate(("dQ", "dK", "dV")):
        fd = (L[2 * i] - L[2 * i + 1]) / (2 * FD_EPS)
        an = float((grads[i] * us[i]).sum())
        scale = float(np.abs(grads[i] * us[i]).sum()) + abs(L[2 * i]) * 1e-4
        if not abs(fd - an) <= 1e-5 * scale + 1e-9:
            failed.append(f"{name}(fd={fd:.6g} analytic={an:.6g})")
    return "fd " + " ".join(failed) if failed else None


def run_case(c, bin_dir, case_dir, fd_tool=False):
    """Runs one configuration; returns (signature or None, log text)."""
    os.makedirs(case_dir, exist_ok=True)
    path = os.path.join(case_dir, "f.mlir")
    with open(path, "w") as f:
        f.write(render(c))
    with open(os.path.join(case_dir, "config.json"), "w") as f:
        json.dump(c, f)
    inputs = make_inputs(c, os.path.join(case_dir, "in"))
    used, f64 = os.path.join(case_dir, "used"), os.path.join(case_dir, "f64")
    cmd = [os.path.join(bin_dir, "attnfuse-run"), path, "--check=fa",
           "--inputs=" + ",".join(inputs)]
    if c["blocks"]:
        cmd.append(f"--pipeline-options=block-q={c['blocks'][0]} block-k={c['blocks'][1]}")
    if c["backward"]:
        cmd += ["--dump-inputs=" + used, "--dump-f64=" + f64]
    rc, out = run_tool(cmd)
    log = " ".join(cmd) + "\n" + out
    # (A gradient that is exactly 0 in f64 but not after rounding O, e.g.
    # Nk = 1 with dropout, passes --check=fa through its storage floor.)
    bad = classify(rc, out)
    if bad or not c["backward"]:
        return bad, log
    grads = [np.load(os.path.join(f64, f"result{i}.npy")) for i in (2, 3, 4)]
    bad = _fd_check(c, bin_dir, case_dir, used, grads)
    if bad and bad.startswith("fd "):  # confirm along another direction
        again = _fd_check(dict(c, input_seed=c["input_seed"] + 7), bin_dir,
                          case_dir, used, grads)
        bad = bad if again else None
    if not bad and fd_tool:
        rc, out2 = run_tool(cmd[:2] + ["--check=fd"] + cmd[3:4])
        bad = classify(rc, out2)
        bad = "check=fd " + bad if bad else None
        log += out2
    return bad, log


def strip_details(sig):
    """The part of a signature that identifies a class (no numbers)."""
    return re.sub(r"\(fd=[^)]*\)", "", sig) if sig else sig


# ---------------------------------------------------------------- shrinking

def _subtrees(t):
    if t[0] == "un":
        yield t[2]
    elif t[0] == "bin":
        yield t[2]; yield t[3]
    elif t[0] == "sel":
        yield t[2]; yield t[3]


def _tree_variants(t):
    """Smaller trees: a child in place of a node, recursively."""
    for s in _subtrees(t):
        yield s
    for i, s in enumerate(t):
        if isinstance(s, list) and s and s[0] in ("un", "bin", "sel"):
            for v in _tree_variants(s):
                yield t[:i] + [v] + t[i + 1:]


def _variants(c):
    def with_(**kw):
        d = copy.deepcopy(c); d.update(kw); return d
    if c["score_mod"] is not None:
        yield with_(score_mod=None)
        for v in _tree_variants(c["score_mod"]):
            yield with_(score_mod=v)
    for key, val in (("bias", None), ("keep", None), ("dropout", 0.0),
                     ("scale", None), ("blocks", None), ("lse", False)):
        if c[key] != val:
            yield with_(**{key: val})
    if c["mask"] != "none":
        yield with_(mask="none", window=None)
    if c["mask"] == "sliding_window":
        yield with_(mask="causal", window=None)
    if c["align"] != "top_left":
        yield with_(align="top_left")
    if c["backward"]:
        yield with_(backward=False)
    for key in ("B", "Hkv", "G"):
        if c[key] > 1:
            yield with_(**{key: 1})
    for key in ("Nq", "Nk", "D", "Dv"):
        if c[key] > 1:
            yield with_(**{key: c[key] // 2})
            yield with_(**{key: c[key] - 1})
    if c["blocks"]:
        for i in (0, 1):
            if c["blocks"][i] > 1:
                b = list(c["blocks"]); b[i] = b[i] // 2
                yield with_(blocks=b)
    if c["bias"] and c["bias"]["neg_inf"]:
        yield with_(bias=dict(c["bias"], neg_inf=False))


def shrink(c, sig, bin_dir, work_dir, budget=60):
    """Greedily simplifies c while it still fails with the same class."""
    want = strip_details(sig)
    tries = 0
    progress = True
    while progress and tries < budget:
        progress = False
        for v in _variants(c):
            tries += 1
            got, _ = run_case(v, bin_dir, work_dir)
            if got and strip_details(got).split("(")[0] == want.split("(")[0]:
                c, progress = v, True
                break
            if tries >= budget:
                break
    return c
