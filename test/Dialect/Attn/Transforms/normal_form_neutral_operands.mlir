// Normal form: neutral operands. The row sum's reciprocal broadcast by a
// product with a tensor of ones, the scores plus a tensor of zeros, and the
// scale and the normalization with their operands swapped: x * 1 -> x,
// 0 + x -> x (NormalForm.cpp, neutralPassThrough).

// RUN: attnfuse-opt %s --pass-pipeline="builtin.module(func.func(tosa-to-linalg-named, tosa-to-linalg, tosa-to-arith, tosa-to-tensor), attn-raise-attention)" -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @recip_ones(
// CHECK:         attn.attention
// CHECK-NOT:     math.exp
// CHECK:         return

func.func @recip_ones(%q: tensor<8x8x16xf32>, %k: tensor<8x8x16xf32>, %v: tensor<8x8x16xf32>) -> tensor<8x8x16xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %scale = "tosa.const"() <{values = dense<0.25> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %ones = "tosa.const"() <{values = dense<1.0> : tensor<8x8x8xf32>}> : () -> tensor<8x8x8xf32>
  %zeros = "tosa.const"() <{values = dense<0.0> : tensor<8x8x8xf32>}> : () -> tensor<8x8x8xf32>
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<8x8x16xf32>) -> tensor<8x16x8xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<8x8x16xf32>, tensor<8x16x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x8xf32>
  %ss = tosa.mul %scale, %s, %shift : (tensor<1x1x1xf32>, tensor<8x8x8xf32>, tensor<1xi8>) -> tensor<8x8x8xf32>
  %sz = tosa.add %zeros, %ss : (tensor<8x8x8xf32>, tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %m = tosa.reduce_max %sz {axis = 2 : i32} : (tensor<8x8x8xf32>) -> tensor<8x8x1xf32>
  %d = tosa.sub %sz, %m : (tensor<8x8x8xf32>, tensor<8x8x1xf32>) -> tensor<8x8x8xf32>
  %e = tosa.exp %d : (tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %l = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<8x8x8xf32>) -> tensor<8x8x1xf32>
  %r = tosa.reciprocal %l : (tensor<8x8x1xf32>) -> tensor<8x8x1xf32>
  %rb = tosa.mul %r, %ones, %shift : (tensor<8x8x1xf32>, tensor<8x8x8xf32>, tensor<1xi8>) -> tensor<8x8x8xf32>
  %p = tosa.mul %rb, %e, %shift : (tensor<8x8x8xf32>, tensor<8x8x8xf32>, tensor<1xi8>) -> tensor<8x8x8xf32>
  // expected-remark @below {{fused into attn.attention}}
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<8x8x8xf32>, tensor<8x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x16xf32>
  return %o : tensor<8x8x16xf32>
}
