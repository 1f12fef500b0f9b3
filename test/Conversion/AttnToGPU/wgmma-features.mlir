// The fused features on mma=wgmma, in the benchmark's shapes (d = 128):
// a [1, H, N, N] bias comes by TMA with each block's V (a fourth tensor
// map, source 3: a box per 64-key panel of the block's 128 x 128 tile), and
// the consumers read their pairs of keys from shared memory once it landed;
// the keep mask loads from global memory; both after a step's products are
// issued and before the consumer waits for them. Dropout draws one
// Philox4x32-10 per row and 32 keys, whose words are the thread's own keys
// of four n-tiles (no shuffles). With ptxas: no spills, no warnings.
// RUN: split-file %s %t
// RUN: attnfuse-opt %t/bias.mlir --convert-attn-to-gpu=mma=wgmma -o %t/bias.stage1.mlir
// RUN: FileCheck %s --check-prefix=BIAS < %t/bias.stage1.mlir
// RUN: attnfuse-opt %t/bias-tail.mlir --convert-attn-to-gpu=mma=wgmma | FileCheck %s --check-prefix=TAIL
// RUN: attnfuse-opt %t/dropout.mlir --convert-attn-to-gpu=mma=wgmma -o %t/dropout.stage1.mlir
// RUN: FileCheck %s --check-prefix=DROPOUT < %t/dropout.stage1.mlir
// RUN: %if ptxas %{ attnfuse-opt %t/bias.mlir --attn-lower-to-nvvm-pipeline="format=isa mma=wgmma" -o %t/bias.final.mlir %}
// RUN: %if ptxas %{ %python %S/../../../bench/extract_kernels.py %t/bias.stage1.mlir %t/bias.final.mlir %t/bias %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/bias.ptx -o %t/bias.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: %if ptxas %{ attnfuse-opt %t/dropout.mlir --attn-lower-to-nvvm-pipeline="format=isa mma=wgmma" -o %t/dropout.final.mlir %}
// RUN: %if ptxas %{ %python %S/../../../bench/extract_kernels.py %t/dropout.stage1.mlir %t/dropout.final.mlir %t/dropout %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t/dropout.ptx -o %t/dropout.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}

// BIAS-LABEL: gpu.func @attn_fwd_0(
// BIAS-SAME:    %{{[^:]+}}: memref<1x16x1024x1024xbf16>, %[[KEEP:[^:]+]]: memref<2x1x1x1024xi1>
// BIAS-SAME:    {argument = 10 : i64, box = array<i64: 1, 1, 128, 64>, l2_promotion = 256 : i64, source = 3 : i64, swizzle = 128 : i64}
// One Q buffer (two do not fit beside the bias stages), then per stage K
// full (one arrival), V full (two: V's and the bias's arrive.expect_tx), K
// and V empty (the 256 consumer threads).
// BIAS:         nvvm.mbarrier.init %{{.+}}, %c1_i32
// BIAS:         nvvm.mbarrier.init %{{.+}}, %c1_i32
// BIAS:         nvvm.mbarrier.init %{{.+}}, %c2_i32
// BIAS:         nvvm.mbarrier.init %{{.+}}, %c256_i32
// BIAS:         nvvm.mbarrier.init %{{.+}}, %c256_i32
// BIAS:         nvvm.mbarrier.init %{{.+}}, %c1_i32
// BIAS:         nvvm.mbarrier.init %{{.+}}, %c2_i32
// The bias is the same for both batch elements: a tile's (batch, head)
// index by walks the batch fastest (b = by mod 2, h = by / 2), so that the
// tiles that run together read the same bias tiles.
// BIAS:         %[[BY:.+]] = arith.divui %{{.+}}, %c8{{.*}} : index
// BIAS:         arith.remui %[[BY]], %c2{{.*}} : index
// BIAS:         arith.divui %[[BY]], %c2{{.*}} : index
// BIAS:         scf.for
// BIAS:           nvvm.wgmma.mma_async
// BIAS:           nvvm.barrier id
// BIAS:           memref.load %[[KEEP]]
// BIAS:           nvvm.mbarrier.try_wait.parity
// BIAS:           vector.load %{{.+}} {alignment = 4 : i64} : memref<{{[0-9]+}}xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// BIAS:           wgmma.wait_group.sync.aligned 1

// With a key tail (1000 keys, 128-key blocks) the bias is not staged (ptxas
// spilled there): no fourth tensor map of source 3, pairs from global
// memory.
// TAIL-LABEL: gpu.func @attn_fwd_0(
// TAIL-NOT:     source = 3
// TAIL:         vector.load %{{.+}} {alignment = 4 : i64} : memref<1x16x1000x1000xbf16>, vector<2xbf16>

// DROPOUT-LABEL: gpu.func @attn_fwd_0(
// DROPOUT-SAME:    %[[SEED:[^:]+]]: i64
// DROPOUT:         scf.for
// 64-key blocks: the calls of rows r and r + 8 for n-tiles 0-3 serve the P
// operands of k-steps 0 and 1 (8 bf16 pairs), then those of n-tiles 4-7.
// DROPOUT:           wgmma.wait_group.sync.aligned 1
// DROPOUT:           arith.trunci %[[SEED]] : i64 to i32
// DROPOUT-COUNT-20:  arith.mului_extended
// DROPOUT:           arith.trunci %[[SEED]] : i64 to i32
// DROPOUT-COUNT-20:  arith.mului_extended
// DROPOUT-NOT:       gpu.shuffle
// DROPOUT-NOT:       arith.mului_extended
// DROPOUT-COUNT-8:   arith.truncf {{.*}} : vector<2xf32> to vector<2xbf16>
// DROPOUT-NOT:       gpu.shuffle
// DROPOUT:           arith.trunci %[[SEED]] : i64 to i32

// PTXAS-NOT: warning
// PTXAS: Function properties for attn_fwd_0
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

//--- bias.mlir
func.func @bias_keep(%q: tensor<2x16x1024x128xbf16>, %k: tensor<2x16x1024x128xbf16>, %v: tensor<2x16x1024x128xbf16>, %bias: tensor<1x16x1024x1024xbf16>, %keep: tensor<2x1x1x1024xi1>) -> tensor<2x16x1024x128xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<2x16x1024x128xbf16>, tensor<2x16x1024x128xbf16>, tensor<2x16x1024x128xbf16>) bias(%bias : tensor<1x16x1024x1024xbf16>) keep(%keep : tensor<2x1x1x1024xi1>) -> tensor<2x16x1024x128xbf16>
  return %o : tensor<2x16x1024x128xbf16>
}

//--- bias-tail.mlir
func.func @bias_tail(%q: tensor<2x16x1000x128xbf16>, %k: tensor<2x16x1000x128xbf16>, %v: tensor<2x16x1000x128xbf16>, %bias: tensor<1x16x1000x1000xbf16>) -> tensor<2x16x1000x128xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>) bias(%bias : tensor<1x16x1000x1000xbf16>) -> tensor<2x16x1000x128xbf16>
  return %o : tensor<2x16x1000x128xbf16>
}

//--- dropout.mlir
func.func @dropout(%q: tensor<4x16x4096x128xbf16>, %k: tensor<4x16x4096x128xbf16>, %v: tensor<4x16x4096x128xbf16>, %seed: i64) -> tensor<4x16x4096x128xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<4x16x4096x128xbf16>, tensor<4x16x4096x128xbf16>, tensor<4x16x4096x128xbf16>) seed(%seed) {dropout_p = 0.1 : f32} -> tensor<4x16x4096x128xbf16>
  return %o : tensor<4x16x4096x128xbf16>
}

