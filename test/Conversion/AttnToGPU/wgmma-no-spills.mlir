// The default configurations of mma=wgmma at d = 64, 128 (causal and not)
// and 256 in the benchmark's shapes: ptxas must report no spills and no
// warning (wgmma serialization would be one), and the entry register count
// must be the cap.
// RUN: %if ptxas %{ sed -e 's/DIM/64/g' -e 's/MASK/none/' %s > %t.d64.mlir %}
// RUN: %if ptxas %{ attnfuse-opt %t.d64.mlir --attn-lower-to-nvvm-pipeline="format=isa mma=wgmma" -o %t.d64.final.mlir %}
// RUN: %if ptxas %{ attnfuse-opt %t.d64.mlir --convert-attn-to-gpu=mma=wgmma -o %t.d64.stage1.mlir %}
// RUN: %if ptxas %{ %python %S/../../../bench/extract_kernels.py %t.d64.stage1.mlir %t.d64.final.mlir %t.d64 %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.d64.ptx -o %t.d64.cubin 2>&1 | FileCheck %s %}
// RUN: %if ptxas %{ sed -e 's/DIM/64/g' -e 's/MASK/causal/' %s > %t.d64c.mlir %}
// RUN: %if ptxas %{ attnfuse-opt %t.d64c.mlir --attn-lower-to-nvvm-pipeline="format=isa mma=wgmma" -o %t.d64c.final.mlir %}
// RUN: %if ptxas %{ attnfuse-opt %t.d64c.mlir --convert-attn-to-gpu=mma=wgmma -o %t.d64c.stage1.mlir %}
// RUN: %if ptxas %{ %python %S/../../../bench/extract_kernels.py %t.d64c.stage1.mlir %t.d64c.final.mlir %t.d64c %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.d64c.ptx -o %t.d64c.cubin 2>&1 | FileCheck %s %}
// RUN: %if ptxas %{ sed -e 's/DIM/128/g' -e 's/MASK/none/' %s > %t.d128.mlir %}
// RUN: %if ptxas %{ attnfuse-opt %t.d128.mlir --attn-lower-to-nvvm-pipeline="format=isa mma=wgmma" -o %t.d128.final.mlir %}
// RUN: %if ptxas %{ attnfuse-opt %t.d128.mlir --convert-attn-to-gpu=mma=wgmma -o %t.d128.stage1.mlir %}
// RUN: %if ptxas %{ %python %S/../../../bench/extract_kernels.py %t.d128.stage1.mlir %t.d128.final.mlir %t.d128 %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.d128.ptx -o %t.d128.cubin 2>&1 | FileCheck %s %}
// RUN: %if ptxas %{ sed -e 's/DIM/128/g' -e 's/MASK/causal/' %s > %t.d128c.mlir %}
// RUN: %if ptxas %{ attnfuse-opt %t.d128c.mlir --attn-lower-to-nvvm-pipeline="format=isa mma=wgmma" -o %t.d128c.final.mlir %}
// RUN: %if ptxas %{ attnfuse-opt %t.d128c.mlir --convert-attn-to-gpu=mma=wgmma -o %t.d128c.stage1.mlir %}
// RUN: %if ptxas %{ %python %S/../../../bench/extract_kernels.py %t.d128c.stage1.mlir %t.d128c.final.mlir %t.d128c %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.d128c.ptx -o %t.d128c.cubin 2>&1 | FileCheck %s %}
// RUN: %if ptxas %{ sed -e 's/DIM/256/g' -e 's/MASK/causal/' %s > %t.d256c.mlir %}
// RUN: %if ptxas %{ attnfuse-opt %t.d256c.mlir --attn-lower-to-nvvm-pipeline="format=isa mma=wgmma" -o %t.d256c.final.mlir %}
// RUN: %if ptxas %{ attnfuse-opt %t.d256c.mlir --convert-attn-to-gpu=mma=wgmma -o %t.d256c.stage1.mlir %}
// RUN: %if ptxas %{ %python %S/../../../bench/extract_kernels.py %t.d256c.stage1.mlir %t.d256c.final.mlir %t.d256c %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.d256c.ptx -o %t.d256c.cubin 2>&1 | FileCheck %s %}
// d = 256 at 1k, causal: the persistent grid, O through the one-warpgroup slot.
// RUN: %if ptxas %{ sed -e 's/DIM/256/g' -e 's/MASK/causal/' -e 's/4096/1024/g' %s > %t.d256c1k.mlir %}
// RUN: %if ptxas %{ attnfuse-opt %t.d256c1k.mlir --attn-lower-to-nvvm-pipeline="format=isa mma=wgmma" -o %t.d256c1k.final.mlir %}
// RUN: %if ptxas %{ attnfuse-opt %t.d256c1k.mlir --convert-attn-to-gpu=mma=wgmma -o %t.d256c1k.stage1.mlir %}
// RUN: %if ptxas %{ %python %S/../../../bench/extract_kernels.py %t.d256c1k.stage1.mlir %t.d256c1k.final.mlir %t.d256c1k %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.d256c1k.ptx -o %t.d256c1k.cubin 2>&1 | FileCheck %s %}

// CHECK-NOT: warning
// CHECK: Function properties for attn_fwd_0
// CHECK-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// The CTA's register pool is what setmaxnreg splits: 168 x 384 threads (two
// consumer warpgroups), 128 x 512 (three, d = 64).
// CHECK-NEXT: Used {{168|128}} registers
// CHECK-NOT: warning
func.func @attn(%q: tensor<4x16x4096xDIMxbf16>, %k: tensor<4x16x4096xDIMxbf16>, %v: tensor<4x16x4096xDIMxbf16>) -> (tensor<4x16x4096xDIMxbf16>, tensor<4x16x4096xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<4x16x4096xDIMxbf16>, tensor<4x16x4096xDIMxbf16>, tensor<4x16x4096xDIMxbf16>) {mask = #attn.mask<MASK>} -> tensor<4x16x4096xDIMxbf16>, tensor<4x16x4096xf32>
  return %o, %lse : tensor<4x16x4096xDIMxbf16>, tensor<4x16x4096xf32>
}
