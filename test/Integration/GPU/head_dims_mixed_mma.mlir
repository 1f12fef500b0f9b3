// REQUIRES: cuda
// Both tensor-core families: the default (wgmma on sm_90a) and mma=mma_sync.
// Head dims that are multiples of 16 but not of 32, Dqk != Dv (48 / 80), on
// the tensor cores: bf16, sliding window, tails (the 16-byte copies of a row
// do not divide the CTA evenly).
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=21
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=21 --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=22 --pipeline-options="mma=mma_sync block-q=64"
func.func @f(%q: tensor<2x3x77x48xbf16>, %k: tensor<2x3x190x48xbf16>, %v: tensor<2x3x190x80xbf16>)
    -> (tensor<2x3x77x80xbf16>, tensor<2x3x77xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x3x77x48xbf16>, tensor<2x3x190x48xbf16>, tensor<2x3x190x80xbf16>)
      {mask = #attn.mask<sliding_window>, window_left = 40, window_right = 9}
      -> tensor<2x3x77x80xbf16>, tensor<2x3x77xf32>
  return %o, %lse : tensor<2x3x77x80xbf16>, tensor<2x3x77xf32>
}
