#!/usr/bin/env python3
"""Rewrite pre-1.0 TOSA text (as TensorFlow 2.18's TFLite -> TOSA legalization
emits it) into the TOSA 1.0 syntax that LLVM/MLIR 22 parses.

Why: TensorFlow 2.18.1 is the last release on PyPI whose Python API still has
`tf.mlir.experimental.tflite_to_tosa_bytecode` (2.19, 2.20 and 2.21 ship
without the `ExperimentalTFLiteToTosaBytecode` binding), and its TOSA predates
the TOSA 1.0 dialect of LLVM 20+. The rewrite is mechanical and changes no
value: zero points become explicit zero operands, `tosa.mul`'s shift attribute
becomes a shift operand, `tosa.reshape`'s new_shape becomes a `tosa.const_shape`
operand, `tosa.transpose`'s constant perms operand becomes the perms attribute,
and `tosa.const`'s `value` becomes `values`. Only the op forms that our TFLite
models produce are handled; any other op whose syntax changed stops the script.

Input: the text printed by iree-opt 3.1.0 (custom assembly), one op per line.
"""

import re
import sys

UNCHANGED = {
    "tosa.add", "tosa.sub", "tosa.exp", "tosa.reciprocal", "tosa.reduce_max", "tosa.reduce_sum",
    "tosa.rsqrt", "tosa.select", "tosa.tanh", "tosa.pow", "tosa.cast", "tosa.logical_and",
    "tosa.logical_or", "tosa.logical_not", "tosa.greater", "tosa.greater_equal", "tosa.equal",
    "tosa.maximum", "tosa.minimum", "tosa.sigmoid", "tosa.erf", "tosa.log", "tosa.abs",
    "tosa.reduce_min", "tosa.concat", "tosa.identity",
}

OP_RE = re.compile(r'^(\s*)(%[\w.]+) = (tosa\.\w+|"tosa\.\w+")\s*(.*)$')
TYPE_SIG_RE = re.compile(r"^(.*) : \((.*)\) -> (.*)$")


