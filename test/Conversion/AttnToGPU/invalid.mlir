// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=simt block-k=128" -verify-diagnostics

func.func @negative_too_much_shared_memory(%q: tensor<1x1x64x64xf16>, %k: tensor<1x1x64x64xf16>, %v: tensor<1x1x64x64xf16>) -> tensor<1x1x64x64xf16> {
  // expected-error @+1 {{exceed 48 KB of static shared memory}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>) -> tensor<1x1x64x64xf16>
  return %o : tensor<1x1x64x64xf16>
}
