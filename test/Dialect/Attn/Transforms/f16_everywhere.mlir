// Everything in f16: batch_matmul with K transposed by its indexing maps,
// f16 accumulators, linalg.reduce max and sum, f16 softmax.

// RUN: attnfuse-opt %s --attn-raise-attention -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @f16_everywhere(
// CHECK-SAME:    %[[ARG0:[a-z0-9]+]]: tensor<4x8x16xf16>, %[[ARG1:[a-z0-9]+]]: tensor<4x8x16xf16>, %[[ARG2:[a-z0-9]+]]: tensor<4x8x16xf16>) -> tensor<4x8x16xf16> {
// CHECK:         %[[O:.+]] = attn.attention ins(%{{[a-zA-Z0-9_]+}}, %{{[a-zA-Z0-9_]+}}, %{{[a-zA-Z0-9_]+}} : tensor<1x4x8x16xf16>, tensor<1x4x8x16xf16>, tensor<1x4x8x16xf16>) {scale = 1.000000e+00 : f32} score_mod {
// CHECK-NEXT:    ^bb0(%[[ARG3:[a-z0-9]+]]: f32, %[[ARG4:[a-z0-9]+]]: index, %[[ARG5:[a-z0-9]+]]: index, %[[ARG6:[a-z0-9]+]]: index, %[[ARG7:[a-z0-9]+]]: index):
// CHECK-NEXT:    %{{[a-zA-Z0-9_]+}} = arith.truncf %[[ARG3]] : f32 to f16
// CHECK-NEXT:    %{{[a-zA-Z0-9_]+}} = arith.extf %{{[a-zA-Z0-9_]+}} : f16 to f32
// CHECK-NEXT:    attn.yield %{{[a-zA-Z0-9_]+}} : f32
// CHECK-NEXT:    } -> tensor<1x4x8x16xf16>
// CHECK-NOT:     math.exp
// CHECK:         return

func.func @f16_everywhere(%q: tensor<4x8x16xf16>, %k: tensor<4x8x16xf16>, %v: tensor<4x8x16xf16>) -> tensor<4x8x16xf16> {
  %c0 = arith.constant 0.0 : f16
  %ninf = arith.constant 0xFC00 : f16
  %e = tensor.empty() : tensor<4x8x8xf16>
  %z = linalg.fill ins(%c0 : f16) outs(%e : tensor<4x8x8xf16>) -> tensor<4x8x8xf16>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>] ins(%q, %k : tensor<4x8x16xf16>, tensor<4x8x16xf16>) outs(%z : tensor<4x8x8xf16>) -> tensor<4x8x8xf16>
  %er = tensor.empty() : tensor<4x8xf16>
  %mi = linalg.fill ins(%ninf : f16) outs(%er : tensor<4x8xf16>) -> tensor<4x8xf16>
  %mx = linalg.reduce ins(%s : tensor<4x8x8xf16>) outs(%mi : tensor<4x8xf16>) dimensions = [2]
    (%a: f16, %acc: f16) { %r = arith.maximumf %a, %acc : f16
      linalg.yield %r : f16 }
  %ex = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %mx : tensor<4x8x8xf16>, tensor<4x8xf16>) outs(%e : tensor<4x8x8xf16>) {
  ^bb0(%a: f16, %m: f16, %oo: f16):
    %d = arith.subf %a, %m : f16
    %x = math.exp %d : f16
    linalg.yield %x : f16
  } -> tensor<4x8x8xf16>
  %si = linalg.fill ins(%c0 : f16) outs(%er : tensor<4x8xf16>) -> tensor<4x8xf16>
  %sm = linalg.reduce ins(%ex : tensor<4x8x8xf16>) outs(%si : tensor<4x8xf16>) dimensions = [2]
    (%a: f16, %acc: f16) { %r = arith.addf %a, %acc : f16
      linalg.yield %r : f16 }
  %p = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<4x8x8xf16>, tensor<4x8xf16>) outs(%e : tensor<4x8x8xf16>) {
  ^bb0(%a: f16, %l: f16, %oo: f16):
    %d = arith.divf %a, %l : f16
    linalg.yield %d : f16
  } -> tensor<4x8x8xf16>
  %eo = tensor.empty() : tensor<4x8x16xf16>
  %zo = linalg.fill ins(%c0 : f16) outs(%eo : tensor<4x8x16xf16>) -> tensor<4x8x16xf16>
  // expected-remark @below {{fused into attn.attention}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<4x8x8xf16>, tensor<4x8x16xf16>) outs(%zo : tensor<4x8x16xf16>) -> tensor<4x8x16xf16>
  return %o : tensor<4x8x16xf16>
}
