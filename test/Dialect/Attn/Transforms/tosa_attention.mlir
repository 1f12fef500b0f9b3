// TOSA: matmul, transpose of K, mul by a scale, reduce_max, sub, exp,
// reduce_sum, reciprocal, mul, matmul (B*H folded, 3-D).

// RUN: attnfuse-opt %s --pass-pipeline="builtin.module(func.func(tosa-to-linalg-named, tosa-to-linalg, tosa-to-arith, tosa-to-tensor), attn-raise-attention)" -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @tosa_attention(
// CHECK-SAME:    %[[ARG0:[a-z0-9]+]]: tensor<8x8x16xf32>, %[[ARG1:[a-z0-9]+]]: tensor<8x8x16xf32>, %[[ARG2:[a-z0-9]+]]: tensor<8x8x16xf32>) -> tensor<8x8x16xf32> {
// CHECK:         %[[O:.+]] = attn.attention ins(%{{[a-zA-Z0-9_]+}}, %{{[a-zA-Z0-9_]+}}, %{{[a-zA-Z0-9_]+}} : tensor<1x8x8x16xf32>, tensor<1x8x8x16xf32>, tensor<1x8x8x16xf32>) {scale = 2.500000e-01 : f32} -> tensor<1x8x8x16xf32>
// CHECK-NOT:     math.exp
// CHECK:         return

func.func @tosa_attention(%q: tensor<8x8x16xf32>, %k: tensor<8x8x16xf32>, %v: tensor<8x8x16xf32>) -> tensor<8x8x16xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %scale = "tosa.const"() <{values = dense<0.25> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<8x8x16xf32>) -> tensor<8x16x8xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<8x8x16xf32>, tensor<8x16x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x8xf32>
  %ss = tosa.mul %s, %scale, %shift : (tensor<8x8x8xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<8x8x8xf32>
  %m = tosa.reduce_max %ss {axis = 2 : i32} : (tensor<8x8x8xf32>) -> tensor<8x8x1xf32>
  %d = tosa.sub %ss, %m : (tensor<8x8x8xf32>, tensor<8x8x1xf32>) -> tensor<8x8x8xf32>
  %e = tosa.exp %d : (tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %l = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<8x8x8xf32>) -> tensor<8x8x1xf32>
  %r = tosa.reciprocal %l : (tensor<8x8x1xf32>) -> tensor<8x8x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<8x8x8xf32>, tensor<8x8x1xf32>, tensor<1xi8>) -> tensor<8x8x8xf32>
  // expected-remark @below {{fused into attn.attention}}
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<8x8x8xf32>, tensor<8x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x16xf32>
  return %o : tensor<8x8x16xf32>
}
