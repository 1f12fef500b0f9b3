// bf16, a boolean key-padding mask [B, 1, 1, Nk] (random, 80% kept).
// RUN: rm -rf %t && mkdir -p %t
// RUN: attnfuse-run %s --seed=9 --pipeline-options="block-q=16 block-k=16" --dump-inputs=%t/in --dump-outputs=%t/tiled --dump-reference=%t/naive | FileCheck %s
// RUN: %reference check --inputs %t/in --outputs %t/naive --dtype bf16 --keep 3 --lse
// RUN: %reference check --inputs %t/in --outputs %t/tiled --dtype bf16 --keep 3 --lse
// CHECK: PASS
func.func @f(%q: tensor<2x2x20x16xbf16>, %k: tensor<2x2x50x16xbf16>, %v: tensor<2x2x50x16xbf16>,
             %keep: tensor<2x1x1x50xi1>) -> (tensor<2x2x20x16xbf16>, tensor<2x2x20xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x2x20x16xbf16>, tensor<2x2x50x16xbf16>, tensor<2x2x50x16xbf16>)
      keep(%keep : tensor<2x1x1x50xi1>) -> tensor<2x2x20x16xbf16>, tensor<2x2x20xf32>
  return %o, %lse : tensor<2x2x20x16xbf16>, tensor<2x2x20xf32>
}
