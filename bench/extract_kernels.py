#!/usr/bin/env python3
"""Extracts the kernels of an attnfuse-opt output for launching without MLIR.

Reads `stage1` (the output of `--convert-attn-to-gpu`: gpu.func signatures and
the launch attributes attn.grid/attn.block/attn.args/attn.config) and `final`
(the output of `--attn-lower-to-nvvm-pipeline`, whose gpu.binary holds PTX for
format=isa or a cubin for format=bin), writes the binary to OUT.{ptx,cubin}
and the metadata to OUT.json.

Each kernel's "args" lists its arguments in order: a memref (bare pointer) as
{"kind": "memref", "shape", "dtype"}, a scalar (the dropout seed) as
{"kind": "scalar", "dtype"}, and a tensor-map argument (an `!llvm.ptr` to a
CUtensorMap in device memory that the launcher encodes with
cuTensorMapEncodeTiled: python-bindings/attnfuse/cuda_launch.py
encode_tensor_map) as {"kind": "tensormap", "source": index of the memref
argument it describes, "dtype" and "dims": the source's, "box": elements,
outermost first, "swizzle" and "l2_promotion": bytes}.

usage: extract_kernels.py STAGE1.mlir FINAL.mlir OUT_PREFIX
"""
import json
import re
import sys


def unescape(text):
    """MLIR string-literal escapes (\\XX hex, \\n, \\t, \\\\, \\") to bytes."""
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        n = text[i + 1]
        if n in "\\\"":
            out += n.encode()
            i += 2
        elif n == "n":
            out += b"\n"
            i += 2
        elif n == "t":
            out += b"\t"
            i += 2
        else:
            out.append(int(text[i + 1:i + 3], 16))
            i += 3
    return bytes(out)


def memref_info(t):
    m = re.fullmatch(r"memref<([0-9x]*)x?([a-z0-9]+)"
                     r"(?:, strided<\[([0-9, ]+)\]>)?>", t.strip())
    if not m:
        return {"type": t.strip()}
    dims = [int(d) for d in m.group(1).split("x") if d] if m.group(1) else []
    info = {"kind": "memref", "shape": dims, "dtype": m.group(2)}
    if m.group(3):  # a permuted view (Q, K, V read in place)
        info["strides"] = [int(x) for x in m.group(3).split(",")]
    return info


def tensor_maps(attrs):
    """attn.tensor_maps = [{argument = 7 : i64, box = array<i64: ...>,
    l2_promotion = 256 : i64, source = 0 : i64, swizzle = 128 : i64}, ...]
    as {argument: {"source", "box", "swizzle", "l2_promotion"}} ({} when the
    attribute is absent: a kernel without TMA loads)."""
    m = re.search(r"attn\.tensor_maps = \[(.*?)\]", attrs)
    maps = {}
    for entry in re.findall(r"\{([^{}]*)\}", m.group(1) if m else ""):
        fields = {}
        for key, array, number in re.findall(
                r"(\w+) = (?:array<i64: ([-0-9, ]*)>|(-?\d+)(?: : i\d+)?)",
                entry):
            fields[key] = ([int(x) for x in array.split(",")] if array
                           else int(number))
        maps[fields["argument"]] = {k: fields[k] for k in
                                    ("source", "box", "swizzle",
                                     "l2_promotion")}
    return maps


def parse_kernels(stage1):
    kernels = []
    # The attribute dictionary runs to the last "} {" of the signature's
    # line (greedy, without crossing a newline): attn.tensor_maps nests
    # dictionaries in it.
    for m in re.finditer(
            r"gpu\.func @(\w+)\((.*?)\)\s*(?:workgroup\((.*?)\))?\s*kernel "
            r"attributes \{(.*)\} \{$", stage1, re.M):
        name, args, workgroup, attrs = m.groups()
        # "%argN: TYPE", less any argument attributes ("{llvm.noalias}").
        arg_types = [re.sub(r"\s*\{.*\}$", "", a.split(":", 1)[1].strip())
                     for a in re.split(r",\s*(?=%)", args)]
        get = lambda key: [int(x) for x in re.search(
            key + r" = array<i64: ([0-9, ]+)>", attrs).group(1).split(",")]
        names = re.findall(r'"(\w+)"',
                           re.search(r"attn.args = \[(.*?)\]", attrs).group(1))
        smem = 0
        for t in re.findall(r"memref<([0-9x]+)xf32, #gpu", workgroup or ""):
            n = 1
            for d in t.split("x"):
                n *= int(d)
            smem += 4 * n
        if len(names) != len(arg_types):
            sys.exit(f"{name}: attn.args names {len(names)} arguments, the "
                     f"signature has {len(arg_types)}")
        maps = tensor_maps(attrs)
        args_meta = []
        for i, (n, t) in enumerate(zip(names, arg_types)):
            if t == "!llvm.ptr":
                # Not a scalar: a pointer to a CUtensorMap that the launcher
                # builds from the source memref's address and shape.
                if i not in maps:
                    sys.exit(f"{name}: argument {i} ({n}) is a pointer that "
                             "attn.tensor_maps does not describe")
                spec = maps.pop(i)
                src = memref_info(arg_types[spec["source"]])
                if src.get("kind") != "memref":
                    sys.exit(f"{name}: tensor map {n} describes argument "
                             f"{spec['source']}, not a memref")
                info = {"kind": "tensormap", "source": spec["source"],
                        "dtype": src["dtype"], "dims": src["shape"],
                        "box": spec["box"], "swizzle": spec["swizzle"],
                        "l2_promotion": spec["l2_promotion"]}
                if "strides" in src:  # a permuted view
                    info["strides"] = src["strides"]
            elif t.startswith("memref"):
                info = memref_info(t)
            else:
                info = {"kind": "scalar", "dtype": t}
            info = {"name": n, **info}
            args_meta.append(info)
        if maps:
            sys.exit(f"{name}: attn.tensor_maps describes arguments "
                     f"{sorted(maps)}, which are not pointers")
        cfg = get("attn.config")
        dyn = re.search(r"attn.dynamic_shared = (\d+)", attrs)
        family = re.search(r'attn.family = "(\w+)"', attrs)
        kernels.append({
            "name": name, "grid": get("attn.grid"), "block": get("attn.block"),
            "static_shared_bytes": smem,
            "dynamic_shared_bytes": int(dyn.group(1)) if dyn else 0,
            "family": family.group(1) if family else "simt",
            "args": args_meta,
            "config": dict(zip(["block_q", "block_k", "threads_per_row",
                                "chunk"], cfg)),
        })
    return kernels


def main():
    stage1, final, prefix = sys.argv[1:4]
    kernels = parse_kernels(open(stage1).read())
    text = open(final).read()
    m = re.search(r'(assembly|bin) = "((?:[^"\\]|\\.)*)"', text)
    if not m:
        sys.exit("no gpu.object with assembly/bin found in " + final)
    kind = "ptx" if m.group(1) == "assembly" else "cubin"
    data = unescape(m.group(2))
    with open(prefix + "." + kind, "wb") as f:
        f.write(data)
    meta = {"binary": prefix.split("/")[-1] + "." + kind, "format": kind,
            "kernels": kernels}
    with open(prefix + ".json", "w") as f:
        json.dump(meta, f, indent=1)
    if kind == "ptx" and b".extern .func __nv_" in data:
        sys.exit("unresolved libdevice call in " + prefix + ".ptx")


if __name__ == "__main__":
    main()
