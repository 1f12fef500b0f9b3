// attn.attention_backward through convert-attn-to-gpu on the simt family
// (mma=simt: the kinds every other family falls back to, e.g. for f32 or
// head dims the tensor cores do not take; the mma_sync backward's features:
// backward-mma-sync-features.mlir); the
// host launches the pre-pass (Di, dQ accumulator zeroed), the backward (one
// CTA per (key block, batch * KV head)) and the dQ conversion (bf16), in
// that order, with the buffers each takes; the backward kernel recomputes P
// from lse (math.exp), applies the softcap's derivative (its tanh), the
// dropout mask (Philox: the forward's mulhi), and adds dQ by f32 atomics.
// Every feature at once: GQA (4 query heads on 2 KV heads), Nq != Nk with
// tails of both, Dqk != Dv, causal bottom-right, a bias, a keep mask,
// dropout and a softcap.
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=simt 2>&1 | FileCheck %s
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=simt chip=sm_80" 2>&1 | FileCheck %s --check-prefix=SM80
// The whole pipeline to PTX, which ptxas assembles for sm_90a and sm_80
// without spills.
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa mma=simt" -o %t.mlir 2>/dev/null
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=simt -o %t.stage1.mlir 2>/dev/null
// RUN: %python %S/../../../bench/extract_kernels.py %t.stage1.mlir %t.mlir %t
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa mma=simt chip=sm_80" -o %t.80.mlir 2>/dev/null
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=simt chip=sm_80" -o %t.80.stage1.mlir 2>/dev/null
// RUN: %python %S/../../../bench/extract_kernels.py %t.80.stage1.mlir %t.80.mlir %t.80
// RUN: %if ptxas %{ %ptxas -arch=sm_80 -v %t.80.ptx -o %t.80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// The host plan as attnfuse-run --target=cuda plays it (the stand-in
// driver runs no kernel): the three launches, grids and blocks; with
// --check=fa first the naive reference's kernels (naive=true lowers
// attn.attention_backward too), and the check must FAIL: the kernels did
// not run, so the reference disagrees with fp64.
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %s --target=cuda --pipeline-options=mma=simt --check=none 2>&1 | FileCheck %s --check-prefix=MOCK
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir not attnfuse-run %s --target=cuda --pipeline-options=mma=simt --check=fa 2>&1 | FileCheck %s --check-prefix=NAIVE

// CHECK-NOT: falls back
// SM80-NOT: falls back
// SM80: gpu.func @attn_fwd_0_bwd(
// SM80-SAME: attn.family = "simt"

// CHECK-LABEL: func.func @f(
// CHECK: %[[DI:.*]] = memref.alloc() : memref<1x4x100xf32>
// CHECK: %[[ACC:.*]] = memref.alloc() : memref<1x4x100x64xf32>
// CHECK: %[[DK:.*]] = memref.alloc() : memref<1x2x130x64xbf16>
// CHECK: %[[DV:.*]] = memref.alloc() : memref<1x2x130x32xbf16>
// CHECK: %[[DQ:.*]] = memref.alloc() : memref<1x4x100x64xbf16>
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd_pre
// CHECK-SAME: args({{.*}}, %[[DI]] : memref<1x4x100xf32>, %[[ACC]] : memref<1x4x100x64xf32>)
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd
// CHECK-SAME: %[[DI]] : memref<1x4x100xf32>, %{{.*}} : memref<1x1x100x130xf32>, %{{.*}} : memref<100x130xi1>, %{{.*}} : i64, %[[ACC]] : memref<1x4x100x64xf32>, %[[DK]] : memref<1x2x130x64xbf16>, %[[DV]] : memref<1x2x130x32xbf16>)
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd_dq
// CHECK-SAME: args(%[[ACC]] : memref<1x4x100x64xf32>, %[[DQ]] : memref<1x4x100x64xbf16>)
// CHECK: bufferization.to_tensor %[[DQ]]
// CHECK: bufferization.to_tensor %[[DK]]
// CHECK: bufferization.to_tensor %[[DV]]

// CHECK: gpu.func @attn_fwd_0_bwd_pre(
// CHECK-SAME: attn.args = ["do", "o", "di", "dq_accum"]
// CHECK-SAME: attn.family = "simt", attn.grid = array<i64: 13, 1, 1>
// CHECK: gpu.func @attn_fwd_0_bwd(
// CHECK-SAME: attn.args = ["q", "k", "v", "do", "lse", "di", "bias", "keep", "seed", "dq_accum", "dk", "dv"]
// CHECK-SAME: attn.block = array<i64: 256, 1, 1>
// CHECK-SAME: attn.grid = array<i64: 3, 2, 1>
// CHECK: tanh.approx.f32
// CHECK: math.exp
// CHECK: arith.mului_extended
// CHECK: gpu.shuffle  xor
// CHECK: memref.atomic_rmw addf
// CHECK: gpu.func @attn_fwd_0_bwd_dq(
// CHECK-SAME: attn.args = ["dq_accum", "dq"]

// The pre-pass: 8 threads a row, 16-byte pieces of dO and O, Di summed by
// shuffles, the accumulator zeroed by 16-byte stores.
// PTX: .entry attn_fwd_0_bwd_pre(
// PTX: ld.global.v4.b32
// PTX: shfl.sync.bfly.b32
// PTX: st.global.v4.b32
// PTX: .entry attn_fwd_0_bwd(
// PTX: atom.global.add.f32
// PTX: .entry attn_fwd_0_bwd_dq(
// PTX-NOT: .extern .func __nv_

// PTXAS-COUNT-3: 0 bytes spill stores, 0 bytes spill loads

// MOCK: mock-cuda: launch attn_fwd_0_bwd_pre grid=13,1,1 block=256,1,1 shared=0
// MOCK-NEXT: mock-cuda: launch attn_fwd_0_bwd grid=3,2,1 block=256,1,1 shared=0
// MOCK-NEXT: mock-cuda: launch attn_fwd_0_bwd_dq grid=100,1,1 block=256,1,1 shared=0
// MOCK: check=none: RAN

// The naive reference's kernels (naive=true lowers attn.attention_backward
// too), then the fused ones.
// NAIVE: mock-cuda: launch f_kernel
// NAIVE-NOT: mock-cuda: launch attn_
// NAIVE: mock-cuda: launch attn_fwd_0_bwd_pre
// NAIVE: check=fa (reference: naive lowering on the GPU): FAIL
func.func @f(%q: tensor<1x4x100x64xbf16>, %k: tensor<1x2x130x64xbf16>, %v: tensor<1x2x130x32xbf16>,
             %o: tensor<1x4x100x32xbf16>, %lse: tensor<1x4x100xf32>, %do: tensor<1x4x100x32xbf16>,
             %bias: tensor<1x1x100x130xf32>, %keep: tensor<100x130xi1>, %seed: i64)
    -> (tensor<1x4x100x64xbf16>, tensor<1x2x130x64xbf16>, tensor<1x2x130x32xbf16>) {
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
