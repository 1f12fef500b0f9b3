// RUN: attnfuse-opt %s -convert-attn-to-scf="block-q=32 block-k=16" -canonicalize -split-input-file | FileCheck %s
// RUN: attnfuse-opt %s -convert-attn-to-scf="block-q=32 block-k=16" -split-input-file | FileCheck %s --check-prefix=NO-NXN
// RUN: attnfuse-opt %s -convert-attn-to-linalg -split-input-file | FileCheck %s --check-prefix=REFERENCE-NXN

// No value of the tiled lowering has both a query-length (100) and a key-length
// (130) dimension; the reference lowering materializes them (which shows that
// the NO-NXN check can fail).
// NO-NXN-NOT: 100x130
// REFERENCE-NXN: tensor<1x2x100x130xf32>

// Causal, bottom-right aligned (off = Nk - Nq = 30): query block [q0, q0 + bq)
// sees keys k <= q0 + bq - 1 + 30, so the key loop stops at
// min(9, floordiv(q0 + bq + 29, 16) + 1); a block is entirely visible iff
// k0 + bk - (q0 + 31) <= 0, and only the other blocks compute the mask.

// CHECK-LABEL: func.func @causal_bottom_right(
// CHECK-SAME:      %[[Q:[a-z0-9]+]]: tensor<1x2x100x16xf16>, %[[K:[a-z0-9]+]]: tensor<1x2x130x16xf16>, %[[V:[a-z0-9]+]]: tensor<1x2x130x24xf16>
// CHECK-DAG:     %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG:     %[[C29:.+]] = arith.constant 29 : index
// CHECK-DAG:     %[[NKB:.+]] = arith.constant 9 : index
// CHECK:         %[[RES:.+]]:2 = scf.forall (%[[H:.+]], %[[QB:.+]]) in (2, 4) shared_outs(%[[OUT:.+]] = %{{.+}}, %[[LSE:.+]] = %{{.+}}) ->
// CHECK:           %[[Q0:.+]] = arith.muli %[[QB]], %{{.+}} : index
// CHECK:           %[[BQ:.+]] = arith.minsi
// CHECK:           %[[QT:.+]] = tensor.extract_slice %[[Q]][0, %[[H]], %[[Q0]], 0] [1, 1, %[[BQ]], 16]
// CHECK:           %[[END0:.+]] = arith.addi %[[Q0]], %[[BQ]]
// CHECK:           %[[END1:.+]] = arith.addi %[[END0]], %[[C29]]
// CHECK:           %[[LAST:.+]] = arith.floordivsi %[[END1]]
// CHECK:           %[[END2:.+]] = arith.addi %[[LAST]]
// CHECK:           %[[KBEND:.+]] = arith.minsi %[[END2]], %[[NKB]]
// CHECK:           %[[LOOP:.+]]:3 = scf.for %{{.+}} = %[[C0]] to %[[KBEND]] step %{{.+}} iter_args(
// CHECK:             tensor.extract_slice %[[K]]
// CHECK:             tensor.extract_slice %[[V]]
// CHECK:             %[[ALLVIS:.+]] = arith.cmpi sle
// CHECK:             scf.if %[[ALLVIS]] -> (tensor<?x?xf32>) {
// CHECK:               linalg.generic
// CHECK-NOT:             arith.cmpi
// CHECK:             } else {
// CHECK:               linalg.generic
// CHECK:                 arith.cmpi sle
// CHECK:                 arith.select
// CHECK:             }
// CHECK:             math.exp
// CHECK:             scf.yield
// CHECK:           arith.divf
// CHECK:           arith.truncf %{{.+}} : f32 to f16
// CHECK:           math.log
// CHECK:           scf.forall.in_parallel {
// CHECK:             tensor.parallel_insert_slice %{{.+}} into %[[OUT]][0, %[[H]], %[[Q0]], 0] [1, 1, %[[BQ]], 24]
// CHECK:             tensor.parallel_insert_slice %{{.+}} into %[[LSE]][0, %[[H]], %[[Q0]]] [1, 1, %[[BQ]]]
// CHECK:         return %[[RES]]#0, %[[RES]]#1
func.func @causal_bottom_right(%q: tensor<1x2x100x16xf16>, %k: tensor<1x2x130x16xf16>,
                               %v: tensor<1x2x130x24xf16>)
    -> (tensor<1x2x100x24xf16>, tensor<1x2x100xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x100x16xf16>,
                                tensor<1x2x130x16xf16>, tensor<1x2x130x24xf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<1x2x100x24xf16>, tensor<1x2x100xf32>
  return %o, %lse : tensor<1x2x100x24xf16>, tensor<1x2x100xf32>
}

// -----

// A sliding window bounds the key loop on both sides: it starts at
// max(0, floordiv(q0 - 20, 16)).

// CHECK-LABEL: func.func @sliding_window(
// CHECK:         scf.forall
// CHECK:           %[[KMIN:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// CHECK:           %[[FIRST:.+]] = arith.floordivsi %[[KMIN]]
// CHECK:           %[[BEGIN:.+]] = arith.maxsi %[[FIRST]], %{{.+}}
// CHECK:           scf.for %{{.+}} = %[[BEGIN]] to
// CHECK:             arith.andi
// CHECK:             scf.if
func.func @sliding_window(%q: tensor<1x1x64x16xf32>, %k: tensor<1x1x64x16xf32>,
                          %v: tensor<1x1x64x16xf32>) -> tensor<1x1x64x16xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x1x64x16xf32>, tensor<1x1x64x16xf32>,
                          tensor<1x1x64x16xf32>)
      {mask = #attn.mask<sliding_window>, window_left = 20, window_right = 3}
      -> tensor<1x1x64x16xf32>
  return %o : tensor<1x1x64x16xf32>
}

// -----

// Without a structural mask every key block is visited and no block computes
// a mask; the grouped-query K/V head is h / G.

// CHECK-LABEL: func.func @gqa_unmasked(
// CHECK:         scf.forall (%[[B:.+]], %[[H:.+]]) in (2, 4)
// CHECK:           %[[KVH:.+]] = arith.divui %[[H]], %{{.+}} : index
// CHECK:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step
// CHECK-NOT:         scf.if
// CHECK-NOT:         arith.cmpi sle
// CHECK:             tensor.extract_slice %{{.+}}[%[[B]], %[[KVH]]
// CHECK:           scf.yield
func.func @gqa_unmasked(%q: tensor<2x4x8x16xbf16>, %k: tensor<2x1x40x16xbf16>,
                        %v: tensor<2x1x40x16xbf16>) -> tensor<2x4x8x16xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<2x4x8x16xbf16>, tensor<2x1x40x16xbf16>,
                          tensor<2x1x40x16xbf16>) -> tensor<2x4x8x16xbf16>
  return %o : tensor<2x4x8x16xbf16>
}
