# RUN: %python %s | FileCheck %s
# attnfuse.compile: the IR after a pipeline, the remarks, and errors.
import attnfuse

ATTENTION = """
func.func @attention(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x16x8xf32>,
                     %v: tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x16x8xf32>,
                          tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
      -> tensor<1x2x16x8xf32>
  return %o : tensor<1x2x16x8xf32>
}
"""

# softmax(Q K^T) V written out in linalg: attn-raise-attention fuses it.
UNFUSED = """
func.func @unfused(%q: tensor<16x8xf32>, %k: tensor<16x8xf32>,
                   %v: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %kt0 = tensor.empty() : tensor<8x16xf32>
  %kt = linalg.transpose ins(%k : tensor<16x8xf32>) outs(%kt0 : tensor<8x16xf32>) permutation = [1, 0]
  %s0 = tensor.empty() : tensor<16x16xf32>
  %sf = linalg.fill ins(%zero : f32) outs(%s0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %s = linalg.matmul ins(%q, %kt : tensor<16x8xf32>, tensor<8x16xf32>) outs(%sf : tensor<16x16xf32>) -> tensor<16x16xf32>
  %p = linalg.softmax dimension(1) ins(%s : tensor<16x16xf32>) outs(%s0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %o0 = tensor.empty() : tensor<16x8xf32>
  %of = linalg.fill ins(%zero : f32) outs(%o0 : tensor<16x8xf32>) -> tensor<16x8xf32>
  %o = linalg.matmul ins(%p, %v : tensor<16x16xf32>, tensor<16x8xf32>) outs(%of : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %o : tensor<16x8xf32>
}
"""

# CHECK: library: {{.*}}libAttnFuseCAPI.so
print("library:", attnfuse.library_path)

# The default: attn-lower-to-cpu-pipeline, to the LLVM dialect.
r = attnfuse.compile(ATTENTION)
# CHECK-NEXT: default: llvm.func True attn False diagnostics []
print("default: llvm.func", "llvm.func @attention" in r.ir,
      "attn", "attn" in r.ir.replace("@attention", ""), "diagnostics",
      r.diagnostics)

# A textual pipeline, with pass options.
r = attnfuse.compile(ATTENTION,
                     pipeline="builtin.module(convert-attn-to-scf{block-q=8 block-k=4})")
# CHECK-NEXT: scf: forall True (1, 2, 2) True
print("scf: forall", "scf.forall" in r.ir, "(1, 2, 2)", "in (1, 2, 2)" in r.ir)
# The block-q option of the default pipeline reaches the tiled lowering.
r = attnfuse.compile(ATTENTION, block_q=4, block_k=4)
r2 = attnfuse.compile(ATTENTION, naive=True)
# CHECK-NEXT: options change the IR: True
print("options change the IR:", r.ir != attnfuse.compile(ATTENTION).ir != r2.ir)

# Remarks of the raising pass come back as diagnostics with locations.
r = attnfuse.compile(UNFUSED, pipeline="attn-raise-attention",
                     source_name="unfused.mlir")
# CHECK-NEXT: remark unfused.mlir:13:8 fused into attn.attention
for d in r.remarks:
    print(d.severity, d.location, d.message)
# CHECK-NEXT: raised: True
print("raised:", "attn.attention" in r.ir)

# Errors: CompileError with the diagnostics.
def expect_error(source, **kwargs):
    try:
        attnfuse.compile(source, **kwargs)
    except attnfuse.CompileError as e:
        for d in e.diagnostics:
            print(d)
    else:
        print("no error")

# CHECK-NEXT: bad.mlir:1:20: error: custom op 'attn.attention' expected 'ins'
expect_error("%x = attn.attention", source_name="bad.mlir")
# CHECK-NEXT: error: invalid pass pipeline 'no-such-pass': 'no-such-pass' does not refer to a registered pass or pass pipeline
expect_error(ATTENTION, pipeline="no-such-pass")
# CHECK-NEXT: error: block sizes must be positive, got block-q=-1 block-k=64
expect_error(ATTENTION, block_q=-1)
# A verifier error inside the pipeline (K and V disagree on Nk).
# CHECK-NEXT: <source>:4:8: error: 'attn.attention' op key and value must have the same sequence length, got 16 and 15
expect_error(ATTENTION.replace("%v: tensor<1x2x16x8xf32>", "%v: tensor<1x2x15x8xf32>")
             .replace("tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)\n",
                      "tensor<1x2x16x8xf32>, tensor<1x2x15x8xf32>)\n"))
try:
    attnfuse.compile(b"not text")
except TypeError as e:
    # CHECK-NEXT: TypeError: source must be MLIR text (str), got bytes
    print("TypeError:", e)

# Options that do not fit the C API's int64_t are errors, not truncated
# (block_q = 2**64 + 16 used to become 16).
for bad in (2**64 + 16, -2**63 - 1):
    try:
        attnfuse.compile(ATTENTION, block_q=bad)
    except OverflowError as e:
        # CHECK-NEXT: OverflowError: block_q = 18446744073709551632 does not fit in a 64-bit integer
        # CHECK-NEXT: OverflowError: block_q = -9223372036854775809 does not fit in a 64-bit integer
        print("OverflowError:", e)
for bad in (16.5, True):
    try:
        attnfuse.compile(ATTENTION, block_k=bad)
    except TypeError as e:
        # CHECK-NEXT: TypeError: 'float' object cannot be interpreted as an integer
        # CHECK-NEXT: TypeError: block_k must be an integer, got bool
        print("TypeError:", e)

# A score_mod region that yields a value defined outside it (what
# canonicalize makes of a constant region) compiles and runs: it used to
# kill the interpreter.
HOISTED = """
func.func @attention(%q: tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32> {
  %c = arith.constant 0.5 : f32
  %o = attn.attention ins(%q, %q, %q : tensor<1x2x16x8xf32>,
                          tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        attn.yield %c : f32
      } -> tensor<1x2x16x8xf32>
  return %o : tensor<1x2x16x8xf32>
}
"""
import numpy as np
x = np.random.default_rng(0).standard_normal((1, 2, 16, 8)).astype(np.float32)
(o,) = attnfuse.run(HOISTED, "attention", x)
# Equal scores: O is the mean of V over the keys.
# CHECK-NEXT: hoisted constant region: True
print("hoisted constant region:",
      bool(np.allclose(o, x.mean(axis=2, keepdims=True).repeat(16, axis=2),
                       atol=1e-6)))

# Deeply nested text is a located error, not a stack overflow that kills the
# interpreter.
DEEP = ("func.func @f() {\n" + "scf.execute_region {\n" * 100000 +
        "scf.yield\n}\n" * 100000 + "return\n}\n")
# CHECK-NEXT: deep.mlir:1001:20: error: brackets nest deeper than 1000 levels
expect_error(DEEP, source_name="deep.mlir")
