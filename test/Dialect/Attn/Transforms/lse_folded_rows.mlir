// The LSE on [B, H, N, 1] (or [B, H, splits, N, 1]) beside a second
// contraction on B * H (or B * H * splits): the LSE reads the folded row as
// two dims, the roles split it the same way, and the op's lse result is
// written back to the graph's layout. Flash decoding's per-split attention
// (the keys split in 2 chunks, Q broadcast over the splits by an add of
// zeros, the split read back into K's and V's key axis as `s * 16 + k`, a
// linear read the layout copy makes), and MIGraphX's LSE at batch 2.

// RUN: attnfuse-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(tosa-to-linalg-named, tosa-to-linalg, tosa-to-arith, tosa-to-tensor), attn-raise-attention)" -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @flash_decoding_splits(
// CHECK:         %{{.*}}, %{{.*}} = attn.attention ins(%{{.*}} : tensor<2x2x16x8xf16>, tensor<2x2x16x8xf16>, tensor<2x2x16x8xf16>)
// CHECK-NOT:     math.exp
// CHECK-LABEL: func.func @lse_batch2(
// CHECK:         %{{.*}}, %{{.*}} = attn.attention ins(%arg0, %arg1, %arg2 : {{.*}}) {{.*}} -> tensor<2x2x8x8xf32>, tensor<2x2x8xf32>
// CHECK-NOT:     math.exp

