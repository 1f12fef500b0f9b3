// The wgmma backward where no query block is masked (no structural mask,
// no tails): dQ by f32 vector reductions, a thread's column pair at once
// (red.global.add.v2.f32, PTX ISA 8.1: the pipeline's default features
// +ptx81) from one address a row, ptxas without spills at d = 64. Masked
// kernels reduce the same way (backward-wgmma.mlir).
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa" -o %t.mlir
// RUN: attnfuse-opt %s --convert-attn-to-gpu -o %t.stage1.mlir
// RUN: %python %S/../../../bench/extract_kernels.py %t.stage1.mlir %t.mlir %t
// RUN: FileCheck %s < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// sm_90a takes PTX ISA 8.1 or newer: features=+ptx80 is refused up front.
// RUN: not attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa features=+ptx80" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PTX80

// CHECK: .version 8.1
// CHECK: .entry attn_fwd_0_bwd(
// CHECK-NOT: atom.global.add.f32
// CHECK: red.global.add.v2.f32 [a], {
// CHECK: red.global.add.v2.f32 [a+224], {
// CHECK-NOT: atom.global.add.f32
// CHECK: .entry

// PTXAS: Function properties for attn_fwd_0_bwd
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// PTX80: error: attn-lower-to-nvvm-pipeline: chip sm_90a needs PTX ISA 8.1 or newer, the features ask for 8.0 ('+ptx80'): set features=+ptx81
func.func @f(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x64xbf16>,
             %o: tensor<1x4x256x64xbf16>, %lse: tensor<1x4x256xf32>, %do: tensor<1x4x256x64xbf16>)
    -> (tensor<1x4x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>) {
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x4x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>)
      grad(%o, %lse, %do : tensor<1x4x256x64xbf16>, tensor<1x4x256xf32>, tensor<1x4x256x64xbf16>)
      -> tensor<1x4x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>
  return %dq, %dk, %dv : tensor<1x4x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>
}
