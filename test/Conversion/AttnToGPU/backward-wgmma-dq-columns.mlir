// The wgmma backward at Dqk = 128 with dq-column-split: dQ's two column
// chunks of 64 are split between the two consumer warpgroups every query
// block (chunk c of block i: warpgroup (i + c) mod 2; FlashAttention-3's
// split of dQ's columns), not taken in turns (the default: TURNS;
// backward-wgmma.mlir). Both warpgroups sync at named barrier 3 (every
// dS^T tile stored) and, before the next block's dS^T stores, at 4 (every
// chunk's product done): no bar.arrive. Causal with tails, GQA.
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa dq-column-split=true" -o %t.mlir
// RUN: attnfuse-opt %s --convert-attn-to-gpu=dq-column-split=true -o %t.stage1.mlir
// RUN: %python %S/../../../bench/extract_kernels.py %t.stage1.mlir %t.mlir %t
// RUN: FileCheck %s < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa" -o %t.turns.mlir
// RUN: %python %S/../../../bench/extract_kernels.py %t.stage1.mlir %t.turns.mlir %t.turns
// RUN: FileCheck %s --check-prefix=TURNS < %t.turns.ptx

// CHECK: .entry attn_fwd_0_bwd(
// CHECK-NOT: bar.arrive
// CHECK-DAG: bar.sync 3, 256;
// CHECK-DAG: bar.sync 4, 256;
// One chunk of 64 columns a warpgroup and block: the dQ product's n is 64.
// CHECK-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, 1, 1, 1, 1;
// CHECK-DAG: red.global.add.v2.f32 [a+224], {
// CHECK-NOT: bar.arrive
// CHECK: .entry

// TURNS: .entry attn_fwd_0_bwd(
// TURNS-DAG: bar.arrive 3, 256;
// TURNS-DAG: bar.arrive 4, 256;
// TURNS: .entry

// ptxas assembles it with setmaxnreg in effect (168 registers at entry).
// PTXAS: Function properties for attn_fwd_0_bwd
// PTXAS: Used 168 registers
func.func @f(%q: tensor<1x4x200x128xbf16>, %k: tensor<1x2x300x128xbf16>, %v: tensor<1x2x300x128xbf16>,
             %o: tensor<1x4x200x128xbf16>, %lse: tensor<1x4x200xf32>, %do: tensor<1x4x200x128xbf16>)
    -> (tensor<1x4x200x128xbf16>, tensor<1x2x300x128xbf16>, tensor<1x2x300x128xbf16>) {
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x4x200x128xbf16>, tensor<1x2x300x128xbf16>, tensor<1x2x300x128xbf16>)
      grad(%o, %lse, %do : tensor<1x4x200x128xbf16>, tensor<1x4x200xf32>, tensor<1x4x200x128xbf16>)
      {mask = #attn.mask<causal>}
      -> tensor<1x4x200x128xbf16>, tensor<1x2x300x128xbf16>, tensor<1x2x300x128xbf16>
  return %dq, %dk, %dv : tensor<1x4x200x128xbf16>, tensor<1x2x300x128xbf16>, tensor<1x2x300x128xbf16>
}
