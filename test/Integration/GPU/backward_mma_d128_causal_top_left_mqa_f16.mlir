// REQUIRES: cuda
// The mma_sync backward at d = 128, f16: MQA (3 query heads on one KV head),
// causal top-left with Nq > Nk (the rows past Nk see every key), tails of
// both; the defaults (8 warps: 128 keys per CTA, block-q 64) and 4 warps
// (64 keys) with block-q 128 and 64.
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=12
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=12 --pipeline-options="mma=wgmma"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=12 --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=12 --pipeline-options="mma=mma_sync warps=4 block-q=128"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=12 --pipeline-options="mma=mma_sync warps=4"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=12 --pipeline-options="mma=wgmma dq-column-split=true"
func.func @f(%q: tensor<1x3x150x128xf16>, %k: tensor<1x1x90x128xf16>, %v: tensor<1x1x90x128xf16>,
             %do: tensor<1x3x150x128xf16>)
    -> (tensor<1x3x150x128xf16>, tensor<1x1x90x128xf16>, tensor<1x1x90x128xf16>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x3x150x128xf16>, tensor<1x1x90x128xf16>, tensor<1x1x90x128xf16>)
      {mask = #attn.mask<causal>}
      -> tensor<1x3x150x128xf16>, tensor<1x3x150xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x3x150x128xf16>, tensor<1x1x90x128xf16>, tensor<1x1x90x128xf16>)
      grad(%o, %lse, %do : tensor<1x3x150x128xf16>, tensor<1x3x150xf32>, tensor<1x3x150x128xf16>)
      {mask = #attn.mask<causal>}
      -> tensor<1x3x150x128xf16>, tensor<1x1x90x128xf16>, tensor<1x1x90x128xf16>
  return %dq, %dk, %dv : tensor<1x3x150x128xf16>, tensor<1x1x90x128xf16>, tensor<1x1x90x128xf16>
}
