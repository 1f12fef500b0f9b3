#!/usr/bin/env python3
"""Metamorphic testing of attn-raise-attention over the TOSA corpus (issue 26).

Takes every TOSA file of test/Corpus (torch-tosa, tflite, migraphx and the
other TOSA sources) and rewrites the attention chains in it (the values from
the first tosa.matmul to the second, and Q, K, V), seeded:

* semantics-preserving rewrites, composed randomly (1-4 per mutant, each on
  a random chain and value): a product with ones (a broadcast tensor of 1.0),
  a sum with zeros (either operand order), a flatten to one dimension and a
  re-expand, a unit axis added, moved by a transpose and removed, a transpose
  round trip (the row max/sum on another layout), a cast round trip (f16/bf16
  -> f32 -> back), the operands of tosa.add/mul/maximum swapped, the second
  contraction written transposed (O = (V^T P^T)^T). Every chain of the mutant
  must still fuse (the file's expected count), and, with --run, attnfuse-run
  --check=fa must pass on it.
* semantics-breaking rewrites (one per mutant, on one chain, on top of 0-2
  preserving ones): P scaled after the softmax, P masked after the softmax
  (a constant pattern), P returned as well (an extra use), P transposed
  before the second contraction (the softmax over the wrong axis; square
  scores only), the row sum broadcast along the wrong axis (square only),
  P multiplied by 1.0001 ones (not neutral). The broken chain must not fuse
  (fused = expected - 1), with a remark for it.

Needs only Python 3 and attnfuse-opt (and attnfuse-run for --run).

  scripts/corpus/metamorphic.py --opt build/bin/attnfuse-opt --mutants 10000 --seed 1
  scripts/corpus/metamorphic.py --opt build/bin/attnfuse-opt --mutants 40 --run 4 \\
      --run-tool build/bin/attnfuse-run          # the bounded CI run (lit)

Prints one line per failure and a summary; exit status 1 on any failure
(a preserving mutant not fused or failing --check=fa, a breaking mutant
fused, a candidate without a remark, an invalid mutant).
"""
import argparse
import collections
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure  # noqa: E402  (runs attnfuse-opt and parses the summary and remarks)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEF_RE = re.compile(r"^(\s*)(%[\w.]+) = (\"?tosa\.[\w.]+\"?)(.*)$")
TYPE_RE = re.compile(r"tensor<([^>]*)>")
NAME_RE = re.compile(r"%[\w.]+")
FLOATS = ("f32", "f16", "bf16")


def parse_type(t):
    """'2x8x8xf32' -> ([2, 8, 8], 'f32')"""
    parts = t.split("x")
    return [int(p) for p in parts[:-1]], parts[-1]


def ttype(shape, elem):
    return "tensor<" + "x".join([str(d) for d in shape] + [elem]) + ">"


class Func:
    """The lines of a TOSA file and its defining ops (one function)."""

    def __init__(self, text):
        self.lines = text.split("\n")
        self.counter = 0

    def defs(self):
        out = {}
        for i, line in enumerate(self.lines):
            m = DEF_RE.match(line)
            if not m:
                continue
            name, op, rest = m.group(2), m.group(3).strip('"'), m.group(4)
            sig = rest.rsplit(" : ", 1)
            operands = NAME_RE.findall(sig[0]) if len(sig) == 2 else []
            res = TYPE_RE.findall(sig[1].split("->")[-1]) if len(sig) == 2 else []
            ins = TYPE_RE.findall(sig[1].split("->")[0]) if len(sig) == 2 else []
            out[name] = dict(line=i, op=op, operands=operands, type=res[-1] if res else None,
                             in_types=ins, indent=m.group(1))
        return out

    def fresh(self):
        self.counter += 1
        return f"%mm{self.counter}"

    def type_of(self, defs, name):
        if name in defs:
            return defs[name]["type"]
        m = re.search(re.escape(name) + r": tensor<([^>]*)>", self.text())
        return m.group(1) if m else None

    def text(self):
        return "\n".join(self.lines)

    def insert_after(self, defs, name, new_lines, new_name):
        """Inserts `new_lines` after the definition of `name` (or at the top of
        the body for an argument) and makes every later use of `name` read
        `new_name` instead."""
        if name in defs:
            at = defs[name]["line"] + 1
            indent = defs[name]["indent"]
        else:
            at = next(i for i, l in enumerate(self.lines) if "func.func" in l) + 1
            indent = "    "
        pat = re.compile(re.escape(name) + r"(?![\w.])")
        for i in range(at, len(self.lines)):
            self.lines[i] = pat.sub(new_name, self.lines[i])
        self.lines[at:at] = [indent + l for l in new_lines]


