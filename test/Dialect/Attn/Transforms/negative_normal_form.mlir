// Semantics-breaking variants of the normal form's equivalences: none may
// fuse, each gets a remark (docs/Raising.md, "Normal form").

// RUN: attnfuse-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(tosa-to-linalg-named, tosa-to-linalg, tosa-to-arith, tosa-to-tensor), attn-raise-attention)" -verify-diagnostics | FileCheck %s

// CHECK-NOT: attn.attention

// The softmax over the query axis (axis 1) of [B*H, Nq, Nk].
func.func @negative_softmax_wrong_axis(%q: tensor<8x8x16xf32>, %k: tensor<8x8x16xf32>, %v: tensor<8x8x16xf32>) -> (tensor<8x8x16xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<8x8x16xf32>) -> tensor<8x16x8xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<8x8x16xf32>, tensor<8x16x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x8xf32>
  %m = tosa.reduce_max %s {axis = 1 : i32} : (tensor<8x8x8xf32>) -> tensor<8x1x8xf32>
  %d = tosa.sub %s, %m : (tensor<8x8x8xf32>, tensor<8x1x8xf32>) -> tensor<8x8x8xf32>
  %e = tosa.exp %d : (tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  // expected-remark @below {{not fused: the softmax sum does not reduce the exponentials over the key axis (the reduction axis of the second contraction)}}
  %l = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<8x8x8xf32>) -> tensor<8x1x8xf32>
  %r = tosa.reciprocal %l : (tensor<8x1x8xf32>) -> tensor<8x1x8xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<8x8x8xf32>, tensor<8x1x8xf32>, tensor<1xi8>) -> tensor<8x8x8xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<8x8x8xf32>, tensor<8x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x16xf32>
  return %o : tensor<8x8x16xf32>
}

// -----

