// A score term multiplies the scores by a tensor (a weight, not a bias, not
// a mask): the score_mod region reads the tensor at the score's coordinates.

// RUN: attnfuse-opt %s --attn-raise-attention -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @score_times_tensor(
// CHECK-SAME:    %[[W:[^ ]+]]: tensor<8x8xf32>)
// CHECK:         attn.attention
// CHECK:         score_mod {
// CHECK-NEXT:    ^bb0(%[[S:[^:]+]]: f32, %{{[^:]+}}: index, %{{[^:]+}}: index, %[[I:[^:]+]]: index, %[[J:[^:]+]]: index):
// CHECK-NEXT:      %[[X:.+]] = tensor.extract %[[W]][%[[I]], %[[J]]] : tensor<8x8xf32>
// CHECK-NEXT:      %[[Y:.+]] = arith.mulf %[[S]], %[[X]] : f32
// CHECK-NEXT:      attn.yield %[[Y]] : f32

func.func @score_times_tensor(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %es = tensor.empty() : tensor<2x4x8x8xf32>
  %zs = linalg.fill ins(%c0 : f32) outs(%es : tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, q, k, d) -> (b, h, q, d)>, affine_map<(b, h, q, k, d) -> (b, h, k, d)>, affine_map<(b, h, q, k, d) -> (b, h, q, k)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) outs(%zs : tensor<2x4x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8x8xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(b, h, q, k) -> (b, h, q, k)>, affine_map<(b, h, q, k) -> (q, k)>, affine_map<(b, h, q, k) -> (b, h, q, k)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %w : tensor<2x4x8x8xf32>, tensor<8x8xf32>) outs(%es : tensor<2x4x8x8xf32>) {
  ^bb0(%x0: f32, %x1: f32, %o: f32):
    %r = arith.mulf %x0, %x1 : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8x8xf32>
  %er = tensor.empty() : tensor<2x4x8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %mx = linalg.generic {indexing_maps = [affine_map<(b, h, q, k) -> (b, h, q, k)>, affine_map<(b, h, q, k) -> (b, h, q)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%t : tensor<2x4x8x8xf32>) outs(%mi : tensor<2x4x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<2x4x8xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(b, h, q, k) -> (b, h, q, k)>, affine_map<(b, h, q, k) -> (b, h, q)>, affine_map<(b, h, q, k) -> (b, h, q, k)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%t, %mx : tensor<2x4x8x8xf32>, tensor<2x4x8xf32>) outs(%es : tensor<2x4x8x8xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %x = math.exp %d : f32
    linalg.yield %x : f32
  } -> tensor<2x4x8x8xf32>
  %si = linalg.fill ins(%c0 : f32) outs(%er : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(b, h, q, k) -> (b, h, q, k)>, affine_map<(b, h, q, k) -> (b, h, q)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<2x4x8x8xf32>) outs(%si : tensor<2x4x8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.addf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<2x4x8xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(b, h, q, k) -> (b, h, q, k)>, affine_map<(b, h, q, k) -> (b, h, q)>, affine_map<(b, h, q, k) -> (b, h, q, k)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<2x4x8x8xf32>, tensor<2x4x8xf32>) outs(%es : tensor<2x4x8x8xf32>) {
  ^bb0(%a: f32, %l: f32, %o: f32):
    %d = arith.divf %a, %l : f32
    linalg.yield %d : f32
  } -> tensor<2x4x8x8xf32>
  %eo = tensor.empty() : tensor<2x4x8x16xf32>
  %zo = linalg.fill ins(%c0 : f32) outs(%eo : tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  // expected-remark @below {{fused into attn.attention}}
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, q, e, k) -> (b, h, q, k)>, affine_map<(b, h, q, e, k) -> (b, h, k, e)>, affine_map<(b, h, q, e, k) -> (b, h, q, e)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) outs(%zo : tensor<2x4x8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}