def split_types(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def elem_type(t):
    return t.rsplit("x", 1)[-1].rstrip(">") if "x" in t else t[len("tensor<"):-1]


def upgrade(text):
    lines = text.splitlines()
    out = []
    consts = {}  # SSA name -> literal list for small integer constants (transpose perms)
    counter = [0]

    def fresh(base):
        counter[0] += 1
        return f"{base}_u{counter[0]}"

    def zero_const(indent, ty_elem):
        name = fresh("%zp")
        zero = "0.000000e+00" if ty_elem.startswith(("f", "bf")) else "0"
        out.append(f'{indent}{name} = "tosa.const"() <{{values = dense<{zero}> : tensor<1x{ty_elem}>}}> '
                   f": () -> tensor<1x{ty_elem}>")
        return name

    for line in lines:
        m = OP_RE.match(line)
        if not m:
            out.append(line)
            continue
        indent, res, op, rest = m.groups()
        op = op.strip('"')
        if op == "tosa.const":
            lit = re.search(r"value = dense<\[([-\d, ]+)\]> : tensor<\d+xi(?:32|64)>", rest)
            if lit:
                consts[res] = [int(v) for v in lit.group(1).split(",")]
            out.append(line.replace("<{value = ", "<{values = "))
            continue
        sig = TYPE_SIG_RE.match(rest)
        if not sig:
            raise SystemExit(f"tosa_upgrade: no type signature: {line[:200]}")
        head, in_types, res_type = sig.group(1), split_types(sig.group(2)), sig.group(3)
        if op in UNCHANGED:
            out.append(line)
        elif op == "tosa.reshape":
            mm = re.match(r"(%[\w.]+) \{new_shape = array<i64: ([-\d, ]+)>\}$", head)
            if not mm:
                raise SystemExit(f"tosa_upgrade: reshape form: {line[:200]}")
            dims = mm.group(2)
            k = len(dims.split(","))
            shp = fresh("%shape")
            out.append(f"{indent}{shp} = tosa.const_shape {{values = dense<[{dims}]> : tensor<{k}xindex>}} "
                       f": () -> !tosa.shape<{k}>")
            out.append(f"{indent}{res} = tosa.reshape {mm.group(1)}, {shp} : ({in_types[0]}, "
                       f"!tosa.shape<{k}>) -> {res_type}")
        elif op == "tosa.transpose":
            mm = re.match(r"(%[\w.]+), (%[\w.]+)$", head)
            if not mm or mm.group(2) not in consts:
                raise SystemExit(f"tosa_upgrade: transpose perms not a known constant: {line[:200]}")
            perms = ", ".join(str(v) for v in consts[mm.group(2)])
            out.append(f"{indent}{res} = tosa.transpose {mm.group(1)} {{perms = array<i32: {perms}>}} "
                       f": ({in_types[0]}) -> {res_type}")
        elif op == "tosa.mul":
            mm = re.match(r"(%[\w.]+), (%[\w.]+) \{shift = (-?\d+) : i8\}$", head)
            if not mm:
                raise SystemExit(f"tosa_upgrade: mul form: {line[:200]}")
            sh = fresh("%shift")
            out.append(f'{indent}{sh} = "tosa.const"() <{{values = dense<{mm.group(3)}> : tensor<1xi8>}}> '
                       f": () -> tensor<1xi8>")
            out.append(f"{indent}{res} = tosa.mul {mm.group(1)}, {mm.group(2)}, {sh} : "
                       f"({in_types[0]}, {in_types[1]}, tensor<1xi8>) -> {res_type}")
        elif op == "tosa.matmul":
            mm = re.match(r"(%[\w.]+), (%[\w.]+)$", head)
            if not mm:
                raise SystemExit(f"tosa_upgrade: matmul form: {line[:200]}")
            ea, eb = elem_type(in_types[0]), elem_type(in_types[1])
            za, zb = zero_const(indent, ea), zero_const(indent, eb)
            out.append(f"{indent}{res} = tosa.matmul {mm.group(1)}, {mm.group(2)}, {za}, {zb} : "
                       f"({in_types[0]}, {in_types[1]}, tensor<1x{ea}>, tensor<1x{eb}>) -> {res_type}")
        elif op == "tosa.conv2d":
            mm = re.match(r"(%[\w.]+), (%[\w.]+), (%[\w.]+) \{(.*)\}$", head)
            if not mm:
                raise SystemExit(f"tosa_upgrade: conv2d form: {line[:200]}")
            ei, ew = elem_type(in_types[0]), elem_type(in_types[1])
            zi, zw = zero_const(indent, ei), zero_const(indent, ew)
            acc = "f32" if ei in ("f32", "f16", "bf16") else "i32"
            out.append(f"{indent}{res} = tosa.conv2d {mm.group(1)}, {mm.group(2)}, {mm.group(3)}, {zi}, {zw} "
                       f"{{acc_type = {acc}, {mm.group(4)}}} : ({', '.join(in_types)}, tensor<1x{ei}>, "
                       f"tensor<1x{ew}>) -> {res_type}")
        elif op == "tosa.negate":
            mm = re.match(r"(%[\w.]+)$", head)
            e = elem_type(in_types[0])
            z1, z2 = zero_const(indent, e), zero_const(indent, e)
            out.append(f"{indent}{res} = tosa.negate {mm.group(1)}, {z1}, {z2} : ({in_types[0]}, "
                       f"tensor<1x{e}>, tensor<1x{e}>) -> {res_type}")
        else:
            raise SystemExit(f"tosa_upgrade: op not handled: {op}: {line[:200]}")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    src = open(sys.argv[1]).read() if len(sys.argv) > 1 else sys.stdin.read()
    sys.stdout.write(upgrade(src))
