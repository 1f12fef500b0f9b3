// The mma_sync backward computes the per-element features itself (no simt
// fallback): a bias and a keep mask (loaded per element of S^T, query and
// key clamped at the tails), a softcap score_mod (dS^T times dt/ds, dK and
// dQ without a second scale; tanh.approx.f32) and dropout (the forward's
// Philox mask: one call per query column for the thread's two keys). The
// PTX assembles for sm_90a and sm_80 without spills.
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=mma_sync 2>&1 | FileCheck %s
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa mma=mma_sync" -o %t.mlir 2>/dev/null
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=mma_sync -o %t.stage1.mlir 2>/dev/null
// RUN: %python %S/../../../bench/extract_kernels.py %t.stage1.mlir %t.mlir %t
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa chip=sm_80" -o %t.80.mlir 2>/dev/null
// RUN: attnfuse-opt %s --convert-attn-to-gpu=chip=sm_80 -o %t.80.stage1.mlir 2>/dev/null
// RUN: %python %S/../../../bench/extract_kernels.py %t.80.stage1.mlir %t.80.mlir %t.80
// RUN: %if ptxas %{ %ptxas -arch=sm_80 -v %t.80.ptx -o %t.80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}

// CHECK-NOT: falls back to simt
// CHECK-LABEL: gpu.func @attn_fwd_0_bwd(
// CHECK-SAME: attn.family = "mma_sync"
// CHECK-COUNT-32: memref.load %arg7
// CHECK-COUNT-32: memref.load %arg6
// CHECK: nvvm.mma.sync
// CHECK-COUNT-32: tanh.approx.f32
// The dropout mask: 16 Philox calls (10 rounds of two mulhi each) per
// query block of 64 rows, one per query column of the thread.
// CHECK-COUNT-320: arith.mului_extended
// CHECK-NOT: arith.mului_extended
// CHECK: nvvm.mma.sync
// CHECK: memref.atomic_rmw addf
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @attn_fwd_1_bwd(
// CHECK-SAME: attn.family = "mma_sync"

// PTXAS: 0 bytes spill stores, 0 bytes spill loads
// PTXAS: 0 bytes spill stores, 0 bytes spill loads
// PTXAS: 0 bytes spill stores, 0 bytes spill loads

func.func @all(%q: tensor<2x4x100x64xbf16>, %k: tensor<2x2x130x64xbf16>, %v: tensor<2x2x130x64xbf16>,
               %o: tensor<2x4x100x64xbf16>, %lse: tensor<2x4x100xf32>, %do: tensor<2x4x100x64xbf16>,
               %bias: tensor<1x4x100x130xbf16>, %keep: tensor<2x1x100x130xi1>, %seed: i64)
    -> (tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>) {
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>)
      grad(%o, %lse, %do : tensor<2x4x100x64xbf16>, tensor<2x4x100xf32>, tensor<2x4x100x64xbf16>)
      bias(%bias : tensor<1x4x100x130xbf16>) keep(%keep : tensor<2x1x100x130xi1>)
      seed(%seed) {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>, dropout_p = 0.17 : f32}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 30.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>
  return %dq, %dk, %dv : tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>
}

// d = 128 with a bias alone (no score_mod: the scale stays with dK and dQ).
func.func @bias_d128(%q: tensor<1x2x256x128xf16>, %o: tensor<1x2x256x128xf16>, %lse: tensor<1x2x256xf32>,
                     %bias: tensor<2x256x256xf16>)
    -> (tensor<1x2x256x128xf16>, tensor<1x2x256x128xf16>, tensor<1x2x256x128xf16>) {
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %q, %q : tensor<1x2x256x128xf16>, tensor<1x2x256x128xf16>, tensor<1x2x256x128xf16>)
      grad(%o, %lse, %o : tensor<1x2x256x128xf16>, tensor<1x2x256xf32>, tensor<1x2x256x128xf16>)
      bias(%bias : tensor<2x256x256xf16>)
      -> tensor<1x2x256x128xf16>, tensor<1x2x256x128xf16>, tensor<1x2x256x128xf16>
  return %dq, %dk, %dv : tensor<1x2x256x128xf16>, tensor<1x2x256x128xf16>, tensor<1x2x256x128xf16>
}
