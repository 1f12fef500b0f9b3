// REQUIRES: cuda
// Both tensor-core families: the default (wgmma on sm_90a) and mma=mma_sync.
// Explicit scales on the tensor cores: a positive one (folded into exp2's
// FMA, row max on raw scores) with MQA and a key tail, and a negative one
// (not foldable: the row max of raw scores is not the max of the scaled
// ones) with a bottom-right causal mask and Nq > Nk (empty rows: O = 0,
// lse = -inf).
// RUN: attnfuse-run %s --entry=positive --target=cuda --check=fa --seed=31
// RUN: attnfuse-run %s --entry=positive --target=cuda --check=fa --seed=31 --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --entry=negative --target=cuda --check=fa --seed=32
// RUN: attnfuse-run %s --entry=negative --target=cuda --check=fa --seed=32 --pipeline-options="mma=mma_sync"
func.func @positive(%q: tensor<2x4x96x64xbf16>, %k: tensor<2x1x150x64xbf16>, %v: tensor<2x1x150x64xbf16>)
    -> (tensor<2x4x96x64xbf16>, tensor<2x4x96xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x4x96x64xbf16>, tensor<2x1x150x64xbf16>, tensor<2x1x150x64xbf16>)
      {scale = 0.37 : f32} -> tensor<2x4x96x64xbf16>, tensor<2x4x96xf32>
  return %o, %lse : tensor<2x4x96x64xbf16>, tensor<2x4x96xf32>
}
func.func @negative(%q: tensor<1x2x140x128xf16>, %k: tensor<1x2x100x128xf16>, %v: tensor<1x2x100x128xf16>)
    -> (tensor<1x2x140x128xf16>, tensor<1x2x140xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x140x128xf16>, tensor<1x2x100x128xf16>, tensor<1x2x100x128xf16>)
      {scale = -0.2 : f32, mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<1x2x140x128xf16>, tensor<1x2x140xf32>
  return %o, %lse : tensor<1x2x140x128xf16>, tensor<1x2x140xf32>
}
