// REQUIRES: cuda
// The mma_sync backward (the default on sm_80+ and sm_90a: wgmma falls back
// to it) against the naive reference on the GPU and fp64: bf16, GQA (4 query
// heads on 2 KV heads: dK, dV summed over each group in registers), causal
// bottom-right (query blocks a key block cannot see skipped, the diagonal
// ones masked per element), Nq = 100 and Nk = 130: tails of the query and
// key blocks; 128 keys (8 warps, the default) or 64 (4 warps) per CTA, 64
// or 128 query rows per step.
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=11
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=11 --pipeline-options="mma=wgmma"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=11 --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=11 --pipeline-options="mma=mma_sync block-q=128"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=11 --pipeline-options="mma=mma_sync warps=4 block-q=64"
func.func @f(%q: tensor<2x4x100x64xbf16>, %k: tensor<2x2x130x64xbf16>, %v: tensor<2x2x130x64xbf16>,
             %do: tensor<2x4x100x64xbf16>)
    -> (tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x4x100x64xbf16>, tensor<2x4x100xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>)
      grad(%o, %lse, %do : tensor<2x4x100x64xbf16>, tensor<2x4x100xf32>, tensor<2x4x100x64xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>
  return %dq, %dk, %dv : tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>
}
