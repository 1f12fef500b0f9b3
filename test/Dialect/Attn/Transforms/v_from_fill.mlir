// Found by test/fuzz (a mutant of bmm3d_decomposed.mlir): V is a linalg.fill
// of a scalar (also the second contraction's init). Peeling V looked through
// the fill to its scalar input and crashed; a fill is a tensor with no source
// tensor, so V is the filled tensor.

// RUN: attnfuse-opt %s --attn-raise-attention -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @v_from_fill(
// CHECK:         %[[V:.+]] = linalg.fill
// CHECK:         attn.attention ins(%{{.+}}, %{{.+}}, %{{.+}} :

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @v_from_fill(%q: tensor<8x8x16xf32>, %k: tensor<8x8x16xf32>, %v: tensor<8x8x16xf32>) -> tensor<8x8x16xf32> {
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
  %o = linalg.batch_matmul ins(%p, %zo : tensor<8x8x8xf32>, tensor<8x8x16xf32>) outs(%zo : tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
  return %o : tensor<8x8x16xf32>
}
