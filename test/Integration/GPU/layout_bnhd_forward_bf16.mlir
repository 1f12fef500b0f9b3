// REQUIRES: cuda
// Q, K, V and O in [B, N, H, D] (as projections and flash_attn_func have
// them), read and written in place: the kernels take the buffers through
// permuted views (convert-attn-to-gpu folds the linalg.transpose ops; the
// wgmma forward's tensor maps carry the views' strides). GQA (4 query heads
// on 2 KV heads), causal bottom-right, tails of Nq = 100 and Nk = 130, bf16;
// each family against the naive reference on the GPU and fp64.
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=31
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=31 --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=31 --pipeline-options="mma=mma_sync kv-splits=3"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=31 --pipeline-options="mma=simt"
func.func @f(%q: tensor<2x100x4x64xbf16>, %k: tensor<2x130x2x64xbf16>, %v: tensor<2x130x2x64xbf16>)
    -> tensor<2x100x4x64xbf16> {
  %qe = tensor.empty() : tensor<2x4x100x64xbf16>
  %qt = linalg.transpose ins(%q : tensor<2x100x4x64xbf16>) outs(%qe : tensor<2x4x100x64xbf16>) permutation = [0, 2, 1, 3]
  %ke = tensor.empty() : tensor<2x2x130x64xbf16>
  %kt = linalg.transpose ins(%k : tensor<2x130x2x64xbf16>) outs(%ke : tensor<2x2x130x64xbf16>) permutation = [0, 2, 1, 3]
  %vt = linalg.transpose ins(%v : tensor<2x130x2x64xbf16>) outs(%ke : tensor<2x2x130x64xbf16>) permutation = [0, 2, 1, 3]
  %o = attn.attention ins(%qt, %kt, %vt : tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>} -> tensor<2x4x100x64xbf16>
  %oe = tensor.empty() : tensor<2x100x4x64xbf16>
  %ot = linalg.transpose ins(%o : tensor<2x4x100x64xbf16>) outs(%oe : tensor<2x100x4x64xbf16>) permutation = [0, 2, 1, 3]
  return %ot : tensor<2x100x4x64xbf16>
}
