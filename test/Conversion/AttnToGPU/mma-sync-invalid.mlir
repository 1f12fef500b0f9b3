// mma_sync configurations that cannot launch are errors at the op.
// RUN: attnfuse-opt %s --convert-attn-to-gpu="stages=4 block-k=64" -verify-diagnostics -o /dev/null

func.func @too_much_shared_memory(%q: tensor<1x2x64x256xbf16>, %k: tensor<1x2x64x256xbf16>, %v: tensor<1x2x64x256xbf16>) -> (tensor<1x2x64x256xbf16>, tensor<1x2x64xf32>) {
  // 4 stages x 64 keys x (256 + 8) x 2 bytes x (K, V) + Q: 128 rows (8
  // warps above d = 128) x 264 x 2.
  // expected-error @+1 {{the mma_sync kernel needs 337920 bytes of shared memory (K/V stages and Q), more than 227 KB; lower stages or block-k}}
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x64x256xbf16>, tensor<1x2x64x256xbf16>, tensor<1x2x64x256xbf16>) -> tensor<1x2x64x256xbf16>, tensor<1x2x64xf32>
  return %o, %lse : tensor<1x2x64x256xbf16>, tensor<1x2x64xf32>
}
