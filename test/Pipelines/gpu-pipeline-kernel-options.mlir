// attn-lower-to-nvvm-pipeline forwards every kernel option of
// convert-attn-to-gpu (KernelOptions.def, declared once): the family, its
// shape options and the shared-memory limit reach the kernel, and an option
// the family cannot take is the same located error as from the pass.
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="mma=simt threads-per-row=2 block-q=32 format=isa" -o %t.simt.mlir
// RUN: FileCheck %s --check-prefix=SIMT < %t.simt.mlir
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="warps=8 stages=3 lazy-rescale=false format=isa" -o %t.w8.mlir
// RUN: FileCheck %s --check-prefix=W8 < %t.w8.mlir
// RUN: not attnfuse-opt %s --attn-lower-to-nvvm-pipeline="block-q=128 block-k=64 shared-memory-limit=40000" 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: not attnfuse-opt %s --attn-lower-to-nvvm-pipeline="mma=tcgen05" 2>&1 | FileCheck %s --check-prefix=BAD

// 32 rows x 2 threads per row = 64 threads (simt); 8 warps (mma_sync).
// SIMT: .maxntid 64, 1, 1
// W8: .maxntid 256, 1, 1
// W8-NOT: vote.sync.any
// SMEM: error: 'attn.attention' op convert-attn-to-gpu: the mma_sync kernel needs {{[0-9]+}} bytes of shared memory (K/V stages and Q), more than the 40000 a CTA can have
// BAD: error: 'attn.attention' op convert-attn-to-gpu: unknown mma family 'tcgen05' (simt, mma_sync, wgmma)
func.func @attention(%q: tensor<1x2x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>) -> tensor<1x2x128x64xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>) -> tensor<1x2x128x64xbf16>
  return %o : tensor<1x2x128x64xbf16>
}
