// Shapes whose kernels CUDA cannot launch, or whose mask indices leave i32,
// are errors at the op, in both tensor-core families.
// RUN: attnfuse-opt %s --convert-attn-to-gpu=mma=mma_sync -split-input-file -verify-diagnostics -o /dev/null
// RUN: sed -e 's/mma=mma_sync needs/mma=wgmma needs/' -e '/^\/\/ MMA-SYNC-ONLY/,/^\/\/ -----/d' %s | attnfuse-opt --convert-attn-to-gpu=mma=wgmma -split-input-file -verify-diagnostics -o /dev/null

// MMA-SYNC-ONLY: grid y = B * Hq = 70000 > 65535. (The wgmma family's grid
// is x alone, its tiles walked by persistent CTAs: wgmma-persistent.mlir.)
func.func @grid_too_tall(%q: tensor<70000x1x64x64xbf16>, %k: tensor<70000x1x64x64xbf16>, %v: tensor<70000x1x64x64xbf16>) -> tensor<70000x1x64x64xbf16> {
  // expected-error @+1 {{the grid (1, 70000) exceeds CUDA's limits (2^31 - 1, 65535)}}
  %o = attn.attention ins(%q, %k, %v : tensor<70000x1x64x64xbf16>, tensor<70000x1x64x64xbf16>, tensor<70000x1x64x64xbf16>) -> tensor<70000x1x64x64xbf16>
  return %o : tensor<70000x1x64x64xbf16>
}

// -----

// Nq + Nk >= 2^31: the tensor-core kernels' i32 mask arithmetic would wrap.
func.func @sequence_too_long(%q: tensor<1x1x2000000000x64xbf16>, %k: tensor<1x1x200000000x64xbf16>, %v: tensor<1x1x200000000x64xbf16>) -> tensor<1x1x2000000000x64xbf16> {
  // expected-error @+1 {{mma=mma_sync needs Nq + Nk below 2^31}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x1x2000000000x64xbf16>, tensor<1x1x200000000x64xbf16>, tensor<1x1x200000000x64xbf16>) {mask = #attn.mask<causal>} -> tensor<1x1x2000000000x64xbf16>
  return %o : tensor<1x1x2000000000x64xbf16>
}
