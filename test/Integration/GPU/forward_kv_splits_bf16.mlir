// REQUIRES: cuda
// The mma_sync forward with split keys (kv-splits, FlashDecoding): each
// split's CTA writes f32 partial O and lse over its share of the key
// blocks, the combine kernel merges them; O and lse against the naive
// reference on the GPU and fp64.
//
// Decode (Nq = 1), GQA 8/2, d = 128, a key tail (1000 keys, 32 blocks of
// 32), the query heads packed into rows of their K/V head (pack-gqa, the
// default): the automatic split count (8: the 4 tiles leave the SMs idle,
// 4 blocks a split), 3 splits (shares of 11, 11, 10 blocks) and one block
// per split.
// RUN: attnfuse-run %s --entry=decode --target=cuda --check=fa --seed=31 --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --entry=decode --target=cuda --check=fa --seed=32 --pipeline-options="mma=mma_sync kv-splits=3"
// RUN: attnfuse-run %s --entry=decode --target=cuda --check=fa --seed=33 --pipeline-options="mma=mma_sync kv-splits=32"
// Unpacked (pack-gqa=false: each query head its own tile) on the split
// mma_sync forward and on wgmma (no split).
// RUN: attnfuse-run %s --entry=decode --target=cuda --check=fa --seed=38 --pipeline-options="mma=mma_sync pack-gqa=false"
// RUN: attnfuse-run %s --entry=decode --target=cuda --check=fa --seed=39 --pipeline-options="mma=wgmma pack-gqa=false"
// Speculative decoding (Nq = 16 new tokens), causal bottom-right, d = 64,
// GQA 8/2 (packed: 64 rows a K/V head, the mask by position): splits of a
// masked range (the diagonal's block masked, the others not), automatic
// and 5.
// RUN: attnfuse-run %s --entry=mtp --target=cuda --check=fa --seed=34 --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --entry=mtp --target=cuda --check=fa --seed=35 --pipeline-options="mma=mma_sync kv-splits=5"
// A one-key window at the bottom-right diagonal (each of 70 rows sees one
// key of 630..699: 2 blocks): 4 splits, 2 of them with no key (lse_s =
// -inf, weight 0), and rows a split does not see.
// RUN: attnfuse-run %s --entry=diagonal --target=cuda --check=fa --seed=36 --pipeline-options="mma=mma_sync kv-splits=4"
// Bias, dropout and a softcap per element with 6 splits: the features keep
// their absolute key positions.
// RUN: attnfuse-run %s --entry=features --target=cuda --check=fa --seed=37 --pipeline-options="mma=mma_sync kv-splits=6"

func.func @decode(%q: tensor<2x8x1x128xbf16>, %k: tensor<2x2x1000x128xbf16>, %v: tensor<2x2x1000x128xbf16>)
    -> (tensor<2x8x1x128xbf16>, tensor<2x8x1xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x8x1x128xbf16>, tensor<2x2x1000x128xbf16>, tensor<2x2x1000x128xbf16>)
      -> tensor<2x8x1x128xbf16>, tensor<2x8x1xf32>
  return %o, %lse : tensor<2x8x1x128xbf16>, tensor<2x8x1xf32>
}

func.func @mtp(%q: tensor<1x8x16x64xbf16>, %k: tensor<1x2x2000x64xbf16>, %v: tensor<1x2x2000x64xbf16>)
    -> (tensor<1x8x16x64xbf16>, tensor<1x8x16xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x8x16x64xbf16>, tensor<1x2x2000x64xbf16>, tensor<1x2x2000x64xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<1x8x16x64xbf16>, tensor<1x8x16xf32>
  return %o, %lse : tensor<1x8x16x64xbf16>, tensor<1x8x16xf32>
}

func.func @diagonal(%q: tensor<1x2x70x64xbf16>, %k: tensor<1x2x700x64xbf16>, %v: tensor<1x2x700x64xbf16>)
    -> (tensor<1x2x70x64xbf16>, tensor<1x2x70xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x70x64xbf16>, tensor<1x2x700x64xbf16>, tensor<1x2x700x64xbf16>)
      {mask = #attn.mask<sliding_window>, window_left = 0, window_right = 0, alignment = #attn.alignment<bottom_right>}
      -> tensor<1x2x70x64xbf16>, tensor<1x2x70xf32>
  return %o, %lse : tensor<1x2x70x64xbf16>, tensor<1x2x70xf32>
}

func.func @features(%q: tensor<1x4x3x64xbf16>, %k: tensor<1x4x800x64xbf16>, %v: tensor<1x4x800x64xbf16>,
                    %bias: tensor<1x4x3x800xbf16>, %seed: i64)
    -> (tensor<1x4x3x64xbf16>, tensor<1x4x3xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x4x3x64xbf16>, tensor<1x4x800x64xbf16>, tensor<1x4x800x64xbf16>)
      bias(%bias : tensor<1x4x3x800xbf16>) seed(%seed) {dropout_p = 0.17 : f32} score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 5.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<1x4x3x64xbf16>, tensor<1x4x3xf32>
  return %o, %lse : tensor<1x4x3x64xbf16>, tensor<1x4x3xf32>
}
