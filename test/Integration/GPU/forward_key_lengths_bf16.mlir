// REQUIRES: cuda
// Per-batch key lengths in the forward kernels (KernelPlan::keyLengths): each
// tile reads its batch's length L = clamp(key_lengths[b], 0, Nk), visits only
// the key blocks below it, masks the keys from L on and, bottom-right, takes
// the mask offset L - Nq; the loads read no key row past L - 1. O and lse
// against the naive reference on the GPU (which lowers the op itself) and
// fp64, on every family.
//
// Decode over a cache (Nq = 4, speculative decoding), GQA 8/2, d = 64, causal
// bottom-right: lengths 177 (partial block), 0 (no key: O = 0, lse = -inf),
// 300 (all). The query heads packed (pack-gqa, the default) and not, the
// split mma_sync forward (automatic and 5 splits) and simt.
// RUN: attnfuse-run %s --entry=mtp --target=cuda --check=fa --seed=41
// RUN: attnfuse-run %s --entry=mtp --target=cuda --check=fa --seed=41 --pipeline-options="pack-gqa=false"
// RUN: attnfuse-run %s --entry=mtp --target=cuda --check=fa --seed=42 --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --entry=mtp --target=cuda --check=fa --seed=42 --pipeline-options="mma=mma_sync kv-splits=5"
// RUN: attnfuse-run %s --entry=mtp --target=cuda --check=fa --seed=43 --pipeline-options="mma=simt"
//
// Decode (Nq = 1), GQA 32/8, d = 128, 4096 keys, i64 lengths out of range
// (-5 acts as 0, 9000 as 4096) and one key: wgmma, split mma_sync.
// RUN: attnfuse-run %s --entry=decode --target=cuda --check=fa --seed=44
// RUN: attnfuse-run %s --entry=decode --target=cuda --check=fa --seed=45 --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --entry=decode --target=cuda --check=fa --seed=45 --pipeline-options="mma=mma_sync kv-splits=7"
//
// A padded prefill batch, f16, 200 queries over 333 keys, causal
// bottom-right: with L = 100 the first 100 rows see no key; a top-left
// sliding window with lengths (its offset does not follow them).
// RUN: attnfuse-run %s --entry=prefill --target=cuda --check=fa --seed=46
// RUN: attnfuse-run %s --entry=prefill --target=cuda --check=fa --seed=46 --pipeline-options="mma=mma_sync"
// RUN: attnfuse-run %s --entry=window --target=cuda --check=fa --seed=47
// RUN: attnfuse-run %s --entry=window --target=cuda --check=fa --seed=47 --pipeline-options="mma=mma_sync"
//
// What a cache holds past a batch's length never matters: K and V with NaN
// in every row from L on give bitwise the same O and lse as the same cache
// with those rows zero (a TMA box or an unclamped row would read the NaNs,
// and 0 * NaN = NaN reaches O).
// RUN: rm -rf %t && mkdir -p %t
// RUN: attnfuse-run %s --entry=garbage --target=cuda --check=none --dump-outputs=%t/w
// RUN: cmp %t/w/result0.npy %t/w/result2.npy
// RUN: cmp %t/w/result1.npy %t/w/result3.npy
// RUN: attnfuse-run %s --entry=garbage --target=cuda --check=none --dump-outputs=%t/m --pipeline-options="mma=mma_sync kv-splits=3"
// RUN: cmp %t/m/result0.npy %t/m/result2.npy
// RUN: cmp %t/m/result1.npy %t/m/result3.npy
// RUN: attnfuse-run %s --entry=garbage --target=cuda --check=none --dump-outputs=%t/s --pipeline-options="mma=simt"
// RUN: cmp %t/s/result0.npy %t/s/result2.npy
// RUN: cmp %t/s/result1.npy %t/s/result3.npy

func.func @mtp(%q: tensor<3x8x4x64xbf16>, %k: tensor<3x2x300x64xbf16>, %v: tensor<3x2x300x64xbf16>)
    -> (tensor<3x8x4x64xbf16>, tensor<3x8x4xf32>) {
  %lens = arith.constant dense<[177, 0, 300]> : tensor<3xi32>
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<3x8x4x64xbf16>, tensor<3x2x300x64xbf16>, tensor<3x2x300x64xbf16>)
      key_lengths(%lens : tensor<3xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<3x8x4x64xbf16>, tensor<3x8x4xf32>
  return %o, %lse : tensor<3x8x4x64xbf16>, tensor<3x8x4xf32>
}

