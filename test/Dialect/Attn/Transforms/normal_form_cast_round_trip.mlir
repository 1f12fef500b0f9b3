// Normal form: casts that do not change values. f16 scores and
// probabilities cast to f32 and back: truncf(extf(x)) -> x
// (NormalForm.cpp, isCastRoundTrip).

// RUN: attnfuse-opt %s --pass-pipeline="builtin.module(func.func(tosa-to-linalg-named, tosa-to-linalg, tosa-to-arith, tosa-to-tensor), attn-raise-attention)" -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @cast_round_trip(
// CHECK:         attn.attention
// CHECK-NOT:     math.exp
// CHECK:         return

func.func @cast_round_trip(%q: tensor<8x8x16xf16>, %k: tensor<8x8x16xf16>, %v: tensor<8x8x16xf16>) -> tensor<8x8x16xf16> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf16>}> : () -> tensor<1xf16>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<8x8x16xf16>) -> tensor<8x16x8xf16>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<8x8x16xf16>, tensor<8x16x8xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<8x8x8xf16>
  %s32 = tosa.cast %s : (tensor<8x8x8xf16>) -> tensor<8x8x8xf32>
  %s16 = tosa.cast %s32 : (tensor<8x8x8xf32>) -> tensor<8x8x8xf16>
  %m = tosa.reduce_max %s16 {axis = 2 : i32} : (tensor<8x8x8xf16>) -> tensor<8x8x1xf16>
  %d = tosa.sub %s16, %m : (tensor<8x8x8xf16>, tensor<8x8x1xf16>) -> tensor<8x8x8xf16>
  %e = tosa.exp %d : (tensor<8x8x8xf16>) -> tensor<8x8x8xf16>
  %l = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<8x8x8xf16>) -> tensor<8x8x1xf16>
  %r = tosa.reciprocal %l : (tensor<8x8x1xf16>) -> tensor<8x8x1xf16>
  %p = tosa.mul %e, %r, %shift : (tensor<8x8x8xf16>, tensor<8x8x1xf16>, tensor<1xi8>) -> tensor<8x8x8xf16>
  %p32 = tosa.cast %p : (tensor<8x8x8xf16>) -> tensor<8x8x8xf32>
  %p16 = tosa.cast %p32 : (tensor<8x8x8xf32>) -> tensor<8x8x8xf16>
  // expected-remark @below {{fused into attn.attention}}
  %o = tosa.matmul %p16, %v, %zp, %zp : (tensor<8x8x8xf16>, tensor<8x8x16xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<8x8x16xf16>
  return %o : tensor<8x8x16xf16>
}
