// Per-batch key lengths in the forward kernels: the kernel takes key_lengths
// (after the seed's place), each tile loads its batch's length and clamps it
// to [0, Nk] (attn::sizesAtBatch), and bottom-right takes the mask offset
// L - Nq from it (Nq: the op's 4 query rows, also where the query heads are
// packed into rows of their K/V head, which the lengths allow: 6 tiles of
// 16 rows). The wgmma forward loads K and V by cp.async (rows clamped to
// L - 1) instead of TMA: no tensor map. On every family.
// RUN: attnfuse-opt %s --convert-attn-to-gpu 2>&1 | FileCheck %s
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=mma_sync 2>&1 | FileCheck %s --check-prefix=LEN
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=simt 2>&1 | FileCheck %s --check-prefix=LEN
// The pipeline keeps the lengths on the op (one kernel, no keep mask built
// on the device first) and launches the packed tiles; mma=auto splits the
// keys of a long decode on mma_sync, its combine kernel after it.
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %s --entry=mtp --target=cuda --check=none 2>&1 | FileCheck %s --check-prefix=MOCK
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %s --entry=decode --target=cuda --check=none 2>&1 | FileCheck %s --check-prefix=MOCK-SPLIT

// CHECK-LABEL: func.func @mtp(
// CHECK: gpu.launch_func  @attn_kernels::@attn_fwd_0 blocks in (%c6, {{.*}} args({{.*}}, %{{.*}} : memref<3xi32>, %{{.*}} : memref<3x2x16x64xbf16>
// CHECK: gpu.func @attn_fwd_0(
// CHECK-SAME: attn.args = ["q", "k", "v", "key_lengths", "o", "lse"]
// CHECK-SAME: attn.family = "wgmma"
// CHECK-NOT: attn.tensor_maps
// CHECK: %[[RAW:.*]] = memref.load %arg3[%{{.*}}] : memref<3xi32>
// CHECK: %[[I:.*]] = arith.index_cast %[[RAW]] : i32 to index
// CHECK: %[[LO:.*]] = arith.maxsi %[[I]], %c0{{.*}} : index
// CHECK: %[[L:.*]] = arith.minsi %[[LO]], %c300 : index
// CHECK: arith.subi %[[L]], %c4 : index
// LEN: gpu.func @attn_fwd_0({{.*}}, %arg3: memref<3xi32>
// LEN-SAME: attn.args = ["q", "k", "v", "key_lengths", "o", "lse"]
// LEN: %[[RAW:.*]] = memref.load %arg3[%{{.*}}] : memref<3xi32>
// LEN: %[[I:.*]] = arith.index_cast %[[RAW]] : i32 to index
// LEN: arith.maxsi %[[I]], %c0{{.*}} : index
// MOCK: mock-cuda: launch attn_fwd_0 grid=6,1,1
// MOCK-NEXT: attnfuse-run: @mtp check=none: RAN
// MOCK-SPLIT: mock-cuda: launch attn_fwd_0 grid=32,1,{{[0-9]+}} block=128
// MOCK-SPLIT-NEXT: mock-cuda: launch attn_fwd_0_combine
// MOCK-SPLIT-NEXT: attnfuse-run: @decode check=none: RAN
func.func @mtp(%q: tensor<3x8x4x64xbf16>, %k: tensor<3x2x300x64xbf16>, %v: tensor<3x2x300x64xbf16>,
               %lens: tensor<3xi32>) -> (tensor<3x8x4x64xbf16>, tensor<3x8x4xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<3x8x4x64xbf16>, tensor<3x2x300x64xbf16>, tensor<3x2x300x64xbf16>)
      key_lengths(%lens : tensor<3xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<3x8x4x64xbf16>, tensor<3x8x4xf32>
  return %o, %lse : tensor<3x8x4x64xbf16>, tensor<3x8x4xf32>
}

func.func @decode(%q: tensor<4x32x1x128xbf16>, %k: tensor<4x8x4096x128xbf16>, %v: tensor<4x8x4096x128xbf16>,
                  %lens: tensor<4xi64>) -> tensor<4x32x1x128xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<4x32x1x128xbf16>, tensor<4x8x4096x128xbf16>, tensor<4x8x4096x128xbf16>)
      key_lengths(%lens : tensor<4xi64>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<4x32x1x128xbf16>
  return %o : tensor<4x32x1x128xbf16>
}
