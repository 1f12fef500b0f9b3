// RUN: attnfuse-opt %s | attnfuse-opt | FileCheck %s
// RUN: attnfuse-opt %s --mlir-print-op-generic | attnfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @plain
// CHECK:         %[[O:.+]] = attn.attention ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32>
// CHECK:         return %[[O]]
func.func @plain(%q: tensor<1x4x16x32xf32>, %k: tensor<1x4x16x32xf32>,
                 %v: tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x4x16x32xf32>,
                          tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>)
      -> tensor<1x4x16x32xf32>
  return %o : tensor<1x4x16x32xf32>
}

// CHECK-LABEL: func.func @gqa_causal_lse
// CHECK:         %{{.+}}, %[[LSE:.+]] = attn.attention
// CHECK-SAME:      alignment = #attn.alignment<bottom_right>
// CHECK-SAME:      mask = #attn.mask<causal>
// CHECK-SAME:      scale = 1.250000e-01 : f32
// CHECK-SAME:      -> tensor<2x8x16x64xbf16>, tensor<2x8x16xf32>
func.func @gqa_causal_lse(%q: tensor<2x8x16x64xbf16>, %k: tensor<2x2x32x64xbf16>,
                          %v: tensor<2x2x32x64xbf16>)
    -> (tensor<2x8x16x64xbf16>, tensor<2x8x16xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xbf16>,
                                tensor<2x2x32x64xbf16>, tensor<2x2x32x64xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>,
       scale = 0.125 : f32}
      -> tensor<2x8x16x64xbf16>, tensor<2x8x16xf32>
  return %o, %lse : tensor<2x8x16x64xbf16>, tensor<2x8x16xf32>
}

// CHECK-LABEL: func.func @window_bias_keep_dropout
// CHECK:         attn.attention
// CHECK-SAME:      bias(%{{.+}} : tensor<16x32xf16>)
// CHECK-SAME:      keep(%{{.+}} : tensor<1x1x1x32xi1>)
// CHECK-SAME:      seed(%{{.+}})
// CHECK-SAME:      dropout_p = 1.000000e-01 : f32
// CHECK-SAME:      mask = #attn.mask<sliding_window>
// CHECK-SAME:      window_left = 4 : i64, window_right = 2 : i64
func.func @window_bias_keep_dropout(
    %q: tensor<1x2x16x32xf16>, %k: tensor<1x1x32x32xf16>,
    %v: tensor<1x1x32x48xf16>, %bias: tensor<16x32xf16>,
    %keep: tensor<1x1x1x32xi1>, %seed: i64) -> tensor<1x2x16x48xf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x16x32xf16>,
                          tensor<1x1x32x32xf16>, tensor<1x1x32x48xf16>)
      bias(%bias : tensor<16x32xf16>) keep(%keep : tensor<1x1x1x32xi1>)
      seed(%seed)
      {mask = #attn.mask<sliding_window>, window_left = 4, window_right = 2,
       dropout_p = 0.1 : f32}
      -> tensor<1x2x16x48xf16>
  return %o : tensor<1x2x16x48xf16>
}

// CHECK-LABEL: func.func @softcap
// CHECK:         attn.attention
// CHECK:         score_mod {
// CHECK:         ^bb0(%[[S:.+]]: f32, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index):
// CHECK:           %[[T:.+]] = math.tanh
// CHECK:           attn.yield %{{.+}} : f32
// CHECK:         } -> tensor<1x1x8x16xf32>
func.func @softcap(%q: tensor<1x1x8x16xf32>, %k: tensor<1x1x8x16xf32>,
                   %v: tensor<1x1x8x16xf32>) -> tensor<1x1x8x16xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x1x8x16xf32>,
                          tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 30.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<1x1x8x16xf32>
  return %o : tensor<1x1x8x16xf32>
}

// CHECK-LABEL: func.func @backward
// CHECK:         %[[DQ:.+]], %[[DK:.+]], %[[DV:.+]] = attn.attention_backward ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<1x4x16x32xf16>, tensor<1x1x16x32xf16>, tensor<1x1x16x32xf16>) grad(%{{.+}}, %{{.+}}, %{{.+}} : tensor<1x4x16x32xf16>, tensor<1x4x16xf32>, tensor<1x4x16x32xf16>)
// CHECK-SAME:      mask = #attn.mask<causal>
// CHECK:           math.tanh
// CHECK:         } -> tensor<1x4x16x32xf16>, tensor<1x1x16x32xf16>, tensor<1x1x16x32xf16>
func.func @backward(%q: tensor<1x4x16x32xf16>, %k: tensor<1x1x16x32xf16>,
                    %v: tensor<1x1x16x32xf16>, %o: tensor<1x4x16x32xf16>,
                    %lse: tensor<1x4x16xf32>, %do: tensor<1x4x16x32xf16>)
    -> (tensor<1x4x16x32xf16>, tensor<1x1x16x32xf16>, tensor<1x1x16x32xf16>) {
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x4x16x32xf16>, tensor<1x1x16x32xf16>, tensor<1x1x16x32xf16>)
      grad(%o, %lse, %do : tensor<1x4x16x32xf16>, tensor<1x4x16xf32>, tensor<1x4x16x32xf16>)
      {mask = #attn.mask<causal>} score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %t = math.tanh %s : f32
        attn.yield %t : f32
      } -> tensor<1x4x16x32xf16>, tensor<1x1x16x32xf16>, tensor<1x1x16x32xf16>
  return %dq, %dk, %dv : tensor<1x4x16x32xf16>, tensor<1x1x16x32xf16>, tensor<1x1x16x32xf16>
}

