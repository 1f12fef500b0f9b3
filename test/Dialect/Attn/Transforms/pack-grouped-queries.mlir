// attn-pack-grouped-queries: decode with grouped query heads (Nq = 1) as
// attention over the K/V heads, the group's query heads as rows (Q, O, lse
// reshaped, no copy); executed against the unpacked ops:
// test/Integration/CPU/pack_grouped_queries.test.
// RUN: attnfuse-opt %s --attn-pack-grouped-queries -split-input-file | FileCheck %s

// GQA 8/2, bottom-right causal: the one row sees every key, the mask goes.
// CHECK-LABEL: func.func @causal_bottom_right(
// CHECK: %[[C:.*]] = tensor.collapse_shape %arg0 {{\[}}[0], [1, 2], [3]] : tensor<2x8x1x64xbf16> into tensor<2x8x64xbf16>
// CHECK: %[[Q:.*]] = tensor.expand_shape %[[C]] {{\[}}[0], [1, 2], [3]] output_shape [2, 2, 4, 64] : tensor<2x8x64xbf16> into tensor<2x2x4x64xbf16>
// CHECK: %[[O:.*]], %[[L:.*]] = attn.attention ins(%[[Q]], %arg1, %arg2 : tensor<2x2x4x64xbf16>, tensor<2x2x300x64xbf16>, tensor<2x2x300x64xbf16>) -> tensor<2x2x4x64xbf16>, tensor<2x2x4xf32>
// CHECK: tensor.collapse_shape %[[O]] {{\[}}[0], [1, 2], [3]] : tensor<2x2x4x64xbf16> into tensor<2x8x64xbf16>
// CHECK: tensor.expand_shape {{.*}} output_shape [2, 8, 1, 64]
// CHECK: tensor.collapse_shape %[[L]] {{\[}}[0], [1, 2]] : tensor<2x2x4xf32> into tensor<2x8xf32>
func.func @causal_bottom_right(%q: tensor<2x8x1x64xbf16>, %k: tensor<2x2x300x64xbf16>, %v: tensor<2x2x300x64xbf16>)
    -> (tensor<2x8x1x64xbf16>, tensor<2x8x1xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x8x1x64xbf16>, tensor<2x2x300x64xbf16>, tensor<2x2x300x64xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x8x1x64xbf16>, tensor<2x8x1xf32>
  return %o, %lse : tensor<2x8x1x64xbf16>, tensor<2x8x1xf32>
}

// -----

// MQA with a softcap that reads only the score, and an explicit scale: both
// stay.
// CHECK-LABEL: func.func @mqa_softcap(
// CHECK: attn.attention ins({{.*}} : tensor<1x1x6x32xf32>, tensor<1x1x50x32xf32>, tensor<1x1x50x32xf32>) {scale = 5.000000e-01 : f32} score_mod
// CHECK: math.tanh
func.func @mqa_softcap(%q: tensor<1x6x1x32xf32>, %k: tensor<1x1x50x32xf32>, %v: tensor<1x1x50x32xf32>) -> tensor<1x6x1x32xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x6x1x32xf32>, tensor<1x1x50x32xf32>, tensor<1x1x50x32xf32>) {scale = 0.5 : f32} score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 20.0 : f32
        %x = arith.divf %s, %c : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %c : f32
        attn.yield %y : f32
      } -> tensor<1x6x1x32xf32>
  return %o : tensor<1x6x1x32xf32>
}

// -----

// Not packed: what tells the rows apart. A top-left causal mask (the row
// sees key 0 only), a window, two query rows, a score_mod that reads the
// head, a bias, one query head per K/V head.
// CHECK-LABEL: func.func @kept(
// CHECK-NOT: tensor.expand_shape
// CHECK-COUNT-6: attn.attention ins(%arg{{[03]}}
func.func @kept(%q: tensor<1x4x1x16xf32>, %k: tensor<1x2x40x16xf32>, %v: tensor<1x2x40x16xf32>,
                %q2: tensor<1x4x2x16xf32>, %bias: tensor<1x4x1x40xf32>, %k4: tensor<1x4x40x16xf32>) {
  %a = attn.attention ins(%q, %k, %v : tensor<1x4x1x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>)
      {mask = #attn.mask<causal>} -> tensor<1x4x1x16xf32>
  %b = attn.attention ins(%q, %k, %v : tensor<1x4x1x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>)
      {mask = #attn.mask<sliding_window>, window_left = 8, window_right = 0, alignment = #attn.alignment<bottom_right>} -> tensor<1x4x1x16xf32>
  %c = attn.attention ins(%q2, %k, %v : tensor<1x4x2x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>) -> tensor<1x4x2x16xf32>
  %d = attn.attention ins(%q, %k, %v : tensor<1x4x1x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>) score_mod {
      ^bb0(%s: f32, %bi: index, %h: index, %i: index, %j: index):
        %hi = arith.index_cast %h : index to i32
        %hf = arith.sitofp %hi : i32 to f32
        %y = arith.addf %s, %hf : f32
        attn.yield %y : f32
      } -> tensor<1x4x1x16xf32>
  %e = attn.attention ins(%q, %k, %v : tensor<1x4x1x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>)
      bias(%bias : tensor<1x4x1x40xf32>) -> tensor<1x4x1x16xf32>
  %f = attn.attention ins(%q, %k4, %k4 : tensor<1x4x1x16xf32>, tensor<1x4x40x16xf32>, tensor<1x4x40x16xf32>) -> tensor<1x4x1x16xf32>
  return
}
