// Causal grouped-query attention (8 query heads over 2 key/value heads) in bf16,
// with the row log-sum-exp a training step needs for its backward pass.
func.func @attention(%q: tensor<2x8x64x64xbf16>, %k: tensor<2x2x64x64xbf16>,
                     %v: tensor<2x2x64x64xbf16>)
    -> (tensor<2x8x64x64xbf16>, tensor<2x8x64xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x8x64x64xbf16>,
                                tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16>)
      {mask = #attn.mask<causal>}
      -> tensor<2x8x64x64xbf16>, tensor<2x8x64xf32>
  return %o, %lse : tensor<2x8x64x64xbf16>, tensor<2x8x64xf32>
}
