// The tiled lowering of an op with runtime sizes: B, Nq and Nk read from the
// operands, the block counts and the mask offset computed from them, the
// runtime checks of the sizes the verifier can only require to be '?'.
// RUN: attnfuse-opt %s --convert-attn-to-scf="block-q=64 block-k=64" --cse | FileCheck %s

// CHECK-LABEL: func.func @causal_bottom_right
// CHECK-DAG:   %[[B:.+]] = tensor.dim %arg0, %c0
// CHECK-DAG:   %[[NQ:.+]] = tensor.dim %arg0, %c2
// CHECK-DAG:   %[[NK:.+]] = tensor.dim %arg1, %c2
// CHECK:       %[[OFF:.+]] = arith.subi %[[NK]], %[[NQ]]
// CHECK:       cf.assert {{.+}}, "attn: runtime size mismatch: key batch != query batch"
// CHECK:       cf.assert {{.+}}, "attn: runtime size mismatch: value batch != query batch"
// CHECK:       cf.assert {{.+}}, "attn: runtime size mismatch: value length != key length"
// CHECK:       %[[QB:.+]] = arith.ceildivui %[[NQ]], %c64
// CHECK:       scf.forall ({{.+}}) in (%[[B]], 4, %[[QB]])
// CHECK:         arith.addi %{{.+}}, %[[OFF]]
// CHECK:         scf.for
func.func @causal_bottom_right(%q: tensor<?x4x?x32xf32>, %k: tensor<?x2x?x32xf32>, %v: tensor<?x2x?x16xf32>)
    -> tensor<?x4x?x16xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<?x4x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x16xf32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>} -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// A static batch and key length: only Nq is read, no check is needed.
// CHECK-LABEL: func.func @runtime_queries
// CHECK-NOT:   cf.assert
// CHECK:       %[[NQ:.+]] = tensor.dim %arg0, %c2
// CHECK:       %[[QB:.+]] = arith.ceildivui %[[NQ]], %c64
// CHECK:       scf.forall ({{.+}}) in (1, 2, %[[QB]])
func.func @runtime_queries(%q: tensor<1x2x?x16xf32>, %k: tensor<1x2x128x16xf32>, %v: tensor<1x2x128x16xf32>)
    -> tensor<1x2x?x16xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x?x16xf32>, tensor<1x2x128x16xf32>, tensor<1x2x128x16xf32>)
      -> tensor<1x2x?x16xf32>
  return %o : tensor<1x2x?x16xf32>
}
