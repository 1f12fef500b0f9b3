// RUN: attnfuse-opt %s -convert-attn-to-scf="block-q=0" -verify-diagnostics

func.func @zero_block(%q: tensor<1x1x8x16xf32>) -> tensor<1x1x8x16xf32> {
  // expected-error @+2 {{block sizes must be positive, got block-q = 0, block-k = 64}}
  // expected-error @+1 {{failed to legalize operation 'attn.attention'}}
  %o = attn.attention ins(%q, %q, %q : tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>,
                          tensor<1x1x8x16xf32>) -> tensor<1x1x8x16xf32>
  return %o : tensor<1x1x8x16xf32>
}
