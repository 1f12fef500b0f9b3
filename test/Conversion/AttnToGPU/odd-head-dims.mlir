// Head dims that are not multiples of 8 (59, as in FlashAttention's test
// grid) on both tensor-core families: their rows are not 16-byte aligned,
// so the copies go element by element (a rolled loop of loads and
// shared-memory stores) into zero-padded tiles (the chunk that holds column
// 59 zeroed whole first, then a barrier), and O is stored per element with
// the columns past 59 skipped. wgmma's producer signals its full mbarrier
// with a plain arrive instead of cp.async's. With ptxas: no spills.
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=wgmma -o %t.wgmma.mlir
// RUN: FileCheck %s --check-prefixes=CHECK,WGMMA < %t.wgmma.mlir
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=mma_sync -o %t.mma.mlir
// RUN: FileCheck %s --check-prefixes=CHECK,MMA < %t.mma.mlir
// RUN: %if ptxas %{ attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa mma=mma_sync" -o %t.mma.final.mlir %}
// RUN: %if ptxas %{ %python %S/../../../bench/extract_kernels.py %t.mma.mlir %t.mma.final.mlir %t.mma %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.mma.ptx -o %t.mma.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: %if ptxas %{ attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa mma=wgmma" -o %t.wgmma.final.mlir %}
// RUN: %if ptxas %{ %python %S/../../../bench/extract_kernels.py %t.wgmma.mlir %t.wgmma.final.mlir %t.wgmma %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.wgmma.ptx -o %t.wgmma.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}

// CHECK-LABEL: gpu.func @attn_fwd_0(
// CHECK-SAME:    %[[Q:[^:]+]]: memref<1x4x300x59xf16>, %[[K:[^:]+]]: memref<1x4x300x59xf16>
// WGMMA-SAME:    attn.family = "wgmma"
// MMA-SAME:      attn.family = "mma_sync"
// MMA:           vector.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}, %c56] {alignment = 16 : i64} : memref<2x64x72xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// MMA:           gpu.barrier
// CHECK:         scf.for
// CHECK:           memref.load %[[Q]]
// CHECK:           memref.store %{{.+}}, %{{.+}} : memref<{{[0-9x]+}}xf16, #gpu.address_space<workgroup>>
// WGMMA:         nvvm.mbarrier.arrive
// WGMMA:         nvvm.wgmma.mma_async
// MMA:           memref.load %[[K]]
// MMA:           nvvm.mma.sync
// CHECK:         scf.if
// CHECK:           memref.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] : memref<1x4x300x59xf16>
// PTXAS-NOT: warning
// PTXAS: Function properties for attn_fwd_0
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
func.func @odd(%q: tensor<1x4x300x59xf16>, %k: tensor<1x4x300x59xf16>, %v: tensor<1x4x300x59xf16>) -> tensor<1x4x300x59xf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x4x300x59xf16>, tensor<1x4x300x59xf16>, tensor<1x4x300x59xf16>) {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>} -> tensor<1x4x300x59xf16>
  return %o : tensor<1x4x300x59xf16>
}
