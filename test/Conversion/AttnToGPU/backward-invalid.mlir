// What the backward kernels refuse, located at the op.
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=simt" -verify-diagnostics

func.func @score_mod_capture(%q: tensor<1x1x64x64xf16>, %k: tensor<1x1x64x64xf16>, %v: tensor<1x1x64x64xf16>,
                             %o: tensor<1x1x64x64xf16>, %lse: tensor<1x1x64xf32>, %do: tensor<1x1x64x64xf16>,
                             // expected-note @+1 {{it is defined here}}
                             %cap: f32)
    -> (tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>) {
  // expected-error @+1 {{the backward kernels do not support a score_mod region that uses values from outside it other than constants}}
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>)
      grad(%o, %lse, %do : tensor<1x1x64x64xf16>, tensor<1x1x64xf32>, tensor<1x1x64x64xf16>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %y = arith.mulf %s, %cap : f32
        attn.yield %y : f32
      } -> tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>
  return %dq, %dk, %dv : tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>
}

