// REQUIRES: cuda
// f16, sliding window, an f16 bias [Nq, Nk] and a key-padding keep mask.
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=3
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=3 --pipeline-options="mma=simt"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=4 --pipeline-options="stages=4 block-k=32"
func.func @f(%q: tensor<1x4x200x64xf16>, %k: tensor<1x4x257x64xf16>, %v: tensor<1x4x257x64xf16>,
             %bias: tensor<200x257xf16>, %keep: tensor<1x1x1x257xi1>) -> tensor<1x4x200x64xf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x4x200x64xf16>, tensor<1x4x257x64xf16>, tensor<1x4x257x64xf16>)
      bias(%bias : tensor<200x257xf16>) keep(%keep : tensor<1x1x1x257xi1>)
      {mask = #attn.mask<sliding_window>, window_left = 48, window_right = 16}
      -> tensor<1x4x200x64xf16>
  return %o : tensor<1x4x200x64xf16>
}
