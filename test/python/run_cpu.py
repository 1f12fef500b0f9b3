# RUN: %python %s | FileCheck %s
# attnfuse.jit: JIT on the host CPU, called with numpy arrays, checked against
# a float64 numpy computation; every element type the binding supports.
import math

import ml_dtypes
import numpy as np

import attnfuse

rng = np.random.default_rng(0)


def reference(q, k, v, keep=None):
    """softmax(Q K^T / sqrt(D)) V and the row log-sum-exp, in float64."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = np.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1])
    if keep is not None:
        s = np.where(keep, s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    l = p.sum(-1, keepdims=True)
    return np.einsum("bhqk,bhkd->bhqd", p / l, v), (m + np.log(l))[..., 0]


def attention_source(t, shape_q, shape_kv, lse=False, keep=None):
    tq = "tensor<%sx%s>" % ("x".join(map(str, shape_q)), t)
    tkv = "tensor<%sx%s>" % ("x".join(map(str, shape_kv)), t)
    tlse = "tensor<%sxf32>" % "x".join(map(str, shape_q[:3]))
    args = "%%q: %s, %%k: %s, %%v: %s" % (tq, tkv, tkv)
    keep_clause = ""
    if keep:
        args += ", %%keep: %s" % keep
        keep_clause = " keep(%%keep : %s)" % keep
    results = "%s, %s" % (tq, tlse) if lse else tq
    ret = "%o, %lse" if lse else "%o"
    return """
