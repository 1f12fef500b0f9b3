// REQUIRES: cuda
// The GPU backward with a sliding window (left 20, right 5: the rows that
// cannot see a key block are skipped), a bias broadcast over batch and rows
// and a keep mask broadcast over batch and heads (inputs without
// gradients), f16, Nq = Nk = 200 (tails).
// The mma_sync backward (the default) and the simt backward:
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=6
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=6 --pipeline-options="mma=wgmma"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=6 --pipeline-options="mma=simt"
// Deterministic mode (dQ summed in order by a kernel of its own, no atomics):
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=6 --pipeline-options="deterministic=true"
func.func @f(%q: tensor<2x2x200x64xf16>, %k: tensor<2x2x200x64xf16>, %v: tensor<2x2x200x64xf16>,
             %bias: tensor<1x2x1x200xf32>, %keep: tensor<200x200xi1>, %do: tensor<2x2x200x64xf16>)
    -> (tensor<2x2x200x64xf16>, tensor<2x2x200x64xf16>, tensor<2x2x200x64xf16>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x2x200x64xf16>, tensor<2x2x200x64xf16>, tensor<2x2x200x64xf16>)
      bias(%bias : tensor<1x2x1x200xf32>) keep(%keep : tensor<200x200xi1>)
      {mask = #attn.mask<sliding_window>, window_left = 20, window_right = 5}
      -> tensor<2x2x200x64xf16>, tensor<2x2x200xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<2x2x200x64xf16>, tensor<2x2x200x64xf16>, tensor<2x2x200x64xf16>)
      grad(%o, %lse, %do : tensor<2x2x200x64xf16>, tensor<2x2x200xf32>, tensor<2x2x200x64xf16>)
      bias(%bias : tensor<1x2x1x200xf32>) keep(%keep : tensor<200x200xi1>)
      {mask = #attn.mask<sliding_window>, window_left = 20, window_right = 5}
      -> tensor<2x2x200x64xf16>, tensor<2x2x200x64xf16>, tensor<2x2x200x64xf16>
  return %dq, %dk, %dv : tensor<2x2x200x64xf16>, tensor<2x2x200x64xf16>, tensor<2x2x200x64xf16>
}
