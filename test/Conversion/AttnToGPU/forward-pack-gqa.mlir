// pack-gqa (the default): a forward with grouped query heads whose rows
// fill tiles of 64 badly (decode, speculative decoding) computes over its
// K/V heads, the group's query rows as rows: Q, O and lse are viewed as
// [B, Hkv, G * Nq, ...] (memref.reinterpret_cast, no copy), K and V are
// read once per group, and the structural mask reads each row's position
// (row mod Nq: arith.remui by Nq; 0 where Nq = 1).
// RUN: attnfuse-opt %s --convert-attn-to-gpu -split-input-file 2>&1 | FileCheck %s
// The same on mma_sync (split keys: the partials viewed alike) and simt.
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=mma_sync -split-input-file 2>&1 | FileCheck %s --check-prefix=MMA
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=simt -split-input-file 2>&1 | FileCheck %s --check-prefix=SIMT
// pack-gqa=false: every query head its own tiles.
// RUN: attnfuse-opt %s --convert-attn-to-gpu=pack-gqa=false -split-input-file 2>&1 | FileCheck %s --check-prefix=OFF
// The whole pipeline on the stand-in driver: the host's views lower, the
// wgmma forward's Q and O tensor maps cover the packed view (48 rows a K/V
// head, 2 K/V heads, 2 batches), one CTA per K/V head (4); on mma_sync 4
// tiles with 4 splits, and the combine over the 2 x 2 x 48 rows.
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %s --entry=mtp --target=cuda --check=none 2>&1 | FileCheck %s --check-prefix=MOCK
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %s --entry=mtp --target=cuda --check=none --pipeline-options=mma=mma_sync 2>&1 | FileCheck %s --check-prefix=MOCK-MMA
// The cost report counts the packed rows' visible pairs by position (2 x 8
// heads x (12 x 989 + 0 + 1 + ... + 11) pairs x 512 FLOP) and K and V once
// per K/V head (2 x 2 heads x 1000 keys x 256 x 2 bytes).
// RUN: attnfuse-opt %s --convert-attn-to-gpu=report-cost=true -split-input-file 2>&1 | FileCheck %s --check-prefix=COST

