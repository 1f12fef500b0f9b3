// Normal form: GQA written through reshapes and a broadcast as arithmetic.
// K and V [2, 2, 8, 16] reshaped to [2, 2, 1, 8, 16], added to zeros
// [2, 2, 2, 8, 16] (MIGraphX's multibroadcast), reshaped to [8, 8, 16]: the
// add of zeros is a copy (copiedInput), K and V are read as h floordiv 2.

// RUN: attnfuse-opt %s --pass-pipeline="builtin.module(func.func(tosa-to-linalg-named, tosa-to-linalg, tosa-to-arith, tosa-to-tensor), attn-raise-attention)" -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @gqa_reshapes(
// CHECK:         attn.attention ins(%{{.*}} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
// CHECK-NOT:     math.exp
// CHECK:         return

func.func @gqa_reshapes(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %z5 = "tosa.const"() <{values = dense<0.0> : tensor<2x2x2x8x16xf32>}> : () -> tensor<2x2x2x8x16xf32>
  %sh5 = tosa.const_shape {values = dense<[2, 2, 1, 8, 16]> : tensor<5xindex>} : () -> !tosa.shape<5>
  %sh3 = tosa.const_shape {values = dense<[8, 8, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %k5 = tosa.reshape %k, %sh5 : (tensor<2x2x8x16xf32>, !tosa.shape<5>) -> tensor<2x2x1x8x16xf32>
  %kb = tosa.add %k5, %z5 : (tensor<2x2x1x8x16xf32>, tensor<2x2x2x8x16xf32>) -> tensor<2x2x2x8x16xf32>
  %k3 = tosa.reshape %kb, %sh3 : (tensor<2x2x2x8x16xf32>, !tosa.shape<3>) -> tensor<8x8x16xf32>
  %v5 = tosa.reshape %v, %sh5 : (tensor<2x2x8x16xf32>, !tosa.shape<5>) -> tensor<2x2x1x8x16xf32>
  %vb = tosa.add %z5, %v5 : (tensor<2x2x2x8x16xf32>, tensor<2x2x1x8x16xf32>) -> tensor<2x2x2x8x16xf32>
  %v3 = tosa.reshape %vb, %sh3 : (tensor<2x2x2x8x16xf32>, !tosa.shape<3>) -> tensor<8x8x16xf32>
  %q3 = tosa.reshape %q, %sh3 : (tensor<2x4x8x16xf32>, !tosa.shape<3>) -> tensor<8x8x16xf32>
  %kt = tosa.transpose %k3 {perms = array<i32: 0, 2, 1>} : (tensor<8x8x16xf32>) -> tensor<8x16x8xf32>
  %s = tosa.matmul %q3, %kt, %zp, %zp : (tensor<8x8x16xf32>, tensor<8x16x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x8xf32>
  %m = tosa.reduce_max %s {axis = 2 : i32} : (tensor<8x8x8xf32>) -> tensor<8x8x1xf32>
  %d = tosa.sub %s, %m : (tensor<8x8x8xf32>, tensor<8x8x1xf32>) -> tensor<8x8x8xf32>
  %e = tosa.exp %d : (tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %l = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<8x8x8xf32>) -> tensor<8x8x1xf32>
  %r = tosa.reciprocal %l : (tensor<8x8x1xf32>) -> tensor<8x8x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<8x8x8xf32>, tensor<8x8x1xf32>, tensor<1xi8>) -> tensor<8x8x8xf32>
  // expected-remark @below {{fused into attn.attention}}
  %o = tosa.matmul %p, %v3, %zp, %zp : (tensor<8x8x8xf32>, tensor<8x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x16xf32>
  %sh4 = tosa.const_shape {values = dense<[2, 4, 8, 16]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %o4 = tosa.reshape %o, %sh4 : (tensor<8x8x16xf32>, !tosa.shape<4>) -> tensor<2x4x8x16xf32>
  return %o4 : tensor<2x4x8x16xf32>
}
