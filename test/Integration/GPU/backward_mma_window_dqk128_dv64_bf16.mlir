// REQUIRES: cuda
// The mma_sync backward with a sliding window (left 40, right 8: query
// blocks skipped on both sides of a key block, both edges masked), Dqk = 128
// != Dv = 64, bf16, Nq = Nk = 200 (tails).
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=13
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=13 --pipeline-options="mma=wgmma"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=13 --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=13 --pipeline-options="mma=mma_sync warps=8 block-q=128"
func.func @f(%q: tensor<2x2x200x128xbf16>, %k: tensor<2x2x200x128xbf16>, %v: tensor<2x2x200x64xbf16>,
             %do: tensor<2x2x200x64xbf16>)
    -> (tensor<2x2x200x128xbf16>, tensor<2x2x200x128xbf16>, tensor<2x2x200x64xbf16>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x2x200x128xbf16>, tensor<2x2x200x128xbf16>, tensor<2x2x200x64xbf16>)
      {mask = #attn.mask<sliding_window>, window_left = 40, window_right = 8}
      -> tensor<2x2x200x64xbf16>, tensor<2x2x200xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<2x2x200x128xbf16>, tensor<2x2x200x128xbf16>, tensor<2x2x200x64xbf16>)
      grad(%o, %lse, %do : tensor<2x2x200x64xbf16>, tensor<2x2x200xf32>, tensor<2x2x200x64xbf16>)
      {mask = #attn.mask<sliding_window>, window_left = 40, window_right = 8}
      -> tensor<2x2x200x128xbf16>, tensor<2x2x200x128xbf16>, tensor<2x2x200x64xbf16>
  return %dq, %dk, %dv : tensor<2x2x200x128xbf16>, tensor<2x2x200x128xbf16>, tensor<2x2x200x64xbf16>
}
