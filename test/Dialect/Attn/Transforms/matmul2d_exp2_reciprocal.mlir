// 2-D linalg.matmul (one head), softmax without the max subtraction, written
// with exp2(x * log2(e)) and a reciprocal-multiply.

// RUN: attnfuse-opt %s --attn-raise-attention -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @matmul2d_exp2_reciprocal(
// CHECK-SAME:    %[[ARG0:[a-z0-9]+]]: tensor<8x16xf32>, %[[ARG1:[a-z0-9]+]]: tensor<16x8xf32>, %[[ARG2:[a-z0-9]+]]: tensor<8x16xf32>) -> tensor<8x16xf32> {
// CHECK:         %[[O:.+]] = attn.attention ins(%{{[a-zA-Z0-9_]+}}, %{{[a-zA-Z0-9_]+}}, %{{[a-zA-Z0-9_]+}} : tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>) {scale = 1.000000e+00 : f32} -> tensor<1x1x8x16xf32>
// CHECK-NOT:     math.exp
// CHECK:         return

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1)>
!s4 = tensor<2x4x8x8xf32>
!x4 = tensor<2x4x8x16xf32>
func.func @matmul2d_exp2_reciprocal(%q: tensor<8x16xf32>, %kt: tensor<16x8xf32>, %v: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %c1 = arith.constant 1.0 : f32
  %log2e = arith.constant 1.44269504 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %s = linalg.matmul ins(%q, %kt : tensor<8x16xf32>, tensor<16x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %log2e : f32
    %x = math.exp2 %m : f32
    linalg.yield %x : f32
  } -> tensor<8x8xf32>
  %er = tensor.empty() : tensor<8xf32>
  %si = linalg.fill ins(%c0 : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %sm = linalg.reduce ins(%ex : tensor<8x8xf32>) outs(%si : tensor<8xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %r = arith.addf %a, %acc : f32
      linalg.yield %r : f32
    }
  %rc = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%sm : tensor<8xf32>) outs(%er : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.divf %c1, %a : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%ex, %rc : tensor<8x8xf32>, tensor<8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %r: f32, %o: f32):
    %m = arith.mulf %a, %r : f32
    linalg.yield %m : f32
  } -> tensor<8x8xf32>
  %eo = tensor.empty() : tensor<8x16xf32>
  %zo = linalg.fill ins(%c0 : f32) outs(%eo : tensor<8x16xf32>) -> tensor<8x16xf32>
  // expected-remark @below {{fused into attn.attention}}
  %o = linalg.matmul ins(%p, %v : tensor<8x8xf32>, tensor<8x16xf32>) outs(%zo : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %o : tensor<8x16xf32>
}
