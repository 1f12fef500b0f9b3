// The mma_sync backward's defaults (8 warps, block-q 64) without ptxas
// spills (the project's rule; 4 warps with block-q 64 spill at d = 128): at
// d = 64 and d = 128, no mask and causal, in the benchmark's shapes, and at
// d = 128 with tails of both Nq and Nk (the masked body's extra compares).
// RUN: %if ptxas %{ sed -e 's/NQ/4096/g' -e 's/NK/4096/g' -e 's/DIM/64/g' -e 's/MASK/causal/' %s > %t.d64c.mlir %}
// RUN: %if ptxas %{ sed -e 's/NQ/4096/g' -e 's/NK/4096/g' -e 's/DIM/128/g' -e 's/MASK/none/' %s > %t.d128.mlir %}
// RUN: %if ptxas %{ sed -e 's/NQ/100/g' -e 's/NK/130/g' -e 's/DIM/128/g' -e 's/MASK/causal/' %s > %t.d128t.mlir %}
// RUN: %if ptxas %{ attnfuse-opt %t.d64c.mlir --attn-lower-to-nvvm-pipeline="format=isa" -o %t.d64c.final.mlir 2>/dev/null %}
// RUN: %if ptxas %{ attnfuse-opt %t.d64c.mlir --convert-attn-to-gpu -o %t.d64c.stage1.mlir 2>/dev/null %}
// RUN: %if ptxas %{ %python %S/../../../bench/extract_kernels.py %t.d64c.stage1.mlir %t.d64c.final.mlir %t.d64c %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.d64c.ptx -o %t.d64c.cubin 2>&1 | FileCheck %s %}
// RUN: %if ptxas %{ attnfuse-opt %t.d128.mlir --attn-lower-to-nvvm-pipeline="format=isa" -o %t.d128.final.mlir 2>/dev/null %}
// RUN: %if ptxas %{ attnfuse-opt %t.d128.mlir --convert-attn-to-gpu -o %t.d128.stage1.mlir 2>/dev/null %}
// RUN: %if ptxas %{ %python %S/../../../bench/extract_kernels.py %t.d128.stage1.mlir %t.d128.final.mlir %t.d128 %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.d128.ptx -o %t.d128.cubin 2>&1 | FileCheck %s %}
// RUN: %if ptxas %{ attnfuse-opt %t.d128t.mlir --attn-lower-to-nvvm-pipeline="format=isa" -o %t.d128t.final.mlir 2>/dev/null %}
// RUN: %if ptxas %{ attnfuse-opt %t.d128t.mlir --convert-attn-to-gpu -o %t.d128t.stage1.mlir 2>/dev/null %}
// RUN: %if ptxas %{ %python %S/../../../bench/extract_kernels.py %t.d128t.stage1.mlir %t.d128t.final.mlir %t.d128t %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.d128t.ptx -o %t.d128t.cubin 2>&1 | FileCheck %s %}

// CHECK: Function properties for attn_fwd_0_bwd
// CHECK-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
func.func @b(%q: tensor<1x4xNQxDIMxbf16>, %k: tensor<1x2xNKxDIMxbf16>, %v: tensor<1x2xNKxDIMxbf16>,
             %o: tensor<1x4xNQxDIMxbf16>, %lse: tensor<1x4xNQxf32>, %do: tensor<1x4xNQxDIMxbf16>)
    -> (tensor<1x4xNQxDIMxbf16>, tensor<1x2xNKxDIMxbf16>, tensor<1x2xNKxDIMxbf16>) {
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x4xNQxDIMxbf16>, tensor<1x2xNKxDIMxbf16>, tensor<1x2xNKxDIMxbf16>)
      grad(%o, %lse, %do : tensor<1x4xNQxDIMxbf16>, tensor<1x4xNQxf32>, tensor<1x4xNQxDIMxbf16>)
      {mask = #attn.mask<MASK>}
      -> tensor<1x4xNQxDIMxbf16>, tensor<1x2xNKxDIMxbf16>, tensor<1x2xNKxDIMxbf16>
  return %dq, %dk, %dv : tensor<1x4xNQxDIMxbf16>, tensor<1x2xNKxDIMxbf16>, tensor<1x2xNKxDIMxbf16>
}