def chains(fn):
    """The attention chains of the function: (M1, M2, P operand, chain values)."""
    defs = fn.defs()
    users = collections.defaultdict(list)
    for n, d in defs.items():
        for o in d["operands"]:
            users[o].append(n)
    out = []
    for m2, d2 in defs.items():
        if d2["op"] != "tosa.matmul":
            continue
        for pi in (0, 1):
            p = d2["operands"][pi]
            seen, stack, ops, m1s = set(), [p], set(), set()
            while stack:
                v = stack.pop()
                if v in seen or v not in defs:
                    continue
                seen.add(v)
                if defs[v]["op"] == "tosa.matmul":
                    m1s.add(v)
                    continue
                ops.add(defs[v]["op"])
                stack.extend(defs[v]["operands"])
            if "tosa.exp" in ops and "tosa.reduce_sum" in ops and len(m1s) == 1:
                m1 = m1s.pop()
                # Chain values: in the backward slice of P and the forward slice of M1.
                fwd, stack = set(), [m1]
                while stack:
                    v = stack.pop()
                    if v in fwd:
                        continue
                    fwd.add(v)
                    stack.extend(u for u in users[v] if defs[u]["op"] != "tosa.matmul")
                vals = [v for v in seen if v in fwd]
                out.append(dict(m1=m1, m2=m2, p=p, pi=pi, values=vals,
                                qkv=defs[m1]["operands"][:2] + [d2["operands"][1 - pi]]))
                break
    return out


def const(fn, shape, elem, value):
    n = fn.fresh()
    if elem == "i1":
        lit = value
    else:
        lit = value
    return n, f'{n} = "tosa.const"() <{{values = dense<{lit}> : {ttype(shape, elem)}}}> : () -> {ttype(shape, elem)}'


def shape_const(fn, shape):
    n = fn.fresh()
    return n, (f"{n} = tosa.const_shape  {{values = dense<[{', '.join(map(str, shape))}]> : "
               f"tensor<{len(shape)}xindex>}} : () -> !tosa.shape<{len(shape)}>")


def shift_const(fn):
    return const(fn, [1], "i8", "0")


# ---------------------------------------------------------------------------
# Semantics-preserving rewrites: (fn, defs, chain, value, rng) -> name or None
# ---------------------------------------------------------------------------

def r_mul_ones(fn, defs, ch, v, rng):
    shape, elem = parse_type(fn.type_of(defs, v))
    oshape = [1] * len(shape) if rng.random() < 0.5 else list(shape)
    c, cl = const(fn, oshape, elem, "1.0")
    s, sl = shift_const(fn)
    n = fn.fresh()
    a, b, ta, tb = (v, c, ttype(shape, elem), ttype(oshape, elem))
    if rng.random() < 0.5:
        a, b, ta, tb = b, a, tb, ta
    fn.insert_after(defs, v, [cl, sl, f"{n} = tosa.mul {a}, {b}, {s} : ({ta}, {tb}, tensor<1xi8>) -> {ttype(shape, elem)}"], n)
    return n


def r_add_zeros(fn, defs, ch, v, rng):
    shape, elem = parse_type(fn.type_of(defs, v))
    oshape = [1] * len(shape) if rng.random() < 0.5 else list(shape)
    c, cl = const(fn, oshape, elem, "0.0")
    n = fn.fresh()
    a, b, ta, tb = (v, c, ttype(shape, elem), ttype(oshape, elem))
    if rng.random() < 0.5:
        a, b, ta, tb = b, a, tb, ta
    fn.insert_after(defs, v, [cl, f"{n} = tosa.add {a}, {b} : ({ta}, {tb}) -> {ttype(shape, elem)}"], n)
    return n


def r_flatten(fn, defs, ch, v, rng):
    shape, elem = parse_type(fn.type_of(defs, v))
    s1, l1 = shape_const(fn, [math.prod(shape)])
    s2, l2 = shape_const(fn, shape)
    a, b = fn.fresh(), fn.fresh()
    t1 = ttype([math.prod(shape)], elem)
    fn.insert_after(defs, v, [l1, l2,
                              f"{a} = tosa.reshape {v}, {s1} : ({ttype(shape, elem)}, !tosa.shape<1>) -> {t1}",
                              f"{b} = tosa.reshape {a}, {s2} : ({t1}, !tosa.shape<{len(shape)}>) -> {ttype(shape, elem)}"], b)
    return b


