// Paged K/V in the forward kernels: the kernel takes the block table (after
// the key lengths), reads each key row from slot k mod 16 of page
// table[b, k / 16] (attn::buildPagedPosition: an id out of range reads page
// 0, and the masks hide its keys), by cp.async (no tensor map on wgmma);
// the query heads stay packed into rows of their K/V head (6 tiles). On
// every family; the pipeline launches one kernel (no gathered K/V).
// RUN: attnfuse-opt %s --convert-attn-to-gpu 2>&1 | FileCheck %s
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=mma_sync 2>&1 | FileCheck %s --check-prefix=PAGE
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=simt 2>&1 | FileCheck %s --check-prefix=PAGE
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %s --entry=paged --target=cuda --check=none 2>&1 | FileCheck %s --check-prefix=MOCK

// CHECK-LABEL: func.func @paged(
// CHECK: gpu.launch_func  @attn_kernels::@attn_fwd_0 blocks in (%c6, {{.*}} args({{.*}} : memref<48x2x16x128xbf16>, {{.*}} : memref<48x2x16x128xbf16>, %{{.*}} : memref<3xi64>, %{{.*}} : memref<3x20xi32>
// CHECK: gpu.func @attn_fwd_0(
// CHECK-SAME: attn.args = ["q", "k", "v", "key_lengths", "block_table", "o", "lse"]
// CHECK-NOT: attn.tensor_maps
// CHECK: %[[ID:.*]] = memref.load %arg4[%{{.*}}, %{{.*}}] : memref<3x20xi32>
// CHECK: %[[PG:.*]] = arith.index_cast %[[ID]] : i32 to index
// CHECK: %[[LO:.*]] = arith.cmpi sge, %[[PG]], %c0{{.*}} : index
// CHECK: %[[HI:.*]] = arith.cmpi slt, %[[PG]], %c48 : index
// CHECK: %[[OK:.*]] = arith.andi %[[LO]], %[[HI]] : i1
// CHECK: %[[SAFE:.*]] = arith.select %[[OK]], %[[PG]], %c0{{.*}} : index
// CHECK: %[[SLOT:.*]] = arith.remui %{{.*}}, %c16{{.*}} : index
// CHECK: nvgpu.device_async_copy %arg1[%[[SAFE]], %{{.*}}, %[[SLOT]], %{{.*}}]
// PAGE: gpu.func @attn_fwd_0({{.*}}, %arg4: memref<3x20xi32>
// PAGE-SAME: attn.args = ["q", "k", "v", "key_lengths", "block_table", "o", "lse"]
// PAGE: memref.load %arg4[%{{.*}}] : memref<3x20xi32>
// MOCK: mock-cuda: launch attn_fwd_0 grid=6,1,1
// MOCK-NEXT: attnfuse-run: @paged check=none: RAN
func.func @paged(%q: tensor<3x8x1x128xbf16>, %k: tensor<48x2x16x128xbf16>, %v: tensor<48x2x16x128xbf16>,
                 %table: tensor<3x20xi32>, %lens: tensor<3xi64>) -> tensor<3x8x1x128xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<3x8x1x128xbf16>, tensor<48x2x16x128xbf16>, tensor<48x2x16x128xbf16>)
      key_lengths(%lens : tensor<3xi64>) block_table(%table : tensor<3x20xi32>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<3x8x1x128xbf16>
  return %o : tensor<3x8x1x128xbf16>
}
