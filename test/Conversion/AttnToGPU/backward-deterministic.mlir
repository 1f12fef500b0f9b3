// attn.attention_backward with deterministic=true: no f32 atomics anywhere.
// The host launches the pre-pass (Di only: there is no dQ accumulator),
// the backward (dK, dV of a key block; no dQ) and the dQ kernel, one CTA
// per (query block, batch * head), which sums each row's terms over its
// keys in order and writes dQ in its element type. Every feature at once
// (backward.mlir's op): GQA, tails, Dqk != Dv, causal bottom-right, bias,
// keep mask, dropout and a softcap.
// RUN: attnfuse-opt %s --convert-attn-to-gpu="deterministic=true" 2>/dev/null | FileCheck %s
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa deterministic=true" -o %t.mlir 2>/dev/null
// RUN: attnfuse-opt %s --convert-attn-to-gpu="deterministic=true" -o %t.stage1.mlir 2>/dev/null
// RUN: %python %S/../../../bench/extract_kernels.py %t.stage1.mlir %t.mlir %t
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %s --target=cuda --check=none --pipeline-options="deterministic=true" 2>&1 | FileCheck %s --check-prefix=MOCK
// The dQ kernel's block-q * threads-per-row must fit a CTA.
// RUN: attnfuse-opt %s --convert-attn-to-gpu="deterministic=true block-q=300" -verify-diagnostics -o /dev/null

// CHECK-LABEL: func.func @f(
// CHECK: %[[DI:.*]] = memref.alloc() : memref<1x4x100xf32>
// CHECK-NOT: memref<1x4x100x64xf32>
// CHECK: %[[DK:.*]] = memref.alloc() : memref<1x2x130x64xbf16>
// CHECK: %[[DV:.*]] = memref.alloc() : memref<1x2x130x32xbf16>
// CHECK: %[[DQ:.*]] = memref.alloc() : memref<1x4x100x64xbf16>
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd_pre
// CHECK-SAME: args({{.*}}, %[[DI]] : memref<1x4x100xf32>)
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd
// CHECK-SAME: %{{.*}} : i64, %[[DK]] : memref<1x2x130x64xbf16>, %[[DV]] : memref<1x2x130x32xbf16>)
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd_dq_ordered
// CHECK-SAME: %{{.*}} : i64, %[[DQ]] : memref<1x4x100x64xbf16>)
// CHECK: bufferization.to_tensor %[[DQ]]

// CHECK: gpu.func @attn_fwd_0_bwd_pre(
// CHECK-SAME: attn.args = ["do", "o", "di"]
// CHECK: gpu.func @attn_fwd_0_bwd(
// CHECK-SAME: attn.args = ["q", "k", "v", "do", "lse", "di", "bias", "keep", "seed", "dk", "dv"]
// CHECK-NOT: memref.atomic_rmw
// CHECK: gpu.func @attn_fwd_0_bwd_dq_ordered(
// CHECK-SAME: attn.args = ["q", "k", "v", "do", "lse", "di", "bias", "keep", "seed", "dq"]
// CHECK-SAME: attn.block = array<i64: 256, 1, 1>
// CHECK-SAME: attn.config = array<i64: 64, 64, 4, 1>
// CHECK-SAME: attn.grid = array<i64: 2, 4, 1>
// CHECK: tanh.approx.f32
// CHECK: math.exp
// CHECK: arith.mului_extended
// CHECK-NOT: memref.atomic_rmw

// PTX-NOT: atom.
// PTXAS-COUNT-3: 0 bytes spill stores, 0 bytes spill loads

// MOCK: mock-cuda: launch attn_fwd_0_bwd_pre grid=13,1,1 block=256,1,1 shared=0
// MOCK-NEXT: mock-cuda: launch attn_fwd_0_bwd grid=3,2,1 block=256,1,1 shared=0
// MOCK-NEXT: mock-cuda: launch attn_fwd_0_bwd_dq_ordered grid=2,4,1 block=256,1,1 shared=0
// MOCK: check=none: RAN

func.func @f(%q: tensor<1x4x100x64xbf16>, %k: tensor<1x2x130x64xbf16>, %v: tensor<1x2x130x32xbf16>,
             %o: tensor<1x4x100x32xbf16>, %lse: tensor<1x4x100xf32>, %do: tensor<1x4x100x32xbf16>,
             %bias: tensor<1x1x100x130xf32>, %keep: tensor<100x130xi1>, %seed: i64)
    -> (tensor<1x4x100x64xbf16>, tensor<1x2x130x64xbf16>, tensor<1x2x130x32xbf16>) {
  // With block-q=300: wgmma (mma=auto on sm_90a) and mma_sync fall back to
  // simt (the remarks), whose deterministic dQ kernel cannot take that
  // block-q (the errors).
  // expected-remark@+4 {{mma=wgmma falls back to mma_sync: its backward adds dQ by atomics (deterministic=true: simt's dQ kernel)}}
  // expected-remark@+3 {{mma=mma_sync falls back to simt: its backward adds dQ by atomics (deterministic=true: simt's dQ kernel)}}
  // expected-error@+2 {{the deterministic dQ kernel's block-q * threads-per-row (300 * 4) must be a multiple of 32, at most 1024}}
  // expected-error@+1 {{mma=simt has the backward but not its pre-pass or last dQ kernel}}
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x4x100x64xbf16>, tensor<1x2x130x64xbf16>, tensor<1x2x130x32xbf16>)
      grad(%o, %lse, %do : tensor<1x4x100x32xbf16>, tensor<1x4x100xf32>, tensor<1x4x100x32xbf16>)
      bias(%bias : tensor<1x1x100x130xf32>) keep(%keep : tensor<100x130xi1>) seed(%seed)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>, dropout_p = 0.17 : f32}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 5.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<1x4x100x64xbf16>, tensor<1x2x130x64xbf16>, tensor<1x2x130x32xbf16>
  return %dq, %dk, %dv : tensor<1x4x100x64xbf16>, tensor<1x2x130x64xbf16>, tensor<1x2x130x32xbf16>
}
