// REQUIRES: cuda
// Paged K/V in the forward kernels (KernelPlan::blockTable): each key row is
// read from slot k mod page_size of page block_table[b, k / page_size], a
// page id out of range hides its keys (docs/Semantics.md, "Paged K/V"). O
// and lse against the naive reference on the GPU (which lowers the op itself)
// and fp64, on every family.
//
// Decode with lengths (pages of 16, ids -1 and 60 past the pages in the
// table, a page shared by two batches): the defaults (packed, wgmma), the
// split mma_sync forward, unpacked, simt.
// RUN: attnfuse-run %s --entry=decode16 --target=cuda --check=fa --seed=51
// RUN: attnfuse-run %s --entry=decode16 --target=cuda --check=fa --seed=52 --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --entry=decode16 --target=cuda --check=fa --seed=53 --pipeline-options="mma=mma_sync kv-splits=4 pack-gqa=false"
// RUN: attnfuse-run %s --entry=decode16 --target=cuda --check=fa --seed=54 --pipeline-options="mma=simt"
//
// Pages larger than a key block (256 keys), speculative decoding (Nq = 8,
// causal bottom-right), no key lengths, one id out of range inside the
// range a tile visits (its 256 keys hidden).
// RUN: attnfuse-run %s --entry=mtp256 --target=cuda --check=fa --seed=55
// RUN: attnfuse-run %s --entry=mtp256 --target=cuda --check=fa --seed=56 --pipeline-options="mma=mma_sync"
//
// Pages of 64 keys, f16, a prefill chunk of 96 queries over a cache of 512
// positions with lengths (chunked prefill), causal bottom-right.
// RUN: attnfuse-run %s --entry=chunk64 --target=cuda --check=fa --seed=57
// RUN: attnfuse-run %s --entry=chunk64 --target=cuda --check=fa --seed=58 --pipeline-options="mma=mma_sync"

func.func @decode16(%q: tensor<3x8x1x128xbf16>, %k: tensor<48x2x16x128xbf16>, %v: tensor<48x2x16x128xbf16>)
    -> (tensor<3x8x1x128xbf16>, tensor<3x8x1xf32>) {
  %table = arith.constant dense<[[20, 9, 25, 41, 3, 4, 34, 6, 23, 37, 3, 32, 13, 2, 5, 27, 26, 4, 15, 5], [35, 27, 3, 36, 7, 14, 40, -1, 37, 3, 36, 37, 25, 3, 14, 2, 35, 8, 18, 26], [9, 34, 7, 36, 19, 35, 43, 11, 6, 37, 36, 40, 12, 23, 6, 35, 45, 4, 36, 60]]> : tensor<3x20xi32>
  %lens = arith.constant dense<[320, 131, 318]> : tensor<3xi64>
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<3x8x1x128xbf16>, tensor<48x2x16x128xbf16>, tensor<48x2x16x128xbf16>)
      key_lengths(%lens : tensor<3xi64>) block_table(%table : tensor<3x20xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<3x8x1x128xbf16>, tensor<3x8x1xf32>
  return %o, %lse : tensor<3x8x1x128xbf16>, tensor<3x8x1xf32>
}

func.func @mtp256(%q: tensor<2x32x8x128xbf16>, %k: tensor<9x8x256x128xbf16>, %v: tensor<9x8x256x128xbf16>)
    -> (tensor<2x32x8x128xbf16>, tensor<2x32x8xf32>) {
  %table = arith.constant dense<[[3, 7, 1, 0], [8, 2, 12, 5]]> : tensor<2x4xi32>
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x32x8x128xbf16>, tensor<9x8x256x128xbf16>, tensor<9x8x256x128xbf16>)
      block_table(%table : tensor<2x4xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x32x8x128xbf16>, tensor<2x32x8xf32>
  return %o, %lse : tensor<2x32x8x128xbf16>, tensor<2x32x8xf32>
}

func.func @chunk64(%q: tensor<2x4x96x64xf16>, %k: tensor<20x4x64x64xf16>, %v: tensor<20x4x64x64xf16>)
    -> (tensor<2x4x96x64xf16>, tensor<2x4x96xf32>) {
  %table = arith.constant dense<[[4, 9, 0, 13, 2, 17, 6, 11], [19, 1, 5, 8, 10, 3, 7, 12]]> : tensor<2x8xi32>
  %lens = arith.constant dense<[500, 200]> : tensor<2xi32>
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x4x96x64xf16>, tensor<20x4x64x64xf16>, tensor<20x4x64x64xf16>)
      key_lengths(%lens : tensor<2xi32>) block_table(%table : tensor<2x8xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x4x96x64xf16>, tensor<2x4x96xf32>
  return %o, %lse : tensor<2x4x96x64xf16>, tensor<2x4x96xf32>
}
