// RUN: attnfuse-opt %s -convert-attn-to-linalg -split-input-file | FileCheck %s

// Grouped-query heads are read through `h floordiv G`; the bottom-right causal
// mask compares k - (q + Nk - Nq) with 0; the output is rounded once, at the end.

// CHECK-DAG: #[[QMAP:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[KMAP:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 floordiv 4, d3, d4)>
// CHECK-DAG: #[[VMAP:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 floordiv 4, d4, d3)>
// CHECK-LABEL: func.func @gqa_causal_bottom_right(
// CHECK-SAME:      %[[Q:[a-z0-9]+]]: tensor<1x4x8x16xbf16>, %[[K:[a-z0-9]+]]: tensor<1x1x12x16xbf16>, %[[V:[a-z0-9]+]]: tensor<1x1x12x32xbf16>
// CHECK:         %[[S:.+]] = linalg.generic {indexing_maps = [#[[QMAP]], #[[KMAP]], {{.+}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[Q]], %[[K]] :
// CHECK:         %[[T:.+]] = linalg.generic {{.+}} ins(%[[S]] :
// CHECK:           %[[QI:.+]] = linalg.index 2
// CHECK:           %[[KI:.+]] = linalg.index 3
// CHECK:           %[[SCALED:.+]] = arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK:           %[[OFF:.+]] = arith.constant 4 : index
// CHECK:           %[[SHIFTED:.+]] = arith.addi %[[QI]], %[[OFF]]
// CHECK:           %[[REL:.+]] = arith.subi %[[KI]], %[[SHIFTED]]
// CHECK:           %[[VIS:.+]] = arith.cmpi sle, %[[REL]], %{{.+}}
// CHECK:           arith.select %[[VIS]], %[[SCALED]], %{{.+}}
// CHECK:         arith.maximumf
// CHECK:         math.exp
// CHECK:         %[[P:.+]] = linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x4x8x12xf32>, tensor<1x4x8xf32>)
// CHECK:           arith.cmpf une
// CHECK:           arith.divf
// The P V sum skips hidden keys (T = -inf), whatever V holds.
// CHECK:         %[[O32:.+]] = linalg.generic {indexing_maps = [#[[QMAP]], #[[QMAP]], #[[VMAP]], {{.+}}], {{.+}} ins(%[[T]], %[[P]], %[[V]] :
// CHECK:           %[[HIDDEN:.+]] = arith.cmpf oeq, %{{.+}}, %{{.+}} : f32
// CHECK:           %[[PV:.+]] = arith.mulf
// CHECK:           arith.select %[[HIDDEN]], %{{.+}}, %[[PV]] : f32
// CHECK:         %[[O:.+]] = linalg.generic {{.+}} ins(%[[O32]] :
// CHECK:           arith.truncf %{{.+}} : f32 to bf16
// CHECK:         %[[LSE:.+]] = linalg.generic
// CHECK:           math.log
// CHECK:         return %[[O]], %[[LSE]]
func.func @gqa_causal_bottom_right(%q: tensor<1x4x8x16xbf16>, %k: tensor<1x1x12x16xbf16>,
                                   %v: tensor<1x1x12x32xbf16>)
    -> (tensor<1x4x8x32xbf16>, tensor<1x4x8xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xbf16>,
                                tensor<1x1x12x16xbf16>, tensor<1x1x12x32xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<1x4x8x32xbf16>, tensor<1x4x8xf32>
  return %o, %lse : tensor<1x4x8x32xbf16>, tensor<1x4x8xf32>
}

// -----

// Bias and keep mask are read through broadcasting maps; the score_mod region
// is inlined on the scaled score, before the bias.

// CHECK-DAG: #[[BIAS:.+]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[KEEP:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, d3)>
// CHECK-LABEL: func.func @bias_keep_score_mod(
// CHECK-SAME:      %[[B:[a-z0-9]+]]: tensor<8x8xf16>, %[[M:[a-z0-9]+]]: tensor<2x1x1x8xi1>
// CHECK:         linalg.generic {indexing_maps = [#{{.+}}, #[[BIAS]], #[[KEEP]], #{{.+}}], {{.+}} ins(%{{.+}}, %[[B]], %[[M]] :
// CHECK:         ^bb0(%[[S:.+]]: f32, %[[BV:.+]]: f16, %[[MV:.+]]: i1, %{{.+}}: f32):
// CHECK:           %[[SC:.+]] = arith.mulf %[[S]]
// CHECK:           %[[TANH:.+]] = math.tanh %[[SC]]
// CHECK:           %[[BF:.+]] = arith.extf %[[BV]] : f16 to f32
// CHECK:           %[[SUM:.+]] = arith.addf %[[TANH]], %[[BF]]
// CHECK:           arith.select %[[MV]], %[[SUM]]
func.func @bias_keep_score_mod(%q: tensor<2x2x8x16xf16>, %k: tensor<2x2x8x16xf16>,
                               %v: tensor<2x2x8x16xf16>, %bias: tensor<8x8xf16>,
                               %keep: tensor<2x1x1x8xi1>) -> tensor<2x2x8x16xf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<2x2x8x16xf16>, tensor<2x2x8x16xf16>,
                          tensor<2x2x8x16xf16>)
      bias(%bias : tensor<8x8xf16>) keep(%keep : tensor<2x1x1x8xi1>) score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %t = math.tanh %s : f32
        attn.yield %t : f32
      } -> tensor<2x2x8x16xf16>
  return %o : tensor<2x2x8x16xf16>
}

// -----

// Dropout keeps (q, k) iff its 16 bits, half k % 2 of word (k / 8) % 4 of
// Philox4x32-10 for counter (4 (k / 32) + (k / 2) % 4, q, h, b), are
// >= floor(p * 2^16) (16384 << 16 = 1073741824 for p = 0.25: the low half
// compared shifted up, the high half in place), and scales kept
// probabilities by 1 / (1 - p) (= 1.33333337). 0xD2511F53 is Philox's M0.

// CHECK-LABEL: func.func @dropout(
// CHECK-SAME:      %[[SEED:[a-z0-9]+]]: i64
// CHECK:         arith.divf
// CHECK:         arith.andi %{{.+}}, %c-4_i32 : i32
// CHECK:         arith.trunci %[[SEED]] : i64 to i32
// CHECK:         arith.constant -766435501 : i32
// CHECK-COUNT-20: arith.mului_extended
// CHECK:         arith.select
// CHECK:         arith.select
// CHECK:         arith.select
// CHECK:         %[[LOW:.+]] = arith.cmpi uge, %{{.+}}, %[[T:.+]] : i32
// CHECK:         %[[HIGH:.+]] = arith.cmpi uge, %{{.+}}, %[[T]] : i32
// CHECK:         %[[KEEP:.+]] = arith.select %{{.+}}, %[[HIGH]], %[[LOW]] : i1
// CHECK:         arith.constant 1.33333337 : f32
// CHECK:         %[[Z:.+]] = arith.select %[[KEEP]], %{{.+}}, %{{.+}} : f32
// CHECK:         arith.mulf %{{.+}}, %[[Z]] : f32
func.func @dropout(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x4x8xf32>,
                   %v: tensor<1x1x4x8xf32>, %seed: i64) -> tensor<1x1x4x8xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>,
                          tensor<1x1x4x8xf32>) seed(%seed) {dropout_p = 0.25 : f32}
      -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}