func.func @decode(%q: tensor<4x32x1x128xbf16>, %k: tensor<4x8x4096x128xbf16>, %v: tensor<4x8x4096x128xbf16>)
    -> (tensor<4x32x1x128xbf16>, tensor<4x32x1xf32>) {
  %lens = arith.constant dense<[2500, -5, 9000, 1]> : tensor<4xi64>
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<4x32x1x128xbf16>, tensor<4x8x4096x128xbf16>, tensor<4x8x4096x128xbf16>)
      key_lengths(%lens : tensor<4xi64>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<4x32x1x128xbf16>, tensor<4x32x1xf32>
  return %o, %lse : tensor<4x32x1x128xbf16>, tensor<4x32x1xf32>
}

func.func @prefill(%q: tensor<2x4x200x64xf16>, %k: tensor<2x4x333x64xf16>, %v: tensor<2x4x333x64xf16>)
    -> (tensor<2x4x200x64xf16>, tensor<2x4x200xf32>) {
  %lens = arith.constant dense<[333, 100]> : tensor<2xi32>
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x4x200x64xf16>, tensor<2x4x333x64xf16>, tensor<2x4x333x64xf16>)
      key_lengths(%lens : tensor<2xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x4x200x64xf16>, tensor<2x4x200xf32>
  return %o, %lse : tensor<2x4x200x64xf16>, tensor<2x4x200xf32>
}

func.func @window(%q: tensor<2x4x200x64xbf16>, %k: tensor<2x4x333x64xbf16>, %v: tensor<2x4x333x64xbf16>)
    -> (tensor<2x4x200x64xbf16>, tensor<2x4x200xf32>) {
  %lens = arith.constant dense<[150, 290]> : tensor<2xi32>
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x4x200x64xbf16>, tensor<2x4x333x64xbf16>, tensor<2x4x333x64xbf16>)
      key_lengths(%lens : tensor<2xi32>)
      {mask = #attn.mask<sliding_window>, window_left = 40, window_right = 9}
      -> tensor<2x4x200x64xbf16>, tensor<2x4x200xf32>
  return %o, %lse : tensor<2x4x200x64xbf16>, tensor<2x4x200xf32>
}

#map = affine_map<(b, h, n, d) -> (b, h, n, d)>
func.func @garbage(%q: tensor<2x8x3x64xbf16>, %k: tensor<2x2x160x64xbf16>, %v: tensor<2x2x160x64xbf16>)
    -> (tensor<2x8x3x64xbf16>, tensor<2x8x3xf32>, tensor<2x8x3x64xbf16>, tensor<2x8x3xf32>) {
  %lens = arith.constant dense<[37, 130]> : tensor<2xi32>
  // K and V with their rows from each batch's length NaN, and zero.
  %init = tensor.empty() : tensor<2x2x160x64xbf16>
  %kn, %vn, %kz, %vz = linalg.generic {indexing_maps = [#map, #map, #map, #map, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%k, %v : tensor<2x2x160x64xbf16>, tensor<2x2x160x64xbf16>)
      outs(%init, %init, %init, %init : tensor<2x2x160x64xbf16>, tensor<2x2x160x64xbf16>, tensor<2x2x160x64xbf16>, tensor<2x2x160x64xbf16>) {
  ^bb0(%x: bf16, %y: bf16, %o0: bf16, %o1: bf16, %o2: bf16, %o3: bf16):
    %b = linalg.index 0 : index
    %n = linalg.index 2 : index
    %l = tensor.extract %lens[%b] : tensor<2xi32>
    %li = arith.index_cast %l : i32 to index
    %past = arith.cmpi sge, %n, %li : index
    %nan = arith.constant 0x7FC0 : bf16
    %zero = arith.constant 0.0 : bf16
    %xn = arith.select %past, %nan, %x : bf16
    %yn = arith.select %past, %nan, %y : bf16
    %xz = arith.select %past, %zero, %x : bf16
    %yz = arith.select %past, %zero, %y : bf16
    linalg.yield %xn, %yn, %xz, %yz : bf16, bf16, bf16, bf16
  } -> (tensor<2x2x160x64xbf16>, tensor<2x2x160x64xbf16>, tensor<2x2x160x64xbf16>, tensor<2x2x160x64xbf16>)
  %o1, %lse1 = attn.attention ins(%q, %kn, %vn : tensor<2x8x3x64xbf16>, tensor<2x2x160x64xbf16>, tensor<2x2x160x64xbf16>)
      key_lengths(%lens : tensor<2xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x8x3x64xbf16>, tensor<2x8x3xf32>
  %o2, %lse2 = attn.attention ins(%q, %kz, %vz : tensor<2x8x3x64xbf16>, tensor<2x2x160x64xbf16>, tensor<2x2x160x64xbf16>)
      key_lengths(%lens : tensor<2xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x8x3x64xbf16>, tensor<2x8x3xf32>
  return %o1, %lse1, %o2, %lse2 : tensor<2x8x3x64xbf16>, tensor<2x8x3xf32>, tensor<2x8x3x64xbf16>, tensor<2x8x3xf32>
}
