// A gradient that is exactly 0: with one key (Nk = 1) every row's
// probability is 1, dS = P * (dP - Di) cancels, and dQ = dK = 0 in exact
// arithmetic. The pipelines store O in f16 before Di = rowsum(dO * O), so
// with dropout (O = V / (1 - p) rounded) their dQ and dK are the rounding
// of O, ~1e-3, where the relative error is undefined. Both checks then allow
// twice the storage floor: the largest change that rounding the attention
// ops' results to their types makes, in exact arithmetic (the fp64
// evaluation again with those roundings). Before, --check=fa failed its
// reference clause ("off by more than 5% of max|O| = 0") and --check=fd
// counted mismatches against the finite differences (~0).
// RUN: attnfuse-run %s --entry=f --check=fa --seed=0 | FileCheck %s --check-prefix=FA
// RUN: attnfuse-run %s --entry=f --check=fd --seed=0 | FileCheck %s --check-prefix=FD
// RUN: attnfuse-run %s --entry=f --check=fa --seed=2 --pipeline-options="block-q=3 block-k=1" | FileCheck %s --check-prefix=FA
// FA: check=fa: PASS result0 {{.+}} storage={{[0-9.e+-]+}}; result1 {{.+}} storage={{[0-9.e+-]+}}; result2
// FD: check=fd: PASS result0 {{.+}} vs fd {{.+}} storage={{[0-9.e+-]+}}; result1 {{.+}} vs fd {{.+}} storage={{[0-9.e+-]+}}; result2
// The floor does not cover a wrong gradient: the backward given the O of a
// forward with another scale (a wrong Di) still fails against fd.
// RUN: not attnfuse-run %s --entry=wrong_output --check=fd --seed=0 | FileCheck %s --check-prefix=WRONG
// WRONG: check=fd: FAIL result0 {{.+}} vs fd {{.+}} mismatches=

func.func @f(%q: tensor<1x2x8x16xf16>, %k: tensor<1x2x1x16xf16>, %v: tensor<1x2x1x16xf16>,
             %do: tensor<1x2x8x16xf16>, %seed: i64)
    -> (tensor<1x2x8x16xf16>, tensor<1x2x1x16xf16>, tensor<1x2x1x16xf16>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf16>, tensor<1x2x1x16xf16>, tensor<1x2x1x16xf16>)
      seed(%seed) {dropout_p = 0.17 : f32} -> tensor<1x2x8x16xf16>, tensor<1x2x8xf32>
  %dq, %dk, %dv = attn.attention_backward ins(%q, %k, %v : tensor<1x2x8x16xf16>, tensor<1x2x1x16xf16>, tensor<1x2x1x16xf16>)
      grad(%o, %lse, %do : tensor<1x2x8x16xf16>, tensor<1x2x8xf32>, tensor<1x2x8x16xf16>)
      seed(%seed) {dropout_p = 0.17 : f32}
      -> tensor<1x2x8x16xf16>, tensor<1x2x1x16xf16>, tensor<1x2x1x16xf16>
  return %dq, %dk, %dv : tensor<1x2x8x16xf16>, tensor<1x2x1x16xf16>, tensor<1x2x1x16xf16>
}

// Two keys, so that dQ is not 0; O and lse from a forward with scale 0.5.
func.func @wrong_output(%q: tensor<1x2x8x16xf16>, %k: tensor<1x2x2x16xf16>, %v: tensor<1x2x2x16xf16>,
                        %do: tensor<1x2x8x16xf16>, %seed: i64)
    -> (tensor<1x2x8x16xf16>, tensor<1x2x2x16xf16>, tensor<1x2x2x16xf16>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf16>, tensor<1x2x2x16xf16>, tensor<1x2x2x16xf16>)
      seed(%seed) {dropout_p = 0.17 : f32, scale = 0.5 : f32} -> tensor<1x2x8x16xf16>, tensor<1x2x8xf32>
  %dq, %dk, %dv = attn.attention_backward ins(%q, %k, %v : tensor<1x2x8x16xf16>, tensor<1x2x2x16xf16>, tensor<1x2x2x16xf16>)
      grad(%o, %lse, %do : tensor<1x2x8x16xf16>, tensor<1x2x8xf32>, tensor<1x2x8x16xf16>)
      seed(%seed) {dropout_p = 0.17 : f32}
      -> tensor<1x2x8x16xf16>, tensor<1x2x2x16xf16>, tensor<1x2x2x16xf16>
  return %dq, %dk, %dv : tensor<1x2x8x16xf16>, tensor<1x2x2x16xf16>, tensor<1x2x2x16xf16>
}