func.func @flash_decoding_splits(%q: tensor<1x2x16x8xf16>, %k: tensor<1x2x32x8xf16>, %v: tensor<1x2x32x8xf16>) -> (tensor<1x2x2x16x8xf16>, tensor<1x2x2x16x1xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf16>}> : () -> tensor<1xf16>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %z5 = "tosa.const"() <{values = dense<0.0> : tensor<1x2x2x16x8xf16>}> : () -> tensor<1x2x2x16x8xf16>
  %scale = "tosa.const"() <{values = dense<0.353553> : tensor<1x1x1x1x1xf32>}> : () -> tensor<1x1x1x1x1xf32>
  %shq = tosa.const_shape {values = dense<[1, 2, 1, 16, 8]> : tensor<5xindex>} : () -> !tosa.shape<5>
  %shs = tosa.const_shape {values = dense<[1, 2, 2, 16, 8]> : tensor<5xindex>} : () -> !tosa.shape<5>
  %sh3 = tosa.const_shape {values = dense<[4, 16, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %sh3t = tosa.const_shape {values = dense<[4, 8, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %sh3s = tosa.const_shape {values = dense<[4, 16, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %sh5s = tosa.const_shape {values = dense<[1, 2, 2, 16, 16]> : tensor<5xindex>} : () -> !tosa.shape<5>
  %q5 = tosa.reshape %q, %shq : (tensor<1x2x16x8xf16>, !tosa.shape<5>) -> tensor<1x2x1x16x8xf16>
  %qb = tosa.add %q5, %z5 : (tensor<1x2x1x16x8xf16>, tensor<1x2x2x16x8xf16>) -> tensor<1x2x2x16x8xf16>
  %q3 = tosa.reshape %qb, %sh3 : (tensor<1x2x2x16x8xf16>, !tosa.shape<3>) -> tensor<4x16x8xf16>
  %k5 = tosa.reshape %k, %shs : (tensor<1x2x32x8xf16>, !tosa.shape<5>) -> tensor<1x2x2x16x8xf16>
  %kt = tosa.transpose %k5 {perms = array<i32: 0, 1, 2, 4, 3>} : (tensor<1x2x2x16x8xf16>) -> tensor<1x2x2x8x16xf16>
  %k3 = tosa.reshape %kt, %sh3t : (tensor<1x2x2x8x16xf16>, !tosa.shape<3>) -> tensor<4x8x16xf16>
  %s = tosa.matmul %q3, %k3, %zp, %zp : (tensor<4x16x8xf16>, tensor<4x8x16xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<4x16x16xf16>
  %s5 = tosa.reshape %s, %sh5s : (tensor<4x16x16xf16>, !tosa.shape<5>) -> tensor<1x2x2x16x16xf16>
  %sf = tosa.cast %s5 : (tensor<1x2x2x16x16xf16>) -> tensor<1x2x2x16x16xf32>
  %ss = tosa.mul %sf, %scale, %shift : (tensor<1x2x2x16x16xf32>, tensor<1x1x1x1x1xf32>, tensor<1xi8>) -> tensor<1x2x2x16x16xf32>
  %m = tosa.reduce_max %ss {axis = 4 : i32} : (tensor<1x2x2x16x16xf32>) -> tensor<1x2x2x16x1xf32>
  %d = tosa.sub %ss, %m : (tensor<1x2x2x16x16xf32>, tensor<1x2x2x16x1xf32>) -> tensor<1x2x2x16x16xf32>
  %e = tosa.exp %d : (tensor<1x2x2x16x16xf32>) -> tensor<1x2x2x16x16xf32>
  %l = tosa.reduce_sum %e {axis = 4 : i32} : (tensor<1x2x2x16x16xf32>) -> tensor<1x2x2x16x1xf32>
  %r = tosa.reciprocal %l : (tensor<1x2x2x16x1xf32>) -> tensor<1x2x2x16x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<1x2x2x16x16xf32>, tensor<1x2x2x16x1xf32>, tensor<1xi8>) -> tensor<1x2x2x16x16xf32>
  %ph = tosa.cast %p : (tensor<1x2x2x16x16xf32>) -> tensor<1x2x2x16x16xf16>
  %p3 = tosa.reshape %ph, %sh3s : (tensor<1x2x2x16x16xf16>, !tosa.shape<3>) -> tensor<4x16x16xf16>
  %v5 = tosa.reshape %v, %shs : (tensor<1x2x32x8xf16>, !tosa.shape<5>) -> tensor<1x2x2x16x8xf16>
  %v3 = tosa.reshape %v5, %sh3 : (tensor<1x2x2x16x8xf16>, !tosa.shape<3>) -> tensor<4x16x8xf16>
  // expected-remark @below {{fused into attn.attention (lse)}}
  %o = tosa.matmul %p3, %v3, %zp, %zp : (tensor<4x16x16xf16>, tensor<4x16x8xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<4x16x8xf16>
  %o5 = tosa.reshape %o, %shs : (tensor<4x16x8xf16>, !tosa.shape<5>) -> tensor<1x2x2x16x8xf16>
  %lg = tosa.log %l : (tensor<1x2x2x16x1xf32>) -> tensor<1x2x2x16x1xf32>
  %lse = tosa.add %m, %lg : (tensor<1x2x2x16x1xf32>, tensor<1x2x2x16x1xf32>) -> tensor<1x2x2x16x1xf32>
  return %o5, %lse : tensor<1x2x2x16x8xf16>, tensor<1x2x2x16x1xf32>
}

// -----

func.func @lse_batch2(%q: tensor<2x2x8x8xf32>, %k: tensor<2x2x8x8xf32>, %v: tensor<2x2x8x8xf32>) -> (tensor<2x2x8x8xf32>, tensor<2x2x8x1xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sh3 = tosa.const_shape {values = dense<[4, 8, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %sh4 = tosa.const_shape {values = dense<[2, 2, 8, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %q3 = tosa.reshape %q, %sh3 : (tensor<2x2x8x8xf32>, !tosa.shape<3>) -> tensor<4x8x8xf32>
  %kt = tosa.transpose %k {perms = array<i32: 0, 1, 3, 2>} : (tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %k3 = tosa.reshape %kt, %sh3 : (tensor<2x2x8x8xf32>, !tosa.shape<3>) -> tensor<4x8x8xf32>
  %v3 = tosa.reshape %v, %sh3 : (tensor<2x2x8x8xf32>, !tosa.shape<3>) -> tensor<4x8x8xf32>
  %s = tosa.matmul %q3, %k3, %zp, %zp : (tensor<4x8x8xf32>, tensor<4x8x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x8x8xf32>
  %s4 = tosa.reshape %s, %sh4 : (tensor<4x8x8xf32>, !tosa.shape<4>) -> tensor<2x2x8x8xf32>
  %m = tosa.reduce_max %s4 {axis = 3 : i32} : (tensor<2x2x8x8xf32>) -> tensor<2x2x8x1xf32>
  %d = tosa.sub %s4, %m : (tensor<2x2x8x8xf32>, tensor<2x2x8x1xf32>) -> tensor<2x2x8x8xf32>
  %e = tosa.exp %d : (tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %l = tosa.reduce_sum %e {axis = 3 : i32} : (tensor<2x2x8x8xf32>) -> tensor<2x2x8x1xf32>
  %r = tosa.reciprocal %l : (tensor<2x2x8x1xf32>) -> tensor<2x2x8x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<2x2x8x8xf32>, tensor<2x2x8x1xf32>, tensor<1xi8>) -> tensor<2x2x8x8xf32>
  %p3 = tosa.reshape %p, %sh3 : (tensor<2x2x8x8xf32>, !tosa.shape<3>) -> tensor<4x8x8xf32>
  // expected-remark @below {{fused into attn.attention (lse)}}
  %o = tosa.matmul %p3, %v3, %zp, %zp : (tensor<4x8x8xf32>, tensor<4x8x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x8x8xf32>
  %o4 = tosa.reshape %o, %sh4 : (tensor<4x8x8xf32>, !tosa.shape<4>) -> tensor<2x2x8x8xf32>
  %lg = tosa.log %l : (tensor<2x2x8x1xf32>) -> tensor<2x2x8x1xf32>
  %lse = tosa.add %m, %lg : (tensor<2x2x8x1xf32>, tensor<2x2x8x1xf32>) -> tensor<2x2x8x1xf32>
  return %o4, %lse : tensor<2x2x8x8xf32>, tensor<2x2x8x1xf32>
}
