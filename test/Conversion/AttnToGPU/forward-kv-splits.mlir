// The mma_sync forward with split keys (kv-splits; FlashDecoding): grid z
// = the split; each split's CTA takes its share of the tile's key blocks
// and writes f32 partials (O normalized by its own row sums, and lse) at
// batch index s * B + b; a second kernel, the simt family's combine, merges
// them into O and lse (one warp per row). By default (kv-splits=0) the
// keys are split where the tiles fill fewer than 4 CTAs per SM (132 SMs on
// sm_90a) and each split keeps 4+ key blocks: decode with 16 tiles (of 64
// rows: one m16 tile per warp where Nq fits) and 16 key blocks of 64 gets 4
// splits; a prefill with 1024 tiles none. The decodes' query heads stay
// unpacked here (pack-gqa=false; forward-pack-gqa.mlir packs them).
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync pack-gqa=false" 2>&1 | FileCheck %s
// kv-splits=1: no split; a count above the key blocks is clamped to them.
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync kv-splits=1 pack-gqa=false" 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync kv-splits=1000 pack-gqa=false" 2>&1 | FileCheck %s --check-prefix=CLAMP
// Only mma_sync splits: wgmma (the default on sm_90a) falls back to it with
// a remark; simt refuses with a located error.
// RUN: attnfuse-opt %s --convert-attn-to-gpu="kv-splits=3 pack-gqa=false" 2>&1 | FileCheck %s --check-prefix=WGMMA
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=simt kv-splits=2 pack-gqa=false" 2>&1 | FileCheck %s --check-prefix=SIMT
// The host plan on the stand-in driver: the split forward, then the combine.
// With pack-gqa (the default) the pipeline packs the decode's query heads into rows of
// their K/V head first (4 tiles of 4 rows, 4 splits each); without it
// (pack-gqa=false), 16 tiles.
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %s --entry=decode --target=cuda --check=none --pipeline-options="mma=mma_sync pack-gqa=true" 2>&1 | FileCheck %s --check-prefix=MOCK
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %s --entry=decode --target=cuda --check=none --pipeline-options="mma=mma_sync pack-gqa=false" 2>&1 | FileCheck %s --check-prefix=MOCK-UNPACKED
// mma=auto on sm_90a takes the split mma_sync forward where its automatic
// split count would be 8 or more (decode_long: 8 tiles, 128 key blocks: 32
// splits), else the unsplit wgmma one (decode: 4 splits; prefill: none);
// kv-splits=1 keeps wgmma.
// RUN: attnfuse-opt %s --convert-attn-to-gpu=pack-gqa=false 2>&1 | FileCheck %s --check-prefix=AUTO
// RUN: attnfuse-opt %s --convert-attn-to-gpu="kv-splits=1 pack-gqa=false" 2>&1 | FileCheck %s --check-prefix=AUTO1

// CHECK-NOT: remark
// CHECK-LABEL: func.func @decode(
// CHECK: %[[OP:.*]] = memref.alloc() : memref<8x8x1x128xf32>
// CHECK: %[[LP:.*]] = memref.alloc() : memref<8x8x1xf32>
// CHECK: gpu.launch_func  @attn_kernels::@attn_fwd_0 {{.*}}, %[[OP]] : memref<8x8x1x128xf32>, %[[LP]] : memref<8x8x1xf32>)
// CHECK: gpu.launch_func  @attn_kernels::@attn_fwd_0_combine {{.*}}args(%[[OP]] : memref<8x8x1x128xf32>, %[[LP]] : memref<8x8x1xf32>, %{{.*}} : memref<2x8x1x128xbf16>, %{{.*}} : memref<2x8x1xf32>)
// CHECK-LABEL: func.func @prefill(
// CHECK: gpu.launch_func  @attn_kernels::@attn_fwd_1 {{.*}} : memref<4x32x1024x64xbf16>, %{{.*}} : memref<4x32x1024xf32>)
// CHECK-NOT: combine
// CHECK-LABEL: func.func @decode_long(
// CHECK: gpu.func @attn_fwd_0({{.*}}attn.args = ["q", "k", "v", "o_partial", "lse_partial"]{{.*}}attn.grid = array<i64: 1, 16, 4>
// CHECK: gpu.block_id  z
// CHECK: gpu.func @attn_fwd_0_combine({{.*}}attn.args = ["o_partial", "lse_partial", "o", "lse"]{{.*}}attn.family = "simt", attn.grid = array<i64: 4, 1, 1>
// CHECK-COUNT-4: math.exp
// CHECK: math.log
// CHECK: gpu.func @attn_fwd_1({{.*}}attn.args = ["q", "k", "v", "o", "lse"]{{.*}}attn.grid = array<i64: 8, 128, 1>

