// f32, Nq != Nk, Dqk != Dv, no mask, with lse. The reference lowering and the
// tiled lowering (blocks of 16 x 16: tails on both axes) against fp64.
// RUN: rm -rf %t && mkdir -p %t
// RUN: attnfuse-run %s --seed=1 --pipeline-options="block-q=16 block-k=16" --dump-inputs=%t/in --dump-outputs=%t/tiled --dump-reference=%t/naive | FileCheck %s
// RUN: %reference check --inputs %t/in --outputs %t/naive --dtype f32 --lse
// RUN: %reference check --inputs %t/in --outputs %t/tiled --dtype f32 --lse
// RUN: attnfuse-run %s --seed=2 --check=fa --pipeline-options="block-q=16 block-k=16" | FileCheck %s
// CHECK: PASS
func.func @f(%q: tensor<2x2x33x16xf32>, %k: tensor<2x2x47x16xf32>, %v: tensor<2x2x47x24xf32>)
    -> (tensor<2x2x33x24xf32>, tensor<2x2x33xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x2x33x16xf32>, tensor<2x2x47x16xf32>, tensor<2x2x47x24xf32>)
      -> tensor<2x2x33x24xf32>, tensor<2x2x33xf32>
  return %o, %lse : tensor<2x2x33x24xf32>, tensor<2x2x33xf32>
}
