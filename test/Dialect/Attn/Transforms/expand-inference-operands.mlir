// attn-expand-inference-operands: key lengths, a block table and packed
// sequences become a keep mask and gathered K/V (executed against the ops
// that keep them: test/Integration/CPU/expand_inference_operands.test).
// RUN: attnfuse-opt %s --attn-expand-inference-operands -split-input-file | FileCheck %s
// keep-forward-cache-operands (the GPU pipeline's): a forward without packed
// sequences keeps its key_lengths and block_table; packed sequences and the
// backward's key lengths are expanded as before.
// RUN: attnfuse-opt %s --attn-expand-inference-operands=keep-forward-cache-operands=true -split-input-file | FileCheck %s --check-prefix=NATIVE

// A top-left causal mask does not depend on the lengths: it stays, and the
// lengths become a [B, 1, 1, Nk] keep mask.
// CHECK-LABEL: func.func @lengths_top_left(
// CHECK:         %[[KEEP:.+]] = linalg.generic
// CHECK:           tensor.extract %{{.+}} : tensor<3xi32>
// CHECK:         } -> tensor<3x1x1x40xi1>
// CHECK:         attn.attention ins({{.+}}) keep(%[[KEEP]] : tensor<3x1x1x40xi1>) {mask = #attn.mask<causal>}
// NATIVE-LABEL: func.func @lengths_top_left(
// NATIVE-NOT:   linalg.generic
// NATIVE:       attn.attention ins({{.+}}) key_lengths(%{{.+}} : tensor<3xi32>) {mask = #attn.mask<causal>}
func.func @lengths_top_left(%q: tensor<3x4x5x16xf32>, %k: tensor<3x2x40x16xf32>, %v: tensor<3x2x40x8xf32>,
                            %lens: tensor<3xi32>) -> tensor<3x4x5x8xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<3x4x5x16xf32>, tensor<3x2x40x16xf32>, tensor<3x2x40x8xf32>)
      key_lengths(%lens : tensor<3xi32>) {mask = #attn.mask<causal>} -> tensor<3x4x5x8xf32>
  return %o : tensor<3x4x5x8xf32>
}

// -----

// Bottom-right alignment follows each batch's length: the mask moves into a
// [B, 1, Nq, Nk] keep mask, and'ed with the op's own [1, Hq, 1, Nk] one.
// CHECK-LABEL: func.func @lengths_bottom_right(
// CHECK:         %[[KEEP:.+]] = linalg.generic
// CHECK:           tensor.extract %{{.+}} : tensor<1x4x1x40xi1>
// CHECK:         } -> tensor<3x4x5x40xi1>
// CHECK:         attn.attention ins({{.+}}) keep(%[[KEEP]] : tensor<3x4x5x40xi1>) -> tensor<3x4x5x8xf32>
// NATIVE-LABEL: func.func @lengths_bottom_right(
// NATIVE-NOT:   linalg.generic
// NATIVE:       attn.attention ins({{.+}}) keep(%{{.+}} : tensor<1x4x1x40xi1>) key_lengths(%{{.+}} : tensor<3xi64>) {alignment = #attn.alignment<bottom_right>
func.func @lengths_bottom_right(%q: tensor<3x4x5x16xf32>, %k: tensor<3x2x40x16xf32>, %v: tensor<3x2x40x8xf32>,
                                %lens: tensor<3xi64>, %keep: tensor<1x4x1x40xi1>) -> tensor<3x4x5x8xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<3x4x5x16xf32>, tensor<3x2x40x16xf32>, tensor<3x2x40x8xf32>)
      keep(%keep : tensor<1x4x1x40xi1>) key_lengths(%lens : tensor<3xi64>)
      {mask = #attn.mask<sliding_window>, alignment = #attn.alignment<bottom_right>, window_left = 7, window_right = 0}
      -> tensor<3x4x5x8xf32>
  return %o : tensor<3x4x5x8xf32>
}

// -----

