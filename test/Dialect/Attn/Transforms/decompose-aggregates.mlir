// RUN: attnfuse-opt %s --attn-decompose-aggregates | FileCheck %s

// CHECK-LABEL: func.func @softmax(
// CHECK-NOT:     linalg.softmax
// CHECK:         arith.maxnumf
// CHECK:         math.exp
// CHECK:         arith.addf
// CHECK:         arith.divf
func.func @softmax(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %e = tensor.empty() : tensor<2x8x16xf32>
  %s = linalg.softmax dimension(2) ins(%x : tensor<2x8x16xf32>) outs(%e : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %s : tensor<2x8x16xf32>
}
