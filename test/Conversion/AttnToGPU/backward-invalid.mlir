// What the backward kernels refuse, located at the op.
// RUN: attnfuse-opt %s --convert-attn-to-gpu="mma=simt" -split-input-file -verify-diagnostics

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


// -----

// A head dim that is not a multiple of 4 (the kernels' 4-element groups).
func.func @head_dim_6(%q: tensor<1x1x64x6xf16>, %k: tensor<1x1x64x6xf16>, %v: tensor<1x1x64x8xf16>,
                      %o: tensor<1x1x64x8xf16>, %lse: tensor<1x1x64xf32>, %do: tensor<1x1x64x8xf16>)
    -> (tensor<1x1x64x6xf16>, tensor<1x1x64x6xf16>, tensor<1x1x64x8xf16>) {
  // expected-error @+1 {{threads-per-row (1) must be a power of two <= 32 dividing the head dimensions into groups of 4}}
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x1x64x6xf16>, tensor<1x1x64x6xf16>, tensor<1x1x64x8xf16>)
      grad(%o, %lse, %do : tensor<1x1x64x8xf16>, tensor<1x1x64xf32>, tensor<1x1x64x8xf16>)
      -> tensor<1x1x64x6xf16>, tensor<1x1x64x6xf16>, tensor<1x1x64x8xf16>
  return %dq, %dk, %dv : tensor<1x1x64x6xf16>, tensor<1x1x64x6xf16>, tensor<1x1x64x8xf16>
}
