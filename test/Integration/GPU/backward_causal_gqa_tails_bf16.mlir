// REQUIRES: cuda
// The GPU backward (simt kinds; the default mma=auto falls back to them,
// with a remark) against the naive reference on the GPU and fp64: bf16,
// GQA (4 query heads on 2 KV heads: dK, dV summed over each group), causal
// bottom-right (key blocks a row cannot see are skipped), Nq != Nk with
// tails of both the key blocks and the rows, Dqk != Dv.
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=3
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=3 --pipeline-options="mma=wgmma"
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=3 --pipeline-options="mma=simt block-k=32"
// Deterministic mode (dQ summed in order by a kernel of its own, no atomics):
// RUN: attnfuse-run %s --target=cuda --check=fa --seed=3 --pipeline-options="deterministic=true"
func.func @f(%q: tensor<2x4x100x64xbf16>, %k: tensor<2x2x130x64xbf16>, %v: tensor<2x2x130x32xbf16>,
             %do: tensor<2x4x100x32xbf16>)
    -> (tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x32xbf16>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x32xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x4x100x32xbf16>, tensor<2x4x100xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x32xbf16>)
      grad(%o, %lse, %do : tensor<2x4x100x32xbf16>, tensor<2x4x100xf32>, tensor<2x4x100x32xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x32xbf16>
  return %dq, %dk, %dv : tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x32xbf16>
}