// CHECK-LABEL: func.func @mtp(
// CHECK: %[[Q:.*]] = memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [2, 2, 48, 128], strides: [12288, 6144, 128, 1] : memref<2x8x12x128xbf16> to memref<2x2x48x128xbf16>
// CHECK: %[[O:.*]] = memref.alloc() : memref<2x8x12x128xbf16>
// CHECK: %[[OV:.*]] = memref.reinterpret_cast %[[O]] {{.*}} to memref<2x2x48x128xbf16>
// CHECK: %[[L:.*]] = memref.alloc() : memref<2x8x12xf32>
// CHECK: %[[LV:.*]] = memref.reinterpret_cast %[[L]] {{.*}} to memref<2x2x48xf32>
// CHECK: gpu.launch_func  @attn_kernels::@attn_fwd_0 {{.*}}args(%[[Q]] : memref<2x2x48x128xbf16>, {{.*}}, %[[OV]] : memref<2x2x48x128xbf16>, %[[LV]] : memref<2x2x48xf32>
// CHECK: bufferization.to_tensor %[[O]]
// CHECK: gpu.func @attn_fwd_0(
// CHECK-SAME: attn.family = "wgmma"
// CHECK: arith.remui %{{.*}}, %c12{{(_[0-9]+)?}} : index
// MMA-LABEL: func.func @mtp(
// MMA: gpu.launch_func  @attn_kernels::@attn_fwd_0 {{.*}}args(%{{.*}} : memref<2x2x48x128xbf16>, {{.*}} : memref<{{[0-9]+}}x2x48x128xf32>, %{{.*}} : memref<{{[0-9]+}}x2x48xf32>)
// MMA: gpu.launch_func  @attn_kernels::@attn_fwd_0_combine {{.*}} : memref<2x2x48x128xbf16>, %{{.*}} : memref<2x2x48xf32>)
// MMA: gpu.func @attn_fwd_0(
// MMA: arith.remui %{{.*}}, %c12{{(_[0-9]+)?}} : index
// SIMT-LABEL: func.func @mtp(
// SIMT: gpu.launch_func {{.*}}args(%{{.*}} : memref<2x2x48x128xbf16>
// SIMT: arith.remui %{{.*}}, %c12{{(_[0-9]+)?}} : index
// OFF-LABEL: func.func @mtp(
// OFF-NOT: reinterpret_cast
// OFF: gpu.launch_func  @attn_kernels::@attn_fwd_0 {{.*}}args(%{{.*}} : memref<2x8x12x128xbf16>
// OFF-NOT: arith.remui %{{.*}}, %c12{{(_[0-9]+)?}} : index
// MOCK: tensor map dtype=9 rank=4 dims=128,48,2,2 strides=256,12288,24576 box=64,64,1,1
// MOCK: launch attn_fwd_0 grid=4,1,1 block=384,1,1
// MOCK: @mtp check=none: RAN result0 tensor<2x8x12x128xbf16>; result1 tensor<2x8x12xf32>
// MOCK-MMA: launch attn_fwd_0 grid=4,1,4 block=128,1,1
// MOCK-MMA-NEXT: launch attn_fwd_0_combine grid=48,1,1 block=128,1,1
// COST: remark: convert-attn-to-gpu: cost of attn_fwd_0 (wgmma): 0.09776 GFLOP (the visible pairs; {{.*}} K/V 2.048,
func.func @mtp(%q: tensor<2x8x12x128xbf16>, %k: tensor<2x2x1000x128xbf16>, %v: tensor<2x2x1000x128xbf16>)
    -> (tensor<2x8x12x128xbf16>, tensor<2x8x12xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x8x12x128xbf16>, tensor<2x2x1000x128xbf16>, tensor<2x2x1000x128xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x8x12x128xbf16>, tensor<2x8x12xf32>
  return %o, %lse : tensor<2x8x12x128xbf16>, tensor<2x8x12xf32>
}

// -----

// Decode against a sliding window (Nq = 1: every row at position 0) and a
// padding keep mask the same for every head: packed.
// CHECK-LABEL: func.func @window_decode(
// CHECK: gpu.launch_func  @attn_kernels::@attn_fwd_0 {{.*}}args(%{{[^ ]*}} : memref<2x2x4x64xbf16>
// CHECK-SAME: memref<2x1x1x512xi1>
func.func @window_decode(%q: tensor<2x8x1x64xbf16>, %k: tensor<2x2x512x64xbf16>, %v: tensor<2x2x512x64xbf16>,
                         %keep: tensor<2x1x1x512xi1>) -> tensor<2x8x1x64xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<2x8x1x64xbf16>, tensor<2x2x512x64xbf16>, tensor<2x2x512x64xbf16>)
      keep(%keep : tensor<2x1x1x512xi1>)
      {mask = #attn.mask<sliding_window>, alignment = #attn.alignment<bottom_right>, window_left = 127, window_right = 0}
      -> tensor<2x8x1x64xbf16>
  return %o : tensor<2x8x1x64xbf16>
}

// -----