// NONE-NOT: combine
// NONE: gpu.func @attn_fwd_0({{.*}}attn.grid = array<i64: 1, 16, 1>

// CLAMP: gpu.func @attn_fwd_0({{.*}}attn.grid = array<i64: 1, 16, 16>
// CLAMP: gpu.func @attn_fwd_1({{.*}}attn.grid = array<i64: 8, 128, 16>

// WGMMA: remark: convert-attn-to-gpu: mma=wgmma falls back to mma_sync: kv-splits > 1: the mma_sync forward splits the keys
// WGMMA: gpu.func @attn_fwd_0({{.*}}attn.family = "mma_sync", attn.grid = array<i64: 1, 16, 3>


// MOCK: launch attn_fwd_0 grid=1,4,4 block=128,1,1
// MOCK-NEXT: launch attn_fwd_0_combine grid=4,1,1 block=128,1,1 shared=0

// MOCK-UNPACKED: launch attn_fwd_0 grid=1,16,4 block=128,1,1
// MOCK-UNPACKED-NEXT: launch attn_fwd_0_combine grid=4,1,1 block=128,1,1 shared=0

// AUTO-NOT: remark
// AUTO: gpu.func @attn_fwd_0({{.*}}attn.family = "wgmma"
// AUTO: gpu.func @attn_fwd_1({{.*}}attn.family = "wgmma"
// AUTO: gpu.func @attn_fwd_2({{.*}}attn.family = "mma_sync", attn.grid = array<i64: 1, 8, 32>
// AUTO: gpu.func @attn_fwd_2_combine(

// AUTO1-NOT: remark
// AUTO1-NOT: combine
// AUTO1: gpu.func @attn_fwd_2({{.*}}attn.family = "wgmma"

// SIMT: forward-kv-splits.mlir:[[@LINE+3]]:{{[0-9]+}}: error: 'attn.attention' op convert-attn-to-gpu: kv-splits = 2: the simt forward does not split the keys (the mma_sync forward does)
func.func @decode(%q: tensor<2x8x1x128xbf16>, %k: tensor<2x2x1000x128xbf16>, %v: tensor<2x2x1000x128xbf16>)
    -> (tensor<2x8x1x128xbf16>, tensor<2x8x1xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x8x1x128xbf16>, tensor<2x2x1000x128xbf16>, tensor<2x2x1000x128xbf16>)
      -> tensor<2x8x1x128xbf16>, tensor<2x8x1xf32>
  return %o, %lse : tensor<2x8x1x128xbf16>, tensor<2x8x1xf32>
}

func.func @prefill(%q: tensor<4x32x1024x64xbf16>, %k: tensor<4x32x1024x64xbf16>, %v: tensor<4x32x1024x64xbf16>)
    -> (tensor<4x32x1024x64xbf16>, tensor<4x32x1024xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<4x32x1024x64xbf16>, tensor<4x32x1024x64xbf16>, tensor<4x32x1024x64xbf16>)
      -> tensor<4x32x1024x64xbf16>, tensor<4x32x1024xf32>
  return %o, %lse : tensor<4x32x1024x64xbf16>, tensor<4x32x1024xf32>
}

func.func @decode_long(%q: tensor<1x8x1x128xbf16>, %k: tensor<1x2x8192x128xbf16>, %v: tensor<1x2x8192x128xbf16>)
    -> (tensor<1x8x1x128xbf16>, tensor<1x8x1xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x8x1x128xbf16>, tensor<1x2x8192x128xbf16>, tensor<1x2x8192x128xbf16>)
      -> tensor<1x8x1x128xbf16>, tensor<1x8x1xf32>
  return %o, %lse : tensor<1x8x1x128xbf16>, tensor<1x8x1xf32>
}
