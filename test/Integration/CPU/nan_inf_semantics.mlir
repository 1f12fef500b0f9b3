// NaN and infinities in Q, K, V and bias (docs/Semantics.md, "NaN and
// infinities"): a NaN or +inf score makes its row NaN (O and lse); only a row
// that sees no key gives O = 0, lse = -inf; a visible +inf in V gives +inf;
// hidden keys contribute nothing whatever K, V and bias hold (no 0 * inf), at
// every block size, forward and backward. NaN matches only NaN in the checks.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/nan_inf.py gen %t/in
// RUN: attnfuse-run %s --entry=fwd --inputs=%t/in/arg0.npy,%t/in/arg1.npy,%t/in/arg2.npy,%t/in/arg3.npy --dump-reference=%t/naive --dump-outputs=%t/tiled | FileCheck %s
// RUN: %python %S/Inputs/nan_inf.py check %t/naive
// RUN: %python %S/Inputs/nan_inf.py check %t/tiled
// RUN: attnfuse-run %s --entry=fwd --inputs=%t/in/arg0.npy,%t/in/arg1.npy,%t/in/arg2.npy,%t/in/arg3.npy --pipeline-options="block-q=1 block-k=1" | FileCheck %s
// RUN: attnfuse-run %s --entry=fwd --inputs=%t/in/arg0.npy,%t/in/arg1.npy,%t/in/arg2.npy,%t/in/arg3.npy --pipeline-options="block-q=2 block-k=3" | FileCheck %s
// RUN: attnfuse-run %s --entry=fwd --inputs=%t/in/arg0.npy,%t/in/arg1.npy,%t/in/arg2.npy,%t/in/arg3.npy --pipeline-options="block-q=3 block-k=4" --dump-outputs=%t/tiled34 | FileCheck %s
// RUN: %python %S/Inputs/nan_inf.py check %t/tiled34
// RUN: attnfuse-run %s --entry=fwd --inputs=%t/in/arg0.npy,%t/in/arg1.npy,%t/in/arg2.npy,%t/in/arg3.npy --check=f64 | FileCheck %s
// RUN: attnfuse-run %s --entry=bwd --inputs=%t/in/bwd/arg0.npy,%t/in/bwd/arg1.npy,%t/in/bwd/arg2.npy,%t/in/bwd/arg3.npy --pipeline-options="block-q=2 block-k=3" --dump-reference=%t/bnaive --dump-outputs=%t/btiled | FileCheck %s
// RUN: %python %S/Inputs/nan_inf.py check-bwd %t/bnaive
// RUN: %python %S/Inputs/nan_inf.py check-bwd %t/btiled
// CHECK: PASS
func.func @fwd(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x6x4xf32>, %v: tensor<1x2x6x3xf32>,
               %bias: tensor<1x2x4x6xf32>) -> (tensor<1x2x4x3xf32>, tensor<1x2x4xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x4x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x3xf32>)
      bias(%bias : tensor<1x2x4x6xf32>) {mask = #attn.mask<causal>}
      -> tensor<1x2x4x3xf32>, tensor<1x2x4xf32>
  return %o, %lse : tensor<1x2x4x3xf32>, tensor<1x2x4xf32>
}

func.func @bwd(%q: tensor<1x1x4x4xf32>, %k: tensor<1x1x6x4xf32>, %v: tensor<1x1x6x3xf32>,
               %do: tensor<1x1x4x3xf32>)
    -> (tensor<1x1x4x4xf32>, tensor<1x1x6x4xf32>, tensor<1x1x6x3xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x1x4x4xf32>, tensor<1x1x6x4xf32>, tensor<1x1x6x3xf32>)
      {mask = #attn.mask<causal>} -> tensor<1x1x4x3xf32>, tensor<1x1x4xf32>
  %dq, %dk, %dv = attn.attention_backward
      ins(%q, %k, %v : tensor<1x1x4x4xf32>, tensor<1x1x6x4xf32>, tensor<1x1x6x3xf32>)
      grad(%o, %lse, %do : tensor<1x1x4x3xf32>, tensor<1x1x4xf32>, tensor<1x1x4x3xf32>)
      {mask = #attn.mask<causal>}
      -> tensor<1x1x4x4xf32>, tensor<1x1x6x4xf32>, tensor<1x1x6x3xf32>
  return %dq, %dk, %dv : tensor<1x1x4x4xf32>, tensor<1x1x6x4xf32>, tensor<1x1x6x3xf32>
}
