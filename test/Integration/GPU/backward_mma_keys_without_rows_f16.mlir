// REQUIRES: cuda
// The mma_sync backward where key blocks see no query row: causal top-left
// with Nk = 300 > Nq = 70 (keys from 70 on are hidden from every row; the
// key blocks 128.. and 256.. have an empty query-block range and must store
// zeros for dK and dV), MQA, f16, 8 and 4 warps.
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=15
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=15 --pipeline-options="mma=wgmma"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=15 --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=15 --pipeline-options="mma=mma_sync warps=4"
func.func @f(%q: tensor<1x2x70x64xf16>, %k: tensor<1x1x300x64xf16>, %v: tensor<1x1x300x64xf16>,
             %do: tensor<1x2x70x64xf16>)
    -> (tensor<1x2x70x64xf16>, tensor<1x1x300x64xf16>, tensor<1x1x300x64xf16>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x70x64xf16>, tensor<1x1x300x64xf16>, tensor<1x1x300x64xf16>)
      {mask = #attn.mask<causal>}
      -> tensor<1x2x70x64xf16>, tensor<1x2x70xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x2x70x64xf16>, tensor<1x1x300x64xf16>, tensor<1x1x300x64xf16>)
      grad(%o, %lse, %do : tensor<1x2x70x64xf16>, tensor<1x2x70xf32>, tensor<1x2x70x64xf16>)
      {mask = #attn.mask<causal>}
      -> tensor<1x2x70x64xf16>, tensor<1x1x300x64xf16>, tensor<1x1x300x64xf16>
  return %dq, %dk, %dv : tensor<1x2x70x64xf16>, tensor<1x1x300x64xf16>, tensor<1x1x300x64xf16>
}
