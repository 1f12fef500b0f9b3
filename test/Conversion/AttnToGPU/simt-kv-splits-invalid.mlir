// Only the mma_sync forward splits the keys: kv-splits > 1 on simt (the
// last family, nothing to fall back to) is an error at the op.
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=simt kv-splits=2" -verify-diagnostics -o /dev/null

func.func @decode(%q: tensor<1x2x1x64xbf16>, %k: tensor<1x2x512x64xbf16>, %v: tensor<1x2x512x64xbf16>) -> tensor<1x2x1x64xbf16> {
  // expected-error @+1 {{convert-attn-to-gpu: kv-splits = 2: the simt forward does not split the keys (the mma_sync forward does)}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x1x64xbf16>, tensor<1x2x512x64xbf16>, tensor<1x2x512x64xbf16>) -> tensor<1x2x1x64xbf16>
  return %o : tensor<1x2x1x64xbf16>
}
