// REQUIRES: cuda
// Key lengths, paged K/V and packed sequences on the GPU: the fused pipeline
// expresses them through a keep mask and gathered K/V
// (attn-expand-inference-operands, before convert-attn-to-gpu), the naive
// reference on the GPU lowers the ops themselves; both against fp64.
//
// Decode over a cache (Nq = 4 queries, e.g. speculative decoding), bf16, GQA
// 8/2, causal bottom-right per batch length: lengths 177 (partial), 0 (no
// key: O = 0, lse = -inf) and 300 (all), on every family.
// RUN: attnfuse-run %s --entry=decode --target=cuda --check=fa --seed=3
// RUN: attnfuse-run %s --entry=decode --target=cuda --check=fa --seed=3 --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --entry=decode --target=cuda --check=fa --seed=3 --pipeline-options="mma=simt"
// Paged K/V (pages of 16 keys, ids out of range in the table) with lengths:
// RUN: attnfuse-run %s --entry=paged --target=cuda --check=fa --seed=4
// Packed prefill (3 sequences of 100, 257 and 143 tokens), causal
// bottom-right in each sequence:
// RUN: attnfuse-run %s --entry=packed --target=cuda --check=fa --seed=5
// The backward with key lengths (a padded training batch):
// RUN: attnfuse-run %s --entry=backward --target=cuda --check=fa --seed=6

func.func @decode(%q: tensor<3x8x4x64xbf16>, %k: tensor<3x2x300x64xbf16>, %v: tensor<3x2x300x64xbf16>)
    -> (tensor<3x8x4x64xbf16>, tensor<3x8x4xf32>) {
  %lens = arith.constant dense<[177, 0, 300]> : tensor<3xi32>
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<3x8x4x64xbf16>, tensor<3x2x300x64xbf16>, tensor<3x2x300x64xbf16>)
      key_lengths(%lens : tensor<3xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<3x8x4x64xbf16>, tensor<3x8x4xf32>
  return %o, %lse : tensor<3x8x4x64xbf16>, tensor<3x8x4xf32>
}

func.func @paged(%q: tensor<3x8x1x128xbf16>, %k: tensor<48x2x16x128xbf16>, %v: tensor<48x2x16x128xbf16>)
    -> tensor<3x8x1x128xbf16> {
  %table = arith.constant dense<[[20, 9, 25, 41, 3, 4, 34, 6, 23, 37, 3, 32, 13, 2, 5, 27, 26, 4, 15, 5], [35, 27, 3, 36, 7, 14, 40, -1, 37, 3, 36, 37, 25, 3, 14, 2, 35, 8, 18, 26], [9, 34, 7, 36, 19, 35, 43, 11, 6, 37, 36, 40, 12, 23, 6, 35, 45, 4, 36, 60]]> : tensor<3x20xi32>
  %lens = arith.constant dense<[320, 131, 318]> : tensor<3xi64>
  %o = attn.attention ins(%q, %k, %v : tensor<3x8x1x128xbf16>, tensor<48x2x16x128xbf16>, tensor<48x2x16x128xbf16>)
      key_lengths(%lens : tensor<3xi64>) block_table(%table : tensor<3x20xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<3x8x1x128xbf16>
  return %o : tensor<3x8x1x128xbf16>
}

func.func @packed(%q: tensor<1x4x500x64xbf16>, %k: tensor<1x4x500x64xbf16>, %v: tensor<1x4x500x64xbf16>)
    -> (tensor<1x4x500x64xbf16>, tensor<1x4x500xf32>) {
  %cq = arith.constant dense<[0, 100, 357, 500]> : tensor<4xi32>
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x4x500x64xbf16>, tensor<1x4x500x64xbf16>, tensor<1x4x500x64xbf16>)
      sequence_offsets(%cq, %cq : tensor<4xi32>, tensor<4xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<1x4x500x64xbf16>, tensor<1x4x500xf32>
  return %o, %lse : tensor<1x4x500x64xbf16>, tensor<1x4x500xf32>
}

func.func @backward(%q: tensor<2x4x96x64xbf16>, %k: tensor<2x2x130x64xbf16>, %v: tensor<2x2x130x64xbf16>,
                    %do: tensor<2x4x96x64xbf16>)
    -> (tensor<2x4x96x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>) {
  %lens = arith.constant dense<[130, 71]> : tensor<2xi32>
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x4x96x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>)
      key_lengths(%lens : tensor<2xi32>) {mask = #attn.mask<causal>}
      -> tensor<2x4x96x64xbf16>, tensor<2x4x96xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<2x4x96x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>)
      grad(%o, %lse, %do : tensor<2x4x96x64xbf16>, tensor<2x4x96xf32>, tensor<2x4x96x64xbf16>)
      key_lengths(%lens : tensor<2xi32>) {mask = #attn.mask<causal>}
      -> tensor<2x4x96x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>
  return %dq, %dk, %dv : tensor<2x4x96x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>
}
