// REQUIRES: cuda
// Both tensor-core families: the default (wgmma on sm_90a) and mma=mma_sync.
// The fused CUDA kernel (attn-lower-to-nvvm-pipeline) against the naive
// lowering on the GPU and fp64 (FlashAttention's rule): bf16, GQA 8:2, bottom-right causal
// with Nq != Nk and sizes that are not multiples of the blocks, with lse.
// RUN: attnfuse-run %s --target=cuda --check=fa
// RUN: attnfuse-run %s --target=cuda --check=fa --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --target=cuda --check=fa --pipeline-options="mma=simt"
// RUN: attnfuse-run %s --target=cuda --check=fa --pipeline-options="lazy-rescale=0"
// RUN: attnfuse-run %s --target=cuda --check=fa --pipeline-options="mma=mma_sync block-q=64"
// RUN: attnfuse-run %s --target=cuda --check=fa --pipeline-options="warps=8 stages=3"
func.func @f(%q: tensor<2x8x300x128xbf16>, %k: tensor<2x2x333x128xbf16>, %v: tensor<2x2x333x128xbf16>)
    -> (tensor<2x8x300x128xbf16>, tensor<2x8x300xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x8x300x128xbf16>, tensor<2x2x333x128xbf16>, tensor<2x2x333x128xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x8x300x128xbf16>, tensor<2x8x300xf32>
  return %o, %lse : tensor<2x8x300x128xbf16>, tensor<2x8x300xf32>
}
