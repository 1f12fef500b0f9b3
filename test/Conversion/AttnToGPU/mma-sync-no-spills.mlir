// The default configurations of the default family (mma=mma_sync, block-q
// and block-k left to the pass) at d = 64 and d = 128, causal and not, in
// the benchmark's shapes: ptxas must report no spills (the project's rule;
// block-k=64 at d = 128 spilled 52-124 bytes, docs/GPU.md).
// RUN: %if ptxas %{ sed -e 's/DIM/64/g' -e 's/MASK/none/' %s > %t.d64.mlir %}
// RUN: %if ptxas %{ sed -e 's/DIM/64/g' -e 's/MASK/causal/' %s > %t.d64c.mlir %}
// RUN: %if ptxas %{ sed -e 's/DIM/128/g' -e 's/MASK/none/' %s > %t.d128.mlir %}
// RUN: %if ptxas %{ sed -e 's/DIM/128/g' -e 's/MASK/causal/' %s > %t.d128c.mlir %}
// RUN: %if ptxas %{ attnfuse-opt %t.d64.mlir --attn-lower-to-nvvm-pipeline="mma=mma_sync format=isa" -o %t.d64.final.mlir %}
// RUN: %if ptxas %{ attnfuse-opt %t.d64.mlir --convert-attn-to-gpu=mma=mma_sync -o %t.d64.stage1.mlir %}
// RUN: %if ptxas %{ %python %S/../../../bench/extract_kernels.py %t.d64.stage1.mlir %t.d64.final.mlir %t.d64 %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.d64.ptx -o %t.d64.cubin 2>&1 | FileCheck %s %}
// RUN: %if ptxas %{ attnfuse-opt %t.d64c.mlir --attn-lower-to-nvvm-pipeline="mma=mma_sync format=isa" -o %t.d64c.final.mlir %}
// RUN: %if ptxas %{ attnfuse-opt %t.d64c.mlir --convert-attn-to-gpu=mma=mma_sync -o %t.d64c.stage1.mlir %}
// RUN: %if ptxas %{ %python %S/../../../bench/extract_kernels.py %t.d64c.stage1.mlir %t.d64c.final.mlir %t.d64c %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.d64c.ptx -o %t.d64c.cubin 2>&1 | FileCheck %s %}
// RUN: %if ptxas %{ attnfuse-opt %t.d128.mlir --attn-lower-to-nvvm-pipeline="mma=mma_sync format=isa" -o %t.d128.final.mlir %}
// RUN: %if ptxas %{ attnfuse-opt %t.d128.mlir --convert-attn-to-gpu=mma=mma_sync -o %t.d128.stage1.mlir %}
// RUN: %if ptxas %{ %python %S/../../../bench/extract_kernels.py %t.d128.stage1.mlir %t.d128.final.mlir %t.d128 %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.d128.ptx -o %t.d128.cubin 2>&1 | FileCheck %s %}
// RUN: %if ptxas %{ attnfuse-opt %t.d128c.mlir --attn-lower-to-nvvm-pipeline="mma=mma_sync format=isa" -o %t.d128c.final.mlir %}
// RUN: %if ptxas %{ attnfuse-opt %t.d128c.mlir --convert-attn-to-gpu=mma=mma_sync -o %t.d128c.stage1.mlir %}
// RUN: %if ptxas %{ %python %S/../../../bench/extract_kernels.py %t.d128c.stage1.mlir %t.d128c.final.mlir %t.d128c %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.d128c.ptx -o %t.d128c.cubin 2>&1 | FileCheck %s %}

// CHECK: Function properties for attn_fwd_0
// CHECK-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
func.func @attn(%q: tensor<4x16x4096xDIMxbf16>, %k: tensor<4x16x4096xDIMxbf16>, %v: tensor<4x16x4096xDIMxbf16>) -> (tensor<4x16x4096xDIMxbf16>, tensor<4x16x4096xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<4x16x4096xDIMxbf16>, tensor<4x16x4096xDIMxbf16>, tensor<4x16x4096xDIMxbf16>) {mask = #attn.mask<MASK>} -> tensor<4x16x4096xDIMxbf16>, tensor<4x16x4096xf32>
  return %o, %lse : tensor<4x16x4096xDIMxbf16>, tensor<4x16x4096xf32>
}
