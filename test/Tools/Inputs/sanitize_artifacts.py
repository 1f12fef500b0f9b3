"""Writes a stand-in for scripts/build-gpu-artifacts.sh's sanitize artifacts
(manifest.json, NAME.json, NAME.ptx) for the configurations named on the
command line, for test/Tools/sanitize-harness.test: the kernels' argument
layouts are those of bench/gpu_configs.py, the PTX is not a kernel (the stand-
in CUDA driver accepts any image and runs nothing)."""
import json
import os
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "bench"))
import gpu_configs  # noqa: E402

out, names = sys.argv[1], sys.argv[2:]
os.makedirs(out, exist_ok=True)
json.dump(gpu_configs.ALL, open(os.path.join(out, "manifest.json"), "w"))
for c in gpu_configs.ALL:
    if c["name"] not in names:
        continue
    mem = lambda name, shape, dtype: dict(kind="memref", name=name,
                                          shape=list(shape), dtype=dtype)
    B, Hq, Hkv, Nq, Nk, D, Dv = (c[x] for x in
                                 ("B", "Hq", "Hkv", "Nq", "Nk", "D", "Dv"))
    args = [mem("q", (B, Hq, Nq, D), c["dtype"]),
            mem("k", (B, Hkv, Nk, D), c["dtype"]),
            mem("v", (B, Hkv, Nk, Dv), c["dtype"])]
    if c["bias"]:
        args.append(mem("bias", gpu_configs.side_shape(c, c["bias"][1]),
                        c["bias"][0]))
    if c["keep"]:
        args.append(mem("keep", gpu_configs.side_shape(c, c["keep"]), "i1"))
    if c["dropout"]:
        args.append(dict(kind="scalar", name="seed", dtype="i64"))
    args += [mem("o", (B, Hq, Nq, Dv), c["dtype"]),
             mem("lse", (B, Hq, Nq), "f32")]
    kernel = dict(name="attn_fwd_0", grid=[2, B * Hq, 1], block=[128, 1, 1],
                  static_shared_bytes=0, dynamic_shared_bytes=0, args=args)
    json.dump(dict(binary=c["name"] + ".ptx", format="ptx", kernels=[kernel]),
              open(os.path.join(out, c["name"] + ".json"), "w"))
    open(os.path.join(out, c["name"] + ".ptx"), "w").write("// not a kernel\n")
