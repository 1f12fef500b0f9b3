// The mma_sync backward above head dims of 128: two warps on each 16 keys
// (block-k 64 with 8 warps), each accumulating half of the columns of dK
// and dV, block-q 32; the first of the two stores dS^T. Dqk 256, and
// Dqk 192 with Dv 128 (DeepSeek's MLA). ptxas assembles both for sm_90a,
// d = 256 with GQA, causal and tails at 255 registers and fewer than 64
// bytes of spills (20 when written; 0 without GQA and tails).
// RUN: attnfuse-opt %s --convert-attn-to-gpu 2>&1 | FileCheck %s
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa" -o %t.mlir 2>/dev/null
// RUN: attnfuse-opt %s --convert-attn-to-gpu -o %t.stage1.mlir 2>/dev/null
// RUN: %python %S/../../../bench/extract_kernels.py %t.stage1.mlir %t.mlir %t
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// Its option errors: backward-mma-sync-head-dims-invalid.mlir.

// CHECK-NOT: falls back to simt
// CHECK-LABEL: gpu.func @attn_fwd_0_bwd(
// CHECK-SAME: attn.config = array<i64: 32, 64, 1, 32>
// CHECK-SAME: attn.family = "mma_sync", attn.grid = array<i64: 5, 2, 1>
// The first warp of each pair stores dS^T.
// CHECK: arith.remui %{{.*}}, %c2
// CHECK: scf.if
// CHECK: vector.store
// CHECK: gpu.barrier
// CHECK-LABEL: gpu.func @attn_fwd_1_bwd(
// CHECK-SAME: attn.config = array<i64: 32, 64, 1, 32>
// CHECK-SAME: attn.family = "mma_sync"

// PTXAS: Function properties for attn_fwd_0_bwd
// PTXAS-NEXT: bytes stack frame, {{[0-9]|[1-5][0-9]|6[0-3]}} bytes spill stores

func.func @d256(%q: tensor<1x4x300x256xbf16>, %k: tensor<1x2x300x256xbf16>, %o: tensor<1x4x300x256xbf16>,
                %lse: tensor<1x4x300xf32>)
    -> (tensor<1x4x300x256xbf16>, tensor<1x2x300x256xbf16>, tensor<1x2x300x256xbf16>) {
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %k : tensor<1x4x300x256xbf16>, tensor<1x2x300x256xbf16>, tensor<1x2x300x256xbf16>)
      grad(%o, %lse, %o : tensor<1x4x300x256xbf16>, tensor<1x4x300xf32>, tensor<1x4x300x256xbf16>)
      {mask = #attn.mask<causal>}
      -> tensor<1x4x300x256xbf16>, tensor<1x2x300x256xbf16>, tensor<1x2x300x256xbf16>
  return %dq, %dk, %dv : tensor<1x4x300x256xbf16>, tensor<1x2x300x256xbf16>, tensor<1x2x300x256xbf16>
}

func.func @d192_128(%q: tensor<1x4x300x192xbf16>, %v: tensor<1x4x300x128xbf16>, %lse: tensor<1x4x300xf32>)
    -> (tensor<1x4x300x192xbf16>, tensor<1x4x300x192xbf16>, tensor<1x4x300x128xbf16>) {
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %q, %v : tensor<1x4x300x192xbf16>, tensor<1x4x300x192xbf16>, tensor<1x4x300x128xbf16>)
      grad(%v, %lse, %v : tensor<1x4x300x128xbf16>, tensor<1x4x300xf32>, tensor<1x4x300x128xbf16>)
      -> tensor<1x4x300x192xbf16>, tensor<1x4x300x192xbf16>, tensor<1x4x300x128xbf16>
  return %dq, %dk, %dv : tensor<1x4x300x192xbf16>, tensor<1x4x300x192xbf16>, tensor<1x4x300x128xbf16>
}
