// RUN: attnfuse-opt %s -canonicalize -split-input-file | FileCheck %s

!t = tensor<1x2x8x16xf32>

// A window wider than the sequences hides nothing.
// CHECK-LABEL: func.func @wide_window_is_no_mask
// CHECK:         attn.attention
// CHECK-NOT:     mask
// CHECK-NOT:     window
// CHECK-SAME:    -> tensor<1x2x8x16xf32>
func.func @wide_window_is_no_mask(%q: !t, %k: !t, %v: !t) -> !t {
  %o = attn.attention ins(%q, %k, %v : !t, !t, !t)
      {mask = #attn.mask<sliding_window>, window_left = 7, window_right = 7} -> !t
  return %o : !t
}

// -----

!t = tensor<1x2x8x16xf32>

// CHECK-LABEL: func.func @left_open_window_is_causal
// CHECK:         attn.attention
// CHECK-SAME:      mask = #attn.mask<causal>
// CHECK-NOT:       window
func.func @left_open_window_is_causal(%q: !t, %k: !t, %v: !t) -> !t {
  %o = attn.attention ins(%q, %k, %v : !t, !t, !t)
      {mask = #attn.mask<sliding_window>, window_left = 100, window_right = 0} -> !t
  return %o : !t
}

// -----

!t = tensor<1x2x8x16xf32>

// Bottom-right and top-left alignments coincide when Nq == Nk.
// CHECK-LABEL: func.func @square_bottom_right_is_top_left
// CHECK:         attn.attention
// CHECK-NOT:       alignment
// CHECK-SAME:      mask = #attn.mask<causal>
func.func @square_bottom_right_is_top_left(%q: !t, %k: !t, %v: !t) -> !t {
  %o = attn.attention ins(%q, %k, %v : !t, !t, !t)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>} -> !t
  return %o : !t
}

// -----

// A causal mask over a single key hides nothing.
// CHECK-LABEL: func.func @causal_single_key
// CHECK:         attn.attention
// CHECK-NOT:       mask
// CHECK-SAME:      -> tensor<1x1x4x8xf32>
func.func @causal_single_key(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x1x8xf32>,
                             %v: tensor<1x1x1x8xf32>) -> tensor<1x1x4x8xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x1x4x8xf32>, tensor<1x1x1x8xf32>,
                          tensor<1x1x1x8xf32>) {mask = #attn.mask<causal>}
      -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}

// -----

!t = tensor<1x2x8x16xf32>

// CHECK-LABEL: func.func @negative_causal_stays
// CHECK:         attn.attention
// CHECK-SAME:      alignment = #attn.alignment<bottom_right>
// CHECK-SAME:      mask = #attn.mask<causal>
func.func @negative_causal_stays(%q: tensor<1x2x4x16xf32>, %k: !t, %v: !t)
    -> tensor<1x2x4x16xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x4x16xf32>, !t, !t)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<1x2x4x16xf32>
  return %o : tensor<1x2x4x16xf32>
}

// -----

!t = tensor<1x2x8x16xf32>

// CHECK-LABEL: func.func @trivial_keep_and_bias
// CHECK-NOT:     arith.constant
// CHECK:         attn.attention ins(%{{.+}}, %{{.+}}, %{{.+}} : {{.+}}) -> tensor<1x2x8x16xf32>
func.func @trivial_keep_and_bias(%q: !t, %k: !t, %v: !t) -> !t {
  %keep = arith.constant dense<true> : tensor<8x8xi1>
  %bias = arith.constant dense<0.0> : tensor<1x2x8x8xf32>
  %o = attn.attention ins(%q, %k, %v : !t, !t, !t)
      bias(%bias : tensor<1x2x8x8xf32>) keep(%keep : tensor<8x8xi1>) -> !t
  return %o : !t
}

// -----

!t = tensor<1x2x8x16xf32>

// CHECK-LABEL: func.func @negative_nontrivial_keep
// CHECK:         %[[KEEP:.+]] = arith.constant dense<[true, false
// CHECK:         attn.attention {{.+}} keep(%[[KEEP]]
func.func @negative_nontrivial_keep(%q: !t, %k: !t, %v: !t) -> !t {
  %keep = arith.constant dense<[true, false, true, true, true, true, true, true]> : tensor<8xi1>
  %o = attn.attention ins(%q, %k, %v : !t, !t, !t) keep(%keep : tensor<8xi1>) -> !t
  return %o : !t
}

// -----

!t = tensor<1x2x8x16xf32>

// CHECK-LABEL: func.func @identity_score_mod
// CHECK:         attn.attention
// CHECK-NOT:     score_mod
// CHECK:         return
func.func @identity_score_mod(%q: !t, %k: !t, %v: !t) -> !t {
  %o = attn.attention ins(%q, %k, %v : !t, !t, !t) score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    attn.yield %s : f32
  } -> !t
  return %o : !t
}

// -----

!t = tensor<1x2x8x16xf32>

// CHECK-LABEL: func.func @unused_lse
// CHECK:         %[[O:.+]] = attn.attention
// CHECK-SAME:      score_mod
// CHECK:           math.tanh
// CHECK:         } -> tensor<1x2x8x16xf32>
// CHECK-NEXT:    return %[[O]]
func.func @unused_lse(%q: !t, %k: !t, %v: !t) -> !t {
  %o, %lse = attn.attention ins(%q, %k, %v : !t, !t, !t) score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %t = math.tanh %s : f32
    attn.yield %t : f32
  } -> !t, tensor<1x2x8xf32>
  return %o : !t
}