def r_unit_axis(fn, defs, ch, v, rng):
    shape, elem = parse_type(fn.type_of(defs, v))
    up = [1] + shape
    pos = rng.randrange(len(up))
    perm = list(range(1, len(up)))
    perm.insert(pos, 0)
    moved = [up[p] for p in perm]
    s1, l1 = shape_const(fn, up)
    s2, l2 = shape_const(fn, shape)
    a, b, c = fn.fresh(), fn.fresh(), fn.fresh()
    fn.insert_after(defs, v, [l1, l2,
                              f"{a} = tosa.reshape {v}, {s1} : ({ttype(shape, elem)}, !tosa.shape<{len(up)}>) -> {ttype(up, elem)}",
                              f"{b} = tosa.transpose {a} {{perms = array<i32: {', '.join(map(str, perm))}>}} : ({ttype(up, elem)}) -> {ttype(moved, elem)}",
                              f"{c} = tosa.reshape {b}, {s2} : ({ttype(moved, elem)}, !tosa.shape<{len(shape)}>) -> {ttype(shape, elem)}"], c)
    return c


def r_transpose_round_trip(fn, defs, ch, v, rng):
    shape, elem = parse_type(fn.type_of(defs, v))
    if len(shape) < 2:
        return None
    perm = list(range(len(shape)))
    rng.shuffle(perm)
    inv = [perm.index(i) for i in range(len(perm))]
    t = [shape[p] for p in perm]
    a, b = fn.fresh(), fn.fresh()
    fn.insert_after(defs, v, [
        f"{a} = tosa.transpose {v} {{perms = array<i32: {', '.join(map(str, perm))}>}} : ({ttype(shape, elem)}) -> {ttype(t, elem)}",
        f"{b} = tosa.transpose {a} {{perms = array<i32: {', '.join(map(str, inv))}>}} : ({ttype(t, elem)}) -> {ttype(shape, elem)}"], b)
    return b


def r_cast_round_trip(fn, defs, ch, v, rng):
    shape, elem = parse_type(fn.type_of(defs, v))
    if elem not in ("f16", "bf16"):
        return None
    a, b = fn.fresh(), fn.fresh()
    fn.insert_after(defs, v, [
        f"{a} = tosa.cast {v} : ({ttype(shape, elem)}) -> {ttype(shape, 'f32')}",
        f"{b} = tosa.cast {a} : ({ttype(shape, 'f32')}) -> {ttype(shape, elem)}"], b)
    return b


def r_swap(fn, defs, ch, v, rng):
    d = defs.get(v)
    if not d or d["op"] not in ("tosa.add", "tosa.mul", "tosa.maximum") or len(d["in_types"]) < 2:
        return None
    line = fn.lines[d["line"]]
    head, sig = line.rsplit(" : ", 1)
    x, y = d["operands"][0], d["operands"][1]
    head = re.sub(re.escape(x) + r"(?![\w.]), " + re.escape(y) + r"(?![\w.])", f"{y}, {x}", head, count=1)
    ins, out = sig.split(" -> ")
    types = [f"tensor<{t}>" for t in d["in_types"]]
    types[0], types[1] = types[1], types[0]
    fn.lines[d["line"]] = f"{head} : ({', '.join(types)}) -> {out}"
    return v


def r_transposed_pv(fn, defs, ch, v, rng):
    d = defs[ch["m2"]]
    if ch["pi"] != 0 or len(d["operands"]) != 4:
        return None
    p, vv, z1, z2 = d["operands"]
    (bp, n, k), e = parse_type(d["in_types"][0])
    (bv, _, dd), ev = parse_type(d["in_types"][1])
    (bo, _, _), eo = parse_type(d["type"])
    _, ez1 = parse_type(d["in_types"][2])
    _, ez2 = parse_type(d["in_types"][3])
    a, b, c = fn.fresh(), fn.fresh(), fn.fresh()
    line = d["indent"]
    new = [
        f"{a} = tosa.transpose {vv} {{perms = array<i32: 0, 2, 1>}} : ({ttype([bv, k, dd], ev)}) -> {ttype([bv, dd, k], ev)}",
        f"{b} = tosa.transpose {p} {{perms = array<i32: 0, 2, 1>}} : ({ttype([bp, n, k], e)}) -> {ttype([bp, k, n], e)}",
        f"{c} = tosa.matmul {a}, {b}, {z2}, {z1} : ({ttype([bv, dd, k], ev)}, {ttype([bp, k, n], e)}, {ttype([1], ez2)}, {ttype([1], ez1)}) -> {ttype([bo, dd, n], eo)}",
        f"{ch['m2']} = tosa.transpose {c} {{perms = array<i32: 0, 2, 1>}} : ({ttype([bo, dd, n], eo)}) -> {ttype([bo, n, dd], eo)}",
    ]
    fn.lines[d["line"]:d["line"] + 1] = [line + l for l in new]
    return c