func.func @f(%s) -> (%s) {
  %s = attn.attention ins(%%q, %%k, %%v : %s, %s, %s)%s -> %s
  return %s : %s
}""" % (args, results, ret, tq, tkv, tkv, keep_clause, results, ret, results)


def check(name, got, want, tol):
    err = np.abs(got.astype(np.float64) - want).max()
    print("%s: shape %s dtype %s ok %s" % (name, got.shape, got.dtype, err <= tol))
    if err > tol:
        print("  max error", err)


# f32 with lse: two results; Nq != Nk; blocks with tails.
q = rng.standard_normal((2, 2, 33, 16), dtype=np.float32)
k = rng.standard_normal((2, 2, 47, 16), dtype=np.float32)
v = rng.standard_normal((2, 2, 47, 16), dtype=np.float32)
fn = attnfuse.jit(attention_source("f32", q.shape, k.shape, lse=True), "f",
                  block_q=16, block_k=16)
# CHECK: signature: ['tensor<2x2x33x16xf32>', 'tensor<2x2x47x16xf32>', 'tensor<2x2x47x16xf32>'] -> ['tensor<2x2x33x16xf32>', 'tensor<2x2x33xf32>']
print("signature:", fn.input_types, "->", fn.result_types)
o, lse = fn(q, k, v)
want_o, want_lse = reference(q, k, v)
# CHECK-NEXT: f32 out: shape (2, 2, 33, 16) dtype float32 ok True
# CHECK-NEXT: f32 lse: shape (2, 2, 33) dtype float32 ok True
check("f32 out", o, want_o, 1e-5)
check("f32 lse", lse, want_lse, 1e-5)
# The arguments are not written, and a second call gives the same results.
o2, _ = fn(q, k, v)
# CHECK-NEXT: deterministic: True
print("deterministic:", np.array_equal(o, o2))
# The naive (reference) lowering agrees.
o3, _ = attnfuse.run(attention_source("f32", q.shape, k.shape, lse=True), "f",
                     q, k, v, naive=True)
# CHECK-NEXT: naive vs tiled: True
print("naive vs tiled:", np.abs(o3 - o).max() < 1e-5)

# f16.
q, k, v = (rng.standard_normal((1, 2, 24, 8)).astype(np.float16) for _ in range(3))
o = attnfuse.run(attention_source("f16", q.shape, k.shape), "f", q, k, v,
                 block_q=8, block_k=8)
# CHECK-NEXT: f16: shape (1, 2, 24, 8) dtype float16 ok True
check("f16", o, reference(q, k, v)[0], 2e-3)

# bf16 (ml_dtypes) with an i1 (numpy bool) key-padding mask.
bf16 = ml_dtypes.bfloat16
q = rng.standard_normal((2, 2, 20, 16)).astype(bf16)
k = rng.standard_normal((2, 2, 50, 16)).astype(bf16)
v = rng.standard_normal((2, 2, 50, 16)).astype(bf16)
keep = rng.random((2, 1, 1, 50)) < 0.8
fn = attnfuse.jit(attention_source("bf16", q.shape, k.shape, lse=True,
                                   keep="tensor<2x1x1x50xi1>"), "f",
                  block_q=16, block_k=16)
o, lse = fn(q, k, v, keep)
want_o, want_lse = reference(q, k, v, keep)
# CHECK-NEXT: bf16 out: shape (2, 2, 20, 16) dtype bfloat16 ok True
# CHECK-NEXT: bf16 lse: shape (2, 2, 20) dtype float32 ok True
check("bf16 out", o, want_o, 2e-2)
check("bf16 lse", lse, want_lse, 1e-3)
# The mask matters (the check above can fail).
o_all, _ = fn(q, k, v, np.ones_like(keep))
# CHECK-NEXT: mask changes the output: True
print("mask changes the output:", np.abs(o_all.astype(np.float64) - want_o).max() > 1e-2)

# Integer tensors, f64, scalars, i1 and dynamically shaped results through
# plain linalg (attn.attention takes f16, bf16 and f32).
INTS = """
func.func @g(%a: tensor<3x4xi32>, %b: tensor<3x4xi32>, %s: f64, %x: tensor<4xf64>, %n: i64)
    -> (tensor<3x4xi32>, tensor<4xf64>, tensor<3x4xi1>, tensor<?xi64>) {
  %e = tensor.empty() : tensor<3x4xi32>
  %sum = linalg.add ins(%a, %b : tensor<3x4xi32>, tensor<3x4xi32>) outs(%e : tensor<3x4xi32>) -> tensor<3x4xi32>
  %ef = tensor.empty() : tensor<4xf64>
  %scaled = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                            iterator_types = ["parallel"]} ins(%x : tensor<4xf64>) outs(%ef : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    %m = arith.mulf %in, %s : f64
    linalg.yield %m : f64
  } -> tensor<4xf64>
  %eb = tensor.empty() : tensor<3x4xi1>
  %gt = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                        iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<3x4xi32>, tensor<3x4xi32>) outs(%eb : tensor<3x4xi1>) {
  ^bb0(%l: i32, %r: i32, %out: i1):
    %c = arith.cmpi sgt, %l, %r : i32
    linalg.yield %c : i1
  } -> tensor<3x4xi1>
  %len = arith.index_cast %n : i64 to index
  %dyn = tensor.splat %n[%len] : tensor<?xi64>
  return %sum, %scaled, %gt, %dyn : tensor<3x4xi32>, tensor<4xf64>, tensor<3x4xi1>, tensor<?xi64>
}"""
g = attnfuse.jit(INTS, "g")
a = rng.integers(-100, 100, (3, 4), dtype=np.int32)
b = rng.integers(-100, 100, (3, 4), dtype=np.int32)
x = np.arange(4, dtype=np.float64) / 3
total, scaled, gt, dyn = g(a, b, 2.5, x, 3)
# CHECK-NEXT: i32 sum True f64 scalar True float64 i1 True bool dynamic [3 3 3] int64
print("i32 sum", np.array_equal(total, a + b), "f64 scalar",
      np.array_equal(scaled, x * 2.5), scaled.dtype, "i1", np.array_equal(gt, a > b), gt.dtype,
      "dynamic", dyn, dyn.dtype)

# Bad calls: clear errors, no call.
def expect_error(*args):
    try:
        fn(*args)
    except attnfuse.RunError as e:
        print("RunError:", e)
    else:
        print("no error")

q32 = q.astype(np.float32)
# CHECK-NEXT: RunError: argument 0 of 'f' must be tensor<2x2x20x16xbf16>, got a numpy array of dtype float32
expect_error(q32, k, v, keep)
# CHECK-NEXT: RunError: argument 1 of 'f' must be tensor<2x2x50x16xbf16>, got tensor<2x2x49x16xbf16>
expect_error(q, k[:, :, :49], v, keep)
# CHECK-NEXT: RunError: 'f' takes 4 arguments (tensor<2x2x20x16xbf16>, tensor<2x2x50x16xbf16>, tensor<2x2x50x16xbf16>, tensor<2x1x1x50xi1>), got 3
expect_error(q, k, v)
# CHECK-NEXT: RunError: argument 3 of 'f' must be tensor<2x1x1x50xi1> as a numpy array, got list
expect_error(q, k, v, keep.tolist())
# Non-contiguous arrays are accepted (copied).
o_t, _ = fn(np.ascontiguousarray(q.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2), k, v, keep)
# CHECK-NEXT: strided input: True
print("strided input:", np.array_equal(o_t, o))

# A function that does not exist, and a result type the runner cannot return.
for src, entry in ((INTS, "nope"),
                   ("func.func @h(%a: f32) -> f32 { return %a : f32 }", "h")):
    try:
        attnfuse.jit(src, entry)
    except attnfuse.CompileError as e:
        # CHECK-NEXT: error: no function 'nope' with a body in the module
        # CHECK-NEXT: <source>:1:1: error: result 0 of the entry function has type 'f32'; supported: ranked tensors
        print(e.diagnostics[0])

# Runtime sizes: one compiled function with '?' batch and lengths serves
# several shapes (attn.attention with runtime B, Nq, Nk).
fn = attnfuse.jit(attention_source("f32", ("?", 2, "?", 16), ("?", 2, "?", 16),
                                   lse=True), "f", block_q=16, block_k=16)
# CHECK: runtime sizes: ['tensor<?x2x?x16xf32>', 'tensor<?x2x?x16xf32>', 'tensor<?x2x?x16xf32>']
print("runtime sizes:", fn.input_types)
for b, nq, nk in ((1, 5, 70), (3, 33, 17)):
    q = rng.standard_normal((b, 2, nq, 16), dtype=np.float32)
    k = rng.standard_normal((b, 2, nk, 16), dtype=np.float32)
    v = rng.standard_normal((b, 2, nk, 16), dtype=np.float32)
    o, lse = fn(q, k, v)
    want_o, want_lse = reference(q, k, v)
    check("runtime %dx%dx%d o" % (b, nq, nk), o, want_o, 1e-5)
    check("runtime %dx%dx%d lse" % (b, nq, nk), lse, want_lse, 1e-5)
# CHECK-NEXT: runtime 1x5x70 o: shape (1, 2, 5, 16) dtype float32 ok True
# CHECK-NEXT: runtime 1x5x70 lse: shape (1, 2, 5) dtype float32 ok True
# CHECK-NEXT: runtime 3x33x17 o: shape (3, 2, 33, 16) dtype float32 ok True
# CHECK-NEXT: runtime 3x33x17 lse: shape (3, 2, 33) dtype float32 ok True
# Decode over a paged KV cache with per-sequence lengths (key_lengths,
# block_table): one compiled function for any batch and table width, against
# numpy in float64 (K/V gathered through the table, keys past each length and
# on out-of-range page ids hidden, causal bottom-right per sequence).
PAGED = """
func.func @decode(%q: tensor<?x4x2x16xf32>, %kc: tensor<6x2x8x16xf32>, %vc: tensor<6x2x8x16xf32>,
                  %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x4x2x16xf32> {
  %o = attn.attention ins(%q, %kc, %vc : tensor<?x4x2x16xf32>, tensor<6x2x8x16xf32>, tensor<6x2x8x16xf32>)
      key_lengths(%lens : tensor<?xi32>) block_table(%table : tensor<?x?xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<?x4x2x16xf32>
  return %o : tensor<?x4x2x16xf32>
}
"""
decode = attnfuse.jit(PAGED, "decode", block_q=2, block_k=4)
kc = rng.standard_normal((6, 2, 8, 16), dtype=np.float32)
vc = rng.standard_normal((6, 2, 8, 16), dtype=np.float32)
for lens, table in (([13, 0, 24], [[5, 2, 0], [1, 1, 1], [3, 9, 4]]),
                    ([30, 7], [[0, 1, 2, 3], [4, -1, -1, -1]])):
    lens = np.array(lens, dtype=np.int32)
    table = np.array(table, dtype=np.int32)
    b, p = table.shape
    qd = rng.standard_normal((b, 4, 2, 16), dtype=np.float32)
    o = decode(qd, kc, vc, lens, table)
    nk = p * 8
    pos = np.arange(nk)
    ids = table[:, pos // 8]                              # [b, nk]
    valid = (ids >= 0) & (ids < 6)
    safe = np.where(valid, ids, 0)
    kd = kc[safe, :, pos % 8].transpose(0, 2, 1, 3)        # [b, 2, nk, 16]
    vd = vc[safe, :, pos % 8].transpose(0, 2, 1, 3)
    kd, vd = np.repeat(kd, 2, axis=1), np.repeat(vd, 2, axis=1)
    length = np.clip(lens, 0, nk)[:, None, None, None]
    qi = np.arange(2)[None, None, :, None]
    keep = (pos < length) & (pos <= qi + length - 2) & valid[:, None, None, :]
    s = np.einsum("bhqd,bhkd->bhqk", qd.astype(np.float64), kd) / 4.0
    s = np.where(keep, s, -np.inf)
    m = np.max(s, -1, keepdims=True)
    e = np.where(keep, np.exp(s - np.where(np.isinf(m), 0, m)), 0)
    l = e.sum(-1, keepdims=True)
    want = np.einsum("bhqk,bhkd->bhqd", np.divide(e, l, out=np.zeros_like(e), where=l > 0), vd)
    check("paged decode B=%d P=%d" % (b, p), o, want, 1e-5)
# CHECK: paged decode B=3 P=3: shape (3, 4, 2, 16) dtype float32 ok True
# CHECK-NEXT: paged decode B=2 P=4: shape (2, 4, 2, 16) dtype float32 ok True

# Packed variable-length prefill (sequence_offsets, as cu_seqlens of
# flash_attn_varlen_func), against numpy in float64 attending each sequence
# on its own (causal bottom-right in the sequence's positions); one compiled
# function for any packing.
PACKED = """
func.func @varlen(%q: tensor<1x4x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x16xf32>,
                  %cq: tensor<?xi32>, %ck: tensor<?xi32>) -> tensor<1x4x?x16xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>)
      sequence_offsets(%cq, %ck : tensor<?xi32>, tensor<?xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<1x4x?x16xf32>
  return %o : tensor<1x4x?x16xf32>
}
"""
varlen = attnfuse.jit(PACKED, "varlen", block_q=4, block_k=8)
for lq, lk in (([5, 1, 9], [5, 13, 9]), ([3, 0, 17, 2], [8, 4, 17, 30])):
    cq = np.concatenate([[0], np.cumsum(lq)]).astype(np.int32)
    ck = np.concatenate([[0], np.cumsum(lk)]).astype(np.int32)
    qp = rng.standard_normal((1, 4, cq[-1], 16), dtype=np.float32)
    kp = rng.standard_normal((1, 2, ck[-1], 16), dtype=np.float32)
    vp = rng.standard_normal((1, 2, ck[-1], 16), dtype=np.float32)
    o = varlen(qp, kp, vp, cq, ck)
    want = np.zeros(qp.shape)
    for s in range(len(lq)):
        qs = qp[:, :, cq[s]:cq[s + 1]].astype(np.float64)
        ks = np.repeat(kp[:, :, ck[s]:ck[s + 1]], 2, axis=1)
        vs = np.repeat(vp[:, :, ck[s]:ck[s + 1]], 2, axis=1)
        sc = np.einsum("bhqd,bhkd->bhqk", qs, ks) / 4.0
        keep = np.arange(lk[s])[None, :] <= np.arange(lq[s])[:, None] + lk[s] - lq[s]
        sc = np.where(keep, sc, -np.inf)
        m = np.max(sc, -1, keepdims=True, initial=-np.inf)
        e = np.where(keep, np.exp(sc - np.where(np.isinf(m), 0, m)), 0)
        l = e.sum(-1, keepdims=True)
        want[:, :, cq[s]:cq[s + 1]] = np.einsum(
            "bhqk,bhkd->bhqd", np.divide(e, l, out=np.zeros_like(e), where=l > 0), vs)
    check("varlen S=%d" % len(lq), o, want, 1e-5)
# CHECK: varlen S=3: shape (1, 4, 15, 16) dtype float32 ok True
# CHECK-NEXT: varlen S=4: shape (1, 4, 22, 16) dtype float32 ok True

# A size mismatch the verifier cannot see stops the call with the message
# (last: the JIT'd code prints it through C's stdout, which a pipe flushes
# only at exit).
try:
    fn(q, k[:2], v[:2])
except Exception as e:
    # CHECK-DAG: mismatch: RunError
    # CHECK-DAG: attn: runtime size mismatch: key batch != query batch
    print("mismatch:", type(e).__name__, flush=True)
