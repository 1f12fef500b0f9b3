// BHSD einsum contractions, scale as a multiply of the scores, linalg.softmax.

// RUN: attnfuse-opt %s --attn-raise-attention -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @einsum_bhsd_softmax(
// CHECK-SAME:    %[[ARG0:[a-z0-9]+]]: tensor<2x4x8x16xf32>, %[[ARG1:[a-z0-9]+]]: tensor<2x4x8x16xf32>, %[[ARG2:[a-z0-9]+]]: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
// CHECK:         %[[O:.+]] = attn.attention ins(%[[ARG0]], %[[ARG1]], %[[ARG2]] : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) {scale = 2.500000e-01 : f32} -> tensor<2x4x8x16xf32>
// CHECK-NOT:     math.exp
// CHECK:         return

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1)>
!s4 = tensor<2x4x8x8xf32>
!x4 = tensor<2x4x8x16xf32>
func.func @einsum_bhsd_softmax(%q: !x4, %k: !x4, %v: !x4) -> !x4 {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : !s4
  %z = linalg.fill ins(%c0 : f32) outs(%e : !s4) -> !s4
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, q, k, d) -> (b, h, q, d)>, affine_map<(b, h, q, k, d) -> (b, h, k, d)>, affine_map<(b, h, q, k, d) -> (b, h, q, k)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : !x4, !x4) outs(%z : !s4) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> !s4
  %cs = arith.constant 0.25 : f32
  %ss = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : !s4) outs(%e : !s4) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %cs : f32
    linalg.yield %m : f32
  } -> !s4
  %p = linalg.softmax dimension(3) ins(%ss : !s4) outs(%e : !s4) -> !s4
  %eo = tensor.empty() : !x4
  %zo = linalg.fill ins(%c0 : f32) outs(%eo : !x4) -> !x4
  // expected-remark @below {{fused into attn.attention}}
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, q, e, k) -> (b, h, q, k)>, affine_map<(b, h, q, e, k) -> (b, h, k, e)>, affine_map<(b, h, q, e, k) -> (b, h, q, e)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : !s4, !x4) outs(%zo : !x4) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> !x4
  return %o : !x4
}
