// RUN: attnfuse-opt %s -canonicalize --convert-attn-to-gpu | FileCheck %s

// Canonicalization hoists the region's constant out of score_mod (the op is
// not isolated from above); the kernel still gets a self-contained copy.
// CHECK:     gpu.func @attn_fwd_0
// CHECK:       arith.constant 5.000000e+00 : f32
// CHECK:       tanh.approx.f32
func.func @softcap(%q: tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16> {
  %o = attn.attention ins(%q, %q, %q : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>,
                          tensor<1x1x64x64xbf16>) score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %cap = arith.constant 5.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      } -> tensor<1x1x64x64xbf16>
  return %o : tensor<1x1x64x64xbf16>
}
