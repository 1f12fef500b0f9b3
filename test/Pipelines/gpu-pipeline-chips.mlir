// The chip decides the family (wgmma on sm_90a, mma_sync from sm_80, simt
// below) and must be one attnfuse compiles for: a name that is no chip, or a
// chip older than sm_75 (the oldest target of the CUDA 13 toolkit), is an
// error at the module before any code is made (NVPTX used to abort on
// cp.async for sm_75). An explicitly requested family the chip lacks falls
// back with a remark.
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="chip=sm_75 format=isa" -o %t.sm75.mlir
// RUN: FileCheck %s --check-prefix=SM75 < %t.sm75.mlir
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="chip=sm_75 mma=mma_sync format=isa" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FALLBACK
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="chip=sm_75 naive=true format=isa" -o /dev/null
// RUN: not attnfuse-opt %s --attn-lower-to-nvvm-pipeline="chip=sm_60" 2>&1 | FileCheck %s --check-prefix=OLD -DCHIP=sm_60
// RUN: not attnfuse-opt %s --attn-lower-to-nvvm-pipeline="chip=sm_30 naive=true" 2>&1 | FileCheck %s --check-prefix=OLD -DCHIP=sm_30
// RUN: not attnfuse-opt %s --attn-lower-to-nvvm-pipeline="chip=x" 2>&1 | FileCheck %s --check-prefix=NAME -DCHIP=x
// RUN: not attnfuse-opt %s --attn-lower-to-nvvm-pipeline="chip=sm_9z" 2>&1 | FileCheck %s --check-prefix=NAME -DCHIP=sm_9z
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="chip=gfx942" 2>&1 | FileCheck %s --check-prefix=PASS
// An empty chip before another option (the fuzzer's finding: upstream's
// NVVMTargetAttr::verifyTarget segfaulted on the kernel module's target).
// RUN: not attnfuse-opt %s "--attn-lower-to-nvvm-pipeline=format=isa chip= block-k=8" 2>&1 | FileCheck %s --check-prefix=NAME -DCHIP=
// RUN: not attnfuse-opt %s "--convert-attn-to-gpu=chip= block-k=8" 2>&1 | FileCheck %s --check-prefix=PASSEMPTY
// A chip NVPTX does not know, and one that needs a newer PTX ISA than the
// features ask for (NVPTX aborted: "PTX version 8.0 does not support target
// 'sm_100a'").
// RUN: not attnfuse-opt %s --attn-lower-to-nvvm-pipeline="chip=sm_99" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not attnfuse-opt %s --attn-lower-to-nvvm-pipeline="chip=sm_100a features=+ptx80" 2>&1 | FileCheck %s --check-prefix=PTX
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="chip=sm_100a features=+ptx86 format=isa" -o /dev/null

// SM75: .target sm_75
// SM75-NOT: cp.async
// SM75-NOT: mma.sync
// FALLBACK: remark: {{.*}}mma_sync needs sm_80 or newer (cp.async, bf16 mma.sync), the target is sm_75
// OLD: error: attn-lower-to-nvvm-pipeline: chip [[CHIP]] is older than sm_75, the oldest chip the CUDA 13 toolkit (and attnfuse) targets
// NAME: error: attn-lower-to-nvvm-pipeline: chip '[[CHIP]]' is not an NVIDIA GPU architecture
// UNKNOWN: error: attn-lower-to-nvvm-pipeline: chip sm_99 is not a chip LLVM's NVPTX backend knows (sm_75, sm_80,
// PTX: error: attn-lower-to-nvvm-pipeline: chip sm_100a needs PTX ISA 8.6 or newer, the features ask for 8.0 ('+ptx80'): set features=+ptx86
// PASSEMPTY: error: 'attn.attention' op convert-attn-to-gpu: chip '' is not an NVIDIA GPU architecture
// PASS: error: 'attn.attention' op convert-attn-to-gpu: chip 'gfx942' is not an NVIDIA GPU architecture
func.func @f16(%q: tensor<1x2x64x64xf16>, %k: tensor<1x2x64x64xf16>, %v: tensor<1x2x64x64xf16>) -> tensor<1x2x64x64xf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>) {mask = #attn.mask<causal>} -> tensor<1x2x64x64xf16>
  return %o : tensor<1x2x64x64xf16>
}

// A bf16 op for sm_75 (simt: bf16 loads and stores without sm_80's
// conversions), and ptxas assembles both kernels for sm_75.
// RUN: attnfuse-opt %s --convert-attn-to-gpu=chip=sm_75 -o %t.stage1.mlir
// RUN: %python %S/../../bench/extract_kernels.py %t.stage1.mlir %t.sm75.mlir %t.sm75
// RUN: %if ptxas %{ %ptxas -arch=sm_75 %t.sm75.ptx -o %t.sm75.cubin %}
func.func @bf16(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}
