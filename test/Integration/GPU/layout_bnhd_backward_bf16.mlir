// REQUIRES: cuda
// The backward with Q, K, V, dO and the gradients dQ, dK, dV in
// [B, N, H, D], read and written in place through permuted views (the
// forward's O stays [B, H, N, D]: its use is the backward, not a
// permutation). GQA (4 query heads on 2 KV heads), causal bottom-right,
// tails of Nq = 100 and Nk = 130, bf16; each backward family and
// deterministic mode against the naive reference on the GPU and fp64.
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=32
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=32 --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=32 --pipeline-options="mma=simt"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=32 --pipeline-options="deterministic=true"
func.func @f(%q: tensor<2x100x4x64xbf16>, %k: tensor<2x130x2x64xbf16>, %v: tensor<2x130x2x64xbf16>,
             %do: tensor<2x100x4x64xbf16>)
    -> (tensor<2x100x4x64xbf16>, tensor<2x130x2x64xbf16>, tensor<2x130x2x64xbf16>) {
  %qe = tensor.empty() : tensor<2x4x100x64xbf16>
  %qt = linalg.transpose ins(%q : tensor<2x100x4x64xbf16>) outs(%qe : tensor<2x4x100x64xbf16>) permutation = [0, 2, 1, 3]
  %dot = linalg.transpose ins(%do : tensor<2x100x4x64xbf16>) outs(%qe : tensor<2x4x100x64xbf16>) permutation = [0, 2, 1, 3]
  %ke = tensor.empty() : tensor<2x2x130x64xbf16>
  %kt = linalg.transpose ins(%k : tensor<2x130x2x64xbf16>) outs(%ke : tensor<2x2x130x64xbf16>) permutation = [0, 2, 1, 3]
  %vt = linalg.transpose ins(%v : tensor<2x130x2x64xbf16>) outs(%ke : tensor<2x2x130x64xbf16>) permutation = [0, 2, 1, 3]
  %o, %lse = attn.attention ins(%qt, %kt, %vt : tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x4x100x64xbf16>, tensor<2x4x100xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%qt, %kt, %vt : tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>)
      grad(%o, %lse, %dot : tensor<2x4x100x64xbf16>, tensor<2x4x100xf32>, tensor<2x4x100x64xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>
  %dqe = tensor.empty() : tensor<2x100x4x64xbf16>
  %dqt = linalg.transpose ins(%dq : tensor<2x4x100x64xbf16>) outs(%dqe : tensor<2x100x4x64xbf16>) permutation = [0, 2, 1, 3]
  %dke = tensor.empty() : tensor<2x130x2x64xbf16>
  %dkt = linalg.transpose ins(%dk : tensor<2x2x130x64xbf16>) outs(%dke : tensor<2x130x2x64xbf16>) permutation = [0, 2, 1, 3]
  %dvt = linalg.transpose ins(%dv : tensor<2x2x130x64xbf16>) outs(%dke : tensor<2x130x2x64xbf16>) permutation = [0, 2, 1, 3]
  return %dqt, %dkt, %dvt : tensor<2x100x4x64xbf16>, tensor<2x130x2x64xbf16>, tensor<2x130x2x64xbf16>
}
