// attn-lower-to-nvvm-pipeline forwards every kernel option of
// convert-attn-to-gpu (KernelOptions.def, declared once): the family, its
// shape options and the shared-memory limit reach the kernel, and an option
// the family cannot take is the same located error as from the pass. The
// chip picks the default family: wgmma on sm_90a (the default chip),
// mma_sync below, which also caps the shared memory (sm_86: 99 KB).
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="mma=simt threads-per-row=2 block-q=32 format=isa" -o %t.simt.mlir
// RUN: FileCheck %s --check-prefix=SIMT < %t.simt.mlir
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="warps=8 stages=3 lazy-rescale=false format=isa" -o %t.w8.mlir
// RUN: FileCheck %s --check-prefix=W8 < %t.w8.mlir
// RUN: not attnfuse-opt %s --attn-lower-to-nvvm-pipeline="warps=8 block-q=128 block-k=64 shared-memory-limit=40000" 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="format=isa" -o %t.auto.mlir
// RUN: FileCheck %s --check-prefix=SM90A < %t.auto.mlir
// RUN: attnfuse-opt %s --attn-lower-to-nvvm-pipeline="chip=sm_86 features=+ptx80 format=isa" -o %t.sm86.mlir
// RUN: FileCheck %s --check-prefix=SM86 < %t.sm86.mlir
// RUN: not attnfuse-opt %s --attn-lower-to-nvvm-pipeline="mma=tcgen05" 2>&1 | FileCheck %s --check-prefix=BAD

// 32 rows x 2 threads per row = 64 threads (simt); 8 consumer warps and the
// producer warpgroup (wgmma).
// SIMT: .maxntid 64, 1, 1
// W8: .maxntid 384, 1, 1
// W8-NOT: vote.sync.any
// SMEM: error: 'attn.attention' op convert-attn-to-gpu: the wgmma kernel needs {{[0-9]+}} bytes of shared memory (Q, K/V stages), more than the 40000 a CTA can have
// d = 64 on sm_90a: three consumer warpgroups and the producer; on sm_86
// the mma_sync kernel of 4 warps.
// SM90A: .target sm_90a
// SM90A: .maxntid 512, 1, 1
// SM90A: wgmma.mma_async
// SM86: .target sm_86
// SM86: .maxntid 128, 1, 1
// SM86: mma.sync.aligned.m16n8k16
// BAD: error: 'attn.attention' op convert-attn-to-gpu: unknown mma family 'tcgen05' (auto, simt, mma_sync, wgmma)
func.func @attention(%q: tensor<1x2x128x64xbf16>, %k: tensor<1x2x128x64xbf16>, %v: tensor<1x2x128x64xbf16>) -> tensor<1x2x128x64xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128x64xbf16>) -> tensor<1x2x128x64xbf16>
  return %o : tensor<1x2x128x64xbf16>
}
