// REQUIRES: cuda
// The wgmma backward at d = 128 without a mask: GQA (4 query heads on 2 KV
// heads: the Q/dO ring runs on across a KV head's query heads), tails of
// Nq = 1000 and Nk = 700 (a partial last key block and query block), 16
// query blocks per head through 2, 3 and 4 stages; bf16. (mma=wgmma: the
// wgmma backward is taken by name until it has run on the GPU.)
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=21 --pipeline-options="mma=wgmma"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=22 --pipeline-options="mma=wgmma stages=3"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=23 --pipeline-options="mma=wgmma stages=4"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=21 --pipeline-options="mma=wgmma dq-column-split=true"
func.func @f(%q: tensor<1x4x1000x128xbf16>, %k: tensor<1x2x700x128xbf16>, %v: tensor<1x2x700x128xbf16>,
             %do: tensor<1x4x1000x128xbf16>)
    -> (tensor<1x4x1000x128xbf16>, tensor<1x2x700x128xbf16>, tensor<1x2x700x128xbf16>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x4x1000x128xbf16>, tensor<1x2x700x128xbf16>, tensor<1x2x700x128xbf16>)
      -> tensor<1x4x1000x128xbf16>, tensor<1x4x1000xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x4x1000x128xbf16>, tensor<1x2x700x128xbf16>, tensor<1x2x700x128xbf16>)
      grad(%o, %lse, %do : tensor<1x4x1000x128xbf16>, tensor<1x4x1000xf32>, tensor<1x4x1000x128xbf16>)
      -> tensor<1x4x1000x128xbf16>, tensor<1x2x700x128xbf16>, tensor<1x2x700x128xbf16>
  return %dq, %dk, %dv : tensor<1x4x1000x128xbf16>, tensor<1x2x700x128xbf16>, tensor<1x2x700x128xbf16>
}
