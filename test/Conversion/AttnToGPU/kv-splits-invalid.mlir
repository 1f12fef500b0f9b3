// A negative key-split count is an error at the op (the simt forward's
// refusal of any split: simt-kv-splits-invalid.mlir; wgmma falls back to
// mma_sync: forward-kv-splits.mlir).
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync kv-splits=-1" -verify-diagnostics -o /dev/null

func.func @decode(%q: tensor<1x2x1x64xbf16>, %k: tensor<1x2x512x64xbf16>, %v: tensor<1x2x512x64xbf16>) -> tensor<1x2x1x64xbf16> {
  // expected-error @+1 {{convert-attn-to-gpu: kv-splits must be >= 0, not -1}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x1x64xbf16>, tensor<1x2x512x64xbf16>, tensor<1x2x512x64xbf16>) -> tensor<1x2x1x64xbf16>
  return %o : tensor<1x2x1x64xbf16>
}
