// attn.attention_backward's grad_bias in bf16 and f16: the tiled lowering
// (odd blocks, tails) against the reference lowering, for a full-shaped bias
// (no sum) and a key-padding bias [B, 1, 1, Nk] (summed over heads and
// queries), with GQA, causal masks and dropout.
// RUN: attnfuse-run %s --entry=full_bf16 --seed=7 --pipeline-options="block-q=3 block-k=4" | FileCheck %s
// RUN: attnfuse-run %s --entry=key_padding_f16 --seed=8 --pipeline-options="block-q=4 block-k=3" | FileCheck %s
// CHECK: PASS
// CHECK-SAME: result3
func.func @full_bf16(%q: tensor<2x4x9x8xbf16>, %k: tensor<2x2x11x8xbf16>, %v: tensor<2x2x11x8xbf16>,
                     %do: tensor<2x4x9x8xbf16>, %bias: tensor<2x4x9x11xbf16>)
    -> (tensor<2x4x9x8xbf16>, tensor<2x2x11x8xbf16>, tensor<2x2x11x8xbf16>, tensor<2x4x9x11xbf16>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x4x9x8xbf16>, tensor<2x2x11x8xbf16>, tensor<2x2x11x8xbf16>)
      bias(%bias : tensor<2x4x9x11xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x4x9x8xbf16>, tensor<2x4x9xf32>
  %dq, %dk, %dv, %dbias = attn.attention_backward
      ins(%q, %k, %v : tensor<2x4x9x8xbf16>, tensor<2x2x11x8xbf16>, tensor<2x2x11x8xbf16>)
      grad(%o, %lse, %do : tensor<2x4x9x8xbf16>, tensor<2x4x9xf32>, tensor<2x4x9x8xbf16>)
      bias(%bias : tensor<2x4x9x11xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x4x9x8xbf16>, tensor<2x2x11x8xbf16>, tensor<2x2x11x8xbf16>, tensor<2x4x9x11xbf16>
  return %dq, %dk, %dv, %dbias : tensor<2x4x9x8xbf16>, tensor<2x2x11x8xbf16>, tensor<2x2x11x8xbf16>, tensor<2x4x9x11xbf16>
}

func.func @key_padding_f16(%q: tensor<2x4x10x8xf16>, %k: tensor<2x1x10x8xf16>, %v: tensor<2x1x10x8xf16>,
                           %do: tensor<2x4x10x8xf16>, %bias: tensor<2x1x1x10xf16>, %seed: i64)
    -> (tensor<2x4x10x8xf16>, tensor<2x1x10x8xf16>, tensor<2x1x10x8xf16>, tensor<2x1x1x10xf16>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x4x10x8xf16>, tensor<2x1x10x8xf16>, tensor<2x1x10x8xf16>)
      bias(%bias : tensor<2x1x1x10xf16>) seed(%seed)
      {mask = #attn.mask<causal>, dropout_p = 0.2 : f32}
      -> tensor<2x4x10x8xf16>, tensor<2x4x10xf32>
  %dq, %dk, %dv, %dbias = attn.attention_backward
      ins(%q, %k, %v : tensor<2x4x10x8xf16>, tensor<2x1x10x8xf16>, tensor<2x1x10x8xf16>)
      grad(%o, %lse, %do : tensor<2x4x10x8xf16>, tensor<2x4x10xf32>, tensor<2x4x10x8xf16>)
      bias(%bias : tensor<2x1x1x10xf16>) seed(%seed)
      {mask = #attn.mask<causal>, dropout_p = 0.2 : f32}
      -> tensor<2x4x10x8xf16>, tensor<2x1x10x8xf16>, tensor<2x1x10x8xf16>, tensor<2x1x1x10xf16>
  return %dq, %dk, %dv, %dbias : tensor<2x4x10x8xf16>, tensor<2x1x10x8xf16>, tensor<2x1x10x8xf16>, tensor<2x1x1x10xf16>
}