// CHECK-LABEL: func.func @decode_over_a_paged_cache
// CHECK:         attn.attention ins({{.+}}) key_lengths(%{{.+}} : tensor<?xi32>) block_table(%{{.+}} : tensor<?x?xi32>) {alignment = #attn.alignment<bottom_right>, mask = #attn.mask<causal>} -> tensor<?x8x1x64xbf16>
// CHECK:         attn.attention_backward {{.+}} key_lengths(%{{.+}} : tensor<2xi64>) -> 
func.func @decode_over_a_paged_cache(%q: tensor<?x8x1x64xbf16>, %k: tensor<100x2x16x64xbf16>, %v: tensor<100x2x16x64xbf16>,
                                     %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x8x1x64xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<?x8x1x64xbf16>, tensor<100x2x16x64xbf16>, tensor<100x2x16x64xbf16>)
      key_lengths(%lens : tensor<?xi32>) block_table(%table : tensor<?x?xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>} -> tensor<?x8x1x64xbf16>
  return %o : tensor<?x8x1x64xbf16>
}

func.func @padded_training(%q: tensor<2x2x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>,
                           %o: tensor<2x2x8x16xf32>, %lse: tensor<2x2x8xf32>, %do: tensor<2x2x8x16xf32>,
                           %lens: tensor<2xi64>) -> tensor<2x2x8x16xf32> {
  %dq, %dk, %dv = attn.attention_backward ins(%q, %k, %v : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
      grad(%o, %lse, %do : tensor<2x2x8x16xf32>, tensor<2x2x8xf32>, tensor<2x2x8x16xf32>)
      key_lengths(%lens : tensor<2xi64>)
      -> tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
  return %dq : tensor<2x2x8x16xf32>
}

// CHECK-LABEL: func.func @packed_prefill
// CHECK:         attn.attention ins({{.+}}) sequence_offsets(%{{.+}}, %{{.+}} : tensor<?xi32>, tensor<?xi64>) {alignment = #attn.alignment<bottom_right>, mask = #attn.mask<causal>} -> tensor<1x8x?x64xbf16>
// CHECK:         attn.attention_backward {{.+}} sequence_offsets(%{{.+}}, %{{.+}} : tensor<?xi32>, tensor<?xi64>) -> 
func.func @packed_prefill(%q: tensor<1x8x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %cq: tensor<?xi32>, %ck: tensor<?xi64>,
                          %lse: tensor<1x8x?xf32>) -> tensor<1x8x?x64xbf16> {
  %o = attn.attention ins(%q, %k, %k : tensor<1x8x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>)
      sequence_offsets(%cq, %ck : tensor<?xi32>, tensor<?xi64>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>} -> tensor<1x8x?x64xbf16>
  %dq, %dk, %dv = attn.attention_backward ins(%q, %k, %k : tensor<1x8x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>)
      grad(%o, %lse, %o : tensor<1x8x?x64xbf16>, tensor<1x8x?xf32>, tensor<1x8x?x64xbf16>)
      sequence_offsets(%cq, %ck : tensor<?xi32>, tensor<?xi64>)
      -> tensor<1x8x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>
  return %dq : tensor<1x8x?x64xbf16>
}

// CHECK-LABEL: func.func @backward_bias_gradient
// CHECK:         %{{.+}}, %[[DB:.+]] = attn.attention_backward {{.+}} bias(%{{.+}} : tensor<4x1x16xbf16>) -> tensor<1x4x16x32xbf16>, tensor<1x4x16x32xbf16>, tensor<1x4x16x32xbf16>, tensor<4x1x16xbf16>
// CHECK:         return %[[DB]]
func.func @backward_bias_gradient(%q: tensor<1x4x16x32xbf16>, %o: tensor<1x4x16x32xbf16>,
                                  %lse: tensor<1x4x16xf32>, %bias: tensor<4x1x16xbf16>)
    -> tensor<4x1x16xbf16> {
  %dq, %dk, %dv, %db = attn.attention_backward
      ins(%q, %q, %q : tensor<1x4x16x32xbf16>, tensor<1x4x16x32xbf16>, tensor<1x4x16x32xbf16>)
      grad(%o, %lse, %o : tensor<1x4x16x32xbf16>, tensor<1x4x16xf32>, tensor<1x4x16x32xbf16>)
      bias(%bias : tensor<4x1x16xbf16>)
      -> tensor<1x4x16x32xbf16>, tensor<1x4x16x32xbf16>, tensor<1x4x16x32xbf16>, tensor<4x1x16xbf16>
  return %db : tensor<4x1x16xbf16>
}
