// mma_sync configurations that cannot launch are errors at the op; the
// defaults shrink to the target's shared memory.
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync stages=4 block-k=64" -verify-diagnostics -o /dev/null
// On sm_86 (99 KB of shared memory; the default family there is mma_sync)
// the d = 256 default (8 warps of one tile, 64-key blocks:
// 198 KB) becomes 32-key blocks, 4 warps (99 KB); explicit options beyond
// the limit are errors.
// RUN: attnfuse-opt %s --convert-attn-to-gpu="chip=sm_86" 2>&1 | FileCheck %s --check-prefix=SM86
// RUN: not attnfuse-opt %s --convert-attn-to-gpu="chip=sm_86 warps=8" 2>&1 | FileCheck %s --check-prefix=SM86W8
// SM86: attn.block = array<i64: 128, 1, 1>, attn.config = array<i64: 64, 32, 1, 32>, attn.dynamic_shared = 101376
// SM86W8: more than the 101376 a CTA can have on the target

func.func @too_much_shared_memory(%q: tensor<1x2x64x256xbf16>, %k: tensor<1x2x64x256xbf16>, %v: tensor<1x2x64x256xbf16>) -> (tensor<1x2x64x256xbf16>, tensor<1x2x64xf32>) {
  // 4 stages x 64 keys x (256 + 8) x 2 bytes x (K, V), + Q: 64 rows (the
  // defaults shrank to 4 warps of one tile) x 264 x 2.
  // expected-error @+1 {{the mma_sync kernel needs 304128 bytes of shared memory (K/V stages and Q), more than the 232448 a CTA can have on the target; lower stages, block-k or block-q}}
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x64x256xbf16>, tensor<1x2x64x256xbf16>, tensor<1x2x64x256xbf16>) -> tensor<1x2x64x256xbf16>, tensor<1x2x64xf32>
  return %o, %lse : tensor<1x2x64x256xbf16>, tensor<1x2x64xf32>
}