// Paged K/V are gathered at the logical positions; a page id out of range
// hides its keys.
// CHECK-LABEL: func.func @paged(
// CHECK:         %[[KEEP:.+]] = linalg.generic
// CHECK:         } -> tensor<2x1x1x32xi1>
// CHECK:         %[[K:.+]] = linalg.generic
// CHECK:           tensor.extract %{{.+}} : tensor<7x2x8x16xf16>
// CHECK:         } -> tensor<2x2x32x16xf16>
// CHECK:         %[[V:.+]] = linalg.generic
// CHECK:         } -> tensor<2x2x32x8xf16>
// CHECK:         attn.attention ins(%{{.+}}, %[[K]], %[[V]] : {{.+}}) keep(%[[KEEP]] : tensor<2x1x1x32xi1>) {alignment = #attn.alignment<bottom_right>, mask = #attn.mask<causal>}
// CHECK-NOT:     block_table
// NATIVE-LABEL: func.func @paged(
// NATIVE-NOT:   linalg.generic
// NATIVE:       attn.attention ins(%{{.+}}, %{{.+}}, %{{.+}} : {{.+}}, tensor<7x2x8x16xf16>, tensor<7x2x8x8xf16>) block_table(%{{.+}} : tensor<2x4xi32>)
func.func @paged(%q: tensor<2x4x3x16xf16>, %k: tensor<7x2x8x16xf16>, %v: tensor<7x2x8x8xf16>,
                 %table: tensor<2x4xi32>) -> tensor<2x4x3x8xf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<2x4x3x16xf16>, tensor<7x2x8x16xf16>, tensor<7x2x8x8xf16>)
      block_table(%table : tensor<2x4xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>} -> tensor<2x4x3x8xf16>
  return %o : tensor<2x4x3x8xf16>
}

// -----

// Packed sequences: the mask, in each sequence's own positions, moves into a
// [1, 1, Nq, Nk] keep mask; the backward op likewise.
// CHECK-LABEL: func.func @packed_backward(
// CHECK:         %[[KEEP:.+]] = linalg.generic
// CHECK:         } -> tensor<1x1x20x24xi1>
// CHECK:         attn.attention_backward {{.+}} keep(%[[KEEP]] : tensor<1x1x20x24xi1>) -> 
// CHECK-NOT:     sequence_offsets
// NATIVE-LABEL: func.func @packed_backward(
// NATIVE:       linalg.generic
// NATIVE-NOT:   sequence_offsets
func.func @packed_backward(%q: tensor<1x2x20x8xf32>, %k: tensor<1x2x24x8xf32>, %v: tensor<1x2x24x8xf32>,
                           %o: tensor<1x2x20x8xf32>, %lse: tensor<1x2x20xf32>, %do: tensor<1x2x20x8xf32>,
                           %cq: tensor<4xi32>, %ck: tensor<4xi32>)
    -> (tensor<1x2x20x8xf32>, tensor<1x2x24x8xf32>, tensor<1x2x24x8xf32>) {
  %dq, %dk, %dv = attn.attention_backward ins(%q, %k, %v : tensor<1x2x20x8xf32>, tensor<1x2x24x8xf32>, tensor<1x2x24x8xf32>)
      grad(%o, %lse, %do : tensor<1x2x20x8xf32>, tensor<1x2x20xf32>, tensor<1x2x20x8xf32>)
      sequence_offsets(%cq, %ck : tensor<4xi32>, tensor<4xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<1x2x20x8xf32>, tensor<1x2x24x8xf32>, tensor<1x2x24x8xf32>
  return %dq, %dk, %dv : tensor<1x2x20x8xf32>, tensor<1x2x24x8xf32>, tensor<1x2x24x8xf32>
}

// -----

// An op without them is left alone.
// CHECK-LABEL: func.func @plain(
// CHECK-NOT:     linalg.generic
// CHECK:         attn.attention ins(%{{.+}}, %{{.+}}, %{{.+}} : {{.+}}) {mask = #attn.mask<causal>}
func.func @plain(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      {mask = #attn.mask<causal>} -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// The backward's key lengths (a padded training batch) become a keep mask
// with or without the option: the GPU's backward kernels do not take them.
// CHECK-LABEL: func.func @lengths_backward(
// CHECK:         } -> tensor<2x1x1x8xi1>
// NATIVE-LABEL: func.func @lengths_backward(
// NATIVE:       %[[KEEP:.+]] = linalg.generic
// NATIVE:       } -> tensor<2x1x1x8xi1>
// NATIVE:       attn.attention_backward {{.+}} keep(%[[KEEP]] : tensor<2x1x1x8xi1>) ->
// NATIVE-NOT:   key_lengths
func.func @lengths_backward(%q: tensor<2x2x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>,
                            %o: tensor<2x2x8x16xf32>, %lse: tensor<2x2x8xf32>, %do: tensor<2x2x8x16xf32>,
                            %lens: tensor<2xi64>)
    -> (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) {
  %dq, %dk, %dv = attn.attention_backward ins(%q, %k, %v : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
      grad(%o, %lse, %do : tensor<2x2x8x16xf32>, tensor<2x2x8xf32>, tensor<2x2x8x16xf32>)
      key_lengths(%lens : tensor<2xi64>)
      -> tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
  return %dq, %dk, %dv : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
}
