// Normal form: the second contraction written transposed, O^T = V^T P^T, with
// V from a projection (another contraction): P is the operand that is a
// softmax of a contraction, not a fixed position (isSoftmaxOfContraction).

// RUN: attnfuse-opt %s --pass-pipeline="builtin.module(func.func(tosa-to-linalg-named, tosa-to-linalg, tosa-to-arith, tosa-to-tensor), attn-raise-attention)" -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @transposed_pv(
// CHECK:         attn.attention
// CHECK-NOT:     math.exp
// CHECK:         return

func.func @transposed_pv(%q: tensor<8x8x16xf32>, %k: tensor<8x8x16xf32>, %x: tensor<8x8x16xf32>, %w: tensor<8x16x16xf32>) -> tensor<8x8x16xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %v = tosa.matmul %x, %w, %zp, %zp : (tensor<8x8x16xf32>, tensor<8x16x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x16xf32>
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<8x8x16xf32>) -> tensor<8x16x8xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<8x8x16xf32>, tensor<8x16x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x8xf32>
  %m = tosa.reduce_max %s {axis = 2 : i32} : (tensor<8x8x8xf32>) -> tensor<8x8x1xf32>
  %d = tosa.sub %s, %m : (tensor<8x8x8xf32>, tensor<8x8x1xf32>) -> tensor<8x8x8xf32>
  %e = tosa.exp %d : (tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %l = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<8x8x8xf32>) -> tensor<8x8x1xf32>
  %r = tosa.reciprocal %l : (tensor<8x8x1xf32>) -> tensor<8x8x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<8x8x8xf32>, tensor<8x8x1xf32>, tensor<1xi8>) -> tensor<8x8x8xf32>
  %vt = tosa.transpose %v {perms = array<i32: 0, 2, 1>} : (tensor<8x8x16xf32>) -> tensor<8x16x8xf32>
  %pt = tosa.transpose %p {perms = array<i32: 0, 2, 1>} : (tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  // expected-remark @below {{fused into attn.attention}}
  %ot = tosa.matmul %vt, %pt, %zp, %zp : (tensor<8x16x8xf32>, tensor<8x8x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x16x8xf32>
  %o = tosa.transpose %ot {perms = array<i32: 0, 2, 1>} : (tensor<8x16x8xf32>) -> tensor<8x8x16xf32>
  return %o : tensor<8x8x16xf32>
}
