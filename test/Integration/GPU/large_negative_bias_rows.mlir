// REQUIRES: cuda
// Rows hidden by a large negative additive mask (finfo.min, as transformers
// writes padding masks) are uniform averages over their keys, as in the graph
// (docs/Semantics.md, second stated GPU difference): the kernels' log2-domain
// scores must not overflow to -inf (an empty row, O = 0). The bias hides every
// key of the queries of batch 1 (its padding row) and none of batch 0; both
// families.
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=41
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=42 --pipeline-options="mma=simt"
func.func @padded(%q: tensor<2x4x80x64xbf16>, %k: tensor<2x4x80x64xbf16>, %v: tensor<2x4x80x64xbf16>)
    -> tensor<2x4x80x64xbf16> {
  %bias = arith.constant dense<[[[[0.0]]], [[[-3.40282347e+38]]]]> : tensor<2x1x1x1xf32>
  %o = attn.attention ins(%q, %k, %v : tensor<2x4x80x64xbf16>, tensor<2x4x80x64xbf16>, tensor<2x4x80x64xbf16>)
      bias(%bias : tensor<2x1x1x1xf32>) {mask = #attn.mask<causal>} -> tensor<2x4x80x64xbf16>
  return %o : tensor<2x4x80x64xbf16>
}
