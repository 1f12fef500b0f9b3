// REQUIRES: cuda
// Both tensor-core families: the default (wgmma on sm_90a) and mma=mma_sync.
// Head dims beyond 64/128 on the tensor cores: d = 256 (64 query
// rows per CTA, Q in shared memory), f16, GQA 4:2, bottom-right causal with
// Nq != Nk and tails, with lse; and block-k=64 at d = 256.
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=11
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=11 --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=12 --pipeline-options="block-k=64"
func.func @f(%q: tensor<1x4x150x256xf16>, %k: tensor<1x2x201x256xf16>, %v: tensor<1x2x201x256xf16>)
    -> (tensor<1x4x150x256xf16>, tensor<1x4x150xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x4x150x256xf16>, tensor<1x2x201x256xf16>, tensor<1x2x201x256xf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<1x4x150x256xf16>, tensor<1x4x150xf32>
  return %o, %lse : tensor<1x4x150x256xf16>, tensor<1x4x150xf32>
}