PRESERVING = {
    "mul_ones": (r_mul_ones, "value"),
    "add_zeros": (r_add_zeros, "value"),
    "flatten": (r_flatten, "value"),
    "unit_axis": (r_unit_axis, "value"),
    "transpose_round_trip": (r_transpose_round_trip, "value"),
    "cast_round_trip": (r_cast_round_trip, "value"),
    "swap_operands": (r_swap, "chain"),
    "transposed_pv": (r_transposed_pv, "m2"),
}


# ---------------------------------------------------------------------------
# Semantics-breaking rewrites of P: (fn, defs, chain, rng) -> True if applied
# ---------------------------------------------------------------------------

def p_type(fn, defs, ch):
    return parse_type(defs[ch["m2"]]["in_types"][ch["pi"]])


def b_scale_after(fn, defs, ch, rng):
    shape, elem = p_type(fn, defs, ch)
    c, cl = const(fn, [1] * len(shape), elem, "2.0")
    s, sl = shift_const(fn)
    n = fn.fresh()
    fn.insert_after(defs, ch["p"], [cl, sl, f"{n} = tosa.mul {ch['p']}, {c}, {s} : ({ttype(shape, elem)}, {ttype([1] * len(shape), elem)}, tensor<1xi8>) -> {ttype(shape, elem)}"], n)
    return True


def b_not_ones(fn, defs, ch, rng):
    shape, elem = p_type(fn, defs, ch)
    c, cl = const(fn, shape, elem, "1.0001" if elem == "f32" else "1.01")
    s, sl = shift_const(fn)
    n = fn.fresh()
    fn.insert_after(defs, ch["p"], [cl, sl, f"{n} = tosa.mul {c}, {ch['p']}, {s} : ({ttype(shape, elem)}, {ttype(shape, elem)}, tensor<1xi8>) -> {ttype(shape, elem)}"], n)
    return True


def b_mask_after(fn, defs, ch, rng):
    shape, elem = p_type(fn, defs, ch)
    nq, nk = shape[-2], shape[-1]
    if nk < 2:
        return False
    rows = ["[" + ", ".join("true" if k <= q + (nk - nq) else "false" for k in range(nk)) + "]"
            for q in range(nq)]
    lit = "[" * (len(shape) - 1) + ", ".join(rows) + "]" * (len(shape) - 1)
    mshape = [1] * (len(shape) - 2) + [nq, nk]
    m, ml = const(fn, mshape, "i1", lit)
    z, zl = const(fn, [1] * len(shape), elem, "0.0")
    n = fn.fresh()
    fn.insert_after(defs, ch["p"], [ml, zl, f"{n} = tosa.select {m}, {ch['p']}, {z} : ({ttype(mshape, 'i1')}, {ttype(shape, elem)}, {ttype([1] * len(shape), elem)}) -> {ttype(shape, elem)}"], n)
    return True


def b_extra_use(fn, defs, ch, rng):
    shape, elem = p_type(fn, defs, ch)
    t = ttype(shape, elem)
    for i, line in enumerate(fn.lines):
        m = re.match(r"^(\s*)return (.*) : (.*)$", line)
        if m:
            fn.lines[i] = f"{m.group(1)}return {m.group(2)}, {ch['p']} : {m.group(3)}, {t}"
            break
    else:
        return False
    for i, line in enumerate(fn.lines):
        if "func.func" in line:
            at = line.find(") -> ") + len(") -> ")
            if at < len(") -> "):
                return False
            if line[at] == "(":
                depth, j = 0, at
                for j in range(at, len(line)):
                    depth += {"(": 1, ")": -1}.get(line[j], 0)
                    if depth == 0:
                        break
                fn.lines[i] = line[:j] + f", {t}" + line[j:]
            else:
                end = line.find(" ", at)
                fn.lines[i] = line[:at] + f"({line[at:end]}, {t})" + line[end:]
            break
    return True


