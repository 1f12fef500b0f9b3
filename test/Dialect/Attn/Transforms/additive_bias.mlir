// Additive f16 bias [Nq, Nk] broadcast over batch and heads, after the scale:
// the op reads the bias through its own shape (numpy broadcasting), no copy.

// RUN: attnfuse-opt %s --attn-raise-attention -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @additive_bias(
// CHECK-SAME:    %[[ARG0:[a-z0-9]+]]: tensor<2x4x8x16xf32>, %[[ARG1:[a-z0-9]+]]: tensor<2x4x8x16xf32>, %[[ARG2:[a-z0-9]+]]: tensor<2x4x8x16xf32>, %[[ARG3:[a-z0-9]+]]: tensor<8x8xf16>) -> tensor<2x4x8x16xf32> {
// CHECK:         %[[O:.+]] = attn.attention ins(%[[ARG0]], %[[ARG1]], %[[ARG2]] : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) bias(%[[ARG3]] : tensor<8x8xf16>) {scale = 2.500000e-01 : f32} -> tensor<2x4x8x16xf32>
// CHECK-NOT:     math.exp
// CHECK:         return

func.func @additive_bias(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>, %bias: tensor<8x8xf16>) -> tensor<2x4x8x16xf32> {
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
  %t = linalg.generic {indexing_maps = [affine_map<(b, h, q, k) -> (b, h, q, k)>, affine_map<(b, h, q, k) -> (q, k)>, affine_map<(b, h, q, k) -> (b, h, q, k)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %bias : tensor<2x4x8x8xf32>, tensor<8x8xf16>) outs(%es : tensor<2x4x8x8xf32>) {
  ^bb0(%x0: f32, %x1: f16, %o: f32):
    %cs = arith.constant 0.25 : f32
    %y = arith.mulf %x0, %cs : f32
    %be = arith.extf %x1 : f16 to f32
    %r = arith.addf %y, %be : f32
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
