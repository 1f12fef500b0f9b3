// REQUIRES: cuda
// pack-gqa: the forward over K/V heads whose rows are their groups' query
// rows (row r = position r mod Nq of query head kvh * G + r / Nq), the
// structural mask read per row by position; O and lse against the naive
// reference on the GPU and fp64.
//
// Speculative decoding: GQA 32/8, 16 new tokens (64 rows a K/V head),
// causal bottom-right, 1000 keys (a tail), d = 128: the default (wgmma,
// unsplit), mma_sync (its automatic split count, and 3 splits), simt, and
// the unpacked wgmma kernel beside them.
// RUN: attnfuse-run %s --entry=mtp --target=cuda --check=fa --seed=41
// RUN: attnfuse-run %s --entry=mtp --target=cuda --check=fa --seed=42 --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --entry=mtp --target=cuda --check=fa --seed=43 --pipeline-options="mma=mma_sync kv-splits=3"
// RUN: attnfuse-run %s --entry=mtp --target=cuda --check=fa --seed=44 --pipeline-options="mma=simt"
// RUN: attnfuse-run %s --entry=mtp --target=cuda --check=fa --seed=45 --pipeline-options="pack-gqa=false"
// A period that does not divide the tiles: GQA 12/2, 12 rows a head (72
// rows a K/V head: a second tile of 8 rows on mma_sync, and rows across
// the warpgroups on wgmma), a sliding window of 100 keys back, 777 keys,
// d = 64, a softcap (a score_mod that reads neither head nor query).
// RUN: attnfuse-run %s --entry=period12 --target=cuda --check=fa --seed=46
// RUN: attnfuse-run %s --entry=period12 --target=cuda --check=fa --seed=47 --pipeline-options="mma=mma_sync kv-splits=2"
// RUN: attnfuse-run %s --entry=period12 --target=cuda --check=fa --seed=48 --pipeline-options="mma=simt"
// Decode over a KV cache with per-batch lengths (attn-expand-inference-
// operands: a keep mask [B, 1, 1, Nk], the same for every head: packed),
// and decode against a sliding window (Nq = 1: every row at position 0).
// RUN: attnfuse-run %s --entry=lengths --target=cuda --check=fa --seed=49
// RUN: attnfuse-run %s --entry=lengths --target=cuda --check=fa --seed=50 --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --entry=window_decode --target=cuda --check=fa --seed=51
// RUN: attnfuse-run %s --entry=window_decode --target=cuda --check=fa --seed=52 --pipeline-options="mma=mma_sync kv-splits=4"

func.func @mtp(%q: tensor<2x32x16x128xbf16>, %k: tensor<2x8x1000x128xbf16>, %v: tensor<2x8x1000x128xbf16>)
    -> (tensor<2x32x16x128xbf16>, tensor<2x32x16xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x32x16x128xbf16>, tensor<2x8x1000x128xbf16>, tensor<2x8x1000x128xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x32x16x128xbf16>, tensor<2x32x16xf32>
  return %o, %lse : tensor<2x32x16x128xbf16>, tensor<2x32x16xf32>
}

func.func @period12(%q: tensor<1x12x12x64xbf16>, %k: tensor<1x2x777x64xbf16>, %v: tensor<1x2x777x64xbf16>)
    -> (tensor<1x12x12x64xbf16>, tensor<1x12x12xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x12x12x64xbf16>, tensor<1x2x777x64xbf16>, tensor<1x2x777x64xbf16>)
      {mask = #attn.mask<sliding_window>, alignment = #attn.alignment<bottom_right>, window_left = 100, window_right = 0}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 5.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<1x12x12x64xbf16>, tensor<1x12x12xf32>
  return %o, %lse : tensor<1x12x12x64xbf16>, tensor<1x12x12xf32>
}

func.func @lengths(%q: tensor<3x16x1x128xbf16>, %k: tensor<3x2x600x128xbf16>, %v: tensor<3x2x600x128xbf16>)
    -> (tensor<3x16x1x128xbf16>, tensor<3x16x1xf32>) {
  %lens = arith.constant dense<[600, 77, 321]> : tensor<3xi32>
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<3x16x1x128xbf16>, tensor<3x2x600x128xbf16>, tensor<3x2x600x128xbf16>)
      key_lengths(%lens : tensor<3xi32>)
      -> tensor<3x16x1x128xbf16>, tensor<3x16x1xf32>
  return %o, %lse : tensor<3x16x1x128xbf16>, tensor<3x16x1xf32>
}

func.func @window_decode(%q: tensor<2x8x1x64xbf16>, %k: tensor<2x2x3000x64xbf16>, %v: tensor<2x2x3000x64xbf16>)
    -> (tensor<2x8x1x64xbf16>, tensor<2x8x1xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x8x1x64xbf16>, tensor<2x2x3000x64xbf16>, tensor<2x2x3000x64xbf16>)
      {mask = #attn.mask<sliding_window>, alignment = #attn.alignment<bottom_right>, window_left = 1023, window_right = 0}
      -> tensor<2x8x1x64xbf16>, tensor<2x8x1xf32>
  return %o, %lse : tensor<2x8x1x64xbf16>, tensor<2x8x1xf32>
}
