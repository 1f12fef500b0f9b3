// Bias, keep mask, score_mod and dropout fused in the mma.sync kernel
// (tensor cores), with their default configurations (block-q=64 above
// d = 64 with per-element scores or dropout, block-k=32 with dropout):
// per-element bias/keep loads, the cloned score_mod region, Philox on P
// before P V; with ptxas, no spills at d = 64 and d = 128.
// RUN: sed -e 's/DIM/64/g' %s > %t.d64.mlir
// RUN: sed -e 's/DIM/128/g' %s > %t.d128.mlir
// RUN: attnfuse-opt %t.d64.mlir --convert-attn-to-gpu=mma=mma_sync -o %t.d64.stage1.mlir
// RUN: FileCheck %t.d64.mlir --check-prefixes=CHECK,D64 < %t.d64.stage1.mlir
// RUN: attnfuse-opt %t.d128.mlir --convert-attn-to-gpu=mma=mma_sync -o %t.d128.stage1.mlir
// RUN: FileCheck %t.d128.mlir --check-prefixes=CHECK,D128 < %t.d128.stage1.mlir
// RUN: %if ptxas %{ attnfuse-opt %t.d64.mlir --attn-lower-to-nvvm-pipeline="mma=mma_sync format=isa" -o %t.d64.final.mlir %}
// RUN: %if ptxas %{ %python %S/../../../bench/extract_kernels.py %t.d64.stage1.mlir %t.d64.final.mlir %t.d64 %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.d64.ptx -o %t.d64.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: %if ptxas %{ attnfuse-opt %t.d128.mlir --attn-lower-to-nvvm-pipeline="mma=mma_sync format=isa" -o %t.d128.final.mlir %}
// RUN: %if ptxas %{ %python %S/../../../bench/extract_kernels.py %t.d128.stage1.mlir %t.d128.final.mlir %t.d128 %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.d128.ptx -o %t.d128.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}

// CHECK:       gpu.func @attn_fwd_0(%{{.*}}: memref<2x4x200xDIMxbf16>, %{{.*}}: memref<2x2x333xDIMxbf16>, %{{.*}}: memref<2x2x333xDIMxbf16>, %[[BIAS:[^:]+]]: memref<1x4x200x333xbf16>, %[[KEEP:[^:]+]]: memref<2x1x1x333xi1>, %[[SEED:[^:]+]]: i64,
// D64-SAME:      attn.config = array<i64: 64, 32, 1, 32>
// D128-SAME:     attn.config = array<i64: 64, 32, 1, 32>
// CHECK-SAME:    attn.family = "mma_sync"
// CHECK:         scf.for
// The keep and bias values of a step load before its products (Nk = 333 is
// odd: one bias element per load).
// CHECK:           memref.load %[[KEEP]]
// CHECK:           memref.load %[[BIAS]]
// CHECK:           nvvm.mma.sync
// The scores of each element: scale, score_mod (tanh), + bias, keep mask.
// CHECK:           tanh.approx.f32
// CHECK:           arith.select
// CHECK:           llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// Dropout on P before P V: one Philox4x32-10 (keyed by the seed) per row
// and 32 keys (32-key blocks: rows r and r + 8, one call each), its words
// the thread's keys of the block's four n-tiles; no shuffles.
// CHECK:           arith.trunci %[[SEED]] : i64 to i32
// CHECK-COUNT-20:  arith.mului_extended
// CHECK:           arith.trunci %[[SEED]] : i64 to i32
// CHECK-COUNT-20:  arith.mului_extended
// CHECK-NOT:       gpu.shuffle
// CHECK:           arith.truncf {{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK:           nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK:           nvvm.mma.sync

// PTXAS: Function properties for attn_fwd_0
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
func.func @attn(%q: tensor<2x4x200xDIMxbf16>, %k: tensor<2x2x333xDIMxbf16>, %v: tensor<2x2x333xDIMxbf16>, %bias: tensor<1x4x200x333xbf16>, %keep: tensor<2x1x1x333xi1>, %seed: i64) -> (tensor<2x4x200xDIMxbf16>, tensor<2x4x200xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x4x200xDIMxbf16>, tensor<2x2x333xDIMxbf16>, tensor<2x2x333xDIMxbf16>) bias(%bias : tensor<1x4x200x333xbf16>) keep(%keep : tensor<2x1x1x333xi1>) seed(%seed) {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>, dropout_p = 0.1 : f32} score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %cap = arith.constant 30.0 : f32
    %x = arith.divf %s, %cap : f32
    %t = math.tanh %x : f32
    %y = arith.mulf %t, %cap : f32
    attn.yield %y : f32
  } -> tensor<2x4x200xDIMxbf16>, tensor<2x4x200xf32>
  return %o, %lse : tensor<2x4x200xDIMxbf16>, tensor<2x4x200xf32>
}
