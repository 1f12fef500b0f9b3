// RUN: attnfuse-opt %s -canonicalize -convert-attn-to-gpu -split-input-file -verify-diagnostics | FileCheck %s

// A region that yields a constant canonicalization hoisted above the op: the
// kernel gets its own copy.
// CHECK:     gpu.func @attn_fwd_0
// CHECK:       arith.constant 1.250000e+00 : f32
// CHECK-NOT:   attn.yield
func.func @yields_constant(%q: tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16> {
  %o = attn.attention ins(%q, %q, %q : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>,
                          tensor<1x1x64x64xbf16>) score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 1.25 : f32
        attn.yield %c : f32
      } -> tensor<1x1x64x64xbf16>
  return %o : tensor<1x1x64x64xbf16>
}

// -----

// A value that is not a constant cannot enter the kernel: a located error,
// not a kernel that uses a value of the host function.
// expected-note @+1 {{the first is defined here}}
func.func @captures_argument(%q: tensor<1x1x64x64xbf16>, %cap: f32) -> tensor<1x1x64x64xbf16> {
  // expected-error @+1 {{convert-attn-to-gpu: the score_mod region uses 1 value(s) defined outside it that are not constants; the kernel cannot capture them}}
  %o = attn.attention ins(%q, %q, %q : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>,
                          tensor<1x1x64x64xbf16>) score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %x = arith.divf %s, %cap : f32
        attn.yield %x : f32
      } -> tensor<1x1x64x64xbf16>
  return %o : tensor<1x1x64x64xbf16>
}

// -----

// A constant tensor the region reads (a mask of an exported model, raised
// into score_mod) is data the kernel would need as an argument: the same
// located error, not a tensor constant copied into the kernel (which failed
// late, in the translation to LLVM IR).
func.func @captures_constant_tensor(%q: tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16> {
  // expected-note @+1 {{the first is defined here}}
  %m = arith.constant dense<[false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false, true, true, false]> : tensor<64xi1>
  %ninf = arith.constant 0xFF800000 : f32
  // expected-error @+1 {{convert-attn-to-gpu: the score_mod region uses 1 value(s) defined outside it that are not constants; the kernel cannot capture them}}
  %o = attn.attention ins(%q, %q, %q : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>,
                          tensor<1x1x64x64xbf16>) score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %keep = tensor.extract %m[%j] : tensor<64xi1>
        %x = arith.select %keep, %s, %ninf : f32
        attn.yield %x : f32
      } -> tensor<1x1x64x64xbf16>
  return %o : tensor<1x1x64x64xbf16>
}