def b_wrong_axis(fn, defs, ch, rng):
    shape, elem = p_type(fn, defs, ch)
    if shape[-1] != shape[-2] or shape[-1] < 2:
        return False
    perm = list(range(len(shape)))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    n = fn.fresh()
    fn.insert_after(defs, ch["p"], [f"{n} = tosa.transpose {ch['p']} {{perms = array<i32: {', '.join(map(str, perm))}>}} : ({ttype(shape, elem)}) -> {ttype(shape, elem)}"], n)
    return True


def b_wrong_broadcast(fn, defs, ch, rng):
    # The row sum's reciprocal [.., N, 1], read as [.., 1, N].
    for v in ch["values"]:
        d = defs[v]
        if d["op"] != "tosa.reciprocal":
            continue
        shape, elem = parse_type(d["type"])
        if len(shape) < 2 or shape[-1] != 1 or shape[-2] < 2:
            continue
        pshape, _ = p_type(fn, defs, ch)
        if pshape[-1] != pshape[-2]:
            return False
        # Broken only where the elementwise product reads it (a reshape of
        # it reads the same elements in the same order).
        users = [u for u, du in defs.items() if v in du["operands"]]
        if not users or any(defs[u]["op"] != "tosa.mul" or
                            parse_type(defs[u]["type"])[0] != pshape for u in users):
            continue
        # The operand's type is rewritten by text: it must be the only one
        # of that type among the user's operands.
        if any(defs[u]["in_types"].count(d["type"]) != 1 for u in users):
            continue
        wrong = shape[:-2] + [1, shape[-2]]
        s, sl = shape_const(fn, wrong)
        n = fn.fresh()
        fn.insert_after(defs, v, [sl, f"{n} = tosa.reshape {v}, {s} : ({ttype(shape, elem)}, !tosa.shape<{len(wrong)}>) -> {ttype(wrong, elem)}"], n)
        # The users' operand types change from [.., N, 1] to [.., 1, N].
        for i in range(d["line"] + 3, len(fn.lines)):
            if re.search(re.escape(n) + r"(?![\w.])", fn.lines[i]):
                fn.lines[i] = fn.lines[i].replace(ttype(shape, elem), ttype(wrong, elem), 1)
        return True
    return False


BREAKING = {
    "scale_after_softmax": b_scale_after,
    "not_ones": b_not_ones,
    "mask_after_softmax": b_mask_after,
    "extra_use_of_p": b_extra_use,
    "wrong_axis": b_wrong_axis,
    "wrong_broadcast": b_wrong_broadcast,
}


def apply_preserving(fn, rng, n_rewrites, names):
    applied = []
    for _ in range(n_rewrites * 4):
        if len(applied) >= n_rewrites:
            break
        chs = chains(fn)
        if not chs:
            break
        ch = rng.choice(chs)
        defs = fn.defs()
        name = rng.choice(names)
        f, target = PRESERVING[name]
        if target == "value":
            cand = [v for v in ch["values"] + ch["qkv"]
                    if (fn.type_of(defs, v) or "").split("x")[-1] in FLOATS]
            if not cand:
                continue
            v = rng.choice(cand)
        elif target == "chain":
            cand = [v for v in ch["values"] if defs[v]["op"] in ("tosa.add", "tosa.mul", "tosa.maximum")]
            if not cand:
                continue
            v = rng.choice(cand)
        else:
            v = ch["m2"]
        if f(fn, defs, ch, v, rng):
            applied.append(name)
    return applied


