// attn.attention_backward on the wgmma family, named (mma=wgmma) and by
// default on sm_90a (mma=auto: the AUTO lines). Three
// launches: the simt family's pre-pass (Di, the dQ accumulator zeroed) and
// dQ conversion around the wgmma backward, one CTA per (key block of 2
// consumer warpgroups x 64 keys, batch * KV head): grid (ceil(130 / 128),
// 2 * 2), 384 threads (the producer warpgroup first). The producer loads K,
// V and the Q, dO stages (with their rows' lse and Di) by cp.async into
// swizzled tiles (mbarriers); the
// consumers compute S^T and dP^T (wgmma, both operands from shared memory;
// dP^T onto -Di), dV and dK (A: P^T and dS^T in registers, B N-major) and
// dQ in turns (query block i: warpgroup i mod 2, over the CTA's 128 keys;
// A: both warpgroups' dS^T from shared memory, M-major; B: K N-major; named
// barriers 3 and 4 between the consumers), and add dQ by f32 atomics (with
// masked blocks; backward-wgmma-unmasked.mlir: vector reductions). GQA (4
// query heads on 2 KV heads), causal bottom-right, tails of Nq = 100 and
// Nk = 130. On another chip the family falls back to mma_sync.
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=wgmma 2>&1 | FileCheck %s
// RUN: attnfuse-opt %s --convert-attn-to-gpu 2>&1 | FileCheck %s --check-prefix=AUTO
// Deterministic mode is not the wgmma backward's (atomics): mma_sync's, then
// simt's, with a remark each.
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=wgmma deterministic=true" 2>&1 | FileCheck %s --check-prefix=DET
// RUN: attnfuse-opt %s --convert-attn-to-gpu="chip=sm_80 mma=wgmma" 2>&1 | FileCheck %s --check-prefix=SM80
// The whole pipeline to PTX, which ptxas assembles for sm_90a without
// spills (setmaxnreg takes effect: the kernel states its CTAs per SM).
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa mma=wgmma" -o %t.mlir 2>/dev/null
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=wgmma -o %t.stage1.mlir 2>/dev/null
// RUN: %python %S/../../../bench/extract_kernels.py %t.stage1.mlir %t.mlir %t
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: FileCheck %s --check-prefix=PTXBAR < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// The host plan on the stand-in driver: the launches, grids, blocks and the
// backward's dynamic shared memory (1024 of alignment slack; K, V: 128 x
// 128 bytes each; Q, dO: 2 stages x 64 x 128; dS^T: 2 warpgroups x 64 x
// 128; lse and Di of each stage's 64 query rows: 2 x 2 x 256; 5 mbarriers).
// RUN: env LD_LIBRARY_PATH=%mock_cuda_dir attnfuse-run %s --target=cuda --check=none --pipeline-options=mma=wgmma 2>&1 | FileCheck %s --check-prefix=MOCK

// CHECK-NOT: remark
// CHECK-LABEL: func.func @f(
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd_pre
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd
// CHECK-SAME: dynamic_shared_memory_size
// CHECK: gpu.launch_func @attn_kernels::@attn_fwd_0_bwd_dq

// CHECK: gpu.func @attn_fwd_0_bwd_pre(
// CHECK-SAME: attn.family = "wgmma"
// CHECK: gpu.func @attn_fwd_0_bwd(
// CHECK-SAME: attn.args = ["q", "k", "v", "do", "lse", "di", "dq_accum", "dk", "dv"]
// CHECK-SAME: attn.block = array<i64: 384, 1, 1>
// CHECK-SAME: attn.config = array<i64: 64, 128, 1, 64>
// CHECK-SAME: attn.dynamic_shared = 84008 : i64
// CHECK-SAME: attn.family = "wgmma", attn.grid = array<i64: 2, 4, 1>
// CHECK-SAME: nvvm.minctasm = 1 : i32
// CHECK: nvvm.setmaxregister {{ *}}decrease 40
// The stage's lse and Di rows (f32, one a producer thread), then its tiles.
// CHECK: nvvm.cp.async.shared.global {{.*}}, 4, cache = ca
// CHECK: nvgpu.device_async_copy
// CHECK: nvvm.cp.async.mbarrier.arrive
// CHECK: nvvm.setmaxregister {{ *}}increase 232
// CHECK: nvvm.wgmma.mma_async {{.*}} A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: llvm.nvvm.ex2.approx.ftz.f
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK: nvvm.wgmma.mma_async {{.*}} A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// CHECK: red.global.add.v2.f32 [a], {$1, $2};\0Ared.global.add.v2.f32 [a+32], {$3, $4};
// CHECK-NOT: memref.atomic_rmw
// CHECK: gpu.func @attn_fwd_0_bwd_dq(

// PTX: .entry attn_fwd_0_bwd(
// PTX: .minnctapersm 1
// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// The turns: every consumer at barrier 3 (dS^T stored: the other warpgroup
// arrives, the one whose turn it is syncs), barrier 4 (its dQ product done).
// PTXBAR-DAG: bar.arrive 3, 256;
// PTXBAR-DAG: bar.sync 3, 256;
// PTXBAR-DAG: bar.arrive 4, 256;
// PTX: red.global.add.v2.f32 [a+32], {
// PTX-NOT: atom.global.add.f32
// PTX: .entry

// PTXAS: Function properties for attn_fwd_0_bwd
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// DET: remark: convert-attn-to-gpu: mma=wgmma falls back to mma_sync: its backward adds dQ by atomics (deterministic=true: simt's dQ kernel)
// DET: remark: convert-attn-to-gpu: mma=mma_sync falls back to simt

// AUTO-NOT: remark
// AUTO: gpu.func @attn_fwd_0_bwd(
// AUTO-SAME: attn.family = "wgmma"

// SM80: remark: convert-attn-to-gpu: mma=wgmma falls back to mma_sync: wgmma needs sm_90a, the target is sm_80
// SM80: gpu.func @attn_fwd_0_bwd(
// SM80-SAME: attn.family = "mma_sync"

// MOCK: mock-cuda: launch attn_fwd_0_bwd_pre grid=25,1,1 block=256,1,1 shared=0
// MOCK-NEXT: mock-cuda: launch attn_fwd_0_bwd grid=2,4,1 block=384,1,1 shared=84008
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
