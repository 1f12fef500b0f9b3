// bf16, causal mask aligned bottom-right with Nq > Nk: the first Nq - Nk rows
// see no key at all, and must give O = 0 and lse = -inf (never NaN).
// RUN: rm -rf %t && mkdir -p %t
// RUN: attnfuse-run %s --seed=5 --pipeline-options="block-q=16 block-k=8" --dump-inputs=%t/in --dump-outputs=%t/tiled --dump-reference=%t/naive | FileCheck %s
// RUN: %reference check --inputs %t/in --outputs %t/naive --dtype bf16 --mask causal --align bottom_right --lse --expect-empty-rows
// RUN: %reference check --inputs %t/in --outputs %t/tiled --dtype bf16 --mask causal --align bottom_right --lse --expect-empty-rows
// RUN: attnfuse-run %s --seed=6 --check=fa --pipeline-options="block-q=16 block-k=8" | FileCheck %s
// CHECK: PASS
func.func @f(%q: tensor<1x2x70x16xbf16>, %k: tensor<1x2x30x16xbf16>, %v: tensor<1x2x30x16xbf16>)
    -> (tensor<1x2x70x16xbf16>, tensor<1x2x70xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<1x2x70x16xbf16>, tensor<1x2x30x16xbf16>, tensor<1x2x30x16xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<1x2x70x16xbf16>, tensor<1x2x70xf32>
  return %o, %lse : tensor<1x2x70x16xbf16>, tensor<1x2x70xf32>
}
