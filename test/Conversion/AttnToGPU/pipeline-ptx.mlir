// The whole pipeline to a PTX module: no unresolved libdevice calls, exp2 as
// ex2.approx, 16-byte shared-memory loads; with ptxas, no spills.
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa mma=simt" | FileCheck %s
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa mma=simt" -o %t.mlir
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=simt -o %t.stage1.mlir
// RUN: %python %S/../../../bench/extract_kernels.py %t.stage1.mlir %t.mlir %t
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}

// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0
// CHECK: gpu.binary @attn_kernels
// CHECK-SAME: #nvvm.target<O = 3, chip = "sm_90a", features = "+ptx81">

// PTX: .target sm_90a
// PTX-NOT: .extern .func __nv_
// PTX: .entry attn_fwd_0(
// PTX: .minnctapersm 1
// PTX: ld.shared.v4
// PTX: ex2.approx

// PTXAS: 0 bytes spill stores, 0 bytes spill loads
func.func @attn(%q: tensor<1x16x1024x128xbf16>, %k: tensor<1x16x1024x128xbf16>, %v: tensor<1x16x1024x128xbf16>) -> (tensor<1x16x1024x128xbf16>, tensor<1x16x1024xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x16x1024x128xbf16>, tensor<1x16x1024x128xbf16>, tensor<1x16x1024x128xbf16>) {mask = #attn.mask<causal>} -> tensor<1x16x1024x128xbf16>, tensor<1x16x1024xf32>
  return %o, %lse : tensor<1x16x1024x128xbf16>, tensor<1x16x1024xf32>
}