def tosa_files(corpus, manifest):
    out = []
    for rel, e in sorted(manifest.items()):
        path = os.path.join(corpus, rel)
        if e.get("negative") or e.get("dynamic") or not os.path.exists(path):
            continue
        if not measure.is_tosa(path):
            continue
        out.append((rel, path, e))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--opt", default=os.path.join(REPO, "build", "bin", "attnfuse-opt"))
    ap.add_argument("--run-tool", default=os.path.join(REPO, "build", "bin", "attnfuse-run"))
    ap.add_argument("--corpus", default=os.path.join(REPO, "test", "Corpus"))
    ap.add_argument("--mutants", type=int, default=100)
    ap.add_argument("--breaking", type=float, default=0.3, help="share of breaking mutants")
    ap.add_argument("--run", type=int, default=0, help="preserving mutants also checked with attnfuse-run --check=fa")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--files", default="", help="only corpus files whose path contains this")
    ap.add_argument("--keep", default="", help="directory to keep failing mutants in")
    args = ap.parse_args()

    with open(os.path.join(args.corpus, "manifest.json")) as f:
        manifest = json.load(f)["files"]
    files = [x for x in tosa_files(args.corpus, manifest) if args.files in x[0]]
    rng = random.Random(args.seed)
    stats = collections.Counter()
    by_rewrite = collections.Counter()
    failures = []
    run_left = args.run
    t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="attn-metamorphic-")
    for i in range(args.mutants):
        rel, path, entry = rng.choice(files)
        expected = entry.get("fused", entry["chains"])
        fn = Func(open(path).read())
        breaking = rng.random() < args.breaking and expected > 0
        if breaking:
            applied = apply_preserving(fn, rng, rng.randint(0, 2), list(PRESERVING))
            chs = chains(fn)
            kinds = list(BREAKING)
            rng.shuffle(kinds)
            ch = rng.choice(chs) if chs else None
            kind = next((k for k in kinds if ch and BREAKING[k](fn, fn.defs(), ch, rng)), None)
            if kind is None:
                stats["skipped"] += 1
                continue
            applied.append("BREAK:" + kind)
        else:
            applied = apply_preserving(fn, rng, rng.randint(1, 4), list(PRESERVING))
            if not applied:
                stats["skipped"] += 1
                continue
        mpath = os.path.join(tmp, f"m{i}.mlir")
        with open(mpath, "w") as f:
            f.write(fn.text())
        res = measure.run_one(args.opt, mpath, 120)
        stats["mutants"] += 1
        stats["rewrites"] += len(applied)
        for a in applied:
            by_rewrite[a] += 1
        problem = None
        if res["status"] != "ok":
            problem = f"attnfuse-opt {res['status']}: {res['errors'][:2]}"
            stats["invalid"] += 1
        else:
            remarks = [r for r in res["remarks"] if r["text"].startswith("not fused")]
            stats["remarks"] += len(remarks)
            if len(remarks) != res["candidates"] - res["fused"]:
                problem = f"{res['candidates'] - res['fused']} not fused, {len(remarks)} remarks"
            want = expected - 1 if breaking else expected
            if breaking:
                stats["breaking"] += 1
                if res["fused"] > want:
                    problem = f"WRONG FUSION: fused {res['fused']}, at most {want}"
                    stats["wrong"] += 1
                else:
                    stats["breaking_not_fused"] += 1
            else:
                stats["preserving"] += 1
                if res["fused"] != want:
                    problem = f"missed: fused {res['fused']} of {want}; {[r['text'] for r in remarks]}"
                    stats["missed"] += 1
                else:
                    stats["preserving_fused"] += 1
                    if run_left > 0:
                        run_left -= 1
                        p = subprocess.run([args.run_tool, mpath, "--check=fa",
                                            f"--int-bound={entry.get('int_bound', 2)}"],
                                           capture_output=True, text=True, timeout=600)
                        stats["run"] += 1
                        if p.returncode != 0 or "PASS" not in p.stdout + p.stderr:
                            problem = "attnfuse-run --check=fa failed: " + (p.stdout + p.stderr)[-300:]
                            stats["run_failed"] += 1
        if problem:
            failures.append((rel, applied, problem))
            print(f"FAIL {rel} {applied}: {problem}")
            if args.keep:
                os.makedirs(args.keep, exist_ok=True)
                with open(os.path.join(args.keep, f"m{i}.mlir"), "w") as f:
                    f.write(f"// {rel} {applied}\n" + fn.text())
        os.remove(mpath)
    print(f"metamorphic: seed {args.seed}, {stats['mutants']} mutants ({stats['rewrites']} rewrites) "
          f"over {len(files)} TOSA corpus files in {time.time() - t0:.0f} s")
    print(f"  preserving: {stats['preserving']} mutants, {stats['preserving_fused']} fused every chain, "
          f"{stats['missed']} missed; --check=fa: {stats['run']} run, {stats['run_failed']} failed")
    print(f"  breaking: {stats['breaking']} mutants, {stats['breaking_not_fused']} not fused, "
          f"{stats['wrong']} wrong fusions")
    print(f"  remarks: {stats['remarks']}; invalid mutants: {stats['invalid']}; skipped: {stats['skipped']}")
    print("  rewrites: " + ", ".join(f"{k} {v}" for k, v in sorted(by_rewrite.items())))
    print(f"{len(files) and stats['mutants'] - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
