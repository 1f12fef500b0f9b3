// f16, multi-query attention (one key/value head) with an additive f16 bias
// broadcast over batch and heads ([Nq, Nk]).
// RUN: rm -rf %t && mkdir -p %t
// RUN: attnfuse-run %s --seed=8 --pipeline-options="block-q=16 block-k=16" --dump-inputs=%t/in --dump-outputs=%t/tiled --dump-reference=%t/naive | FileCheck %s
// RUN: %reference check --inputs %t/in --outputs %t/naive --dtype f16 --bias 3
// RUN: %reference check --inputs %t/in --outputs %t/tiled --dtype f16 --bias 3
// CHECK: PASS
func.func @f(%q: tensor<2x4x24x32xf16>, %k: tensor<2x1x40x32xf16>, %v: tensor<2x1x40x32xf16>,
             %bias: tensor<24x40xf16>) -> tensor<2x4x24x32xf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<2x4x24x32xf16>, tensor<2x1x40x32xf16>, tensor<2x1x40x32xf16>)
      bias(%bias : tensor<24x40xf16>) -> tensor<2x4x24x32xf16>
  return %o : tensor<2x4x24x32xf16>
}
