// 3-D (B*H folded) batch_matmul, K transposed by linalg.transpose, decomposed
// softmax (max, subtract, exp, sum, divide), scale as a divide.

// RUN: attnfuse-opt %s --attn-raise-attention -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @bmm3d_decomposed(
// CHECK-SAME:    %[[ARG0:[a-z0-9]+]]: tensor<8x8x16xf32>, %[[ARG1:[a-z0-9]+]]: tensor<8x8x16xf32>, %[[ARG2:[a-z0-9]+]]: tensor<8x8x16xf32>) -> tensor<8x8x16xf32> {
// CHECK:         %[[O:.+]] = attn.attention ins(%{{[a-zA-Z0-9_]+}}, %{{[a-zA-Z0-9_]+}}, %{{[a-zA-Z0-9_]+}} : tensor<1x8x8x16xf32>, tensor<1x8x8x16xf32>, tensor<1x8x8x16xf32>) {scale = 1.000000e+00 : f32} score_mod {
// CHECK-NEXT:    ^bb0(%[[ARG3:[a-z0-9]+]]: f32, %[[ARG4:[a-z0-9]+]]: index, %[[ARG5:[a-z0-9]+]]: index, %[[ARG6:[a-z0-9]+]]: index, %[[ARG7:[a-z0-9]+]]: index):
// CHECK-NEXT:    %{{[a-zA-Z0-9_]+}} = arith.divf %[[ARG3]], %{{[a-zA-Z0-9_]+}} : f32
// CHECK-NEXT:    attn.yield %{{[a-zA-Z0-9_]+}} : f32
// CHECK-NEXT:    } -> tensor<1x8x8x16xf32>
// CHECK-NOT:     math.exp
// CHECK:         return

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1)>
!s4 = tensor<2x4x8x8xf32>
!x4 = tensor<2x4x8x16xf32>
func.func @bmm3d_decomposed(%q: tensor<8x8x16xf32>, %k: tensor<8x8x16xf32>, %v: tensor<8x8x16xf32>) -> tensor<8x8x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c4 = arith.constant 4.0 : f32
  %et = tensor.empty() : tensor<8x16x8xf32>
  %kt = linalg.transpose ins(%k : tensor<8x8x16xf32>) outs(%et : tensor<8x16x8xf32>) permutation = [0, 2, 1]
  %e = tensor.empty() : tensor<8x8x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<8x8x16xf32>, tensor<8x16x8xf32>) outs(%z : tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %sd = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<8x8x8xf32>) outs(%e : tensor<8x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.divf %a, %c4 : f32
    linalg.yield %d : f32
  } -> tensor<8x8x8xf32>
  %er = tensor.empty() : tensor<8x8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<8x8xf32>) -> tensor<8x8xf32>
  %mx = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%sd : tensor<8x8x8xf32>) outs(%mi : tensor<8x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<8x8xf32>
  %ex = linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sd, %mx : tensor<8x8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8x8xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %x = math.exp %d : f32
    linalg.yield %x : f32
  } -> tensor<8x8x8xf32>
  %si = linalg.fill ins(%c0 : f32) outs(%er : tensor<8x8xf32>) -> tensor<8x8xf32>
  %sm = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ex : tensor<8x8x8xf32>) outs(%si : tensor<8x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.addf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<8x8xf32>
  %p = linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<8x8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8x8xf32>) {
  ^bb0(%a: f32, %l: f32, %o: f32):
    %d = arith.divf %a, %l : f32
    linalg.yield %d : f32
  } -> tensor<8x8x8xf32>
  %eo = tensor.empty() : tensor<8x8x16xf32>
  %zo = linalg.fill ins(%c0 : f32) outs(%eo : tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
  // expected-remark @below {{fused into attn.attention}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<8x8x8xf32>, tensor<8x8x16xf32>) outs(%zo : tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
  return %o : tensor<8x8x16xf32>
}
