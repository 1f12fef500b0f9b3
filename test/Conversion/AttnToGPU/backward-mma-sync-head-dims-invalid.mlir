// Above head dims of 128 the mma_sync backward puts two warps on each 16
// keys (block-k = 8 x warps): an explicit block-k that is not 32 or 64 is a
// located error that says so.
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=mma_sync block-k=128" -verify-diagnostics -o /dev/null

func.func @d256(%q: tensor<1x2x128x256xbf16>, %o: tensor<1x2x128x256xbf16>, %lse: tensor<1x2x128xf32>)
    -> (tensor<1x2x128x256xbf16>, tensor<1x2x128x256xbf16>, tensor<1x2x128x256xbf16>) {
  // expected-error @+1 {{convert-attn-to-gpu: the mma_sync backward takes block-k 32 or 64 (16 keys per 2 warps, 4 or 8 warps), not 128}}
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %q, %q : tensor<1x2x128x256xbf16>, tensor<1x2x128x256xbf16>, tensor<1x2x128x256xbf16>)
      grad(%o, %lse, %o : tensor<1x2x128x256xbf16>, tensor<1x2x128xf32>, tensor<1x2x128x256xbf16>)
      -> tensor<1x2x128x256xbf16>, tensor<1x2x128x256xbf16>, tensor<1x2x128x256xbf16>
  return %dq, %dk, %dv : tensor<1x2x128x256xbf16>, tensor<1x2x128x256xbf16>, tensor<1x2x128x256xbf16>
}
