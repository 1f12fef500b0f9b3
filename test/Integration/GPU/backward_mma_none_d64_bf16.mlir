// REQUIRES: cuda
// The mma_sync backward without a mask: every query block of every key
// block unmasked (no tails), 8 to 32 query blocks per CTA through the
// two-stage Q/dO ring, bf16, d = 64.
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=14
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=14 --pipeline-options="mma=wgmma"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=14 --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=14 --pipeline-options="mma=mma_sync block-q=128"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=14 --pipeline-options="mma=mma_sync warps=4"
func.func @f(%q: tensor<1x2x512x64xbf16>, %k: tensor<1x2x512x64xbf16>, %v: tensor<1x2x512x64xbf16>,
             %do: tensor<1x2x512x64xbf16>)
    -> (tensor<1x2x512x64xbf16>, tensor<1x2x512x64xbf16>, tensor<1x2x512x64xbf16>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x512x64xbf16>, tensor<1x2x512x64xbf16>, tensor<1x2x512x64xbf16>)
      -> tensor<1x2x512x64xbf16>, tensor<1x2x512xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x2x512x64xbf16>, tensor<1x2x512x64xbf16>, tensor<1x2x512x64xbf16>)
      grad(%o, %lse, %do : tensor<1x2x512x64xbf16>, tensor<1x2x512xf32>, tensor<1x2x512x64xbf16>)
      -> tensor<1x2x512x64xbf16>, tensor<1x2x512x64xbf16>, tensor<1x2x512x64xbf16>
  return %dq, %dk, %dv : tensor<1x2x512x64xbf16>, tensor<1x2x512x64xbf16>, tensor<1x2x512x64xbf16>
}