// One query row read in place from [B, N, H, D] (flash_attn_func's decode):
// the permuted view's rows of a K/V head follow each other, so it packs.
// CHECK-LABEL: func.func @decode_bnhd(
// CHECK: %[[T:.*]] = memref.transpose
// CHECK: memref.reinterpret_cast %[[T]] to offset: [0], sizes: [2, 2, 4, 64], strides: [512, 256, 64, 1] : memref<2x8x1x64xbf16, strided<[512, 64, 512, 1]>> to memref<2x2x4x64xbf16>
func.func @decode_bnhd(%qt: tensor<2x1x8x64xbf16>, %k: tensor<2x2x512x64xbf16>, %v: tensor<2x2x512x64xbf16>)
    -> tensor<2x8x1x64xbf16> {
  %init = tensor.empty() : tensor<2x8x1x64xbf16>
  %q = linalg.transpose ins(%qt : tensor<2x1x8x64xbf16>) outs(%init : tensor<2x8x1x64xbf16>) permutation = [0, 2, 1, 3]
  %o = attn.attention ins(%q, %k, %v : tensor<2x8x1x64xbf16>, tensor<2x2x512x64xbf16>, tensor<2x2x512x64xbf16>)
      -> tensor<2x8x1x64xbf16>
  return %o : tensor<2x8x1x64xbf16>
}

// -----

// Not packed: a prefill whose heads fill their tiles (and keep their
// causal block skipping), a bias that differs between the query heads,
// dropout, and Q in [B, N, H, D] with Nq > 1 (a head's rows are H rows
// apart).
// CHECK-LABEL: func.func @unpacked(
// CHECK-NOT: reinterpret_cast
// CHECK: memref<1x8x1024x64xbf16>
// CHECK: return
// CHECK-NOT: reinterpret_cast
// CHECK: memref<1x8x1x64xbf16>
// CHECK: return
// CHECK-NOT: reinterpret_cast
// CHECK: memref<1x8x1x64xbf16>
// CHECK: return
// CHECK-NOT: reinterpret_cast
// CHECK: memref<1x8x16x64xbf16, strided<[8192, 64, 512, 1]>>
// CHECK: return
func.func @unpacked(%q: tensor<1x8x1024x64xbf16>, %k: tensor<1x2x1024x64xbf16>, %v: tensor<1x2x1024x64xbf16>)
    -> tensor<1x8x1024x64xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x8x1024x64xbf16>, tensor<1x2x1024x64xbf16>, tensor<1x2x1024x64xbf16>)
      {mask = #attn.mask<causal>} -> tensor<1x8x1024x64xbf16>
  return %o : tensor<1x8x1024x64xbf16>
}
func.func @bias_heads(%q: tensor<1x8x1x64xbf16>, %k: tensor<1x2x512x64xbf16>, %v: tensor<1x2x512x64xbf16>,
                      %bias: tensor<1x8x1x512xbf16>) -> tensor<1x8x1x64xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x8x1x64xbf16>, tensor<1x2x512x64xbf16>, tensor<1x2x512x64xbf16>)
      bias(%bias : tensor<1x8x1x512xbf16>) -> tensor<1x8x1x64xbf16>
  return %o : tensor<1x8x1x64xbf16>
}
func.func @dropout(%q: tensor<1x8x1x64xbf16>, %k: tensor<1x2x512x64xbf16>, %v: tensor<1x2x512x64xbf16>,
                   %seed: i64) -> tensor<1x8x1x64xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x8x1x64xbf16>, tensor<1x2x512x64xbf16>, tensor<1x2x512x64xbf16>)
      seed(%seed) {dropout_p = 0.1 : f32} -> tensor<1x8x1x64xbf16>
  return %o : tensor<1x8x1x64xbf16>
}
func.func @bnhd(%qt: tensor<1x16x8x64xbf16>, %k: tensor<1x2x512x64xbf16>, %v: tensor<1x2x512x64xbf16>)
    -> tensor<1x8x16x64xbf16> {
  %init = tensor.empty() : tensor<1x8x16x64xbf16>
  %q = linalg.transpose ins(%qt : tensor<1x16x8x64xbf16>) outs(%init : tensor<1x8x16x64xbf16>) permutation = [0, 2, 1, 3]
  %o = attn.attention ins(%q, %k, %v : tensor<1x8x16x64xbf16>, tensor<1x2x512x64xbf16>, tensor<1x2x512x64xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>} -> tensor<1x8x16x64xbf16>
  return %o : tensor<1x8x16x64xbf16>
}
