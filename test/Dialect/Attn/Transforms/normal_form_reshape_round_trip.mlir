// Normal form: reshape round trips. The scores reshaped to [1, 8, 8, 8], a
// transpose of the unit axis, reshaped back; P flattened to one dimension and
// re-expanded (what tosa-to-tensor makes of tosa.reshape): the accesses
// compose to the same coordinates (Terms.cpp).

// RUN: attnfuse-opt %s --pass-pipeline="builtin.module(func.func(tosa-to-linalg-named, tosa-to-linalg, tosa-to-arith, tosa-to-tensor), attn-raise-attention)" -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @flatten(
// CHECK:         attn.attention
// CHECK-NOT:     math.exp
// CHECK:         return

func.func @flatten(%q: tensor<8x8x16xf32>, %k: tensor<8x8x16xf32>, %v: tensor<8x8x16xf32>) -> tensor<8x8x16xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<8x8x16xf32>) -> tensor<8x16x8xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<8x8x16xf32>, tensor<8x16x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x8xf32>
  %sh4 = tosa.const_shape {values = dense<[1, 8, 8, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s4 = tosa.reshape %s, %sh4 : (tensor<8x8x8xf32>, !tosa.shape<4>) -> tensor<1x8x8x8xf32>
  %s4t = tosa.transpose %s4 {perms = array<i32: 1, 0, 2, 3>} : (tensor<1x8x8x8xf32>) -> tensor<8x1x8x8xf32>
  %sh3 = tosa.const_shape {values = dense<[8, 8, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %s3 = tosa.reshape %s4t, %sh3 : (tensor<8x1x8x8xf32>, !tosa.shape<3>) -> tensor<8x8x8xf32>
  %m = tosa.reduce_max %s3 {axis = 2 : i32} : (tensor<8x8x8xf32>) -> tensor<8x8x1xf32>
  %d = tosa.sub %s3, %m : (tensor<8x8x8xf32>, tensor<8x8x1xf32>) -> tensor<8x8x8xf32>
  %e = tosa.exp %d : (tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %l = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<8x8x8xf32>) -> tensor<8x8x1xf32>
  %r = tosa.reciprocal %l : (tensor<8x8x1xf32>) -> tensor<8x8x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<8x8x8xf32>, tensor<8x8x1xf32>, tensor<1xi8>) -> tensor<8x8x8xf32>
  %sh1 = tosa.const_shape {values = dense<[512]> : tensor<1xindex>} : () -> !tosa.shape<1>
  %p1 = tosa.reshape %p, %sh1 : (tensor<8x8x8xf32>, !tosa.shape<1>) -> tensor<512xf32>
  %p3 = tosa.reshape %p1, %sh3 : (tensor<512xf32>, !tosa.shape<3>) -> tensor<8x8x8xf32>
  // expected-remark @below {{fused into attn.attention}}
  %o = tosa.matmul %p3, %v, %zp, %zp : (tensor<8x8x8xf32>, tensor<8x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x16xf32>
  return %o : tensor<8x8x16xf32>
}
