// RUN: attnfuse-opt %s -convert-attn-to-scf="block-q=32 block-k=16" -canonicalize | FileCheck %s
// RUN: attnfuse-opt %s -convert-attn-to-scf="block-q=32 block-k=16" | FileCheck %s --check-prefix=NO-NXN

// The tiled backward never holds a [Nq, Nk] (100 x 130) value.
// NO-NXN-NOT: 100x130

// Di = rowsum(dO * O) first (O(N) memory); then dK/dV with one writer per
// (kv head, key block): a loop over the group's G = 2 query heads and over the
// query blocks that can see the keys (bottom-right causal, off = 30: from
// max(0, floordiv(k0 - 30, 32))); then dQ per (query head, query block) over
// the visible key blocks. P is recomputed from lse; J = dT/dS comes with T.

// CHECK-LABEL: func.func @backward_causal(
// CHECK-SAME:      %[[Q:[a-z0-9]+]]: tensor<1x4x100x16xbf16>, %[[K:[a-z0-9]+]]: tensor<1x2x130x16xbf16>, %[[V:[a-z0-9]+]]: tensor<1x2x130x24xbf16>, %[[O:[a-z0-9]+]]: tensor<1x4x100x24xbf16>, %[[LSE:[a-z0-9]+]]: tensor<1x4x100xf32>, %[[DO:[a-z0-9]+]]: tensor<1x4x100x24xbf16>
// CHECK:         %[[DI:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[DO]], %[[O]] : {{.+}}) outs(%{{.+}} : tensor<1x4x100xf32>)
// CHECK:         %[[DKV:.+]]:2 = scf.forall (%[[KVH:.+]], %[[KB:.+]]) in (2, 9)
// CHECK:           %[[QFIRST:.+]] = arith.floordivsi %{{.+}}, %{{.+}} : index
// CHECK:           %[[QBEGIN:.+]] = arith.maxsi %[[QFIRST]], %{{.+}} : index
// CHECK:           scf.for %[[G:.+]] = %{{.+}} to %{{.+}} step
// CHECK:             scf.for %{{.+}} = %[[QBEGIN]] to
// CHECK:               tensor.extract_slice %[[LSE]]
// CHECK:               tensor.extract_slice %[[DI]]
// CHECK:               scf.if %{{.+}} -> (tensor<?x?xf32>, tensor<?x?xf32>)
// CHECK:               math.exp
// CHECK-COUNT-2:       iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:           scf.forall.in_parallel
// CHECK-COUNT-2:     tensor.parallel_insert_slice
// CHECK:         %[[DQ:.+]] = scf.forall (%{{.+}}, %{{.+}}) in (4, 4)
// CHECK:           arith.divui
// CHECK:           scf.for
// CHECK:             scf.if
// CHECK:         return %[[DQ]], %[[DKV]]#0, %[[DKV]]#1
func.func @backward_causal(%q: tensor<1x4x100x16xbf16>, %k: tensor<1x2x130x16xbf16>,
                           %v: tensor<1x2x130x24xbf16>, %o: tensor<1x4x100x24xbf16>,
                           %lse: tensor<1x4x100xf32>, %do: tensor<1x4x100x24xbf16>)
    -> (tensor<1x4x100x16xbf16>, tensor<1x2x130x16xbf16>, tensor<1x2x130x24xbf16>) {
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x4x100x16xbf16>, tensor<1x2x130x16xbf16>, tensor<1x2x130x24xbf16>)
      grad(%o, %lse, %do : tensor<1x4x100x24xbf16>, tensor<1x4x100xf32>, tensor<1x4x100x24xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<1x4x100x16xbf16>, tensor<1x2x130x16xbf16>, tensor<1x2x130x24xbf16>
  return %dq, %dk, %dv : tensor<1x4x100x16xbf16>, tensor<1x2x130x16xbf16>, tensor<1x2x130x24xbf16>
}
