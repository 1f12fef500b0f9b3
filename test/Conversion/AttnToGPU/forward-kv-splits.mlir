// The mma_sync forward with split keys (kv-splits; FlashDecoding): grid z
// = the split; each split's CTA takes its share of the tile's key blocks
// and writes f32 partials (O normalized by its own row sums, and lse) at
// batch index s * B + b; a second kernel, the simt family's combine, merges
// them into O and lse (one warp per row). By default (kv-splits=0) the
// keys are split where the tiles fill fewer than 4 CTAs per SM (132 SMs on
// sm_90a) and each split keeps 4+ key blocks: decode with 16 tiles and 32
// key blocks of 32 gets 8 splits; a prefill with 1024 tiles none.
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=mma_sync 2>&1 | FileCheck %s
// kv-splits=1: no split; a count above the key blocks is clamped to them.
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync kv-splits=1" 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync kv-splits=1000" 2>&1 | FileCheck %s --check-prefix=CLAMP
// Only mma_sync splits: wgmma (the default on sm_90a) falls back to it with
// a remark; simt refuses with a located error.
// RUN: attnfuse-opt %s --convert-attn-to-gpu=kv-splits=3 2>&1 | FileCheck %s --check-prefix=WGMMA
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=simt kv-splits=2" 2>&1 | FileCheck %s --check-prefix=SIMT
// The host plan on the stand-in driver: the split forward, then the combine.
// With pack-gqa the pipeline packs the decode's query heads into rows of
// their K/V head first (4 tiles of 4 rows, 8 splits each); without it
// (the default until measured faster), 16 tiles.
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %s --entry=decode --target=cuda --check=none --pipeline-options="mma=mma_sync pack-gqa=true" 2>&1 | FileCheck %s --check-prefix=MOCK
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %s --entry=decode --target=cuda --check=none --pipeline-options=mma=mma_sync 2>&1 | FileCheck %s --check-prefix=MOCK-UNPACKED
// mma=auto on sm_90a stays wgmma (no split) for both (the split mma_sync
// forward is taken by name until measured faster).
// RUN: attnfuse-opt %s --convert-attn-to-gpu 2>&1 | FileCheck %s --check-prefix=AUTO

// CHECK-NOT: remark
// CHECK-LABEL: func.func @decode(
// CHECK: %[[OP:.*]] = memref.alloc() : memref<16x8x1x128xf32>
// CHECK: %[[LP:.*]] = memref.alloc() : memref<16x8x1xf32>
// CHECK: gpu.launch_func  @attn_kernels::@attn_fwd_0 {{.*}}, %[[OP]] : memref<16x8x1x128xf32>, %[[LP]] : memref<16x8x1xf32>)
// CHECK: gpu.launch_func  @attn_kernels::@attn_fwd_0_combine {{.*}}args(%[[OP]] : memref<16x8x1x128xf32>, %[[LP]] : memref<16x8x1xf32>, %{{.*}} : memref<2x8x1x128xbf16>, %{{.*}} : memref<2x8x1xf32>)
// CHECK-LABEL: func.func @prefill(
// CHECK: gpu.launch_func  @attn_kernels::@attn_fwd_1 {{.*}} : memref<4x32x1024x64xbf16>, %{{.*}} : memref<4x32x1024xf32>)
// CHECK-NOT: combine
// CHECK: gpu.func @attn_fwd_0({{.*}}attn.args = ["q", "k", "v", "o_partial", "lse_partial"]{{.*}}attn.grid = array<i64: 1, 16, 8>
// CHECK: gpu.block_id  z
// CHECK: gpu.func @attn_fwd_0_combine({{.*}}attn.args = ["o_partial", "lse_partial", "o", "lse"]{{.*}}attn.family = "simt", attn.grid = array<i64: 4, 1, 1>
// CHECK-COUNT-8: math.exp
// CHECK: math.log
// CHECK: gpu.func @attn_fwd_1({{.*}}attn.args = ["q", "k", "v", "o", "lse"]{{.*}}attn.grid = array<i64: 8, 128, 1>

// NONE-NOT: combine
// NONE: gpu.func @attn_fwd_0({{.*}}attn.grid = array<i64: 1, 16, 1>

// CLAMP: gpu.func @attn_fwd_0({{.*}}attn.grid = array<i64: 1, 16, 32>
// CLAMP: gpu.func @attn_fwd_1({{.*}}attn.grid = array<i64: 8, 128, 16>

// WGMMA: remark: convert-attn-to-gpu: mma=wgmma falls back to mma_sync: kv-splits > 1: the mma_sync forward splits the keys
// WGMMA: gpu.func @attn_fwd_0({{.*}}attn.family = "mma_sync", attn.grid = array<i64: 1, 16, 3>


// MOCK: launch attn_fwd_0 grid=1,4,8 block=128,1,1
// MOCK-NEXT: launch attn_fwd_0_combine grid=4,1,1 block=128,1,1 shared=0

// MOCK-UNPACKED: launch attn_fwd_0 grid=1,16,8 block=128,1,1
// MOCK-UNPACKED-NEXT: launch attn_fwd_0_combine grid=4,1,1 block=128,1,1 shared=0

// AUTO-NOT: remark
// AUTO: gpu.func @attn_fwd_0({{.*}}attn.family = "wgmma"
// AUTO: gpu.func @attn_fwd_1({{.*}}attn.family = "wgmma"

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
