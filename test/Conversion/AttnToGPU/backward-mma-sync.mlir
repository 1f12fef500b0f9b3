// attn.attention_backward on the mma_sync family: named on sm_90a, and the
// default on sm_80 (mma=auto picks it; backward-wgmma.mlir: sm_90a's). Three launches: the simt family's pre-pass
// (Di, the dQ accumulator zeroed) and dQ conversion around the mma_sync
// backward, one CTA per (key block of 16 x 8 warps = 128 keys, batch * KV
// head): grid (ceil(130 / 128), 2 * 2). The backward stages K, V, and Q, dO,
// lse, Di (cp.async, two stages), computes S^T, dP^T, dV, dK and dQ by
// mma.sync with ldmatrix (.trans for the B operands of dV, dK and dQ and for
// dS^T as dQ's A operand), and adds dQ by f32 atomics. GQA (4 query heads
// on 2 KV heads), causal bottom-right, tails of Nq = 100 and Nk = 130.
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=mma_sync 2>&1 | FileCheck %s
// RUN: attnfuse-opt %s --convert-attn-to-gpu="chip=sm_80" 2>&1 | FileCheck %s --check-prefix=SM80
// The whole pipeline to PTX, which ptxas assembles for sm_90a and sm_80
// without spills.
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa mma=mma_sync" -o %t.mlir 2>/dev/null
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=mma_sync -o %t.stage1.mlir 2>/dev/null
// RUN: %python %S/../../../bench/extract_kernels.py %t.stage1.mlir %t.mlir %t
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa chip=sm_80" -o %t.80.mlir 2>/dev/null
// RUN: attnfuse-opt %s --convert-attn-to-gpu=chip=sm_80 -o %t.80.stage1.mlir 2>/dev/null
// RUN: %python %S/../../../bench/extract_kernels.py %t.80.stage1.mlir %t.80.mlir %t.80
// RUN: %if ptxas %{ %ptxas -arch=sm_80 -v %t.80.ptx -o %t.80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// The host plan on the stand-in driver: the launches, grids, blocks and the
// backward's dynamic shared memory (K, V: 128 x 72 x 2 bytes each; Q, dO:
// 2 x 64 x 72 x 2; dS^T: 128 x 72 x 2; lse, Di: 2 x 64 x 4).
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %s --target=cuda --check=none --pipeline-options=mma=mma_sync 2>&1 | FileCheck %s --check-prefix=MOCK

// CHECK-NOT: remark
// SM80-NOT: remark
// SM80: gpu.func @attn_fwd_0_bwd(
// SM80-SAME: attn.family = "mma_sync"

// CHECK-LABEL: func.func @f(
// CHECK: %[[DI:.*]] = memref.alloc() : memref<2x4x100xf32>
// CHECK: %[[ACC:.*]] = memref.alloc() : memref<2x4x100x64xf32>
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd_pre
// CHECK-SAME: args({{.*}}, %[[DI]] : memref<2x4x100xf32>, %[[ACC]] : memref<2x4x100x64xf32>)
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd
// CHECK-SAME: dynamic_shared_memory_size
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd_dq

// CHECK: gpu.func @attn_fwd_0_bwd_pre(
// CHECK-SAME: attn.family = "mma_sync"
// CHECK: gpu.func @attn_fwd_0_bwd(
// CHECK-SAME: attn.args = ["q", "k", "v", "do", "lse", "di", "dq_accum", "dk", "dv"]
// CHECK-SAME: attn.block = array<i64: 256, 1, 1>
// CHECK-SAME: attn.config = array<i64: 64, 128, 1, 64>
// CHECK-SAME: attn.dynamic_shared = 93184 : i64
// CHECK-SAME: attn.family = "mma_sync", attn.grid = array<i64: 2, 4, 1>
// CHECK: nvgpu.device_async_copy
// CHECK: scf.for
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK: nvvm.mma.sync
// CHECK: llvm.nvvm.ex2.approx.ftz.f
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK: gpu.barrier
// CHECK: memref.atomic_rmw addf
// CHECK: gpu.func @attn_fwd_0_bwd_dq(

// PTX: .entry attn_fwd_0_bwd(
// PTX: cp.async.ca.shared.global [{{.*}}], [{{.*}}], 4;
// PTX: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX: atom.global.add.f32

// PTXAS: Function properties for attn_fwd_0_bwd
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// MOCK: mock-cuda: launch attn_fwd_0_bwd_pre grid=25,1,1 block=256,1,1 shared=0
// MOCK-NEXT: mock-cuda: launch attn_fwd_0_bwd grid=2,4,1 block=256,1,1 shared=93184
// MOCK-NEXT: mock-cuda: launch attn_fwd_0_bwd_dq grid=200,1,1 block=256,1,1 shared=0
// MOCK: check=none: RAN
func.func @f(%q: tensor<2x4x100x64xbf16>, %k: tensor<2x2x130x64xbf16>, %v: tensor<2x2x130x64xbf16>,
             %o: tensor<2x4x100x64xbf16>, %lse: tensor<2x4x100xf32>, %do: tensor<2x4x100x64xbf16>)
    -> (tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>) {
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>)
      grad(%o, %lse, %do : tensor<2x4x100x64xbf16>, tensor<2x4x100xf32>, tensor<2x4x100x64xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>
  return %dq, %dk, %dv : tensor<2x4x100x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x64xbf16>
}
