// f16, causal mask aligned top-left with Nq < Nk.
// RUN: rm -rf %t && mkdir -p %t
// RUN: attnfuse-run %s --seed=3 --pipeline-options="block-q=16 block-k=16" --dump-inputs=%t/in --dump-outputs=%t/tiled --dump-reference=%t/naive | FileCheck %s
// RUN: %reference check --inputs %t/in --outputs %t/naive --dtype f16 --mask causal --lse
// RUN: %reference check --inputs %t/in --outputs %t/tiled --dtype f16 --mask causal --lse
// RUN: attnfuse-run %s --seed=4 --check=fa --pipeline-options="block-q=16 block-k=16" | FileCheck %s
// CHECK: PASS
func.func @f(%q: tensor<1x2x40x32xf16>, %k: tensor<1x2x56x32xf16>, %v: tensor<1x2x56x32xf16>)
    -> (tensor<1x2x40x32xf16>, tensor<1x2x40xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x40x32xf16>, tensor<1x2x56x32xf16>, tensor<1x2x56x32xf16>)
      {mask = #attn.mask<causal>} -> tensor<1x2x40x32xf16>, tensor<1x2x40xf32>
  return %o, %lse : tensor<1x2x40x32xf16>, tensor<1x2x40xf32>
}
