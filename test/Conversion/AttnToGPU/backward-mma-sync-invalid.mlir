// The options the mma_sync backward refuses, located at the op.
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync warps=2" 2>&1 | FileCheck %s --check-prefix=WARPS
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync block-k=32" 2>&1 | FileCheck %s --check-prefix=BK
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync warps=4 block-k=128" 2>&1 | FileCheck %s --check-prefix=BKW
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync stages=3" 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync block-q=48" 2>&1 | FileCheck %s --check-prefix=BQ
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync warps=8 block-q=128 shared-memory-limit=65536" 2>&1 | FileCheck %s --check-prefix=SHARED

// WARPS: backward-mma-sync-invalid.mlir:[[@LINE+8]]:19: error: 'attn.attention_backward' op convert-attn-to-gpu: the mma_sync backward takes warps 4 or 8, not 2
// BK: error: 'attn.attention_backward' op convert-attn-to-gpu: the mma_sync backward takes block-k 64 or 128 (16 keys per warp, 4 or 8 warps), not 32
// BKW: error: 'attn.attention_backward' op convert-attn-to-gpu: the mma_sync backward takes block-k = 16 x warps (16 keys per warp): 64, not 128
// STAGES: error: 'attn.attention_backward' op convert-attn-to-gpu: the mma_sync backward takes 2 stages, not 3
// BQ: error: 'attn.attention_backward' op convert-attn-to-gpu: the mma_sync backward takes a block-q that is a multiple of 16 up to 128 whose 16 x 16 tiles of dQ (3 x 4) split evenly over the 8 warps, not 48
// SHARED: error: 'attn.attention_backward' op convert-attn-to-gpu: the mma_sync backward needs 147456 bytes of shared memory (K, V, dS^T and 2 stages of Q and dO), more than the 65536 a CTA can have on the target; lower block-q or warps
func.func @f(%q: tensor<1x1x256x64xbf16>, %o: tensor<1x1x256x64xbf16>, %lse: tensor<1x1x256xf32>)
    -> (tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>) {
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %q, %q : tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>)
      grad(%o, %lse, %o : tensor<1x1x256x64xbf16>, tensor<1x1x256xf32>, tensor<1x1x256x64xbf16>)
      -> tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>
  return %dq, %dk, %dv : tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>
}