// The probabilities multiplied by 2 (a scale after the softmax, not before).
func.func @negative_scale_after_softmax(%q: tensor<8x8x16xf32>, %k: tensor<8x8x16xf32>, %v: tensor<8x8x16xf32>) -> (tensor<8x8x16xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<8x8x16xf32>) -> tensor<8x16x8xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<8x8x16xf32>, tensor<8x16x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x8xf32>
  %m = tosa.reduce_max %s {axis = 2 : i32} : (tensor<8x8x8xf32>) -> tensor<8x8x1xf32>
  %d = tosa.sub %s, %m : (tensor<8x8x8xf32>, tensor<8x8x1xf32>) -> tensor<8x8x8xf32>
  %e = tosa.exp %d : (tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %l = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<8x8x8xf32>) -> tensor<8x8x1xf32>
  %r = tosa.reciprocal %l : (tensor<8x8x1xf32>) -> tensor<8x8x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<8x8x8xf32>, tensor<8x8x1xf32>, tensor<1xi8>) -> tensor<8x8x8xf32>
  %two = "tosa.const"() <{values = dense<2.0> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  // expected-remark @below {{not fused: the probabilities are scaled or masked after the softmax (attn.attention masks and scales before it)}}
  %p2 = tosa.mul %p, %two, %shift : (tensor<8x8x8xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<8x8x8xf32>
  %o = tosa.matmul %p2, %v, %zp, %zp : (tensor<8x8x8xf32>, tensor<8x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x16xf32>
  return %o : tensor<8x8x16xf32>
}

// -----

// The probabilities are also a result.
func.func @negative_extra_use_of_p(%q: tensor<8x8x16xf32>, %k: tensor<8x8x16xf32>, %v: tensor<8x8x16xf32>) -> (tensor<8x8x16xf32>, tensor<8x8x8xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<8x8x16xf32>) -> tensor<8x16x8xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<8x8x16xf32>, tensor<8x16x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x8xf32>
  %m = tosa.reduce_max %s {axis = 2 : i32} : (tensor<8x8x8xf32>) -> tensor<8x8x1xf32>
  %d = tosa.sub %s, %m : (tensor<8x8x8xf32>, tensor<8x8x1xf32>) -> tensor<8x8x8xf32>
  %e = tosa.exp %d : (tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %l = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<8x8x8xf32>) -> tensor<8x8x1xf32>
  %r = tosa.reciprocal %l : (tensor<8x8x1xf32>) -> tensor<8x8x1xf32>
  // expected-remark @below {{not fused: an intermediate of the chain has a user outside it (func.return)}}
  %p = tosa.mul %e, %r, %shift : (tensor<8x8x8xf32>, tensor<8x8x1xf32>, tensor<1xi8>) -> tensor<8x8x8xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<8x8x8xf32>, tensor<8x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x16xf32>
  return %o, %p : tensor<8x8x16xf32>, tensor<8x8x8xf32>
}

// -----

// A causal constant mask applied to the probabilities (after the softmax, not before).
func.func @negative_mask_after_softmax(%q: tensor<8x8x16xf32>, %k: tensor<8x8x16xf32>, %v: tensor<8x8x16xf32>) -> (tensor<8x8x16xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<8x8x16xf32>) -> tensor<8x16x8xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<8x8x16xf32>, tensor<8x16x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x8xf32>
  %m = tosa.reduce_max %s {axis = 2 : i32} : (tensor<8x8x8xf32>) -> tensor<8x8x1xf32>
  %d = tosa.sub %s, %m : (tensor<8x8x8xf32>, tensor<8x8x1xf32>) -> tensor<8x8x8xf32>
  %e = tosa.exp %d : (tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %l = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<8x8x8xf32>) -> tensor<8x8x1xf32>
  %r = tosa.reciprocal %l : (tensor<8x8x1xf32>) -> tensor<8x8x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<8x8x8xf32>, tensor<8x8x1xf32>, tensor<1xi8>) -> tensor<8x8x8xf32>
  %tril = "tosa.const"() <{values = dense<[[[true, false, false, false, false, false, false, false], [true, true, false, false, false, false, false, false], [true, true, true, false, false, false, false, false], [true, true, true, true, false, false, false, false], [true, true, true, true, true, false, false, false], [true, true, true, true, true, true, false, false], [true, true, true, true, true, true, true, false], [true, true, true, true, true, true, true, true]]]> : tensor<1x8x8xi1>}> : () -> tensor<1x8x8xi1>
  %zero = "tosa.const"() <{values = dense<0.0> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  // expected-remark @below {{not fused: the probabilities are scaled or masked after the softmax (attn.attention masks and scales before it)}}
  %pm = tosa.select %tril, %p, %zero : (tensor<1x8x8xi1>, tensor<8x8x8xf32>, tensor<1x1x1xf32>) -> tensor<8x8x8xf32>
  %o = tosa.matmul %pm, %v, %zp, %zp : (tensor<8x8x8xf32>, tensor<8x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x16xf32>
  return %o : tensor<8x8x16xf32>
}

// -----

// The reciprocal of the row sum [8, 8, 1] reshaped to [8, 1, 8]: broadcast along the key axis instead of the query axis.
func.func @negative_wrong_broadcast(%q: tensor<8x8x16xf32>, %k: tensor<8x8x16xf32>, %v: tensor<8x8x16xf32>) -> (tensor<8x8x16xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<8x8x16xf32>) -> tensor<8x16x8xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<8x8x16xf32>, tensor<8x16x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x8xf32>
  %m = tosa.reduce_max %s {axis = 2 : i32} : (tensor<8x8x8xf32>) -> tensor<8x8x1xf32>
  %d = tosa.sub %s, %m : (tensor<8x8x8xf32>, tensor<8x8x1xf32>) -> tensor<8x8x8xf32>
  %e = tosa.exp %d : (tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  // expected-remark @below {{not fused: the softmax sum does not reduce the exponentials over the key axis (the reduction axis of the second contraction)}}
  %l = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<8x8x8xf32>) -> tensor<8x8x1xf32>
  %r = tosa.reciprocal %l : (tensor<8x8x1xf32>) -> tensor<8x8x1xf32>
  %shw = tosa.const_shape {values = dense<[8, 1, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %rw = tosa.reshape %r, %shw : (tensor<8x8x1xf32>, !tosa.shape<3>) -> tensor<8x1x8xf32>
  %p = tosa.mul %e, %rw, %shift : (tensor<8x8x8xf32>, tensor<8x1x8xf32>, tensor<1xi8>) -> tensor<8x8x8xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<8x8x8xf32>, tensor<8x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x16xf32>
  return %o : tensor<8x8x16xf32>
}

// -----

// A product with a tensor of 1.0001 (not neutral) on the probabilities.
func.func @negative_not_ones(%q: tensor<8x8x16xf32>, %k: tensor<8x8x16xf32>, %v: tensor<8x8x16xf32>) -> (tensor<8x8x16xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<8x8x16xf32>) -> tensor<8x16x8xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<8x8x16xf32>, tensor<8x16x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x8xf32>
  %m = tosa.reduce_max %s {axis = 2 : i32} : (tensor<8x8x8xf32>) -> tensor<8x8x1xf32>
  %d = tosa.sub %s, %m : (tensor<8x8x8xf32>, tensor<8x8x1xf32>) -> tensor<8x8x8xf32>
  %e = tosa.exp %d : (tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %l = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<8x8x8xf32>) -> tensor<8x8x1xf32>
  %r = tosa.reciprocal %l : (tensor<8x8x1xf32>) -> tensor<8x8x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<8x8x8xf32>, tensor<8x8x1xf32>, tensor<1xi8>) -> tensor<8x8x8xf32>
  %ones = "tosa.const"() <{values = dense<1.0001> : tensor<8x8x8xf32>}> : () -> tensor<8x8x8xf32>
  // expected-remark @below {{not fused: the probabilities are scaled or masked after the softmax (attn.attention masks and scales before it)}}
  %p2 = tosa.mul %p, %ones, %shift : (tensor<8x8x8xf32>, tensor<8x8x8xf32>, tensor<1xi8>) -> tensor<8x8x8xf32>
  %o = tosa.matmul %p2, %v, %zp, %zp : (tensor<8x8x8xf32>, tensor<8x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x8x16xf32>
  return %o : tensor<8x8x16xf32>
}
